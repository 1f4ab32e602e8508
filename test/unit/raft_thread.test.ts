// Goal: the metadata thread end to end on a real sqlite log: start-up snapshot to the front and the workers,
// proposals committed and broadcast in order (reqIds only on the front's copy), group commit, a 409 travelling
// as a committed entry, restart on the same data dir continuing the log, and the latch after a failed persist.
// Method: start dist/src/raft/shell/raft_thread.js as a Worker, with one MessageChannel standing in for a
// partition worker; keep a replica the way the front does (snapshot, then apply each committed entry).
import t, { type Test } from 'tap';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { FromMetadata, MetadataThreadData, ToMetadata } from '../../src/protocol/thread_messages.js';
import { applyCommand, type ApplyResult, type MetadataCommand, type MetadataState, type TopicRecord } from '../../src/raft/metadata/state.js';

const threadUrl = new URL('../../src/raft/shell/raft_thread.js', import.meta.url);

/** Collects messages from a port or worker and hands them out one at a time, in arrival order. */
class Inbox {
  readonly received: FromMetadata[] = [];
  private readonly waiters: { resolve: (message: FromMetadata) => void; reject: (err: Error) => void }[] = [];
  private failure: Error | null = null;
  private consumed = 0;

  constructor(source: Worker | MessagePort) {
    source.on('message', (message: FromMetadata) => {
      this.received.push(message);
      this.wake();
    });
  }

  /** The thread died: every wait fails at once with its error instead of timing out. */
  fail(err: Error): void {
    this.failure = err;
    for (const waiter of this.waiters.splice(0)) waiter.reject(err);
  }

  /** The next message not yet taken, in arrival order, waiting up to timeoutMs. */
  next(timeoutMs = 10_000): Promise<FromMetadata> {
    return new Promise((resolve, reject) => {
      if (this.failure !== null) return reject(this.failure);
      const timer = setTimeout(() => reject(new Error(`no message within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      this.wake();
    });
  }

  private wake(): void {
    while (this.waiters.length > 0 && this.consumed < this.received.length) {
      const waiter = this.waiters.shift()!;
      waiter.resolve(this.received[this.consumed++]!);
    }
  }
}

interface Node {
  worker: Worker;
  front: Inbox;
  partitionWorker: Inbox;
  exited: Promise<number>;
}

function startNode(dataDir: string): Node {
  const channel = new MessageChannel();
  const workerData: MetadataThreadData = { dataDir, workerPorts: [channel.port1] };
  const worker = new Worker(threadUrl, { workerData, transferList: [channel.port1] });
  const exited = new Promise<number>((resolve) => worker.once('exit', resolve));
  const node = { worker, front: new Inbox(worker), partitionWorker: new Inbox(channel.port2), exited };
  worker.on('error', (err) => {
    node.front.fail(err);
    node.partitionWorker.fail(err);
  });
  // The stand-in partition worker's port must not keep the test process alive.
  channel.port2.unref();
  return node;
}

function propose(node: Node, reqId: number, command: MetadataCommand): void {
  const message: ToMetadata = { kind: 'propose', reqId, command };
  node.worker.postMessage(message);
}

async function stop(t: Test, node: Node): Promise<void> {
  const shutdown: ToMetadata = { kind: 'shutdown' };
  node.worker.postMessage(shutdown);
  t.same(await node.front.next(), { kind: 'closed' });
  t.equal(await node.exited, 0, 'the thread exits by itself once closed');
}

function topic(name: string, id: string): TopicRecord {
  return {
    name,
    id,
    partitions: 3,
    retentionMs: 86_400_000,
    visibilityTimeoutMs: 30_000,
    maxInFlightPerPartition: 1000,
    maxAckedAheadPerPartition: 10_000,
    createdAtSec: 1_700_000_000,
  };
}

async function expectSnapshot(t: Test, inbox: Inbox, index: number): Promise<MetadataState> {
  const message = await inbox.next();
  t.equal(message.kind, 'snapshot');
  if (message.kind !== 'snapshot') throw new Error('expected a snapshot');
  t.equal(message.index, index, 'snapshot index');
  return message.state;
}

/** Takes 'committed' messages from inbox until `count` entries arrived; returns them and the messages. */
async function takeCommitted(inbox: Inbox, count: number): Promise<Extract<FromMetadata, { kind: 'committed' }>[]> {
  const messages: Extract<FromMetadata, { kind: 'committed' }>[] = [];
  let entries = 0;
  while (entries < count) {
    const message = await inbox.next();
    if (message.kind !== 'committed') throw new Error(`expected committed, got ${JSON.stringify(message)}`);
    messages.push(message);
    entries += message.entries.length;
  }
  return messages;
}

/** Applies committed messages to a replica as the front does, asserting index continuity. */
function applyToReplica(state: MetadataState, fromIndex: number, messages: Extract<FromMetadata, { kind: 'committed' }>[]): ApplyResult[] {
  const results: ApplyResult[] = [];
  let index = fromIndex;
  for (const message of messages) {
    for (const entry of message.entries) {
      if (entry.index !== index + 1) throw new Error(`gap: entry ${entry.index} after ${index}`);
      index = entry.index;
      results.push(applyCommand(state, entry.command));
    }
  }
  return results;
}

t.test('commit, broadcast, restart and continue', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));

  const first = startNode(dataDir);
  const frontState = await expectSnapshot(t, first.front, 0);
  const workerState = await expectSnapshot(t, first.partitionWorker, 0);
  t.equal(frontState.topics.size, 0);
  t.equal(workerState.topics.size, 0);
  t.ok((await stat(join(dataDir, 'metadata', 'raft.sqlite'))).isFile(), 'the log lives at <dataDir>/metadata/raft.sqlite');

  const orders = topic('orders', '00000000000000a1');
  propose(first, 1, { type: 'topic.create', topic: orders });
  const frontCopy = await first.front.next();
  t.same(frontCopy, {
    kind: 'committed',
    entries: [{ index: 1, command: { type: 'topic.create', topic: orders } }],
    proposals: [{ reqId: 1, index: 1 }],
  }, 'the front gets the entry and which reqId became it');
  const workerCopy = await first.partitionWorker.next();
  t.same(workerCopy, { kind: 'committed', entries: [{ index: 1, command: { type: 'topic.create', topic: orders } }] });
  t.notOk('proposals' in workerCopy, 'reqIds stay on the front copy');
  t.same(applyToReplica(frontState, 0, [frontCopy as Extract<FromMetadata, { kind: 'committed' }>]), [{ ok: true, topic: orders }]);

  // A conflicting create is still committed: applyCommand decides 409, identically on every replica.
  propose(first, 2, { type: 'topic.create', topic: topic('ORDERS', '00000000000000b2') });
  const conflict = await takeCommitted(first.front, 1);
  t.same(conflict[0]?.proposals, [{ reqId: 2, index: 2 }]);
  const [answer] = applyToReplica(frontState, 1, conflict);
  t.equal(answer?.ok, false);
  if (answer !== undefined && !answer.ok) {
    t.equal(answer.status, 409);
    t.match(answer.error, /existing topic orders/);
  }
  const workerConflict = await takeCommitted(first.partitionWorker, 1);
  t.same(workerConflict[0]?.entries.map((e) => e.index), [2]);

  await stop(t, first);

  const second = startNode(dataDir);
  const restored = await expectSnapshot(t, second.front, 2);
  await expectSnapshot(t, second.partitionWorker, 2);
  t.same(restored.topics.get('orders'), orders, 'the snapshot holds the topic');
  t.equal(restored.topics.size, 1, 'the 409 entry changed nothing on replay either');
  propose(second, 7, { type: 'topic.delete', name: 'orders', id: orders.id });
  const afterRestart = await takeCommitted(second.front, 1);
  t.same(afterRestart[0]?.entries.map((e) => e.index), [3], 'the next index continues the log');
  t.same(afterRestart[0]?.proposals, [{ reqId: 7, index: 3 }]);
  t.same(applyToReplica(restored, 2, afterRestart), [{ ok: true, deletedTopicId: orders.id }]);
  await stop(t, second);
});

t.test('proposals arriving during a persist are group-committed, each answered once and in order', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir);
  const state = await expectSnapshot(t, node.front, 0);
  await expectSnapshot(t, node.partitionWorker, 0);
  const count = 200;
  for (let i = 1; i <= count; i++) propose(node, 1000 + i, { type: 'topic.create', topic: topic(`t${i}`, i.toString(16).padStart(16, '0')) });
  const messages = await takeCommitted(node.front, count);
  t.ok(messages.length < count, `${count} proposals committed in ${messages.length} broadcasts`);
  const proposals = messages.flatMap((m) => m.proposals ?? []);
  t.same(proposals, Array.from({ length: count }, (_, i) => ({ reqId: 1001 + i, index: i + 1 })));
  t.ok(applyToReplica(state, 0, messages).every((result) => result.ok));
  t.equal(state.topics.size, count);
  const workerMessages = await takeCommitted(node.partitionWorker, count);
  t.same(workerMessages.flatMap((m) => m.entries.map((e) => e.index)), Array.from({ length: count }, (_, i) => i + 1));
  await stop(t, node);

  const restarted = startNode(dataDir);
  const restored = await expectSnapshot(t, restarted.front, count);
  t.same(restored, state, 'replay rebuilds exactly the state the replica reached');
  await stop(t, restarted);
});

t.test('a committed entry survives the thread being terminated without a shutdown', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir);
  await expectSnapshot(t, node.front, 0);
  const orders = topic('orders', '00000000000000a1');
  propose(node, 1, { type: 'topic.create', topic: orders });
  await takeCommitted(node.front, 1);
  // No 'shutdown': the database is never closed, so the entry must already be in the synced WAL.
  await node.worker.terminate();
  const restarted = startNode(dataDir);
  const restored = await expectSnapshot(t, restarted.front, 1);
  t.same(restored.topics.get('orders'), orders);
  await stop(t, restarted);
});

t.test('a failed persist answers 503 and refuses later proposals; nothing is committed', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir);
  await expectSnapshot(t, node.front, 0);
  // The log cannot encode a BigInt beyond 64 bits, so this append fails inside storage.
  const unstorable = { ...topic('huge', '00000000000000ff'), partitions: 2n ** 70n } as unknown as TopicRecord;
  propose(node, 1, { type: 'topic.create', topic: unstorable });
  t.same(await node.front.next(), { kind: 'proposeFailed', reqId: 1, status: 503, error: 'metadata log unavailable' });
  propose(node, 2, { type: 'topic.create', topic: topic('fine', '00000000000000f1') });
  t.same(await node.front.next(), { kind: 'proposeFailed', reqId: 2, status: 503, error: 'metadata log unavailable' }, 'latched until restart');
  await stop(t, node);

  const restarted = startNode(dataDir);
  const restored = await expectSnapshot(t, restarted.front, 0);
  t.equal(restored.topics.size, 0, 'the failed entry was never stored');
  propose(restarted, 3, { type: 'topic.create', topic: topic('fine', '00000000000000f1') });
  const [committed] = await takeCommitted(restarted.front, 1);
  t.same(committed?.proposals, [{ reqId: 3, index: 1 }], 'a restart accepts proposals again');
  await stop(t, restarted);
});
