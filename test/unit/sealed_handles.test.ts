// Goal: reads of sealed segments keep their files open between reads (workers/store/sealed_handles.ts) without changing
// what a read answers: the same records, aged_out once retention deleted the segment (never its stale bytes), a
// bounded number of descriptors however many segments are read, and none left once the log closes; reads that fall
// inside a window still being read wait for it instead of reading the file again.
// Method: a real partition directory with tiny segments (two records each); descriptors counted in /proc/self/fd.
import t, { type Test } from 'tap';
import { open, readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PartitionLog, type StoredRecord } from '../../workers/store/segment_log.js';
import { ReadAhead, sealedSegmentsOpen } from '../../workers/store/sealed_handles.js';
import { parseSegmentFileName, segmentFileName } from '../../workers/store/partition_dirs.js';
import { pollUntil } from '../helpers/http.js';
import { partitionRecord, partitionTempDir, segmentBytesSmall } from '../helpers/segment_log_fixtures.js';


function tempDir(t: Test): Promise<string> {
  return partitionTempDir(t, 'sealed-handles');
}

const record = partitionRecord;

async function logWith(dir: string, count: number, timestampSec?: (i: number) => number): Promise<PartitionLog> {
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  for (let i = 0; i < count; i++) log.stage(record(i, timestampSec?.(i)));
  await log.flush();
  // The active segment's zero fill opens and closes a descriptor of its own: let it finish before counting.
  await log.zeroFillIdle();
  return log;
}

async function openDescriptors(): Promise<number> {
  return (await readdir('/proc/self/fd')).length;
}

function sameRecord(got: StoredRecord, want: Omit<StoredRecord, 'offset'>): boolean {
  return Buffer.from(got.payload).equals(Buffer.from(want.payload)) &&
    (got.key === null ? want.key === null : want.key !== null && Buffer.from(got.key).equals(Buffer.from(want.key))) &&
    got.timestampSec === want.timestampSec && got.ingressSeq === want.ingressSeq;
}

function payloadOf(result: StoredRecord | string): number[] | string {
  return typeof result === 'string' ? result : [...result.payload];
}

t.test('repeated reads of a sealed segment answer the same records and hold one pair of descriptors', async (t) => {
  const dir = await tempDir(t);
  const log = await logWith(dir, 10);
  t.teardown(() => log.close());
  const before = await openDescriptors();
  for (let round = 0; round < 20; round++) {
    const [a, b] = await log.readMany([2, 3]);
    t.same([payloadOf(a!), payloadOf(b!)], [[...record(2).payload], [...record(3).payload]]);
  }
  t.equal(sealedSegmentsOpen(), 1, 'one sealed segment in the cache');
  const after = await openDescriptors();
  t.equal(after, before + 2, `its .idx and .log stay open, nothing more (${before} -> ${after})`);
});

t.test('retention forgets a segment\'s handles: a later read is aged_out, not the deleted bytes', async (t) => {
  const dir = await tempDir(t);
  const log = await logWith(dir, 6, (i) => (i < 4 ? 100 : 1_700_000_000));
  t.teardown(() => log.close());
  t.same(payloadOf((await log.readMany([0]))[0]!), [...record(0).payload], 'read through the cache first');
  t.equal(sealedSegmentsOpen(), 1);
  t.same(await log.retain(200), { oldestOffset: 4, deletedSegments: 2 });
  t.equal(sealedSegmentsOpen(), 0, 'the deleted segment\'s handles are gone');
  t.same((await log.readMany([0, 1, 4])).map(payloadOf), ['aged_out', 'aged_out', [...record(4).payload]]);
});

t.test('however many sealed segments are read, the descriptors stay bounded; close lets all go', async (t) => {
  const dir = await tempDir(t);
  const log = await logWith(dir, 200);
  const before = await openDescriptors();
  // 100 segments of two records: the first record of each of the 99 sealed ones is read once.
  for (let offset = 0; offset < 198; offset += 2) {
    const [result] = await log.readMany([offset]);
    t.equal(typeof result === 'string' ? result : result!.offset, offset);
  }
  t.equal(sealedSegmentsOpen(), 32, '99 sealed segments read: the 32 most recent keep handles');
  t.ok((await openDescriptors()) - before <= 64, 'at most two descriptors per kept segment');
  await log.close();
  t.equal(sealedSegmentsOpen(), 0, 'closing the log forgets its segments');
  // `before` counted the active segment's .log and .idx, which close releases too. Handles close asynchronously once
  // dropped: wait for them (at most 10 s), then count.
  const target = before - 2;
  await pollUntil(async () => ((await openDescriptors()) <= target ? true : undefined), 10_000, 10);
  t.equal(await openDescriptors(), target, 'every descriptor is closed, the active segment\'s included');
});

t.test('runs read through the .idx window: across its edge, at the segment end, longer than it, backwards', async (t) => {
  const dir = await tempDir(t);
  // About 40,000 frames of 61-67 bytes fill the first segment, more than the 16,384-entry window of .idx entries.
  const log = await PartitionLog.open({ dir, segmentBytesMax: 2_600_000 });
  t.teardown(() => log.close());
  const total = 45_000;
  for (let i = 0; i < total; i++) log.stage(record(i));
  await log.flush();
  const sealedEnd = (await readdir(dir)).filter((name) => name.endsWith('.log')).map((name) => parseSegmentFileName(name)!.baseOffset).sort((a, b) => a - b)[1]!;
  t.ok(sealedEnd > 16_384 * 2 && sealedEnd < total, `the first segment is sealed and holds ${sealedEnd} records`);
  // [16_373, 10] needs entries up to 16,383 (its next frame's start): the last of the first window, read from memory.
  const runs: Array<[number, number]> = [[0, 100], [16_373, 10], [16_374, 10], [16_380, 10], [16_384, 1], [sealedEnd - 5, 5], [100, 20_000],
    [sealedEnd - 1, 1], [50, 3], [32_760, 20]];
  for (const [first, count] of runs) {
    const offsets = Array.from({ length: count }, (_, i) => first + i);
    const results = await log.readMany(offsets);
    const wrong = results.filter((result, i) => typeof result === 'string' || result.offset !== offsets[i] ||
      !sameRecord(result, record(offsets[i]!))).length;
    t.equal(wrong, 0, `run of ${count} from ${first}: every record is the one stored there`);
  }
});

t.test('reads in flight keep their handles through eviction and close; a failed open is not cached', async (t) => {
  const dir = await tempDir(t);
  const log = await logWith(dir, 200);
  // 40 sealed segments read at once: the first 8 are evicted while their reads are still in flight.
  const offsets = Array.from({ length: 40 }, (_, i) => 2 * i);
  const results = await Promise.all(offsets.map((offset) => log.readMany([offset])));
  t.same(results.map(([result]) => (typeof result === 'string' ? result : sameRecord(result!, record(result!.offset)))),
    offsets.map(() => true), 'every concurrent read answers its own record');
  t.equal(sealedSegmentsOpen(), 32);
  // A read in flight while the log closes still answers; the cache forgets the directory.
  const reading = log.readMany([100, 101]);
  const closing = log.close();
  const [a, b] = await reading;
  await closing;
  t.same([payloadOf(a!), payloadOf(b!)], [[...record(100).payload], [...record(101).payload]]);
  t.equal(sealedSegmentsOpen(), 0);
  // A sealed segment whose .log went missing: the read fails, and the failed open does not stay cached.
  const reopened = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => reopened.close());
  await rm(join(dir, segmentFileName(4, 'log')));
  await t.rejects(reopened.readMany([4]), { code: 'ENOENT' });
  await new Promise((r) => setImmediate(r));
  t.equal(sealedSegmentsOpen(), 0, 'nothing cached for the segment that could not be opened');
});

t.test('reads inside a window still being read share its file read; one beyond it reads on its own', async (t) => {
  const dir = await tempDir(t);
  // The temp dir's root: partitionTempDir names a partition directory under it without creating it.
  const path = join(dir, '..', '..', '..', 'read-ahead.bin');
  const content = Uint8Array.from({ length: 10_000 }, (_, i) => (i * 31) & 0xff);
  await writeFile(path, content);
  const handle = await open(path, 'r');
  t.teardown(() => handle.close());
  const fileReads: number[] = [];
  // The handle as ReadAhead uses it, counting the positions of the file reads it issues.
  const counted = new Proxy(handle, {
    get(target, name) {
      if (name !== 'read') return Reflect.get(target, name, target) as unknown;
      return (buffer: Uint8Array, offset: number, length: number, position: number) => {
        fileReads.push(position);
        return target.read(buffer, offset, length, position);
      };
    },
  });
  const readAhead = new ReadAhead(counted, 4096);
  const asked: Array<[number, number]> = [[0, 100], [100, 250], [250, 4096], [1000, 1001], [4000, 4200]];
  const got = await Promise.all(asked.map(([start, end]) => readAhead.read(start, end, content.byteLength)));
  got.forEach((bytes, i) => {
    const [start, end] = asked[i]!;
    t.same([...bytes], [...content.subarray(start, end)], `[${start}, ${end}) holds the file's bytes`);
  });
  t.same(fileReads, [0, 4000], 'four reads inside [0, 4096) share one file read; [4000, 4200) goes past it and reads');
  // Which of the two windows completed last (and stays) is up to the thread pool; a read awaited alone is not.
  const before = fileReads.length;
  t.same([...(await readAhead.read(9000, 9100, content.byteLength))], [...content.subarray(9000, 9100)]);
  t.same([...(await readAhead.read(9200, 9300, content.byteLength))], [...content.subarray(9200, 9300)]);
  t.same(fileReads.slice(before), [9000], 'a read inside the window read last is served from memory');
});
