// Goal: the worker side of a partition move (issue 41): the source's chunks carry every synced record with its origin,
// a frozen partition's records are held, the final chunk carries the cursors, the flip sets the source's copy aside
// (reads answer partitionMoved, moveRelease answers) and the destination serves the copy at the same offsets with the
// same bytes, skipping hand-offs it holds and keeping the ack frontier; a damaged chunk answers copyUnverifiable; an
// abort discards the incoming copy; a restarted destination continues its copy; a reassigned partition starts at its
// start offset. Method: two real worker threads on two data dirs with different node ids ("two nodes"), fed the same
// metadata commands; the test carries chunks between them as the destination's front would.
import t, { type Test } from 'tap';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IngressEntry } from '../../src/protocol/ingress_frame.js';
import { encodeIngressEntry } from '../helpers/ingress_entries.js';
import type { FromMetadata, FromWorker, MoveChunk, PartitionWorkerData, StoredRecordView, ToWorker } from '../../src/protocol/thread_messages.js';
import type { MetadataCommand, MetadataState, TopicRecord } from '../../src/protocol/metadata_types.js';
import { emptyMetadataState } from '../../src/metadata/state.js';
import { encodeFrame } from '../../src/util/frame.js';
import { setAsideList } from '../../src/util/set_aside.js';
import { handleSeparator } from '../../src/protocol/receipt_handle.js';

const topic: TopicRecord = {
  name: 'orders', id: '0123456789abcdef', partitions: 1, retentionMs: 3_600_000, visibilityTimeoutMs: 30_000,
  maxInFlightPerPartition: 100, maxAckedAheadPerPartition: 100, createdAtSec: 1_700_000_000, owners: [1], targetOwners: [1],
};
const timestampSec = 1_700_000_100;
type Answer = Extract<FromWorker, { reqId: number }>;

/** One worker thread of one "node", with its front port, link port and metadata port. */
class NodeWorker {
  readonly inbox: FromWorker[] = [];
  /** What the worker logged (warnings and worse), shown when an answer does not come. */
  outputText = '';
  readonly exited: Promise<number>;
  private readonly metadata = new MessageChannel();
  private readonly link = new MessageChannel();
  private readonly worker: Worker;
  private waiters: (() => void)[] = [];
  private nextReqId = 1;
  private nextLinkReqId = -1;

  constructor(readonly dataDir: string, readonly nodeId: number) {
    const workerData: PartitionWorkerData = {
      nodeId, workerIndex: 0, workerCount: 1, dataDir, segmentBytesMax: 600, metadataPort: this.metadata.port2, linkPort: this.link.port2,
      retentionCheckIntervalMs: 60_000, ackFlushIntervalMs: 10, flushIntervalMs: 0, syncIntervalMs: 0, logLevel: 'warn',
    };
    this.worker = new Worker(new URL('../../workers/partition_worker.js', import.meta.url), {
      workerData, transferList: [this.metadata.port2, this.link.port2], stdout: true,
    });
    this.worker.stdout.on('data', (chunk: Buffer) => (this.outputText += chunk.toString()));
    const arrive = (msg: FromWorker): void => {
      this.inbox.push(msg);
      for (const wake of this.waiters.splice(0)) wake();
    };
    this.worker.on('message', arrive);
    this.link.port1.on('message', arrive);
    this.worker.on('error', (err) => (this.outputText += `worker error: ${err.stack ?? String(err)}`));
    this.exited = new Promise((resolve) => this.worker.once('exit', resolve));
  }

  async take<K extends FromWorker['kind']>(kind: K, match: (m: Extract<FromWorker, { kind: K }>) => boolean = () => true): Promise<Extract<FromWorker, { kind: K }>> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const at = this.inbox.findIndex((m) => m.kind === kind && match(m as Extract<FromWorker, { kind: K }>));
      if (at >= 0) return this.inbox.splice(at, 1)[0] as Extract<FromWorker, { kind: K }>;
      if (Date.now() > deadline) throw new Error(`node ${this.nodeId}: no ${kind} within 20 s; inbox ${JSON.stringify(this.inbox).slice(0, 2000)}; log ${this.outputText.slice(-3000)}`);
      await Promise.race([new Promise<void>((wake) => this.waiters.push(wake)), sleep(100)]);
    }
  }

  /** Sends a request with the next reqId and waits for its answer (any kind). */
  async ask(msg: Record<string, unknown> & { kind: ToWorker['kind'] }): Promise<Answer> {
    const reqId = this.nextReqId++;
    this.worker.postMessage({ ...msg, reqId });
    const deadline = Date.now() + 20_000;
    for (;;) {
      const at = this.inbox.findIndex((m) => 'reqId' in m && m.reqId === reqId);
      if (at >= 0) return this.inbox.splice(at, 1)[0] as Answer;
      if (Date.now() > deadline) throw new Error(`node ${this.nodeId}: no answer to ${msg.kind} within 20 s; log ${this.outputText.slice(-3000)}`);
      await Promise.race([new Promise<void>((wake) => this.waiters.push(wake)), sleep(100)]);
    }
  }

  send(msg: ToWorker): void {
    this.worker.postMessage(msg);
  }

  /** A hand-off from origin on the link port; resolves when answered. */
  async handoff(origin: number, metaIndex: number, entries: IngressEntry[]): Promise<void> {
    const reqId = this.nextLinkReqId--;
    this.link.port1.postMessage({ kind: 'handoff', reqId, origin, metaIndex, frames: framesOf(entries) } satisfies ToWorker);
    await this.take('handedOff', (m) => m.reqId === reqId);
  }

  metadataSend(msg: FromMetadata): void {
    this.metadata.port1.postMessage(msg);
  }

  commit(index: number, command: MetadataCommand): void {
    this.metadataSend({ kind: 'committed', entries: [{ index, command }] });
  }

  async durable(seqUpTo: number): Promise<void> {
    for (;;) if ((await this.take('durable')).seqUpTo >= seqUpTo) return;
  }

  async read(offset: number): Promise<Answer> {
    return this.ask({ kind: 'read', topicId: topic.id, partition: 0, offset });
  }

  async nextOffset(): Promise<number> {
    const answer = await this.ask({ kind: 'stats', topicId: topic.id, partitions: [0] });
    if (answer.kind !== 'statsResult') throw new Error(`stats answered ${JSON.stringify(answer)}`);
    return answer.stats[0]!.nextOffset;
  }

  async stop(): Promise<void> {
    this.send({ kind: 'shutdown' });
    await Promise.race([this.exited, sleep(5_000)]);
    this.metadata.port1.close();
    this.link.port1.close();
    await this.worker.terminate();
  }
}

async function nodeStarted(t: Test, dataDir: string, nodeId: number, state: MetadataState, index: number): Promise<NodeWorker> {
  const w = new NodeWorker(dataDir, nodeId);
  t.teardown(() => w.stop());
  await w.take('ready');
  w.metadataSend({ kind: 'snapshot', index, state });
  return w;
}

async function tempDataDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'partition-moves-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function stateWith(...topics: TopicRecord[]): MetadataState {
  const state = emptyMetadataState();
  for (const id of [1, 2, 3]) state.members.set(id, { id, apiAddress: `127.0.0.1:${7940 + id}`, internalAddress: `127.0.0.1:${7950 + id}`, addedAtMs: 0 });
  for (const t of topics) {
    state.topics.set(t.name, structuredClone(t));
    state.topicNamesLower.set(t.name.toLowerCase(), t.name);
  }
  return state;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function entry(seq: number, payloads: string[], key?: string): IngressEntry {
  return { seq, topicId: topic.id, timestampSec, records: payloads.map((p) => ({ partition: 0, key: key === undefined ? null : text(key), payload: text(p), payloadKind: 1 })) };
}

function framesOf(entries: IngressEntry[]): Uint8Array {
  return Buffer.concat(entries.map((e) => encodeFrame(encodeIngressEntry(e))));
}

function dispatch(metaIndex: number, entries: IngressEntry[]): ToWorker {
  return { kind: 'dispatch', metaIndex, frames: framesOf(entries), lastSeq: entries.at(-1)!.seq };
}

const moveStart: MetadataCommand = {
  type: 'move.start',
  moves: [{ topicId: topic.id, topic: topic.name, partition: 0, source: 1, destination: 2, startedAtMs: 0, reason: 'operator', phase: 'copying' }],
};
const freeze = (frozen: boolean): MetadataCommand => ({ type: 'move.freeze', topicId: topic.id, partition: 0, destination: 2, frozen });
const flip: MetadataCommand = { type: 'move.flip', topicId: topic.id, partition: 0, destination: 2 };

async function chunkRead(source: NodeWorker, fromOffset: number, maxBytes = 150): Promise<MoveChunk> {
  const answer = await source.ask({ kind: 'moveRead', topicId: topic.id, partition: 0, fromOffset, maxBytes });
  if (answer.kind !== 'moveChunk') throw new Error(`moveRead answered ${JSON.stringify(answer)}`);
  return answer.chunk;
}

async function chunkWrite(destination: NodeWorker, chunk: MoveChunk): Promise<Answer> {
  return destination.ask({ kind: 'moveWrite', topicId: topic.id, partition: 0, chunk });
}

/** Copies chunks until one reaches the source's synced end (or is final, when final is asked for); the copy's end. */
async function copyUntil(t: Test, source: NodeWorker, destination: NodeWorker, from: number, final: boolean): Promise<number> {
  let next = from;
  for (let round = 0; round < 200; round++) {
    const chunk = await chunkRead(source, next);
    const written = await chunkWrite(destination, chunk);
    if (written.kind !== 'moveWritten') throw new Error(`moveWrite answered ${JSON.stringify(written)}`);
    next = written.nextOffset;
    if (final ? chunk.final : chunk.nextOffset === chunk.syncedEnd) return next;
  }
  t.fail('the copy never caught up');
  return next;
}

function recordOf(answer: Answer): StoredRecordView {
  if (answer.kind !== 'readResult' || answer.record === undefined) throw new Error(`read answered ${JSON.stringify(answer)}`);
  return answer.record;
}

async function readAll(w: NodeWorker, from: number, to: number): Promise<StoredRecordView[]> {
  const records: StoredRecordView[] = [];
  for (let offset = from; offset < to; offset++) records.push(recordOf(await w.read(offset)));
  return records;
}

/** Waits until the destination opened the moved partition (the flip's adoption runs in the background). */
async function servedAt(w: NodeWorker, end: number): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    // The metadata port and the front port are not ordered: a stats may arrive before the flip applies (421).
    const answer = await w.ask({ kind: 'stats', topicId: topic.id, partitions: [0] });
    if (answer.kind === 'statsResult' && answer.stats[0]!.nextOffset === end) return;
    await sleep(25);
  }
  throw new Error(`node ${w.nodeId} never served the partition up to ${end}`);
}

t.test('a partition moves with every record, its origins and its ack frontier; the source sets its copy aside', async (t) => {
  const [dirA, dirB] = [await tempDataDir(t), await tempDataDir(t)];
  const a = await nodeStarted(t, dirA, 1, stateWith(topic), 5);
  const b = await nodeStarted(t, dirB, 2, stateWith(topic), 5);
  // Records from three origins: A's own ingress, node 3's hand-off, and node 2's (the destination's own records).
  a.send(dispatch(5, [entry(1, ['a0', 'a1', 'a2'], 'k')]));
  await a.durable(1);
  const fromThree = [entry(40, ['c0', 'c1']), entry(41, ['c2'])];
  await a.handoff(3, 5, fromThree);
  const fromTwo = [entry(70, ['b0', 'b1'])];
  await a.handoff(2, 5, fromTwo);
  // Two leases, one acked: the frontier moves to 1 and offset 1 stays leased at the flip.
  const taken = await a.ask({ kind: 'take', topicId: topic.id, partitions: [0], max: 2 });
  if (taken.kind !== 'taken') throw new Error(JSON.stringify(taken));
  const settled = await a.ask({ kind: 'settle', topicId: topic.id, mode: 'ack', handles: taken.handles.split(handleSeparator)[0]! });
  t.same(settled.kind === 'settledResult' && [...settled.statuses], [204]);

  for (const w of [a, b]) w.commit(6, moveStart);
  const copied = await copyUntil(t, a, b, 0, false);
  t.equal(copied, 8, 'caught up while copying');
  a.send(dispatch(6, [entry(2, ['a3', 'a4'])]));
  await a.durable(2);

  for (const w of [a, b]) w.commit(7, freeze(true));
  a.send(dispatch(7, [entry(3, ['held while frozen'])]));
  const end = await copyUntil(t, a, b, copied, true);
  t.equal(end, 10, 'the final chunk ends at the records staged before the freeze');
  t.same(a.inbox.filter((m) => m.kind === 'durable' && m.seqUpTo >= 3), [], 'the frozen partition\'s record is held, not answered');
  const before = await readAll(a, 0, end);

  for (const w of [a, b]) w.commit(8, flip);
  const durable = await a.take('durable', (m) => m.seqUpTo >= 3);
  t.ok(durable.metaIndex >= 8, 'the held record is answered after the flip, with the flip applied');
  const moved = await a.read(0);
  t.same(moved.kind === 'failed' && moved.refusal, { id: 'partitionMoved', args: [topic.id, 0] }, 'the source answers 421 after the flip');
  const released = await a.ask({ kind: 'moveRelease', topicId: topic.id, partition: 0, metaIndex: 8 });
  t.equal(released.kind, 'moveReleased');
  const aside = await setAsideList(dirA);
  t.same(aside.map((e) => [e.kind, e.topicId, e.partition]), [['partition', topic.id, 0]], 'the source set its copy aside');
  t.ok(aside[0]!.sizeBytes > 0);
  await t.rejects(stat(join(dirA, 'topics', topic.id, '0')), { code: 'ENOENT' });

  await servedAt(b, end);
  const after = await readAll(b, 0, end);
  t.same(after, before, 'every record at the same offset with the same key, timestamp and payload');
  t.same((await readdir(join(dirB, 'incoming', topic.id))), [], 'the incoming copy became the partition');
  await b.handoff(3, 8, fromThree);
  b.send(dispatch(8, fromTwo));
  await b.durable(70);
  t.equal(await b.nextOffset(), end, 'hand-offs sent again store nothing twice (node 3\'s and the destination\'s own)');
  const redelivered = await b.ask({ kind: 'take', topicId: topic.id, partitions: [0], max: 20 });
  if (redelivered.kind !== 'taken') throw new Error(JSON.stringify(redelivered));
  const offsets = redelivered.handles.split(handleSeparator).map((h) => Number(h.split(':')[1])).sort((x, y) => x - y);
  t.same(offsets, Array.from({ length: end - 1 }, (_, i) => i + 1), 'the acked offset is not delivered again; the one leased at the flip is');
  b.send(dispatch(8, [entry(80, ['new at B'])]));
  await b.durable(80);
  t.equal(await b.nextOffset(), end + 1, 'new records continue after the copied ones');
});

t.test('a chunk that fails its crc32 answers copyUnverifiable; an abort discards the copy and unfreezes the source', async (t) => {
  const [dirA, dirB] = [await tempDataDir(t), await tempDataDir(t)];
  const a = await nodeStarted(t, dirA, 1, stateWith(topic), 5);
  const b = await nodeStarted(t, dirB, 2, stateWith(topic), 5);
  a.send(dispatch(5, [entry(1, ['a0', 'a1'])]));
  await a.durable(1);
  for (const w of [a, b]) w.commit(6, moveStart);
  const chunk = await chunkRead(a, 0, 1 << 20);
  const damaged = { ...chunk, records: chunk.records.slice() };
  damaged.records[damaged.records.byteLength - 3]! ^= 0x01;
  const refused = await chunkWrite(b, damaged);
  t.same(refused.kind === 'failed' && refused.refusal.id, 'copyUnverifiable', 'a damaged chunk is refused');
  const misnamed = await chunkWrite(b, { ...chunk, crc32: (chunk.crc32 ^ 1) >>> 0 });
  t.same(misnamed.kind === 'failed' && misnamed.refusal.id, 'copyUnverifiable', 'intact frames under another crc32 are refused');
  const written = await chunkWrite(b, chunk);
  t.same(written.kind === 'moveWritten' && written.nextOffset, 2, 'the intact chunk is stored');
  t.ok((await stat(join(dirB, 'incoming', topic.id, '0'))).isDirectory());

  for (const w of [a, b]) w.commit(7, freeze(true));
  a.send(dispatch(7, [entry(2, ['held'])]));
  for (const w of [a, b]) w.commit(8, { type: 'move.abort', topicId: topic.id, partition: 0 });
  await a.durable(2);
  t.equal(await a.nextOffset(), 3, 'after the abort the held record is stored at the source');
  for (let attempt = 0; attempt < 200 && (await setAsideList(dirB)).length === 0; attempt++) await sleep(25);
  t.same((await setAsideList(dirB)).map((e) => e.kind), ['staging'], 'the destination set its incoming copy aside');
  await t.rejects(stat(join(dirB, 'incoming', topic.id, '0')), { code: 'ENOENT' });
  const discarded = await b.ask({ kind: 'moveDiscard', topicId: topic.id, partition: 0 });
  t.equal(discarded.kind, 'moveReleased', 'a discard of a copy already aside is answered');
});

t.test('a destination restarted mid-copy continues from its copy\'s end', async (t) => {
  const [dirA, dirB] = [await tempDataDir(t), await tempDataDir(t)];
  const a = await nodeStarted(t, dirA, 1, stateWith(topic), 5);
  let b = await nodeStarted(t, dirB, 2, stateWith(topic), 5);
  a.send(dispatch(5, [entry(1, Array.from({ length: 12 }, (_, i) => `r${i}`))]));
  await a.durable(1);
  for (const w of [a, b]) w.commit(6, moveStart);
  const first = await chunkWrite(b, await chunkRead(a, 0));
  const firstEnd = first.kind === 'moveWritten' ? first.nextOffset : -1;
  t.ok(firstEnd > 0 && firstEnd < 12, 'a first chunk holds part of the partition');
  await b.stop();
  const state = stateWith(topic);
  state.moves.set(`${topic.id}/0`, { ...moveStart.moves[0]! });
  b = await nodeStarted(t, dirB, 2, state, 6);
  // The front asks from 0 again: the copy skips what it holds and reports its end.
  const again = await chunkWrite(b, await chunkRead(a, 0));
  t.same(again.kind === 'moveWritten' && again.nextOffset, firstEnd, 'the restarted copy kept its records');
  const end = await copyUntil(t, a, b, firstEnd, false);
  t.equal(end, 12);
  for (const w of [a, b]) w.commit(7, freeze(true));
  t.equal(await copyUntil(t, a, b, end, true), 12);
  const before = await readAll(a, 0, 12);
  for (const w of [a, b]) w.commit(8, flip);
  await servedAt(b, 12);
  t.same(await readAll(b, 0, 12), before);
});

t.test('a partition reassigned from a lost member starts at its start offset', async (t) => {
  const dir = await tempDataDir(t);
  const w = await nodeStarted(t, dir, 1, stateWith({ ...topic, owners: [3], targetOwners: [3] }), 5);
  w.commit(6, { type: 'partition.reassign', topicId: topic.id, partition: 0, from: 3, to: 1, startOffset: 1000 });
  w.send(dispatch(6, [entry(1, ['first'])]));
  await w.durable(1);
  t.equal(new TextDecoder().decode(recordOf(await w.read(1000)).payload), 'first', 'the first record gets the start offset');
  const below = await w.read(999);
  t.same(below.kind === 'readResult' && below.status, 'aged_out', 'offsets below the start never held a record');
  t.equal(await w.nextOffset(), 1001);
});
