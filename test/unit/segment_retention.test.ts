// Goal: PartitionLog.retain() deletes exactly the whole segments whose newest record is older than the
// cutoff, oldest first, keeps oldestOffset and stats() equal to the files, answers aged_out below
// oldestOffset, and keeps nextOffset and lastIngress over a restart even when every segment is gone.
// Method: a real partition directory in a temp dir with tiny segments (two records each) and records
// whose timestampSec values are chosen per test; the disk is compared with stats() after every step.
import t, { type Test } from 'tap';
import { cp, readdir, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PartitionLog, type StoredRecord } from '../../workers/store/segment_log.js';
import { parseSegmentFileName, segmentFileName } from '../../workers/store/partition_dirs.js';
import { scanFrames } from '../../src/util/frame.js';
import { partitionRecord, partitionTempDir, segmentBytesSmall } from '../helpers/segment_log_fixtures.js';

function tempDir(t: Test): Promise<string> {
  return partitionTempDir(t, 'segment-retention');
}


/** Record i (test/helpers/segment_log_fixtures.ts), written at timestampSec. */
function record(i: number, timestampSec: number): Omit<StoredRecord, 'offset'> {
  return partitionRecord(i, timestampSec);
}

/** Opens dir and stores records i = 0.. with the given timestamps in one flush. */
async function logWith(t: Test, dir: string, timestampsSec: number[]): Promise<PartitionLog> {
  const log = await logOpen(t, dir);
  timestampsSec.forEach((ts, i) => log.stage(record(i, ts)));
  await log.flush();
  return log;
}

async function logOpen(t: Test, dir: string): Promise<PartitionLog> {
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => log.close());
  return log;
}

/** Base offsets of the .log files on disk, and the bytes of every .log's frames and of one 4-byte index entry per
 *  frame: the active .log may hold zeros past its last frame while open (zero fill), which the frame scan stops at
 *  and which are not counted, and the active .idx gets its entries at a roll or clean close only. Every sealed .idx
 *  must hold exactly one entry per frame. zeroTails counts the .log files that hold more than their frames. */
async function segmentFiles(dir: string): Promise<{ bases: number[]; bytes: number; zeroTails: number[] }> {
  const frames = new Map<number, number>();
  const idxBytes = new Map<number, number>();
  const zeroTails: number[] = [];
  let bytes = 0;
  for (const name of await readdir(dir)) {
    const parsed = parseSegmentFileName(name);
    if (parsed === null) continue;
    if (parsed.kind === 'idx') {
      idxBytes.set(parsed.baseOffset, (await stat(join(dir, name))).size);
      continue;
    }
    const content = await readFile(join(dir, name));
    const scan = scanFrames(content);
    if (content.subarray(scan.validBytes).some((b) => b !== 0)) throw new Error(`${name}: bytes past its frames that are not zeros`);
    if (scan.validBytes < content.byteLength) zeroTails.push(parsed.baseOffset);
    frames.set(parsed.baseOffset, scan.positions.length);
    bytes += scan.validBytes + scan.positions.length * 4;
  }
  const bases = [...frames.keys()].sort((a, b) => a - b);
  for (const base of bases.slice(0, -1)) {
    if (idxBytes.get(base) !== frames.get(base)! * 4) throw new Error(`sealed segment ${base}: .idx of ${idxBytes.get(base)} B for ${frames.get(base)} frames`);
  }
  return { bases, bytes, zeroTails };
}

/** stats() against the files: segment count, bytes, and oldestOffset is the oldest file's base. */
async function statsMatchFiles(t: Test, log: PartitionLog, dir: string): Promise<void> {
  const files = await segmentFiles(dir);
  const stats = log.stats();
  t.equal(stats.segments, files.bases.length, 'segments is the .log files on disk');
  t.equal(stats.sizeBytes, files.bytes, 'sizeBytes is the bytes of the frames and index entries');
  t.equal(stats.oldestOffset, files.bases[0] ?? stats.nextOffset, 'oldestOffset is the oldest file base');
  t.ok(files.zeroTails.every((base) => base === files.bases.at(-1)), 'only the active segment holds zeros past its frames');
}

async function expectReadable(t: Test, log: PartitionLog, offset: number, timestampSec: number): Promise<void> {
  const got = await log.read(offset);
  if (typeof got === 'string') throw new Error(`offset ${offset}: ${got}`);
  t.equal(got.offset, offset);
  t.equal(got.timestampSec, timestampSec, `timestamp of ${offset}`);
}

/** Segments 0:[100, 101] 2:[200, 500] 4:[300, 301] 6:[600] (active). */
const mixedTimestampsSec = [100, 101, 200, 500, 300, 301, 600];

t.test('retain deletes old sealed segments oldest first and stops at the first one still needed', async (t) => {
  const dir = await tempDir(t);
  const log = await logWith(t, dir, mixedTimestampsSec);
  t.same((await segmentFiles(dir)).bases, [0, 2, 4, 6]);

  t.same(await log.retain(101), { oldestOffset: 0, deletedSegments: 0 }, 'a record at the cutoff is kept');
  t.same(await log.retain(400), { oldestOffset: 2, deletedSegments: 1 }, 'segment 4 is old but 2 still holds a newer record');
  t.same((await segmentFiles(dir)).bases, [2, 4, 6]);
  await t.rejects(stat(join(dir, segmentFileName(0, 'log'))), { code: 'ENOENT' });
  await t.rejects(stat(join(dir, segmentFileName(0, 'idx'))), { code: 'ENOENT' });
  await statsMatchFiles(t, log, dir);
  t.equal(log.stats().oldestSegmentAtSec, 200, 'the oldest kept segment starts at 200');
  t.equal(log.stats().nextOffset, 7);
  t.equal(log.stats().highWatermark, 7);
  t.equal(await log.read(0), 'aged_out');
  t.equal(await log.read(1), 'aged_out');
  for (let offset = 2; offset < 7; offset++) await expectReadable(t, log, offset, mixedTimestampsSec[offset]!);
  t.equal(await log.read(7), 'past_end');

  t.same(await log.retain(501), { oldestOffset: 6, deletedSegments: 2 }, 'the active segment holds 600, so it stays');
  t.same((await segmentFiles(dir)).bases, [6]);
  await statsMatchFiles(t, log, dir);
  t.equal(log.stats().oldestSegmentAtSec, 600);
  await expectReadable(t, log, 6, 600);
  log.stage(record(7, 700));
  await log.flush();
  await expectReadable(t, log, 7, 700);
  await statsMatchFiles(t, log, dir);
});

t.test('deleting every segment, the active one too, keeps nextOffset for the next append', async (t) => {
  const dir = await tempDir(t);
  const log = await logWith(t, dir, [100, 101, 102, 103, 104]);
  t.same(await log.retain(105), { oldestOffset: 5, deletedSegments: 3 });
  t.same(log.stats(), { segments: 0, oldestOffset: 5, nextOffset: 5, highWatermark: 5, sizeBytes: 0 }, 'no oldestSegmentAtSec');
  t.same((await segmentFiles(dir)).bases, []);
  t.same(await readdir(dir), ['next_offset.mark'], 'only the mark is left');
  t.equal(await log.read(0), 'aged_out');
  t.equal(await log.read(4), 'aged_out');
  t.equal(await log.read(5), 'past_end');
  t.same(log.offsets.lastIngress, { seq: 104, index: 0 });
  t.same(await log.retain(1_000), { oldestOffset: 5, deletedSegments: 0 }, 'nothing left to delete');

  t.equal(log.stage(record(5, 900)), 5, 'the next record continues at nextOffset');
  await log.flush();
  t.same((await segmentFiles(dir)).bases, [5], 'in a fresh segment named by it');
  await expectReadable(t, log, 5, 900);
  t.equal(log.stats().oldestSegmentAtSec, 900);
  await statsMatchFiles(t, log, dir);
});

t.test('reopen after every segment is deleted restores nextOffset and lastIngress from the mark', async (t) => {
  const dir = await tempDir(t);
  const first = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  for (let i = 0; i < 5; i++) first.stage(record(i, 100 + i));
  await first.flush();
  await first.retain(200);
  await first.close();

  const log = await logOpen(t, dir);
  t.same(log.stats(), { segments: 0, oldestOffset: 5, nextOffset: 5, highWatermark: 5, sizeBytes: 0 });
  t.same(log.offsets.lastIngress, { seq: 104, index: 0 }, 'a replay of the deleted records stores nothing again');
  t.equal(await log.read(4), 'aged_out');
  t.equal(log.stage(record(5, 300)), 5);
  await log.flush();
  await log.close();

  const again = await logOpen(t, dir);
  t.equal(again.oldestOffset, 5, 'the stale mark is ignored once a segment exists');
  t.equal(again.offsets.nextOffset, 6);
  t.same(again.offsets.lastIngress, { seq: 105, index: 0 });
  await expectReadable(t, again, 5, 300);
});

t.test('the mark promises only synced records, not staged ones', async (t) => {
  const dir = await tempDir(t);
  const first = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  for (let i = 0; i < 3; i++) first.stage(record(i, 100 + i));
  await first.flush();
  first.stage(record(3, 103));
  t.same(await first.retain(200), { oldestOffset: 3, deletedSegments: 2 });
  t.equal(first.offsets.nextOffset, 4, 'the staged record keeps its offset');
  t.equal(first.offsets.highWatermark, 3);
  // Closing drops the staged record, as a crash would.
  await first.close();

  const log = await logOpen(t, dir);
  t.equal(log.offsets.nextOffset, 3);
  t.same(log.offsets.lastIngress, { seq: 102, index: 0 }, 'the dropped record is stored again by the replay');
  t.equal(log.stage(record(3, 103)), 3);
  await log.flush();
  await expectReadable(t, log, 3, 103);
});

t.test('reopen after partial retention restores oldestOffset, stats and each segment\'s newest timestamp', async (t) => {
  const dir = await tempDir(t);
  const first = await logWith(t, dir, mixedTimestampsSec);
  await first.retain(150);
  const before = first.stats();
  await first.close();
  // A missing sealed .idx is rebuilt by a scan, which must find the same timestamps.
  await unlink(join(dir, segmentFileName(4, 'idx')));

  const log = await logOpen(t, dir);
  t.same(log.stats(), before);
  t.same(log.offsets.lastIngress, { seq: 106, index: 0 });
  await statsMatchFiles(t, log, dir);
  t.equal(await log.read(1), 'aged_out');
  await expectReadable(t, log, 2, 200);
  t.same(await log.retain(400), { oldestOffset: 2, deletedSegments: 0 }, 'segment 2 still holds 500');
  t.same(await log.retain(601), { oldestOffset: 7, deletedSegments: 3 });
  await statsMatchFiles(t, log, dir);
});

t.test('a crash partway through deleting every segment reopens on the segments left', async (t) => {
  const dir = await tempDir(t);
  const saved = `${dir}.saved`;
  t.teardown(() => rm(saved, { recursive: true, force: true }));
  const first = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  for (let i = 0; i < 5; i++) first.stage(record(i, 100 + i));
  await first.flush();
  await first.close();
  await cp(dir, saved, { recursive: true });
  const second = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  await second.retain(1_000);
  await second.close();
  // The mark is written first and segments go oldest first: segments 2 and 4 were still there, and the
  // next removal had unlinked only the .log of segment 2 (and a mark rewrite left its .tmp).
  for (const base of [2, 4]) {
    for (const kind of ['log', 'idx'] as const) {
      await cp(join(saved, segmentFileName(base, kind)), join(dir, segmentFileName(base, kind)));
    }
  }
  await unlink(join(dir, segmentFileName(2, 'log')));
  await writeFile(join(dir, 'next_offset.mark.tmp'), new Uint8Array([1]));

  const log = await logOpen(t, dir);
  t.same((await readdir(dir)).sort(), [segmentFileName(4, 'idx'), segmentFileName(4, 'log'), 'next_offset.mark']);
  t.equal(log.oldestOffset, 4);
  t.equal(log.offsets.nextOffset, 5);
  t.same(log.offsets.lastIngress, { seq: 104, index: 0 });
  await statsMatchFiles(t, log, dir);
  await expectReadable(t, log, 4, 104);
  t.same(await log.retain(1_000), { oldestOffset: 5, deletedSegments: 1 });
});

t.test('reads racing a retain answer a record or aged_out, never an error', async (t) => {
  const dir = await tempDir(t);
  const timestampsSec = Array.from({ length: 20 }, (_, i) => 100 + i);
  const log = await logWith(t, dir, timestampsSec);
  // Every read passes its bounds check before retain() starts; those that open files after the unlink
  // (usually the first segment's, whose .log is unlinked at once) take the aged_out path.
  const reads = timestampsSec.map((_, offset) => log.read(offset));
  const retained = await log.retain(110);
  t.same(retained, { oldestOffset: 10, deletedSegments: 5 });
  const results = await Promise.all(reads);
  results.forEach((result, offset) => {
    t.ok(result === 'aged_out' || (typeof result === 'object' && result.offset === offset), `read of ${offset}`);
  });
});
