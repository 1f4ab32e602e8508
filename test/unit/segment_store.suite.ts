// Goal: both SegmentStore implementations (file: PartitionLog, memory: MemorySegmentStore) keep the same semantics:
// offsets, high watermark after flush, synced against written, rolls at segmentBytesMax, retention of whole
// segments by timestamp, holdsIngress and lastIngress over a restart and a crash (of this node's records and of each
// origin's that other nodes handed over, across rolls and retention), readMany, stats.
// Method: NATS's testAllStoreAllPermutations: one suite, run by segment_store_file.test.ts and
// segment_store_memory.test.ts with a factory each; the records are the fixtures' test stream, and sizes are
// checked against the record codec's frame sizes, which both stores must keep.
import type { Test } from 'tap';
import { recordFrameBytesMax } from '../../workers/store/segment_record.js';
import type { SegmentStore, StoredRecord } from '../../workers/store/segment_store.js';
import { partitionRecord, segmentBytesSmall } from '../helpers/segment_log_fixtures.js';

export interface StoreFactory {
  /** A new empty store of a partition of its own, closed at the test's end. */
  create(t: Test, segmentBytesMax: number): Promise<SegmentStore>;
  /** A new empty store whose first record gets startOffset, kept durably (the file store's start mark). */
  createAt(t: Test, segmentBytesMax: number, startOffset: number): Promise<SegmentStore>;
  /** Closes the store cleanly and opens what it left, as a restart does. */
  restart(t: Test, store: SegmentStore): Promise<SegmentStore>;
  /** The process dies now: the store a restart finds. It keeps at least what was synced and at most what was
   *  written (the memory store keeps exactly the synced part; the file store's copy keeps the page cache). */
  crash(t: Test, store: SegmentStore): Promise<SegmentStore>;
}

function record(i: number, timestampSec?: number, payloadBytes = 40): Omit<StoredRecord, 'offset'> {
  return partitionRecord(i, timestampSec, payloadBytes);
}

/** The bytes stats() counts for records [0, count) of the test stream stored at offsets [0, count). */
function streamBytes(count: number): number {
  let bytes = 0;
  for (let i = 0; i < count; i++) bytes += recordFrameBytesMax(i, record(i)) + 4;
  return bytes;
}

async function expectRecord(t: Test, store: SegmentStore, offset: number, i: number, timestampSec?: number): Promise<void> {
  const got = await store.read(offset);
  if (typeof got === 'string') throw new Error(`offset ${offset}: ${got}`);
  const want = record(i, timestampSec);
  t.equal(got.offset, offset);
  t.equal(got.timestampSec, want.timestampSec, `timestamp of ${offset}`);
  t.same(got.key === null ? null : [...got.key], want.key === null ? null : [...want.key], `key of ${offset}`);
  t.same([...got.payload], [...want.payload], `payload of ${offset}`);
  t.equal(got.ingressSeq, want.ingressSeq, `ingressSeq of ${offset}`);
}

async function storeWith(t: Test, factory: StoreFactory, timestampsSec: number[]): Promise<SegmentStore> {
  const store = await factory.create(t, segmentBytesSmall);
  timestampsSec.forEach((ts, i) => store.stage(record(i, ts)));
  await store.flush();
  return store;
}

/** Runs every case of the suite against the stores factory makes. */
export function segmentStoreSuite(t: Test, factory: StoreFactory): void {
  t.test('stage, flush and read round trip; stats count the frames and index entries', (t) => roundTrip(t, factory));
  t.test('one flush at a time, and records staged during a flush wait for the next', (t) => flushOneAtATime(t, factory));
  t.test('the high watermark moves at flush, the synced one at sync', (t) => syncedAgainstWritten(t, factory));
  t.test('segments roll at segmentBytesMax and readMany crosses them in the order asked', (t) => rollAndReadMany(t, factory));
  t.test('retain deletes whole old segments, oldest first; below them reads are aged_out', (t) => retention(t, factory));
  t.test('deleting every segment keeps nextOffset and lastIngress over a restart', (t) => retentionOfAll(t, factory));
  t.test('retain and flush never overlap', (t) => retainFlushExclusive(t, factory));
  t.test('a restart restores offsets, lastIngress and holdsIngress', (t) => restart(t, factory));
  t.test('a crash keeps what was synced; a replay stores the lost tail at the same offsets', (t) => crash(t, factory));
  t.test('records of other origins: each origin\'s position survives rolls and a restart', (t) => origins(t, factory));
  t.test('after foreign records, a roll keeps this node\'s own position for a restart', (t) => ownPositionAtRoll(t, factory));
  t.test('a partial retention keeps every origin\'s position over a restart', (t) => originsOverRetention(t, factory));
  t.test('local records staged before the first foreign one keep their position over a roll', (t) => localBeforeForeign(t, factory));
  t.test('deleting every segment keeps the newest positions of every origin', (t) => originsOverRetentionOfAll(t, factory));
  t.test('stagedSinceOpen counts the records staged since the store was opened', (t) => stagedSinceOpen(t, factory));
  t.test('a store created at a start offset keeps it over restarts and a crash, empty or not', (t) => startOffset(t, factory));
}

async function roundTrip(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, 1024 * 1024);
  t.same(store.stats(), { segments: 0, oldestOffset: 0, nextOffset: 0, highWatermark: 0, sizeBytes: 0 });
  t.equal(store.offsets.lastIngress, null);
  for (let i = 0; i < 3; i++) t.equal(store.stage(record(i)), i);
  t.equal(store.offsets.nextOffset, 3);
  t.equal(store.offsets.highWatermark, 0, 'nothing is visible before the flush');
  t.equal(await store.read(0), 'past_end');
  await store.flush();
  t.equal(store.offsets.highWatermark, 3);
  for (let i = 0; i < 3; i++) await expectRecord(t, store, i, i);
  t.equal(await store.read(3), 'past_end');
  t.equal(await store.read(1000), 'past_end');
  t.same(store.offsets.lastIngress, { seq: 102, index: 0 });
  t.same(store.stats(), { segments: 1, oldestOffset: 0, nextOffset: 3, highWatermark: 3, sizeBytes: streamBytes(3), oldestSegmentAtSec: 1_700_000_000 });
  t.throws(() => store.stage(record(2)), /ingress \(102, 0\) is not after \(102, 0\)/, 'a record already held is refused');
}

async function flushOneAtATime(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, 1024 * 1024);
  store.stage(record(0));
  const first = store.flush();
  await t.rejects(store.flush(), /one flush at a time/);
  store.stage(record(1));
  await first;
  t.equal(store.offsets.highWatermark, 1);
  t.equal(store.offsets.nextOffset, 2);
  await store.flush();
  t.equal(store.offsets.highWatermark, 2);
  await expectRecord(t, store, 1, 1);
}

async function syncedAgainstWritten(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  store.stage(record(0));
  t.notOk(store.offsets.unsynced, 'a staged record is not written');
  await store.flush();
  t.equal(store.offsets.highWatermark, 1, 'readable once written');
  t.equal(store.offsets.syncedHighWatermark, 0, 'not synced by the flush');
  t.ok(store.offsets.unsynced);
  await expectRecord(t, store, 0, 0);
  // Every other flush rolls while a sync is in flight: both end, and the sync covers what was written when it began.
  for (let i = 1; i < 7; i++) {
    store.stage(record(i));
    const highWatermarkBefore = store.offsets.highWatermark;
    const sync = store.sync();
    await Promise.all([store.flush(), sync]);
    t.ok(store.offsets.syncedHighWatermark >= highWatermarkBefore, `sync ${i} covers what was written when it began`);
  }
  await store.sync();
  t.equal(store.offsets.syncedHighWatermark, 7);
  t.notOk(store.offsets.unsynced);
}

async function rollAndReadMany(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  for (let i = 0; i < 5; i++) store.stage(record(i));
  await store.flush();
  store.stage(record(5, undefined, 300));
  store.stage(record(6));
  await store.flush();
  const stats = store.stats();
  t.equal(stats.segments, 5, 'two small records per segment (0, 2, 4); the big one alone (5); then 6');
  t.equal(stats.nextOffset, 7);
  t.equal(stats.sizeBytes, streamBytes(7) - recordFrameBytesMax(5, record(5)) + recordFrameBytesMax(5, record(5, undefined, 300)));
  const got = await store.readMany([6, 1, 2, 3, 9, 4, 5, 0], { fromTail: true });
  t.same(got.map((r) => (typeof r === 'string' ? r : r.offset)), [6, 1, 2, 3, 'past_end', 4, 5, 0]);
  t.same(got.map((r) => (typeof r === 'string' ? r : r.ingressSeq)), [106, 101, 102, 103, 'past_end', 104, 105, 100]);
  const big = got[6];
  t.equal(typeof big === 'object' ? big.payload.byteLength : 0, 300);
}

/** Segments 0:[100, 101] 2:[200, 500] 4:[300, 301] 6:[600] (active). */
const mixedTimestampsSec = [100, 101, 200, 500, 300, 301, 600];

async function retention(t: Test, factory: StoreFactory): Promise<void> {
  const store = await storeWith(t, factory, mixedTimestampsSec);
  t.equal(store.stats().segments, 4);
  t.same(await store.retain(101), { oldestOffset: 0, deletedSegments: 0 }, 'a record at the cutoff is kept');
  t.same(await store.retain(400), { oldestOffset: 2, deletedSegments: 1 }, 'segment 4 is old but 2 still holds a newer record');
  t.equal(store.stats().segments, 3);
  t.equal(store.stats().oldestSegmentAtSec, 200, 'the oldest kept segment starts at 200');
  t.same(await store.readMany([0, 1, 7]), ['aged_out', 'aged_out', 'past_end']);
  for (let offset = 2; offset < 7; offset++) await expectRecord(t, store, offset, offset, mixedTimestampsSec[offset]);
  t.same(await store.retain(501), { oldestOffset: 6, deletedSegments: 2 }, 'the active segment holds 600, so it stays');
  t.same(store.stats(), { segments: 1, oldestOffset: 6, nextOffset: 7, highWatermark: 7, sizeBytes: recordFrameBytesMax(6, record(6, 600)) + 4, oldestSegmentAtSec: 600 });
  store.stage(record(7, 700));
  await store.flush();
  await expectRecord(t, store, 7, 7, 700);
}

async function retentionOfAll(t: Test, factory: StoreFactory): Promise<void> {
  const store = await storeWith(t, factory, [100, 101, 102, 103, 104]);
  t.same(await store.retain(105), { oldestOffset: 5, deletedSegments: 3 });
  t.same(store.stats(), { segments: 0, oldestOffset: 5, nextOffset: 5, highWatermark: 5, sizeBytes: 0 }, 'no oldestSegmentAtSec');
  t.notOk(store.offsets.unsynced, 'what the mark names was synced first');
  t.same(await store.readMany([0, 4, 5]), ['aged_out', 'aged_out', 'past_end']);
  t.same(await store.retain(1_000), { oldestOffset: 5, deletedSegments: 0 }, 'nothing left to delete');
  const reopened = await factory.restart(t, store);
  t.equal(reopened.offsets.nextOffset, 5);
  t.equal(reopened.oldestOffset, 5);
  t.same(reopened.offsets.lastIngress, { seq: 104, index: 0 });
  t.ok(reopened.offsets.holdsIngress(104, 0));
  t.notOk(reopened.offsets.holdsIngress(105, 0));
  t.equal(reopened.stage(record(5, 900)), 5, 'the next record continues at nextOffset');
  await reopened.flush();
  await expectRecord(t, reopened, 5, 5, 900);
  t.equal(reopened.stats().oldestSegmentAtSec, 900);
}

async function retainFlushExclusive(t: Test, factory: StoreFactory): Promise<void> {
  const store = await storeWith(t, factory, [100, 101, 102]);
  store.stage(record(3, 103));
  const flushing = store.flush();
  await t.rejects(store.retain(1_000), /retain during a flush/);
  await flushing;
  const retaining = store.retain(102);
  store.stage(record(4, 104));
  // Both asked before the retain can end, however fast the store is.
  const flushRefused = store.flush();
  const retainRefused = store.retain(102);
  await t.rejects(flushRefused, /flush during a retain/);
  await t.rejects(retainRefused, /one retain at a time/);
  t.same(await retaining, { oldestOffset: 2, deletedSegments: 1 });
  await store.flush();
  await expectRecord(t, store, 4, 4, 104);
}

async function restart(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  for (let i = 0; i < 5; i++) store.stage(record(i));
  await store.flush();
  store.stage(record(5));
  const reopened = await factory.restart(t, store);
  t.equal(reopened.offsets.nextOffset, 5, 'a record staged but not flushed is gone');
  t.equal(reopened.offsets.highWatermark, 5);
  t.equal(reopened.offsets.syncedHighWatermark, 5, 'what a restart finds counts as synced');
  t.equal(reopened.oldestOffset, 0);
  t.same(reopened.offsets.lastIngress, { seq: 104, index: 0 });
  t.ok(reopened.offsets.holdsIngress(104, 0));
  t.ok(reopened.offsets.holdsIngress(103, 7), 'any index of an earlier ingress frame');
  t.notOk(reopened.offsets.holdsIngress(104, 1));
  t.notOk(reopened.offsets.holdsIngress(105, 0));
  t.same(reopened.stats(), { segments: 3, oldestOffset: 0, nextOffset: 5, highWatermark: 5, sizeBytes: streamBytes(5), oldestSegmentAtSec: 1_700_000_000 });
  for (let i = 0; i < 5; i++) await expectRecord(t, reopened, i, i);
  t.equal(reopened.stage(record(5)), 5);
  await reopened.flush();
  await expectRecord(t, reopened, 5, 5);
}

async function crash(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  for (let i = 0; i < 3; i++) store.stage(record(i));
  await store.flush();
  await store.sync();
  for (let i = 3; i < 6; i++) store.stage(record(i));
  await store.flush();
  store.stage(record(6));
  t.equal(store.offsets.syncedHighWatermark, 3);
  t.equal(store.offsets.highWatermark, 6);
  const after = await factory.crash(t, store);
  const kept = after.offsets.highWatermark;
  t.ok(kept >= 3 && kept <= 6, `kept ${kept}: at least the synced records, at most the written ones`);
  t.equal(after.offsets.nextOffset, kept);
  t.equal(after.offsets.syncedHighWatermark, kept);
  t.same(after.offsets.lastIngress, { seq: 100 + kept - 1, index: 0 });
  for (let i = 0; i < 7; i++) t.equal(after.offsets.holdsIngress(100 + i, 0), i < kept, `holdsIngress of record ${i}`);
  // The ingress log hands the lost records over again, in order: they get the offsets they had.
  for (let i = kept; i < 7; i++) t.equal(after.stage(record(i)), i);
  await after.flush();
  for (let i = 0; i < 7; i++) await expectRecord(t, after, i, i);
}

/** Record i of the test stream as origin o handed it over (its own ingress seqs, 500 + i). */
function foreign(i: number, origin: number, timestampSec?: number): Omit<StoredRecord, 'offset'> {
  return { ...record(i, timestampSec), ingressSeq: 500 + i, origin };
}

async function origins(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  // Interleaved: local 0, origin 2's 1, origin 3's 2, local 3, origin 2's 4, ... over several segment rolls.
  const origin = (i: number): number => [0, 2, 3][i % 3]!;
  const stream = (i: number): Omit<StoredRecord, 'offset'> => (origin(i) === 0 ? record(i) : foreign(i, origin(i)));
  for (let i = 0; i < 9; i++) t.equal(store.stage(stream(i)), i);
  t.ok(store.offsets.holdsIngress(508, 0, 3), 'origin 3 holds its staged record');
  t.notOk(store.offsets.holdsIngress(508, 0, 2), 'positions are per origin');
  await store.flush();
  await store.sync();
  for (let i = 9; i < 11; i++) store.stage(stream(i));
  await store.flush();
  await store.sync();
  t.ok(store.stats().segments >= 3, 'the records span several segments');
  const reopened = await factory.restart(t, store);
  t.same(reopened.offsets.lastIngress, { seq: 109, index: 0 }, 'the local position skips handed-over records');
  t.ok(reopened.offsets.holdsIngress(510, 0, 2), 'origin 2 up to its last record (10)');
  t.notOk(reopened.offsets.holdsIngress(513, 0, 2));
  t.ok(reopened.offsets.holdsIngress(508, 0, 3), 'origin 3 up to its last record (8), found before the active segment');
  t.notOk(reopened.offsets.holdsIngress(511, 0, 3));
  t.notOk(reopened.offsets.holdsIngress(500, 0, 4), 'an origin never seen holds nothing');
  const got = await reopened.read(4);
  t.equal(typeof got === 'object' ? got.origin : got, 2, 'a handed-over record reads back with its origin');
  const local = await reopened.read(3);
  t.equal(typeof local === 'object' ? local.origin : local, undefined, 'a local record has no origin');
  t.equal(reopened.stage(foreign(11, 3)), 11, 'origin 3 goes on after its last position');
}

/** Stages the records, flushes and syncs them: what a partition worker's rounds do. */
async function stored(store: SegmentStore, records: Omit<StoredRecord, 'offset'>[]): Promise<void> {
  for (const r of records) store.stage(r);
  await store.flush();
  await store.sync();
}

/** Asserts the positions a restart must restore: this node's last record, and each origin's (origin: last i). */
function expectPositions(t: Test, store: SegmentStore, local: number, foreignLast: Record<number, number>): void {
  t.same(store.offsets.lastIngress, { seq: 100 + local, index: 0 }, 'this node\'s position');
  t.ok(store.offsets.holdsIngress(100 + local, 0), `holds local record ${local}`);
  t.notOk(store.offsets.holdsIngress(100 + local + 1, 0), `not local record ${local + 1}`);
  for (const [origin, i] of Object.entries(foreignLast)) {
    t.ok(store.offsets.holdsIngress(500 + i, 0, Number(origin)), `origin ${origin} holds its record ${i}`);
    t.notOk(store.offsets.holdsIngress(500 + i + 1, 0, Number(origin)), `origin ${origin} holds nothing after ${i}`);
  }
}

async function ownPositionAtRoll(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  await stored(store, [foreign(0, 2)]);
  // One flush rolls twice, at 2 and at 4, after this node's records 1 and 2: the active segment then holds only a
  // foreign record, so a restart takes this node's position from what the roll at 4 recorded.
  await stored(store, [record(1), record(2), foreign(3, 3), foreign(4, 3)]);
  t.equal(store.stats().segments, 3, 'segments 0:[0, 1] 2:[2, 3] 4:[4]');
  expectPositions(t, await factory.restart(t, store), 2, { 2: 0, 3: 4 });
}

async function originsOverRetention(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  await stored(store, [foreign(0, 2, 100)]);
  await stored(store, [record(1, 101), record(2, 102), foreign(3, 3, 103), foreign(4, 2, 200), foreign(5, 2, 201)]);
  t.same(await store.retain(150), { oldestOffset: 4, deletedSegments: 2 }, 'what is left holds only origin 2\'s records');
  const reopened = await factory.restart(t, store);
  expectPositions(t, reopened, 2, { 2: 5, 3: 3 });
  t.equal(reopened.stage(record(3, 300)), 6, 'this node\'s next record is taken');
}

async function localBeforeForeign(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  // Segments 0:[local 0, foreign 1] 2:[foreign 2]: the record before the active segment is not this node's.
  await stored(store, [record(0), foreign(1, 2), foreign(2, 2)]);
  expectPositions(t, await factory.restart(t, store), 0, { 2: 2 });
}

async function originsOverRetentionOfAll(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  // Segments 0:[foreign 0, local 1] 2:[local 2, local 3]: the roll at 2 knew local 1, the records after it are newer.
  await stored(store, [foreign(0, 2, 100), record(1, 101), record(2, 102)]);
  await stored(store, [record(3, 103)]);
  t.same(await store.retain(1_000), { oldestOffset: 4, deletedSegments: 2 });
  const reopened = await factory.restart(t, store);
  t.equal(reopened.offsets.nextOffset, 4);
  expectPositions(t, reopened, 3, { 2: 0 });
}

async function stagedSinceOpen(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.create(t, segmentBytesSmall);
  t.equal(store.offsets.stagedSinceOpen, 0);
  await stored(store, [record(0), record(1), record(2)]);
  store.stage(record(3));
  t.equal(store.offsets.stagedSinceOpen, 4, 'staged records count before their flush');
  const reopened = await factory.restart(t, store);
  t.equal(reopened.offsets.stagedSinceOpen, 0, 'a restart starts the count again');
  reopened.stage(record(3));
  t.equal(reopened.offsets.stagedSinceOpen, 1);
}

async function startOffset(t: Test, factory: StoreFactory): Promise<void> {
  const store = await factory.createAt(t, segmentBytesSmall, 1000);
  t.same(store.stats(), { segments: 0, oldestOffset: 1000, nextOffset: 1000, highWatermark: 1000, sizeBytes: 0 });
  t.same(await store.readMany([0, 999, 1000]), ['aged_out', 'aged_out', 'past_end'], 'offsets below the start never held a record');
  const empty = await factory.restart(t, store);
  t.equal(empty.offsets.nextOffset, 1000, 'an empty store keeps its start over a restart');
  const crashedEmpty = await factory.crash(t, empty);
  t.equal(crashedEmpty.offsets.nextOffset, 1000, 'and over a crash');
  for (let i = 0; i < 5; i++) t.equal(crashedEmpty.stage(record(i, 100 + i)), 1000 + i);
  await crashedEmpty.flush();
  await crashedEmpty.sync();
  for (let i = 0; i < 5; i++) await expectRecord(t, crashedEmpty, 1000 + i, i, 100 + i);
  t.ok(crashedEmpty.stats().segments > 1, 'rolled past the first segment at 1000');
  const reopened = await factory.restart(t, crashedEmpty);
  t.same([reopened.oldestOffset, reopened.offsets.nextOffset], [1000, 1005]);
  await expectRecord(t, reopened, 1000, 0, 100);
  t.same(await reopened.readMany([999]), ['aged_out']);
}
