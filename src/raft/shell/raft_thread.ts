// The metadata thread's entry (a worker_threads Worker started by main.ts with MetadataThreadData): it owns the
// Raft core, the sqlite log and the authoritative MetadataState. At start it replays the log and posts a
// 'snapshot' to the front and every partition worker; then it turns the front's proposals into committed
// entries, broadcast in index order. Ends on 'shutdown' from the front, answered with 'closed'.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { RaftNode, type LogEntry, type RaftConfig, type Ready } from '../core/raft.js';
import { applyCommand, emptyMetadataState, type MetadataCommand, type MetadataState } from '../metadata/state.js';
import {
  assertNever,
  type CommittedEntry,
  type FromMetadata,
  type MetadataThreadData,
  type ToMetadata,
} from '../../protocol/thread_messages.js';
import { SqliteRaftStorage } from './storage_sqlite.js';

/** A one-voter group; its tick count matters only once there are peers to send heartbeats to, so the shell
 *  runs no timer yet. */
const loneVoterConfig: RaftConfig = { id: 1, voters: [1], heartbeatTicks: 1 };

/** Every command type, so a stored entry is recognised before it is applied; the Record type makes the
 *  compiler demand a new variant here too. */
const metadataCommandTypes: Record<MetadataCommand['type'], true> = {
  'topic.create': true,
  'topic.update': true,
  'topic.delete': true,
  'user.create': true,
  'user.delete': true,
  'user.grants': true,
  'user.password': true,
};

class MetadataRaftShell {
  /** Proposals not yet answered: entry index -> the front's reqId. */
  private readonly reqIdByIndex = new Map<number, number>();
  private pumping = false;
  /** Latched when a persist fails: from then on every proposal is refused until restart. */
  private storageFailed = false;
  private shutdownRequested = false;
  private closing = false;
  private readonly onMessageBound = (message: ToMetadata): void => this.onMessage(message);

  constructor(
    private readonly core: RaftNode<MetadataCommand>,
    private readonly storage: SqliteRaftStorage,
    private readonly state: MetadataState,
    private appliedIndex: number,
    private readonly front: MessagePort,
    private readonly workerPorts: readonly MessagePort[],
  ) {}

  start(): void {
    const snapshot: FromMetadata = { kind: 'snapshot', index: this.appliedIndex, state: this.state };
    this.front.postMessage(snapshot);
    for (const port of this.workerPorts) port.postMessage(snapshot);
    this.front.on('message', this.onMessageBound);
    // The first ready may carry the first start's term and vote, which must be stored before any entry.
    this.kick();
  }

  private onMessage(message: ToMetadata): void {
    switch (message.kind) {
      case 'propose':
        return this.onPropose(message.reqId, message.command);
      case 'shutdown':
        return this.onShutdown();
      default:
        return assertNever(message);
    }
  }

  private onPropose(reqId: number, command: MetadataCommand): void {
    if (this.storageFailed || this.shutdownRequested) {
      this.post({ kind: 'proposeFailed', reqId, status: 503, error: 'metadata log unavailable' });
      return;
    }
    const index = this.core.propose(command);
    assert.equal(this.reqIdByIndex.has(index), false, `entry ${index} proposed twice`);
    this.reqIdByIndex.set(index, reqId);
    this.kick();
  }

  private onShutdown(): void {
    this.shutdownRequested = true;
    // A running pump finishes the entries already proposed and closes when it runs dry.
    if (!this.pumping) void this.close();
  }

  /** Starts the ready loop unless it runs already; proposals made meanwhile join its next ready. */
  private kick(): void {
    if (this.pumping) return;
    this.pumping = true;
    // A rejection here is an assertion failure: rethrown unhandled, it ends the thread (fail-stop).
    void this.pump().finally(() => {
      this.pumping = false;
      if (this.shutdownRequested) void this.close();
    });
  }

  /** etcd's loop: apply (the core hands out only persisted entries), persist, send, advance. */
  private async pump(): Promise<void> {
    for (let ready = this.core.ready(); ready !== null; ready = this.core.ready()) {
      this.applyCommitted(ready.committed);
      if (!(await this.persist(ready))) return;
      // A lone voter has no peers, so there is nothing to send and no transport yet.
      assert.equal(ready.messages.length, 0, 'raft messages without a transport');
      this.core.advance(ready);
    }
  }

  private async persist(ready: Ready<MetadataCommand>): Promise<boolean> {
    // A commit-only hard state is not written on its own: the commit index is recomputed at restart.
    if (ready.entries.length === 0 && !ready.mustSync) return true;
    try {
      await this.storage.append(ready.entries, ready.hardState);
      return true;
    } catch (err) {
      this.failStorage(err);
      return false;
    }
  }

  private failStorage(err: unknown): void {
    this.storageFailed = true;
    console.error(`metadata: persisting the raft log failed, refusing proposals until restart: ${String(err)}`);
    // Every unanswered proposal is in the failed ready or behind it, so none of them will commit.
    for (const reqId of this.reqIdByIndex.values()) {
      this.post({ kind: 'proposeFailed', reqId, status: 503, error: 'metadata log unavailable' });
    }
    this.reqIdByIndex.clear();
  }

  private applyCommitted(committed: readonly LogEntry<MetadataCommand>[]): void {
    if (committed.length === 0) return;
    const entries: CommittedEntry[] = [];
    const proposals: { reqId: number; index: number }[] = [];
    for (const entry of committed) {
      applyInOrder(this.state, this.appliedIndex, entry.index, entry.data);
      this.appliedIndex = entry.index;
      entries.push({ index: entry.index, command: entry.data });
      const reqId = this.reqIdByIndex.get(entry.index);
      if (reqId !== undefined) {
        proposals.push({ reqId, index: entry.index });
        this.reqIdByIndex.delete(entry.index);
      }
    }
    this.post({ kind: 'committed', entries, proposals });
    const toWorkers: FromMetadata = { kind: 'committed', entries };
    for (const port of this.workerPorts) port.postMessage(toWorkers);
  }

  private async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    await this.storage.close();
    this.post({ kind: 'closed' });
    // With no listener left the port stops holding the thread open, so it exits once idle.
    this.front.off('message', this.onMessageBound);
  }

  private post(message: FromMetadata): void {
    this.front.postMessage(message);
  }
}

/** Replicas rebuild state from the same sequence, so it must be every index once, in order. */
function applyInOrder(state: MetadataState, appliedIndex: number, index: number, command: MetadataCommand): void {
  assert.equal(index, appliedIndex + 1, `metadata entry ${index} applied after ${appliedIndex}`);
  applyCommand(state, command);
}

function storedCommand(entry: LogEntry): MetadataCommand {
  const data = entry.data as { type?: unknown } | null;
  assert.ok(typeof data === 'object' && data !== null, `stored entry ${entry.index} holds no object`);
  assert.ok(typeof data.type === 'string' && Object.hasOwn(metadataCommandTypes, data.type), `stored entry ${entry.index} holds no metadata command`);
  return data as MetadataCommand;
}

async function start(): Promise<void> {
  const front = parentPort;
  assert.ok(front !== null, 'raft_thread.ts runs only as a worker thread');
  const data = workerData as MetadataThreadData;
  assert.equal(typeof data.dataDir, 'string', 'workerData.dataDir');
  assert.ok(Array.isArray(data.workerPorts), 'workerData.workerPorts');
  const storage = await SqliteRaftStorage.open(join(data.dataDir, 'metadata', 'raft.sqlite'));
  const stored = await storage.loadAll();
  const last = stored.entries[stored.entries.length - 1];
  const lastIndex = last?.index ?? 0;
  // The core checks the stored state and that all of it is committed before anything is applied.
  const core = new RaftNode<MetadataCommand>(loneVoterConfig, {
    hardState: stored.hardState,
    lastIndex,
    lastTerm: last?.term ?? 0,
    appliedIndex: lastIndex,
  });
  const state = emptyMetadataState();
  let appliedIndex = 0;
  for (const entry of stored.entries) {
    applyInOrder(state, appliedIndex, entry.index, storedCommand(entry));
    appliedIndex = entry.index;
  }
  new MetadataRaftShell(core, storage, state, appliedIndex, front, data.workerPorts).start();
}

await start();
