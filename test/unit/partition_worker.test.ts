// Goal: the partition worker stores each owned ingress record exactly once, answers 'durable' only after
// its metadata replica knows the topic, serves reads and stats, survives a restart, removes deleted
// topics, and fail-stops when a flush cannot write. Method: the real compiled worker thread on a temp
// data dir, fed a metadata snapshot and committed entries on its metadata port and dispatches of
// frames built exactly as the ingress log writes them.
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { setTimeout as sleep } from 'node:timers/promises';
import type { IngressEntry } from '../../src/protocol/ingress_frame.js';
import { encodeIngressEntry } from '../helpers/ingress_entries.js';
import { workerForPartition } from '../../src/protocol/ownership.js';
import type { FromMetadata, FromWorker, PartitionWorkerData, StoredRecordView, ToWorker } from '../../src/protocol/thread_messages.js';
import type { MetadataState, TopicRecord } from '../../src/protocol/metadata_types.js';
import { emptyMetadataState } from '../../src/metadata/state.js';
import { encodeFrame, scanFrames } from '../../src/util/frame.js';

const topicA: TopicRecord = {
  name: 'orders',
  id: '0123456789abcdef',
  partitions: 3,
  retentionMs: 3_600_000,
  visibilityTimeoutMs: 30_000,
  maxInFlightPerPartition: 100,
  maxAckedAheadPerPartition: 100,
  createdAtSec: 1_700_000_000,
  owners: [1, 1, 1],
  targetOwners: [1, 1, 1],
};
const topicB: TopicRecord = { ...topicA, name: 'events', id: 'fedcba9876543210', partitions: 4, owners: [1, 1, 1, 1], targetOwners: [1, 1, 1, 1] };
const timestampSec = 1_700_000_100;

/** One running worker and everything it has posted, in order. */
class WorkerUnderTest {
  readonly inbox: FromWorker[] = [];
  /** What the worker wrote: pino JSON lines on stdout, and anything on stderr. */
  outputText = '';
  readonly exited: Promise<number>;
  private hasExited = false;
  private readonly metadata = new MessageChannel();
  private readonly worker: Worker;
  private waiters: (() => void)[] = [];
  private nextReqId = 1;

  constructor(dataDir: string, opts: { workerIndex?: number; workerCount?: number; retentionCheckIntervalMs?: number; syncIntervalMs?: number } = {}) {
    const workerData: PartitionWorkerData = {
      nodeId: 1,
      workerIndex: opts.workerIndex ?? 0,
      workerCount: opts.workerCount ?? 1,
      dataDir,
      segmentBytesMax: 1024 * 1024,
      metadataPort: this.metadata.port2,
      retentionCheckIntervalMs: opts.retentionCheckIntervalMs ?? 60_000,
      ackFlushIntervalMs: 10,
      flushIntervalMs: 0,
      syncIntervalMs: opts.syncIntervalMs ?? 0,
      logLevel: 'info',
    };
    this.worker = new Worker(new URL('../../workers/partition_worker.js', import.meta.url), {
      workerData,
      transferList: [this.metadata.port2],
      stdout: true,
      stderr: true,
    });
    this.worker.stdout.on('data', (chunk: Buffer) => (this.outputText += chunk.toString()));
    this.worker.stderr.on('data', (chunk: Buffer) => (this.outputText += chunk.toString()));
    this.worker.on('message', (msg: FromWorker) => {
      this.inbox.push(msg);
      for (const wake of this.waiters.splice(0)) wake();
    });
    this.exited = new Promise((resolve) => this.worker.once('exit', resolve));
    void this.exited.then(() => (this.hasExited = true));
  }

  send(msg: ToWorker): void {
    this.worker.postMessage(msg);
  }

  metadataSend(msg: FromMetadata): void {
    this.metadata.port1.postMessage(msg);
  }

  /** The first message not yet taken that matches, removed from the inbox. */
  async takeWhere(match: (m: FromWorker) => boolean, what: string): Promise<FromWorker> {
    // A deadline for a thread that went quiet, generous for a busy machine; an answer that comes ends it at once.
    const deadline = Date.now() + 20_000;
    for (;;) {
      const at = this.inbox.findIndex(match);
      if (at >= 0) return this.inbox.splice(at, 1)[0]!;
      if (Date.now() > deadline) throw new Error(`no ${what} message within 20 s; inbox ${JSON.stringify(this.inbox)}`);
      await Promise.race([new Promise<void>((wake) => this.waiters.push(wake)), sleep(100)]);
    }
  }

  async take<K extends FromWorker['kind']>(kind: K, match: (m: Extract<FromWorker, { kind: K }>) => boolean = () => true): Promise<Extract<FromWorker, { kind: K }>> {
    const found = await this.takeWhere((m) => m.kind === kind && match(m as Extract<FromWorker, { kind: K }>), kind);
    return found as Extract<FromWorker, { kind: K }>;
  }

  /** Waits for 'durable' covering seqUpTo. Reports come in order, and a round may cover several dispatches. */
  async durable(seqUpTo: number): Promise<void> {
    for (;;) {
      const report = await this.take('durable');
      if (report.seqUpTo >= seqUpTo) return;
    }
  }

  async read(topicId: string, partition: number, offset: number): Promise<Extract<FromWorker, { kind: 'readResult' | 'failed' }>> {
    const reqId = this.nextReqId++;
    this.send({ kind: 'read', reqId, topicId, partition, offset });
    const answer = await this.takeWhere((m) => (m.kind === 'readResult' || m.kind === 'failed') && m.reqId === reqId, 'read answer');
    return answer as Extract<FromWorker, { kind: 'readResult' | 'failed' }>;
  }

  async stats(topicId: string, partitions: number[]): Promise<Extract<FromWorker, { kind: 'statsResult' }>['stats']> {
    const reqId = this.nextReqId++;
    this.send({ kind: 'stats', reqId, topicId, partitions });
    return (await this.take('statsResult', (m) => m.reqId === reqId)).stats;
  }

  async shutdown(): Promise<number> {
    this.send({ kind: 'shutdown' });
    await this.take('closed');
    this.metadata.port1.close();
    return this.exited;
  }

  async terminate(): Promise<void> {
    this.metadata.port1.close();
    await this.worker.terminate();
  }

  /** Ends the worker after its test: a graceful shutdown, so that no file operation of the worker is cut off by
   *  terminate() (Node 20 aborts the whole test process when a worker is terminated just as an fs.promises call
   *  starts: `OpenFileHandle ... Assertion failed: (argc) == (5)` in a clean-clone CI run), and terminate() only for a
   *  worker that has not exited 5 s after being asked to. */
  async stop(): Promise<void> {
    if (!this.hasExited) {
      this.send({ kind: 'shutdown' });
      await Promise.race([this.exited, sleep(5_000)]);
    }
    await this.terminate();
  }
}

async function started(
  t: Test,
  dataDir: string,
  state: MetadataState,
  index: number,
  opts: { workerIndex?: number; workerCount?: number; retentionCheckIntervalMs?: number; syncIntervalMs?: number } = {},
): Promise<WorkerUnderTest> {
  const w = new WorkerUnderTest(dataDir, opts);
  t.teardown(() => w.stop());
  await w.take('ready');
  w.metadataSend({ kind: 'snapshot', index, state });
  return w;
}

async function tempDataDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'partition-worker-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function stateWith(...topics: TopicRecord[]): MetadataState {
  const state = emptyMetadataState();
  // Every owner must be a member (applyCommand refuses a create naming another node).
  state.members.set(1, { id: 1, apiAddress: '127.0.0.1:7942', internalAddress: '127.0.0.1:7943', addedAtMs: 0 });
  for (const topic of topics) {
    state.topics.set(topic.name, { ...topic });
    state.topicNamesLower.set(topic.name.toLowerCase(), topic.name);
  }
  return state;
}

const text = (s: string): Uint8Array => new TextEncoder().encode(s);

function entry(seq: number, topicId: string, records: [partition: number, payload: string, key?: string][]): IngressEntry {
  return {
    seq,
    topicId,
    timestampSec,
    records: records.map(([partition, payload, key]) => ({ partition, key: key === undefined ? null : text(key), payload: text(payload), payloadKind: 1 })),
  };
}

/** As the front dispatches a synced group: its frames at the start of a buffer that runs past them (the group's buffer
 *  keeps scratch there, here 0xee bytes, which a worker must never read). */
function dispatch(metaIndex: number, entries: IngressEntry[]): ToWorker {
  const frames = entries.map((e) => encodeFrame(encodeIngressEntry(e)));
  const framesBytes = frames.reduce((n, f) => n + f.byteLength, 0);
  const buffer = new Uint8Array(framesBytes + 4096).fill(0xee);
  let at = 0;
  for (const frame of frames) {
    buffer.set(frame, at);
    at += frame.byteLength;
  }
  return { kind: 'dispatch', metaIndex, frames: buffer.subarray(0, framesBytes), lastSeq: entries.at(-1)!.seq };
}

/** A read answer's status, or the refusal id of a 'failed' one. */
function readStatus(result: Extract<FromWorker, { kind: 'readResult' | 'failed' }>): string {
  return result.kind === 'readResult' ? result.status : result.refusal.id;
}

function recordText(t: Test, result: Extract<FromWorker, { kind: 'readResult' | 'failed' }>): { payload: string; key: string | null } {
  t.equal(result.kind === 'readResult' && result.status, 'ok');
  const record = (result as { record: StoredRecordView }).record;
  t.equal(record.timestampSec, timestampSec);
  t.equal(record.payloadKind, 1);
  t.equal(record.payload.byteLength, record.payload.buffer.byteLength, 'payload arrives in its own buffer');
  const decoder = new TextDecoder();
  return { payload: decoder.decode(record.payload), key: record.key === null ? null : decoder.decode(record.key) };
}

const entriesA = [
  entry(1, topicA.id, [[0, 'a0'], [1, 'a1', 'k1'], [0, 'a2'], [7, 'beyond the partition count']]),
  entry(2, 'aaaaaaaaaaaaaaaa', [[0, 'unknown topic']]),
  entry(3, topicA.id, [[2, 'a3', 'k3']]),
];

t.test('stores, reads, dedupes a replay, restarts and deletes', async (t) => {
  const dataDir = await tempDataDir(t);
  const w = await started(t, dataDir, stateWith(topicA), 5);
  w.send(dispatch(5, entriesA));
  await w.durable(3);
  t.same(recordText(t, await w.read(topicA.id, 0, 0)), { payload: 'a0', key: null });
  t.same(recordText(t, await w.read(topicA.id, 0, 1)), { payload: 'a2', key: null });
  t.same(recordText(t, await w.read(topicA.id, 1, 0)), { payload: 'a1', key: 'k1' });
  t.same(recordText(t, await w.read(topicA.id, 2, 0)), { payload: 'a3', key: 'k3' });
  t.equal(readStatus(await w.read(topicA.id, 0, 2)), 'past_end');
  t.same(await readdir(join(dataDir, 'topics')), [topicA.id], 'records of an unknown topic are dropped');
  t.same((await readdir(join(dataDir, 'topics', topicA.id))).sort(), ['0', '1', '2'], 'partition 7 is beyond the count');

  const stats = await w.stats(topicA.id, [0, 1, 2]);
  t.same(stats.map((s) => [s.index, s.segments, s.oldestOffset, s.nextOffset, s.highWatermark, s.oldestSegmentAtSec]), [
    [0, 1, 0, 2, 2, timestampSec],
    [1, 1, 0, 1, 1, timestampSec],
    [2, 1, 0, 1, 1, timestampSec],
  ]);
  const partition0 = join(dataDir, 'topics', topicA.id, '0');
  const filesBytes = async (): Promise<number> =>
    (await stat(join(partition0, '00000000000000000000.log'))).size + (await stat(join(partition0, '00000000000000000000.idx'))).size;
  // While open the .log may hold zeros ahead of its end (zero fill); sizeBytes counts the records' bytes only.
  t.ok((await filesBytes()) >= stats[0]!.sizeBytes, 'the files hold at least the records');

  w.send(dispatch(5, entriesA));
  await w.durable(3);
  t.same((await w.stats(topicA.id, [0, 1, 2])).map((s) => s.nextOffset), [2, 1, 1], 'a replay stores nothing twice');

  t.equal(await w.shutdown(), 0, 'the worker exits cleanly after closed');
  t.equal(await filesBytes(), stats[0]!.sizeBytes, 'a clean shutdown cut the zero tail: the files hold the records');
  const again = await started(t, dataDir, stateWith(topicA), 5);
  t.same(recordText(t, await again.read(topicA.id, 0, 1)), { payload: 'a2', key: null });
  t.same((await again.stats(topicA.id, [0, 1, 2])).map((s) => s.highWatermark), [2, 1, 1]);
  again.send(dispatch(5, [...entriesA, entry(4, topicA.id, [[0, 'a4']])]));
  await again.durable(4);
  t.same(recordText(t, await again.read(topicA.id, 0, 2)), { payload: 'a4', key: null }, 'only the new record after a restart');
  t.equal(readStatus(await again.read(topicA.id, 0, 3)), 'past_end');

  again.metadataSend({ kind: 'committed', entries: [{ index: 6, command: { type: 'topic.delete', name: topicA.name, id: topicA.id } }] });
  await waitForAbsent(join(dataDir, 'topics', topicA.id));
  t.same(await readdir(join(dataDir, 'topics')), []);
  t.same(await again.stats(topicA.id, [0]), [{ index: 0, segments: 0, oldestOffset: 0, nextOffset: 0, highWatermark: 0, sizeBytes: 0 }]);
  t.equal(readStatus(await again.read(topicA.id, 0, 0)), 'past_end');
  again.send(dispatch(6, [entry(5, topicA.id, [[0, 'after delete']])]));
  await again.durable(5);
  await t.rejects(stat(join(dataDir, 'topics', topicA.id)), { code: 'ENOENT' }, 'a deleted topic takes no records');
});

t.test('a dispatch waits until the replica has applied its metaIndex', async (t) => {
  const dataDir = await tempDataDir(t);
  const w = await started(t, dataDir, stateWith(topicA), 5);
  w.send(dispatch(6, [entry(10, topicB.id, [[1, 'b1']])]));
  await sleep(200);
  t.same(w.inbox, [], 'no durable while topic B is unknown to the replica');
  w.metadataSend({ kind: 'committed', entries: [{ index: 6, command: { type: 'topic.create', topic: topicB } }] });
  await w.durable(10);
  t.same(recordText(t, await w.read(topicB.id, 1, 0)), { payload: 'b1', key: null }, 'stored once the topic was known');
});

t.test('a worker stores only the partitions it owns and answers a dispatch that holds none', async (t) => {
  const dataDir = await tempDataDir(t);
  const owned = [0, 1, 2, 3].filter((p) => workerForPartition(topicB.id, p, 2) === 0);
  const foreign = [0, 1, 2, 3].filter((p) => workerForPartition(topicB.id, p, 2) === 1);
  t.ok(owned.length > 0 && foreign.length > 0, 'the test topic spreads over both workers');
  const w = await started(t, dataDir, stateWith(topicB), 1, { workerIndex: 0, workerCount: 2 });
  w.send(dispatch(1, [entry(1, topicB.id, [0, 1, 2, 3].map((p) => [p, `b${p}`]))]));
  w.send(dispatch(1, [entry(2, topicB.id, [[foreign[0]!, 'not mine']])]));
  // The second dispatch holds no record of this worker and is still answered.
  await w.durable(2);
  // 'available' reports (records became visible) may come before or after the sync's 'durable'.
  t.same(w.inbox.filter((m) => m.kind !== 'available'), [], 'no report but durable and available');
  t.same((await readdir(join(dataDir, 'topics', topicB.id))).sort(), owned.map(String).sort());
  t.same(recordText(t, await w.read(topicB.id, owned[0]!, 0)), { payload: `b${owned[0]}`, key: null });
});

t.test('a record that fails its check on disk answers failed 500', async (t) => {
  const dataDir = await tempDataDir(t);
  const w = await started(t, dataDir, stateWith(topicA), 5);
  w.send(dispatch(5, [entry(1, topicA.id, [[0, 'a0'], [0, 'a1']])]));
  await w.durable(1);
  const segment = join(dataDir, 'topics', topicA.id, '0', '00000000000000000000.log');
  const bytes = await readFile(segment);
  // The active segment may carry zeros past its records: corrupt the last record itself (scanFrames stops at the zeros).
  const dataEnd = scanFrames(bytes).validBytes;
  bytes[dataEnd - 2] = bytes[dataEnd - 2]! ^ 0xff;
  await writeFile(segment, bytes);
  const result = await w.read(topicA.id, 0, 1);
  t.same(result, { kind: 'failed', reqId: (result as { reqId: number }).reqId, refusal: { id: 'partitionUnreadable', args: [] } });
  t.same(recordText(t, await w.read(topicA.id, 0, 0)), { payload: 'a0', key: null }, 'other records still read');
});

t.test('a flush that cannot write ends the worker with a non-zero code', async (t) => {
  const dataDir = await tempDataDir(t);
  await mkdir(join(dataDir, 'topics'));
  // A file where the topic directory belongs: creating the partition directory fails at the flush.
  await writeFile(join(dataDir, 'topics', topicA.id), 'not a directory');
  const w = await started(t, dataDir, stateWith(topicA), 5);
  w.send(dispatch(5, [entry(1, topicA.id, [[0, 'a0']])]));
  t.equal(await w.exited, 1);
  t.same(w.inbox.filter((m) => m.kind === 'durable'), [], 'nothing was reported durable');
  t.match(w.outputText, /"component":"partition-worker".*"msg":"flush failed, exiting"/);
});

async function waitForAbsent(path: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt++) {
    try {
      await stat(path);
    } catch {
      return;
    }
    await sleep(50);
  }
  throw new Error(`${path} still exists`);
}

t.test('retention deletes what is older than retention_ms and keeps forever with 0', async (t) => {
  const dataDir = await tempDataDir(t);
  const forever: TopicRecord = { ...topicB, retentionMs: 0 };
  const w = await started(t, dataDir, stateWith(topicA, forever), 1, { retentionCheckIntervalMs: 100 });
  // Records stamped in 2023 are far older than topicA's hour of retention.
  const owned = (topic: TopicRecord) => [...Array(topic.partitions).keys()].find((p) => workerForPartition(topic.id, p, 1) === 0)!;
  w.send(dispatch(1, [entry(1, topicA.id, [[owned(topicA), 'old-a']]), entry(2, forever.id, [[owned(forever), 'old-b']])]));
  await w.durable(2);
  let statsA = await w.stats(topicA.id, [owned(topicA)]);
  for (let attempt = 0; attempt < 50 && statsA[0]!.segments > 0; attempt++) {
    await sleep(100);
    statsA = await w.stats(topicA.id, [owned(topicA)]);
  }
  t.same(statsA[0], { index: owned(topicA), segments: 0, oldestOffset: 1, nextOffset: 1, highWatermark: 1, sizeBytes: 0 },
    'the old segment is gone and the offsets keep their meaning');
  const aged = await w.read(topicA.id, owned(topicA), 0);
  t.same(aged.kind === 'readResult' && aged.status, 'aged_out');
  const statsB = await w.stats(forever.id, [owned(forever)]);
  t.equal(statsB[0]!.segments, 1, 'retention_ms 0 keeps messages forever');
  const kept = await w.read(forever.id, owned(forever), 0);
  t.equal(recordText(t, kept).payload, 'old-b');
});

t.test('caps changed by a PATCH entry whose partitions group failed still reach the consume side', async (t) => {
  const dataDir = await tempDataDir(t);
  const w = await started(t, dataDir, stateWith(topicA), 1);
  const p = [...Array(topicA.partitions).keys()].find((i) => workerForPartition(topicA.id, i, 1) === 0)!;
  w.send(dispatch(1, [entry(1, topicA.id, [[p, 'a'], [p, 'b'], [p, 'c'], [p, 'd']])]));
  await w.durable(1);
  // Spec §4 PATCH: the caps group applies, then partitions (not larger) fails; the caps stay applied.
  w.metadataSend({ kind: 'committed', entries: [{ index: 2, command: { type: 'topic.update', name: topicA.name, id: topicA.id,
    changes: { maxInFlightPerPartition: 2, partitions: topicA.partitions } } }] });
  // The metadata port and the request port are not ordered against each other: a dispatch stamped with index 2 is
  // held until the worker applied that entry, so its 'durable' shows the entry is in.
  w.send(dispatch(2, [entry(2, topicA.id, [[p, 'e']])]));
  await w.durable(2);
  w.send({ kind: 'take', reqId: 900, topicId: topicA.id, partitions: [p], max: 4 });
  const taken = await w.take('taken', (m) => m.reqId === 900);
  t.equal(taken.count, 2, 'the lowered in-flight cap holds');
});

t.test('records are visible once written; durable is reported only after their sync, which an ack write forces', async (t) => {
  const dataDir = await tempDataDir(t);
  // Two workers: 'available' reports go to the front's waiters only when long polls can span workers.
  const w = await started(t, dataDir, stateWith(topicA), 1, { syncIntervalMs: 60_000, workerCount: 2 });
  const p = [...Array(topicA.partitions).keys()].find((i) => workerForPartition(topicA.id, i, 2) === 0)!;
  w.send(dispatch(1, [entry(1, topicA.id, [[p, 'a'], [p, 'b']])]));
  const available = await w.take('available');
  t.same(available.topics, [{ topicId: topicA.id, count: 2 }], 'both records are deliverable before any sync');
  t.same(recordText(t, await w.read(topicA.id, p, 1)), { payload: 'b', key: null });
  await sleep(300);
  t.same(w.inbox.filter((m) => m.kind === 'durable'), [], 'no durable report while the records wait for their sync');
  w.send({ kind: 'take', reqId: 901, topicId: topicA.id, partitions: [p], max: 1 });
  const taken = await w.take('taken', (m) => m.reqId === 901);
  w.send({ kind: 'settle', reqId: 902, topicId: topicA.id, mode: 'ack', handles: taken.handles });
  const settled = await w.take('settledResult', (m) => m.reqId === 902);
  t.same([...settled.statuses], [204]);
  // The ack state may name only synced offsets: its write (ackFlushIntervalMs 10) syncs the partition first, long
  // before syncIntervalMs; durable() throws when no report comes within 5 s.
  await w.durable(1);
});

t.test('a lost unsynced tail is stored again at the same offsets when the ingress log hands it over again', async (t) => {
  const dataDir = await tempDataDir(t);
  const p = [...Array(topicA.partitions).keys()].find((i) => workerForPartition(topicA.id, i, 2) === 0)!;
  const entries = [entry(1, topicA.id, [[p, 'r0'], [p, 'r1']]), entry(2, topicA.id, [[p, 'r2']]), entry(3, topicA.id, [[p, 'r3'], [p, 'r4']])];
  const first = await started(t, dataDir, stateWith(topicA), 1, { syncIntervalMs: 60_000, workerCount: 2 });
  first.send(dispatch(1, entries));
  await first.take('available');
  const before = await Promise.all([0, 1, 2, 3, 4].map(async (o) => recordText(t, await first.read(topicA.id, p, o)).payload));
  t.same(before, ['r0', 'r1', 'r2', 'r3', 'r4']);
  t.same(first.inbox.filter((m) => m.kind === 'durable'), [], 'nothing synced yet: the ingress log keeps all three entries');
  await first.terminate();
  // A power loss keeps what was synced and loses the rest: here the page cache reached the disk only up to the third
  // record's frame, and zeros (the fill) follow.
  const segment = join(dataDir, 'topics', topicA.id, String(p), '00000000000000000000.log');
  const bytes = await readFile(segment);
  bytes.fill(0, scanFrames(bytes).positions[3]);
  await writeFile(segment, bytes);
  const second = await started(t, dataDir, stateWith(topicA), 1, { syncIntervalMs: 60_000, workerCount: 2 });
  t.same((await second.stats(topicA.id, [p]))[0]!.highWatermark, 3, 'recovery kept the three records that reached the disk');
  second.send(dispatch(1, entries));
  await second.take('available');
  const after = await Promise.all([0, 1, 2, 3, 4].map(async (o) => recordText(t, await second.read(topicA.id, p, o)).payload));
  t.same(after, before, 'every offset names the record it named before the loss');
  t.equal(readStatus(await second.read(topicA.id, p, 5)), 'past_end', 'nothing stored twice');
  t.equal(await second.shutdown(), 0);
  t.ok(second.inbox.some((m) => m.kind === 'durable' && m.seqUpTo === 3), 'a clean shutdown syncs and reports durable');
});

t.test('a parked take waits on the worker: the flush that brings records answers it, unpark and topic deletion end it empty', async (t) => {
  const dataDir = await tempDataDir(t);
  const w = await started(t, dataDir, stateWith(topicA, topicB), 1);
  const [p, q] = [...Array(topicA.partitions).keys()];
  w.send({ kind: 'take', reqId: 910, topicId: topicA.id, partitions: [p!], max: 5, park: true });
  w.send({ kind: 'take', reqId: 911, topicId: topicA.id, partitions: [p!, q!], max: 1, park: true });
  w.send({ kind: 'take', reqId: 912, topicId: topicA.id, partitions: [p!], max: 1 });
  t.equal((await w.take('taken', (m) => m.reqId === 912)).count, 0, 'a take without park answers empty at once');
  // The port delivers in order and an empty take is answered at once: once its answer is in, everything sent
  // before it has been handled.
  let probeReqId = 950;
  const handled = async (): Promise<void> => {
    const reqId = probeReqId++;
    w.send({ kind: 'take', reqId, topicId: topicA.id, partitions: [], max: 1 });
    await w.take('taken', (m) => m.reqId === reqId);
  };
  // Records of q only: the take parked for p alone stays, the older one over p and q is answered.
  w.send(dispatch(1, [entry(1, topicA.id, [[q!, 'q0'], [q!, 'q1']])]));
  const first = await w.take('taken', (m) => m.reqId === 911);
  t.equal(first.count, 1, 'its max');
  t.match(first.messagesJson, /"partition":1,"offset":0/, 'the first record of q');
  await handled();
  t.notOk(w.inbox.some((m) => m.kind === 'taken' && m.reqId === 910), 'the take parked on p alone still waits');
  w.send(dispatch(1, [entry(2, topicA.id, [[p!, 'p0'], [p!, 'p1'], [p!, 'p2']])]));
  const second = await w.take('taken', (m) => m.reqId === 910);
  t.equal(second.count, 3, 'every record of p, under its max of 5');
  t.notOk(w.inbox.some((m) => m.kind === 'available'), 'a lone worker posts no available report: every long poll parks on it');
  w.send({ kind: 'unpark', takeReqId: 910 });
  await handled();
  t.notOk(w.inbox.some((m) => m.kind === 'taken' && m.reqId === 910), 'an unpark after the answer answers nothing more');
  w.send({ kind: 'take', reqId: 913, topicId: topicA.id, partitions: [p!], max: 1, park: true });
  w.send({ kind: 'unpark', takeReqId: 913 });
  const unparked = await w.take('taken', (m) => m.reqId === 913);
  t.same([unparked.count, unparked.messagesJson, unparked.handles], [0, '', ''], 'unparked: answered empty');
  w.send({ kind: 'take', reqId: 914, topicId: topicB.id, partitions: [0], max: 1, park: true });
  // The metadata port is another port: the take must be parked before the delete arrives.
  await handled();
  w.metadataSend({ kind: 'committed', entries: [{ index: 2, command: { type: 'topic.delete', name: topicB.name, id: topicB.id } }] });
  t.equal((await w.take('taken', (m) => m.reqId === 914)).count, 0, 'its topic deleted: answered empty');
  w.send({ kind: 'take', reqId: 915, topicId: topicA.id, partitions: [p!], max: 1, park: true });
  w.send({ kind: 'shutdown' });
  const refused = await w.take('failed', (m) => m.reqId === 915);
  t.same(refused.refusal, { id: 'partitionWorkerShuttingDown', args: [] }, 'shutdown answers a parked take 503');
  await w.take('closed');
});

t.test('a topic deleted while a flush round writes it: the worker forgets its logs and lives on', async (t) => {
  const dataDir = await tempDataDir(t);
  const w = await started(t, dataDir, stateWith(topicA, topicB), 1, { syncIntervalMs: 20 });
  // The first flush of a partition creates its directory and files, so the delete lands while the round writes.
  w.send(dispatch(1, [entry(1, topicB.id, [[0, 'b0'], [1, 'b1'], [2, 'b2'], [3, 'b3']])]));
  w.metadataSend({ kind: 'committed', entries: [{ index: 2, command: { type: 'topic.delete', name: topicB.name, id: topicB.id } }] });
  // Past several sync intervals: a sync of a destroyed log would have ended the worker.
  await sleep(300);
  w.send(dispatch(2, [entry(2, topicA.id, [[0, 'a0']])]));
  const read = await Promise.race([w.read(topicA.id, 0, 0), w.exited.then((code) => ({ kind: `exited ${code}` }))]);
  t.equal(read.kind, 'readResult', `the worker still answers (${w.outputText.slice(0, 300)})`);
  await w.durable(2);
  t.equal(w.outputText, '', 'and reported no failure');
});

t.test('files of topics a snapshot lacks are removed, never on an empty replica; empty orphan topic directories are swept', async (t) => {
  const dataDir = await tempDataDir(t);
  const topicsDir = join(dataDir, 'topics');
  const first = await started(t, dataDir, stateWith(topicA, topicB), 5);
  first.send(dispatch(5, [...entriesA, entry(4, topicB.id, [[0, 'b0']])]));
  await first.durable(4);
  t.equal(await first.shutdown(), 0);
  const orphanEmpty = join(topicsDir, '1111111111111111');
  const orphanWithStranger = join(topicsDir, '2222222222222222');
  await mkdir(orphanEmpty);
  await mkdir(orphanWithStranger);
  await writeFile(join(orphanWithStranger, 'notes.txt'), 'not ours');

  // A node joining with a new metadata log gets an empty first snapshot at index 0: it judges nothing on disk.
  const joined = await started(t, dataDir, stateWith(), 0);
  joined.metadataSend({ kind: 'snapshot', index: 7, state: stateWith(topicA, topicB) });
  joined.send(dispatch(7, [entry(5, topicA.id, [[1, 'a5']])]));
  await joined.durable(5);
  t.same(recordText(t, await joined.read(topicA.id, 0, 0)), { payload: 'a0', key: null }, 'the empty replica removed nothing');
  t.same(recordText(t, await joined.read(topicA.id, 1, 1)), { payload: 'a5', key: null });
  await waitForAbsent(orphanEmpty);
  t.same((await readdir(topicsDir)).sort(), [topicA.id, '2222222222222222', topicB.id].sort(),
    'the empty directory of an unknown topic is swept; one holding a file that is not ours stays');

  // A snapshot installed from the leader that lacks topic A: A was deleted while this node was behind.
  joined.metadataSend({ kind: 'snapshot', index: 9, state: stateWith(topicB) });
  await waitForAbsent(join(topicsDir, topicA.id));
  t.same(recordText(t, await joined.read(topicB.id, 0, 0)), { payload: 'b0', key: null }, 'topic B is kept');
  t.equal(await joined.shutdown(), 0);

  // A restart whose stored metadata (a first snapshot past index 0) no longer holds B: B's files go.
  const restarted = await started(t, dataDir, stateWith(), 11);
  await waitForAbsent(join(topicsDir, topicB.id));
  t.equal(readStatus(await restarted.read(topicB.id, 0, 0)), 'past_end');
  t.same(await readdir(topicsDir), ['2222222222222222']);
});
