// Goal: the metadata thread of a one-node cluster end to end on a real sqlite log: the founding entry, the
// start-up snapshot to the front and the workers, the node leading at once and registering itself as a member,
// proposals committed and broadcast in order (reqIds only on the front's copy), partition owners placed by the
// leader, group commit, a 409 travelling as a committed entry, restart continuing the log, compaction into a
// snapshot and restart from it, and the latch after a failed persist; and the leader's second check of a write's
// caller (spec §5), also for a write by a user whose delete is in flight when it arrives.
// Method: start dist/src/raft/shell/raft_thread.js as a Worker, with one MessageChannel standing in for a
// partition worker; keep a replica the way the front does (snapshot, then apply each committed entry).
import t, { type Test } from 'tap';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { ClusterStatus, ClusterThreadConfig, FromMetadata, MetadataThreadData, ToMetadata } from '../../src/protocol/thread_messages.js';
import type { MetadataCommand, MetadataState, ProposalCaller, TopicCreateRecord, TopicRecord } from '../../src/protocol/metadata_types.js';
import type { MetadataRefusal } from '../../src/errors.js';
import { applyCommand, type ApplyResult } from '../../src/metadata/state.js';

const threadUrl = new URL('../../src/raft/shell/raft_thread.js', import.meta.url);

/** Collects messages from a port or worker and hands them out one at a time, in arrival order. */
class Inbox {
  readonly received: FromMetadata[] = [];
  private readonly waiters: { resolve: (message: FromMetadata) => void; reject: (err: Error) => void }[] = [];
  private failure: Error | null = null;
  private consumed = 0;
  lastStatus: ClusterStatus | null = null;

  constructor(source: Worker | MessagePort) {
    source.on('message', (message: FromMetadata) => {
      // Status reports arrive on their own schedule; the tests read them through lastStatus.
      if (message.kind === 'clusterStatus') {
        this.lastStatus = message.status;
        return;
      }
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

function clusterConfig(snapshotEntries: number): ClusterThreadConfig {
  return {
    nodeId: 1, bootstrap: [[1, { host: '127.0.0.1', port: 7943 }]], join: null, listen: { host: '127.0.0.1', port: 0 },
    advertiseApi: '127.0.0.1:7942', advertiseInternal: '127.0.0.1:7943', secret: new Uint8Array(0),
    tickMs: 20, electionTicks: 10, deadAfterMs: 5_000, snapshotEntries,
  };
}

function startNode(dataDir: string, snapshotEntries = 10_000): Node {
  const channel = new MessageChannel();
  const workerData: MetadataThreadData = { dataDir, workerPorts: [channel.port1], cluster: clusterConfig(snapshotEntries), logLevel: 'warn' };
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

function propose(node: Node, reqId: number, command: MetadataCommand, caller?: ProposalCaller): void {
  const message: ToMetadata = caller === undefined ? { kind: 'propose', reqId, command } : { kind: 'propose', reqId, command, caller };
  node.worker.postMessage(message);
}

async function stop(t: Test, node: Node): Promise<void> {
  const shutdown: ToMetadata = { kind: 'shutdown' };
  node.worker.postMessage(shutdown);
  for (;;) {
    const message = await node.front.next();
    if (message.kind === 'closed') break;
  }
  t.equal(await node.exited, 0, 'the thread exits by itself once closed');
}

function topic(name: string, id: string): TopicCreateRecord {
  return {
    name,
    id,
    partitions: 3,
    retentionMs: 86_400_000,
    visibilityTimeoutMs: 30_000,
    maxInFlightPerPartition: 1000,
    maxAckedAheadPerPartition: 10_000,
    createdAtSec: 1_700_000_000,
    owners: [],
  };
}

type Committed = Extract<FromMetadata, { kind: 'committed' }>;

/** A replica kept the way the front keeps it. */
class Replica {
  index = 0;
  state!: MetadataState;
  readonly results = new Map<number, ApplyResult>();
  readonly proposals = new Map<number, number>();

  async loadSnapshot(t: Test, inbox: Inbox): Promise<void> {
    const message = await inbox.next();
    t.equal(message.kind, 'snapshot', 'the first message is the snapshot');
    if (message.kind !== 'snapshot') throw new Error(`expected a snapshot, got ${message.kind}`);
    this.state = message.state;
    this.index = message.index;
  }

  apply(message: Committed): void {
    for (const { reqId, index } of message.proposals ?? []) this.proposals.set(reqId, index);
    for (const entry of message.entries) {
      if (entry.index !== this.index + 1) throw new Error(`gap: entry ${entry.index} after ${this.index}`);
      this.index = entry.index;
      if (entry.command !== null) this.results.set(entry.index, applyCommand(this.state, entry.command));
    }
  }

  /** Applies committed messages until the proposal reqId is answered; returns its index and result. */
  async answer(inbox: Inbox, reqId: number): Promise<{ index: number; result: ApplyResult }> {
    for (;;) {
      const index = this.proposals.get(reqId);
      if (index !== undefined) return { index, result: this.results.get(index)! };
      const message = await inbox.next();
      if (message.kind === 'committed') this.apply(message);
      else throw new Error(`expected committed, got ${JSON.stringify(message)}`);
    }
  }

  /** Applies committed messages until the proposal reqId is answered or refused (refusals of other reqIds met on
   *  the way are kept for their turn). */
  async outcome(inbox: Inbox, reqId: number): Promise<ApplyResult | { refused: MetadataRefusal }> {
    for (;;) {
      const refusal = this.refused.get(reqId);
      if (refusal !== undefined) return { refused: refusal };
      const index = this.proposals.get(reqId);
      if (index !== undefined) return this.results.get(index)!;
      const message = await inbox.next();
      if (message.kind === 'committed') this.apply(message);
      else if (message.kind === 'proposeFailed') this.refused.set(message.reqId, message.refusal);
      else throw new Error(`expected committed or proposeFailed, got ${JSON.stringify(message)}`);
    }
  }

  readonly refused = new Map<number, MetadataRefusal>();

  /** Applies committed messages until this node's own member record is in the state. */
  async untilMember(inbox: Inbox): Promise<void> {
    while (!this.state.members.has(1)) {
      const message = await inbox.next();
      if (message.kind === 'committed') this.apply(message);
      else throw new Error(`expected committed, got ${JSON.stringify(message)}`);
    }
  }
}

async function started(t: Test, node: Node): Promise<Replica> {
  const replica = new Replica();
  await replica.loadSnapshot(t, node.front);
  await replica.untilMember(node.front);
  return replica;
}

t.test('found, lead, register, commit, broadcast, restart and continue', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));

  const first = startNode(dataDir);
  const replica = new Replica();
  await replica.loadSnapshot(t, first.front);
  t.equal(replica.index, 1, 'the first snapshot follows the founding configuration entry');
  t.equal(replica.state.topics.size, 0);
  const worker = new Replica();
  await worker.loadSnapshot(t, first.partitionWorker);
  t.ok((await stat(join(dataDir, 'metadata', 'raft.sqlite'))).isFile(), 'the log lives at <dataDir>/metadata/raft.sqlite');
  await replica.untilMember(first.front);
  t.same(replica.state.members.get(1), { ...replica.state.members.get(1), id: 1, apiAddress: '127.0.0.1:7942', internalAddress: '127.0.0.1:7943' },
    'the node registered its own member record');
  t.equal(first.front.lastStatus?.role, 'leader', 'a lone voter leads at once');
  t.equal(first.front.lastStatus?.caughtUp, true);

  const orders = topic('orders', '00000000000000a1');
  propose(first, 1, { type: 'topic.create', topic: orders });
  const created = await replica.answer(first.front, 1);
  t.same(created.result, { ok: true, topic: { ...orders, owners: [1, 1, 1], targetOwners: [1, 1, 1] } }, 'the leader placed every partition on the only member');

  // A conflicting create is still committed: applyCommand decides 409, identically on every replica.
  propose(first, 2, { type: 'topic.create', topic: topic('ORDERS', '00000000000000b2') });
  const conflict = await replica.answer(first.front, 2);
  t.equal(conflict.result.ok, false);
  if (!conflict.result.ok) {
    t.same(conflict.result.refusal, { id: 'topicNameConflict', args: ['orders'] });
  }
  // The worker's copy carries the same entries, without reqIds.
  for (;;) {
    const message = await first.partitionWorker.next();
    if (message.kind !== 'committed') throw new Error(`worker got ${message.kind}`);
    t.notOk('proposals' in message && message.proposals !== undefined && message.proposals.length > 0, 'reqIds stay on the front copy');
    worker.apply(message);
    if (worker.index >= conflict.index) break;
  }
  t.same(worker.state, replica.state, 'the worker replica reached the same state');
  await stop(t, first);

  const second = startNode(dataDir);
  const restored = new Replica();
  await restored.loadSnapshot(t, second.front);
  t.ok(restored.index >= conflict.index, 'the start-up snapshot holds every entry committed before');
  t.same(restored.state.topics.get('orders'), { ...orders, owners: [1, 1, 1], targetOwners: [1, 1, 1] }, 'the snapshot holds the topic');
  t.equal(restored.state.topics.size, 1, 'the 409 entry changed nothing on replay either');
  propose(second, 7, { type: 'topic.delete', name: 'orders', id: orders.id });
  const deleted = await restored.answer(second.front, 7);
  t.ok(deleted.index > conflict.index, 'the next index continues the log');
  t.same(deleted.result, { ok: true, deletedTopicId: orders.id });
  await stop(t, second);
});

t.test('proposals arriving during a persist are group-committed, each answered once and in order', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir);
  const replica = await started(t, node);
  const count = 200;
  let broadcasts = 0;
  for (let i = 1; i <= count; i++) propose(node, 1000 + i, { type: 'topic.create', topic: topic(`t${i}`, i.toString(16).padStart(16, '0')) });
  while (replica.proposals.size < count) {
    const message = await node.front.next();
    if (message.kind !== 'committed') throw new Error(`expected committed, got ${message.kind}`);
    replica.apply(message);
    broadcasts += 1;
  }
  t.ok(broadcasts < count, `${count} proposals committed in ${broadcasts} broadcasts`);
  const indexes = Array.from({ length: count }, (_, i) => replica.proposals.get(1001 + i)!);
  t.ok(indexes.every((index, i) => i === 0 || index === indexes[i - 1]! + 1), 'each proposal is the next entry, in order');
  t.ok(indexes.every((index) => replica.results.get(index)?.ok === true));
  t.equal(replica.state.topics.size, count);
  await stop(t, node);

  const restarted = startNode(dataDir);
  const restored = new Replica();
  await restored.loadSnapshot(t, restarted.front);
  t.same(restored.state, replica.state, 'replay rebuilds exactly the state the replica reached');
  await stop(t, restarted);
});

t.test('a snapshot compacts the log; a restart starts from it', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir, 10);
  const replica = await started(t, node);
  for (let i = 1; i <= 25; i++) propose(node, i, { type: 'topic.create', topic: topic(`s${i}`, (0x100 + i).toString(16).padStart(16, '0')) });
  await replica.answer(node.front, 25);
  await stop(t, node);
  const rows = await countEntries(join(dataDir, 'metadata', 'raft.sqlite'));
  t.ok(rows.snapshots === 1 && rows.entries < 20, `the log was compacted (${rows.entries} entries after a snapshot at ${rows.snapshotIndex})`);

  const restarted = startNode(dataDir, 10);
  const restored = new Replica();
  await restored.loadSnapshot(t, restarted.front);
  t.same(restored.state, replica.state, 'snapshot plus the entries after it rebuild the same state');
  await stop(t, restarted);
});

t.test('a committed entry survives the thread being terminated without a shutdown', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir);
  const replica = await started(t, node);
  const orders = topic('orders', '00000000000000a1');
  propose(node, 1, { type: 'topic.create', topic: orders });
  await replica.answer(node.front, 1);
  // No 'shutdown': the database is never closed, so the entry must already be in the synced WAL.
  await node.worker.terminate();
  const restarted = startNode(dataDir);
  const restored = new Replica();
  await restored.loadSnapshot(t, restarted.front);
  t.same(restored.state.topics.get('orders'), { ...orders, owners: [1, 1, 1], targetOwners: [1, 1, 1] });
  await stop(t, restarted);
});

t.test('a failed persist answers 503 and refuses later proposals; nothing is committed', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir);
  const replica = await started(t, node);
  // The log cannot encode a BigInt beyond 64 bits, so this append fails inside storage.
  const unstorable = { ...topic('huge', '00000000000000ff'), retentionMs: 2n ** 70n } as unknown as TopicRecord;
  propose(node, 1, { type: 'topic.create', topic: unstorable });
  t.same(await node.front.next(), { kind: 'proposeFailed', reqId: 1, refusal: { id: 'stoppedUnconfirmed', args: [] } });
  // Several ticks pass: the latched node stays up (its core is no longer driven) and keeps refusing.
  await new Promise((resolve) => setTimeout(resolve, 200));
  propose(node, 2, { type: 'topic.create', topic: topic('fine', '00000000000000f1') });
  t.same(await node.front.next(), { kind: 'proposeFailed', reqId: 2, refusal: { id: 'metadataLogUnavailable', args: [] } }, 'latched until restart');
  await stop(t, node);

  const restarted = startNode(dataDir);
  const restored = await started(t, restarted);
  t.equal(restored.state.topics.size, 0, 'the failed entry was never stored');
  t.ok(restored.index >= replica.index, 'everything committed before is still there');
  propose(restarted, 3, { type: 'topic.create', topic: topic('fine', '00000000000000f1') });
  const answer = await restored.answer(restarted.front, 3);
  t.equal(answer.result.ok, true, 'a restart accepts proposals again');
  await stop(t, restarted);
});

function applied(outcome: ApplyResult | { refused: MetadataRefusal }): boolean {
  return 'ok' in outcome && outcome.ok;
}

t.test('the leader checks the caller of a write again against its own state, after its in-flight account changes', async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-raft-thread-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const node = startNode(dataDir);
  const replica = await started(t, node);
  const alice = { username: 'alice', passwordHash: '$2a$10$x', credentialVersion: 0, grants: [{ action: 'create' as const, patterns: ['a.*'] }],
    root: false, createdAtMs: 1, updatedAtMs: 1 };
  propose(node, 1, { type: 'user.create', user: alice });
  t.equal(applied(await replica.outcome(node.front, 1)), true);
  const caller: ProposalCaller = { username: 'alice', credentialVersion: replica.state.users.get('alice')!.credentialVersion };
  const create = (name: string, id: string): MetadataCommand => ({ type: 'topic.create', topic: { ...topic(name, id), owner: 'alice' } });
  const unknown = { id: 'forbidden', args: ['the metadata leader does not know user alice with these credentials (deleted or changed)'] };

  propose(node, 2, create('a.one', '00000000000000c1'), caller);
  t.equal(applied(await replica.outcome(node.front, 2)), true, 'a write within the caller\'s grants is proposed');
  propose(node, 3, create('b.one', '00000000000000c2'), caller);
  t.same(await replica.outcome(node.front, 3), { refused: { id: 'forbidden', args: ['no create grant matching topic name b.one'] } },
    'a write outside them is refused 403 before it is proposed');
  propose(node, 4, create('a.two', '00000000000000c3'), { username: 'ghost', credentialVersion: 1 });
  t.same(await replica.outcome(node.front, 4), { refused: { ...unknown, args: [unknown.args[0]!.replace('alice', 'ghost')] } }, 'a user it does not know');

  // Back to back: the delete is not applied yet when the write arrives; the write waits for it and is refused.
  propose(node, 5, { type: 'user.delete', username: 'alice' });
  propose(node, 6, create('a.three', '00000000000000c4'), caller);
  t.same(await replica.outcome(node.front, 6), { refused: unknown }, 'a write by a user whose delete was in flight');
  t.equal(applied(await replica.outcome(node.front, 5)), true, 'the delete itself committed');
  propose(node, 7, create('a.four', '00000000000000c5'));
  t.equal(applied(await replica.outcome(node.front, 7)), true, 'a write without a caller (security off) is not checked');
  t.same([...replica.state.topics.keys()].sort(), ['a.four', 'a.one'], 'nothing refused was committed');
  await stop(t, node);
});

/** Rows in the log's tables, read with the sqlite3 CLI-free API. */
async function countEntries(path: string): Promise<{ entries: number; snapshots: number; snapshotIndex: number }> {
  const sqlite3 = (await import('sqlite3')).default;
  const db = new sqlite3.Database(path, sqlite3.OPEN_READONLY);
  const get = (sql: string): Promise<Record<string, number>> =>
    new Promise((resolve, reject) => db.get(sql, (err: Error | null, row: Record<string, number>) => (err ? reject(err) : resolve(row))));
  try {
    const entries = (await get('SELECT COUNT(*) AS n FROM entries')).n ?? 0;
    const snapshot = await get('SELECT COUNT(*) AS n, MAX(idx) AS idx FROM snapshot');
    return { entries, snapshots: snapshot.n ?? 0, snapshotIndex: snapshot.idx ?? 0 };
  } finally {
    await new Promise<void>((resolve) => db.close(() => resolve()));
  }
}
