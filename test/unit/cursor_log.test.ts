// Goal: CursorLog (and MemoryCursorLog, its simulation twin) keeps a partition's named cursors (offset and opaque
// state) across reopen, applies each write's updates together, falls back to the updates before a torn or corrupt
// tail, stays bounded on disk, queues writes asked for together in order, and opens a directory written before cursor logs
// (acks.log) with its ack state, migrating it once.
// Method: a real partition directory under a temp dir; write, reopen, damage cursors.log (truncate, flip a byte),
// and lay down acks.log files in the old format (whole msgpack {frontier, acked} snapshots in crc frames).
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { encodeFrame } from '../../src/util/frame.js';
import { ackCursorDecode, ackCursorName, CursorLog, MemoryCursorLog, type Cursor, type CursorStore } from '../../workers/store/cursor_log.js';

/** A partition directory that does not exist yet, as for a partition with no records. */
async function tempPartitionDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cursor-log-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'topics', '0123456789abcdef', '0');
}

async function reopen(t: Test, dir: string, bytesMax?: number): Promise<CursorLog> {
  const log = await CursorLog.open(dir, bytesMax === undefined ? {} : { bytesMax });
  t.teardown(() => log.close());
  return log;
}

function cursor(offset: number, state: number[] | null = null): Cursor {
  return { offset, state: state === null ? null : new Uint8Array(state) };
}

/** The cursors a log holds, as plain values. */
function values(log: CursorStore): Record<string, [number, number[] | null]> {
  const out: Record<string, [number, number[] | null]> = {};
  for (const name of log.names()) {
    const c = log.get(name)!;
    out[name] = [c.offset, c.state === null ? null : [...c.state]];
  }
  return out;
}

/** Writes cursor "copy" at offsets from..to-1, one frame each, and closes. */
async function writeOffsets(dir: string, from: number, to: number): Promise<void> {
  const log = await CursorLog.open(dir);
  for (let offset = from; offset < to; offset++) await log.write([['copy', cursor(offset, [offset & 0xff])]]);
  await log.close();
}

/** An acks.log as the ack log wrote it before cursor logs: one whole snapshot per frame. */
async function legacyAcksWrite(dir: string, snapshots: { frontier: number; acked: number[] }[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  const packr = new Packr({ useRecords: false, moreTypes: false });
  const frames = snapshots.map((s) => encodeFrame(packr.pack({ frontier: s.frontier, acked: s.acked })));
  await writeFile(join(dir, 'acks.log'), Buffer.concat(frames));
}

t.test('an absent directory opens empty and is created by the first write', async (t) => {
  const dir = await tempPartitionDir(t);
  const log = await reopen(t, dir);
  t.same(log.names(), []);
  t.equal(log.get('copy'), null);
  await t.rejects(stat(dir), { code: 'ENOENT' }, 'open creates nothing');
  await log.write([['copy', cursor(0)]]);
  t.same(await readdir(dir), ['cursors.log']);
  await log.close();
  t.same(values(await reopen(t, dir)), { copy: [0, null] });
});

t.test('named cursors move apart; a write updates several at once; null removes one', async (t) => {
  const dir = await tempPartitionDir(t);
  const log = await reopen(t, dir);
  await log.write([['fanout:a', cursor(3)], ['move', cursor(9, [1, 2])]]);
  await log.write([['fanout:a', cursor(5, [7])]]);
  await log.write([['remote:x', cursor(1)], ['move', null]]);
  t.same(values(log), { 'fanout:a': [5, [7]], 'remote:x': [1, null] });
  await log.close();
  t.same(values(await reopen(t, dir)), { 'fanout:a': [5, [7]], 'remote:x': [1, null] });
});

t.test('a torn tail falls back to the updates before it and is truncated away', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeOffsets(dir, 0, 3);
  const path = join(dir, 'cursors.log');
  const whole = (await stat(path)).size;
  await truncate(path, whole - 3);
  const log = await reopen(t, dir);
  t.same(values(log), { copy: [1, [1]] });
  t.equal((await stat(path)).size, (whole / 3) * 2, 'the torn frame is gone');
  await log.write([['copy', cursor(7)]]);
  await log.close();
  t.same(values(await reopen(t, dir)), { copy: [7, null] }, 'the next write lands after the last valid frame');
});

t.test('a flipped byte in the last frame fails its crc and falls back', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeOffsets(dir, 0, 3);
  const path = join(dir, 'cursors.log');
  const bytes = await readFile(path);
  bytes[bytes.length - 2] = bytes[bytes.length - 2]! ^ 0xff;
  await writeFile(path, bytes);
  t.same(values(await reopen(t, dir)), { copy: [1, [1]] });
  t.equal((await stat(path)).size, (bytes.length / 3) * 2);
});

t.test('past bytesMax a write replaces the file with one frame of every cursor', async (t) => {
  const dir = await tempPartitionDir(t);
  const bytesMax = 256;
  const log = await reopen(t, dir, bytesMax);
  await log.write([['still', cursor(42, [4, 2])]]);
  const path = join(dir, 'cursors.log');
  let sizeMax = 0;
  for (let offset = 0; offset < 100; offset++) {
    await log.write([['copy', cursor(offset)]]);
    sizeMax = Math.max(sizeMax, (await stat(path)).size);
  }
  t.ok(sizeMax <= bytesMax, `cursors.log peaked at ${sizeMax} bytes`);
  t.same(await readdir(dir), ['cursors.log'], 'no rewrite file is left behind');
  await log.close();
  t.same(values(await reopen(t, dir, bytesMax)), { still: [42, [4, 2]], copy: [99, null] }, 'a cursor not written since survives');
});

t.test('a frame larger than bytesMax still replaces the file alone', async (t) => {
  const dir = await tempPartitionDir(t);
  const bytesMax = 64;
  const log = await reopen(t, dir, bytesMax);
  await log.write([['copy', cursor(0)]]);
  await log.write([['copy', cursor(1, Array.from({ length: 100 }, (_, k) => k))]]);
  const path = join(dir, 'cursors.log');
  const single = (await stat(path)).size;
  t.ok(single > bytesMax);
  await log.write([['copy', cursor(2)]]);
  t.ok((await stat(path)).size < single, 'the small frame replaced the big one');
  await log.close();
  t.same(values(await reopen(t, dir, bytesMax)), { copy: [2, null] });
});

t.test('a rewrite file left by a crash before its rename is ignored and removed', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeOffsets(dir, 0, 2);
  await writeFile(join(dir, 'cursors.log.tmp'), new Uint8Array([1, 2, 3]));
  t.same(values(await reopen(t, dir)), { copy: [1, [1]] });
  t.same(await readdir(dir), ['cursors.log']);
});

t.test('writes asked for together land one after another, in order; only valid cursors; none after close', async (t) => {
  const dir = await tempPartitionDir(t);
  const log = await reopen(t, dir);
  // The read path's ack cursor and the write core's cursor table share the log and may write at the same moment.
  const writes = [log.write([['copy', cursor(0)]]), log.write([['ack', cursor(5)]]), log.write([['copy', cursor(1)]])];
  await Promise.all(writes);
  t.same(values(log), { copy: [1, null], ack: [5, null] }, 'the last write of a name wins');
  await t.rejects(log.write([['copy', cursor(-1)]]), /offset -1 invalid/);
  await t.rejects(log.write([['', cursor(1)]]), /cursor name  invalid/);
  await t.rejects(log.write([]), /at least one cursor/);
  t.same(values(log), { copy: [1, null], ack: [5, null] }, 'a refused write changes nothing');
  await log.close();
  await t.rejects(log.write([['copy', cursor(2)]]), /closed/);
  t.same(values(await reopen(t, dir)), { copy: [1, null], ack: [5, null] });
});

t.test('compatibility: an acks.log of the old format opens as the ack cursor', async (t) => {
  const dir = await tempPartitionDir(t);
  await legacyAcksWrite(dir, [{ frontier: 3, acked: [5] }, { frontier: 10, acked: [12, 15] }]);
  const log = await reopen(t, dir);
  t.same(ackCursorDecode(log.get(ackCursorName)!, dir), { frontier: 10, acked: [12, 15] }, 'the last snapshot');
  t.same(await readdir(dir), ['acks.log'], 'opening migrates nothing');
});

t.test('compatibility: the first write moves the ack cursor to cursors.log and removes acks.log', async (t) => {
  const dir = await tempPartitionDir(t);
  const acksLog = join(dir, 'acks.log');
  await legacyAcksWrite(dir, [{ frontier: 10, acked: [12] }]);
  await writeFile(join(dir, 'acks.log.tmp'), new Uint8Array([9]));
  const log = await reopen(t, dir);
  t.same(await readdir(dir), ['acks.log'], 'the old rewrite leftover is removed at open');
  await log.write([['copy', cursor(4)]]);
  t.same(await readdir(dir), ['cursors.log']);
  await log.close();
  const again = await reopen(t, dir);
  t.same(ackCursorDecode(again.get(ackCursorName)!, dir), { frontier: 10, acked: [12] });
  t.same(values(again).copy, [4, null]);
  // A migration that crashed after its rename leaves both files: cursors.log holds everything.
  await legacyAcksWrite(dir, [{ frontier: 1, acked: [] }]);
  await again.close();
  const third = await reopen(t, dir);
  t.same(ackCursorDecode(third.get(ackCursorName)!, dir), { frontier: 10, acked: [12] }, 'cursors.log wins');
  await t.rejects(stat(acksLog), { code: 'ENOENT' });
});

t.test('compatibility: an acks.log with no whole snapshot opens empty and is removed by the first write', async (t) => {
  const dir = await tempPartitionDir(t);
  await legacyAcksWrite(dir, [{ frontier: 10, acked: [12] }]);
  await truncate(join(dir, 'acks.log'), 5);
  const log = await reopen(t, dir);
  t.equal(log.get(ackCursorName), null);
  await log.write([['copy', cursor(1)]]);
  t.same(await readdir(dir), ['cursors.log']);
});

t.test('the memory cursor log keeps completed writes over a crash and loses the one in flight', async (t) => {
  const log = new MemoryCursorLog();
  await log.write([['ack', cursor(3)], ['copy', cursor(1, [5])]]);
  await log.write([['copy', null]]);
  t.same(values(log), { ack: [3, null] });
  await t.rejects(log.write([['copy', cursor(-1)]]), /offset -1 invalid/);
  const inFlight = log.write([['ack', cursor(9)]]);
  const second = log.write([['ack', cursor(10)]]);
  const after = log.crash();
  await t.rejects(second, /one cursor log write at a time/);
  await inFlight;
  t.same(values(after), { ack: [3, null] }, 'the write in flight at the crash is lost');
  await t.rejects(log.write([['ack', cursor(11)]]), /closed/);
  await after.write([['ack', cursor(9)]]);
  t.same(values(after), { ack: [9, null] });
});
