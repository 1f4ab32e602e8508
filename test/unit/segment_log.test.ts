// Goal: PartitionLog (the file store) keeps its files right: staging blocks, .idx entries, zero tails, and recovery
// that keeps offsets meaning one record. What both stores share is segment_store.suite.ts's.
// Method: a real partition directory in a temp dir; stage, flush, read back, reopen, and damage files
// (truncate, flip a byte, drop a sealed .idx) to check that recovery keeps offsets meaning one record.
import t, { type Test } from 'tap';
import { cp, readdir, rm, stat, truncate, unlink, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { PartitionLog, type StoredRecord } from '../../workers/store/segment_log.js';
import { parseSegmentFileName, segmentFileName } from '../../workers/store/partition_dirs.js';
import { scanFrames } from '../../src/util/frame.js';
import { partitionRecord, partitionTempDir, segmentBytesSmall } from '../helpers/segment_log_fixtures.js';

function tempDir(t: Test): Promise<string> {
  return partitionTempDir(t, 'segment-log');
}

/** Record i of a test stream (test/helpers/segment_log_fixtures.ts), written at 1,700,000,000 + i. */
function record(i: number, payloadBytes = 40): Omit<StoredRecord, 'offset'> {
  return partitionRecord(i, undefined, payloadBytes);
}

async function readRecord(t: Test, log: PartitionLog, offset: number): Promise<StoredRecord> {
  const result = await log.read(offset);
  if (typeof result === 'string') throw new Error(`offset ${offset}: ${result}`);
  t.equal(result.offset, offset);
  return result;
}

async function expectRecord(t: Test, log: PartitionLog, offset: number, i: number, payloadBytes = 40): Promise<void> {
  const got = await readRecord(t, log, offset);
  const want = record(i, payloadBytes);
  t.equal(got.timestampSec, want.timestampSec, `timestamp of ${offset}`);
  t.same(got.key === null ? null : [...got.key], want.key === null ? null : [...want.key], `key of ${offset}`);
  t.same([...got.payload], [...want.payload], `payload of ${offset}`);
  t.equal(got.payloadKind, want.payloadKind);
  t.equal(got.ingressSeq, want.ingressSeq);
}

/** Sum of the sizes of every file in dir. While a log is open its active .log also holds zeros ahead of its end,
 *  so this equals stats().sizeBytes (the records' bytes) once the log is closed. */
async function dirBytes(dir: string): Promise<number> {
  let total = 0;
  for (const name of await readdir(dir)) total += (await stat(join(dir, name))).size;
  return total;
}

t.test('segment file names are built and parsed by one module', async (t) => {
  t.equal(segmentFileName(42, 'log'), '00000000000000000042.log');
  t.same(parseSegmentFileName('00000000000000000042.idx'), { baseOffset: 42, kind: 'idx' });
  t.equal(parseSegmentFileName('42.log'), null);
  t.equal(parseSegmentFileName('00000000000000000042.tmp'), null);
});

t.test('a flush creates the partition directory and one .log/.idx pair; stats count what the files hold', async (t) => {
  // Offsets, reads and stats values are the shared suite's (segment_store.suite.ts); here, the files.
  const dir = await tempDir(t);
  const log = await PartitionLog.open({ dir, segmentBytesMax: 1024 * 1024 });
  t.teardown(() => log.close());
  for (let i = 0; i < 3; i++) log.stage(record(i));
  await t.rejects(stat(dir), { code: 'ENOENT' }, 'staging creates nothing');
  await log.flush();
  const stats = log.stats();
  t.same((await readdir(dir)).sort(), ['00000000000000000000.idx', '00000000000000000000.log']);
  await log.close();
  t.equal(stats.sizeBytes, await dirBytes(dir), 'sizeBytes is what the files hold once closed');
});

/**
 * logCount logs that each stage count(round, n) records per round, record i with payloadBytes(i) bytes, and flush
 * together, the next round staged while the last round's flushes still write (as a worker stages dispatches that
 * arrive during a round). Returns the logs and, per log, the record numbers it staged, in order.
 */
async function stageAndFlushInTurns(
  t: Test, logCount: number, rounds: number, count: (round: number, n: number) => number, payloadBytes: (i: number) => number,
): Promise<{ logs: PartitionLog[]; written: number[][] }> {
  const logs = await Promise.all(Array.from({ length: logCount }, async (_, n) => {
    const log = await PartitionLog.open({ dir: join(await tempDir(t), `p${n}`), segmentBytesMax: 1024 * 1024 });
    t.teardown(() => log.close());
    return log;
  }));
  const written: number[][] = logs.map(() => []);
  let i = 0;
  let flushes: Promise<void>[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const [n, log] of logs.entries()) {
      for (let k = 0; k < count(round, n); k++, i++) {
        log.stage(record(i, payloadBytes(i)));
        written[n]!.push(i);
      }
    }
    await Promise.all(flushes);
    flushes = logs.map((log) => log.flush());
  }
  await Promise.all(flushes);
  return { logs, written };
}

/** The record numbers of `written` (log's records from offset 0 on) that log does not read back as staged. */
async function misread(log: PartitionLog, written: number[], payloadBytes: (i: number) => number): Promise<number[]> {
  const got = await log.readMany(written.map((_, offset) => offset));
  return written.filter((i, offset) => {
    const stored = got[offset]!;
    const want = record(i, payloadBytes(i));
    return typeof stored === 'string' || stored.ingressSeq !== want.ingressSeq ||
      Buffer.compare(stored.payload, want.payload) !== 0;
  });
}

t.test('logs that take turns staging and flushing share spent buffers and each reads back its own records', async (t) => {
  // A flush gives its staging blocks back to the worker's pools once written, and the next log to stage takes them:
  // three logs over twelve rounds must never see another's bytes. Round 5 stages about 200 KiB in one log: past the
  // first 4 KiB block and over several 64 KiB ones, so one write covers frames of many blocks.
  const payloadBytes = (i: number): number => 200 + (i % 97);
  const { logs, written } = await stageAndFlushInTurns(t, 3, 12,
    (round, n) => (round === 5 && n === 1 ? 700 : 3 + ((round + n) % 4)), payloadBytes);
  for (const [n, log] of logs.entries()) {
    t.equal(log.offsets.highWatermark, written[n]!.length, `log ${n} holds all it staged`);
    t.same(await misread(log, written[n]!, payloadBytes), [], `log ${n} reads back each of its records`);
  }
});

t.test('a round over many logs, each staging a frame or two, gives every log a block of its own', async (t) => {
  // A single produce round over a topic of many partitions: more logs hold a staging block at once than the pool
  // keeps, and what they give back fills the pool for the next round, while that round's stages already run.
  const payloadBytes = (i: number): number => 100 + (i % 53);
  const { logs, written } = await stageAndFlushInTurns(t, 48, 8, (round, n) => 1 + ((round + n) % 2), payloadBytes);
  const mismatchedLogs: number[] = [];
  for (const [n, log] of logs.entries()) {
    if ((await misread(log, written[n]!, payloadBytes)).length > 0) mismatchedLogs.push(n);
  }
  t.same(mismatchedLogs, [], 'every log reads back exactly the records it staged');
  t.same(logs.map((log) => log.offsets.highWatermark), written.map((w) => w.length), 'every log holds all it staged');
});

t.test('a round over several staging blocks, a frame bigger than a block and a segment roll reads back whole', async (t) => {
  // Frames never straddle blocks, and a flush's writes follow segments, not blocks: with 96 KiB segments, a round of
  // about 300 KiB (a 4 KiB block, then 64 KiB ones, and a 100 KiB frame in a block of its own) rolls mid-round, so
  // some writes span blocks and one segment holds the big frame alone. After a one-record round (the next round starts
  // small again), a round of about 5 KiB (a 4 KiB block and a 64 KiB one), read from the tail kept in memory as
  // consumers that keep up read it, and from the file.
  const dir = await tempDir(t);
  const log = await PartitionLog.open({ dir, segmentBytesMax: 96 * 1024 });
  t.teardown(() => log.close());
  const payloadBytes = (i: number): number => (i === 150 ? 100 * 1024 : 700 + (i % 311));
  const staged: number[] = [];
  for (let i = 0; i < 400; i++) {
    log.stage(record(i, payloadBytes(i)));
    staged.push(i);
  }
  await log.flush();
  const segments = (await readdir(dir)).filter((name) => name.endsWith('.log'));
  t.ok(segments.length >= 4, `the round rolled segments (${segments.length} .log files)`);
  t.same(await misread(log, staged, payloadBytes), [], 'every record of the big round reads back');
  const small = (i: number): number => 100 + (i % 7);
  log.stage(record(400, small(400)));
  await log.flush();
  for (let i = 401; i < 441; i++) {
    log.stage(record(i, small(i)));
    staged.push(i);
  }
  await log.flush();
  const offsets = Array.from({ length: 40 }, (_, k) => 401 + k);
  for (const fromTail of [true, false]) {
    const got = await log.readMany(offsets, { fromTail });
    const wrong = offsets.filter((offset, k) => {
      const stored = got[k]!;
      return typeof stored === 'string' || stored.ingressSeq !== record(offset).ingressSeq ||
        Buffer.compare(stored.payload, record(offset, small(offset)).payload) !== 0;
    });
    t.same(wrong, [], `the small round reads back ${fromTail ? 'from the tail in memory' : 'from the file'}`);
  }
});

t.test('a segment written by many flushes gets every .idx entry at its roll; a crash before it loses none', async (t) => {
  const dir = await tempDir(t);
  // About 60 B a frame: ten one-record flushes per 600 B segment.
  const log = await PartitionLog.open({ dir, segmentBytesMax: 600 });
  for (let i = 0; i < 25; i++) {
    log.stage(record(i));
    await log.flush();
  }
  const bases = (await readdir(dir)).filter((n) => n.endsWith('.log')).map((n) => parseSegmentFileName(n)!.baseOffset).sort((a, b) => a - b);
  t.ok(bases.length >= 3, `rolled at least twice (segments ${bases.join(', ')})`);
  for (const base of bases.slice(0, -1)) {
    const idx = await readFile(join(dir, segmentFileName(base, 'idx')));
    const next = bases[bases.indexOf(base) + 1]!;
    t.equal(idx.byteLength, (next - base) * 4, `sealed segment ${base}: one entry per record of its ${next - base} flushes`);
    const content = await readFile(join(dir, segmentFileName(base, 'log')));
    const starts = Array.from({ length: next - base }, (_, k) => idx.readUInt32LE(4 * k));
    t.same(starts, scanFrames(content).positions, `sealed segment ${base}: the entries name its frames`);
  }
  // kill -9 now: the active .idx holds no entry yet; open() rebuilds it from the .log.
  const copy = await tempDir(t);
  await cp(dir, copy, { recursive: true });
  await log.close();
  t.equal((await stat(join(copy, segmentFileName(bases.at(-1)!, 'idx')))).size, 0, 'the crashed active .idx holds no entry');
  const reopened = await PartitionLog.open({ dir: copy, segmentBytesMax: 600 });
  t.teardown(() => reopened.close());
  t.equal(reopened.offsets.highWatermark, 25, 'every record back');
  for (let i = 0; i < 25; i++) await expectRecord(t, reopened, i, i);
});

t.test('segments roll at segmentBytesMax and reads cross them', async (t) => {
  const dir = await tempDir(t);
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => log.close());
  for (let i = 0; i < 5; i++) log.stage(record(i));
  await log.flush();
  log.stage(record(5, 300));
  log.stage(record(6));
  await log.flush();
  const names = (await readdir(dir)).sort();
  const bases = names.filter((n) => n.endsWith('.log')).map((n) => parseSegmentFileName(n)!.baseOffset);
  t.same(bases, [0, 2, 4, 5, 6], 'two small records per segment; the big one alone');
  t.equal(names.length, 10, 'every .log has its .idx');
  const idxBytesOf = async (base: number): Promise<number> => (await stat(join(dir, segmentFileName(base, 'idx')))).size;
  for (const base of bases.slice(0, -1)) {
    t.equal(await idxBytesOf(base), (bases[bases.indexOf(base) + 1]! - base) * 4, `dense index of sealed segment ${base}`);
  }
  t.equal(await idxBytesOf(6), 0, 'the active segment\'s .idx waits for its roll or a clean close');
  for (let i = 0; i < 7; i++) await expectRecord(t, log, i, i, i === 5 ? 300 : 40);
  for (const base of bases.slice(0, -1)) {
    const content = await readFile(join(dir, segmentFileName(base, 'log')));
    t.equal(scanFrames(content).validBytes, content.byteLength, `sealed segment ${base} ends at its last frame (${content.byteLength} B)`);
  }
  const stats = log.stats();
  t.equal(stats.segments, 5);
  t.equal(stats.nextOffset, 7);
  await log.close();
  t.equal(await idxBytesOf(6), 4, 'a clean close writes the active segment\'s .idx');
  t.equal(stats.sizeBytes, await dirBytes(dir));
});

t.test('reopen reads sealed segments through their .idx and fills nothing before a flush', async (t) => {
  // What a restart restores (offsets, lastIngress, holdsIngress) is the shared suite's; here, the files.
  const dir = await tempDir(t);
  const first = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  for (let i = 0; i < 5; i++) first.stage(record(i));
  await first.flush();
  await first.close();
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => log.close());
  t.equal(log.stats().sizeBytes, await dirBytes(dir), 'the close cut the zero tail; nothing is filled before a flush');
  for (let i = 0; i < 5; i++) await expectRecord(t, log, i, i);
});

t.test('a sealed segment with a missing or wrong .idx gets it rebuilt', async (t) => {
  const dir = await tempDir(t);
  const first = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  for (let i = 0; i < 6; i++) first.stage(record(i));
  await first.flush();
  await first.close();
  await unlink(join(dir, segmentFileName(0, 'idx')));
  await writeFile(join(dir, segmentFileName(2, 'idx')), new Uint8Array([0, 0, 0, 0, 9, 0, 0, 0]));
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => log.close());
  for (let i = 0; i < 6; i++) await expectRecord(t, log, i, i);
  t.equal((await stat(join(dir, segmentFileName(2, 'idx')))).size, 8);
});

t.test('a damaged sealed segment stops recovery instead of shifting offsets', async (t) => {
  const dir = await tempDir(t);
  const first = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  for (let i = 0; i < 6; i++) first.stage(record(i));
  await first.flush();
  await first.close();
  await unlink(join(dir, segmentFileName(2, 'idx')));
  const logPath = join(dir, segmentFileName(2, 'log'));
  await truncate(logPath, (await stat(logPath)).size - 3);
  await t.rejects(PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall }), /is corrupt/);
});

/** Writes records 0..count-1 to a fresh log at dir, closes it, and returns the last .log's path. */
async function writeAndClose(dir: string, count: number, segmentBytesMax: number): Promise<string> {
  const log = await PartitionLog.open({ dir, segmentBytesMax });
  for (let i = 0; i < count; i++) log.stage(record(i));
  await log.flush();
  const lastBase = (await readdir(dir)).filter((n) => n.endsWith('.log')).sort().at(-1)!;
  await log.close();
  return join(dir, lastBase);
}

t.test('a truncated tail is dropped at reopen and appends continue at its offset', async (t) => {
  const dir = await tempDir(t);
  const lastLog = await writeAndClose(dir, 4, 1024 * 1024);
  await truncate(lastLog, (await stat(lastLog)).size - 3);
  const log = await PartitionLog.open({ dir, segmentBytesMax: 1024 * 1024 });
  t.teardown(() => log.close());
  t.equal(log.offsets.nextOffset, 3);
  t.equal(log.offsets.highWatermark, 3);
  t.same(log.offsets.lastIngress, { seq: 102, index: 0 }, 'the torn record is not held, so a replay stores it again');
  t.equal(await log.read(3), 'past_end');
  t.equal(log.stage(record(3)), 3);
  await log.flush();
  for (let i = 0; i < 4; i++) await expectRecord(t, log, i, i);
  const sizeBytes = log.stats().sizeBytes;
  await log.close();
  t.equal(sizeBytes, await dirBytes(dir));
});

t.test('a flipped byte in the last frame fails its crc and is dropped', async (t) => {
  const dir = await tempDir(t);
  const lastLog = await writeAndClose(dir, 4, 1024 * 1024);
  const bytes = await readFile(lastLog);
  const flipAt = bytes.length - 2;
  bytes[flipAt] = bytes[flipAt]! ^ 0xff;
  await writeFile(lastLog, bytes);
  const log = await PartitionLog.open({ dir, segmentBytesMax: 1024 * 1024 });
  t.teardown(() => log.close());
  t.equal(log.offsets.nextOffset, 3);
  t.equal(log.stage(record(3)), 3);
  await log.flush();
  await expectRecord(t, log, 3, 3);
  const sizeBytes = log.stats().sizeBytes;
  await log.close();
  t.equal((await stat(lastLog)).size, sizeBytes - 4 * 4, '.log holds exactly four frames again');
});

t.test('the active .log keeps synced zeros ahead of its end; a crash leaves them, a close cuts them', async (t) => {
  const dir = await tempDir(t);
  const log = await PartitionLog.open({ dir, segmentBytesMax: 1024 * 1024 });
  t.teardown(() => log.close());
  const logPath = join(dir, segmentFileName(0, 'log'));
  for (let i = 0; i < 3; i++) log.stage(record(i));
  await log.flush();
  await log.zeroFillIdle();
  const dataBytes = log.stats().sizeBytes - 3 * 4;
  const filled = (await stat(logPath)).size;
  t.ok(filled > dataBytes, `zeros follow the frames once written to (${filled} > ${dataBytes} B)`);
  t.same([...(await readFile(logPath)).subarray(dataBytes)].filter((b) => b !== 0), [], 'past the frames: only zeros');
  for (let i = 3; i < 6; i++) log.stage(record(i));
  await log.flush();
  await log.zeroFillIdle();
  t.equal((await stat(logPath)).size, filled, 'the next round overwrote zeros: the file did not grow');
  t.equal(log.stats().sizeBytes, 61 + 67 + 61 + 67 + 61 + 67 + 6 * 4, 'sizeBytes counts frames and index entries only');
  // kill -9 now: the copy is what the disk holds, zero tail included.
  const crashed = `${dir}-crashed`;
  await cp(dir, crashed, { recursive: true });
  t.teardown(() => rm(crashed, { recursive: true, force: true }));
  const reopened = await PartitionLog.open({ dir: crashed, segmentBytesMax: 1024 * 1024 });
  t.equal(reopened.offsets.highWatermark, 6, 'a zero tail reads as the end of the log');
  for (let i = 0; i < 6; i++) await expectRecord(t, reopened, i, i);
  t.equal(reopened.stage(record(6)), 6);
  await reopened.flush();
  await expectRecord(t, reopened, 6, 6);
  await reopened.close();
  await log.close();
  t.equal(await dirBytes(dir), log.stats().sizeBytes, 'a clean close leaves no zeros');
  t.equal((await stat(logPath)).size, log.stats().sizeBytes - 6 * 4);
});

t.test('a frame torn inside the zero tail drops by crc', async (t) => {
  const dir = await tempDir(t);
  const log = await PartitionLog.open({ dir, segmentBytesMax: 1024 * 1024 });
  for (let i = 0; i < 2; i++) log.stage(record(i));
  await log.flush();
  await log.zeroFillIdle();
  const logPath = join(dir, segmentFileName(0, 'log'));
  const dataBytes = log.stats().sizeBytes - 2 * 4;
  const crashed = `${dir}-crashed`;
  await cp(dir, crashed, { recursive: true });
  t.teardown(() => rm(crashed, { recursive: true, force: true }));
  await log.close();
  // The next round's frame reached the disk only in part: its header and half its body over the zeros.
  const frame = (await readFile(logPath)).subarray(0, 61);
  const crashedLog = join(crashed, segmentFileName(0, 'log'));
  const bytes = await readFile(crashedLog);
  t.ok(bytes.byteLength > dataBytes + 61, 'the copy holds a zero tail');
  bytes.set(frame.subarray(0, 40), dataBytes);
  await writeFile(crashedLog, bytes);
  const reopened = await PartitionLog.open({ dir: crashed, segmentBytesMax: 1024 * 1024 });
  t.teardown(() => reopened.close());
  t.equal(reopened.offsets.highWatermark, 2);
  t.equal((await stat(crashedLog)).size, dataBytes, 'recovery cut the torn frame and the zeros after it');
});

t.test('a last segment torn to nothing takes lastIngress from the sealed one before it', async (t) => {
  const dir = await tempDir(t);
  const lastLog = await writeAndClose(dir, 5, segmentBytesSmall);
  t.match(lastLog, /00000000000000000004\.log$/);
  await truncate(lastLog, 5);
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => log.close());
  t.equal(log.offsets.nextOffset, 4);
  t.same(log.offsets.lastIngress, { seq: 103, index: 0 });
  t.equal(log.stats().segments, 3, 'the empty segment stays as the active one');
  t.equal(log.stage(record(4)), 4);
  await log.flush();
  await expectRecord(t, log, 4, 4);
  await expectRecord(t, log, 3, 3);
});

t.test('a read checks the crc of the frame it reads', async (t) => {
  const dir = await tempDir(t);
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => log.close());
  for (let i = 0; i < 3; i++) log.stage(record(i));
  await log.flush();
  const sealed = join(dir, segmentFileName(0, 'log'));
  const bytes = await readFile(sealed);
  bytes[20] = bytes[20]! ^ 0xff;
  await writeFile(sealed, bytes);
  await t.rejects(log.read(0), /fails its length or crc check/);
  await expectRecord(t, log, 1, 1);
  await expectRecord(t, log, 2, 2);
});

t.test('destroy removes the partition directory', async (t) => {
  const dir = await tempDir(t);
  const log = await PartitionLog.open({ dir, segmentBytesMax: segmentBytesSmall });
  log.stage(record(0));
  await log.flush();
  await log.destroy();
  await t.rejects(stat(dir), { code: 'ENOENT' });
});

