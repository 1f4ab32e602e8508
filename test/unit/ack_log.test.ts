// Goal: AckLog keeps a partition's last ack snapshot across reopen, falls back to the previous snapshot
// when the tail is torn or corrupt, stays bounded on disk, and takes one write at a time.
// Method: a real partition directory under a temp dir; write snapshots, reopen, damage acks.log
// (truncate, flip a byte) and check what open returns and where later writes land.
import t, { type Test } from 'tap';
import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AckLog, type AckState } from '../../workers/ack_log.js';

/** A partition directory that does not exist yet, as for a partition with no records. */
async function tempPartitionDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ack-log-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'topics', '0123456789abcdef', '0');
}

async function reopen(t: Test, dir: string, bytesMax?: number): Promise<{ log: AckLog; state: AckState | null }> {
  const opened = await AckLog.open(dir, bytesMax === undefined ? {} : { bytesMax });
  t.teardown(() => opened.log.close());
  return opened;
}

/** Writes snapshots with frontiers from..to-1 (acked: frontier + 2, + 5) and closes. */
async function writeSnapshots(dir: string, from: number, to: number): Promise<void> {
  const { log } = await AckLog.open(dir);
  for (let frontier = from; frontier < to; frontier++) await log.write(snapshot(frontier));
  await log.close();
}

function snapshot(frontier: number): AckState {
  return { frontier, acked: [frontier + 2, frontier + 5] };
}

t.test('an absent partition directory opens empty and is created by the first write', async (t) => {
  const dir = await tempPartitionDir(t);
  const { log, state } = await reopen(t, dir);
  t.equal(state, null);
  await t.rejects(stat(dir), { code: 'ENOENT' }, 'open creates nothing');
  await log.write({ frontier: 0, acked: [] });
  t.same(await readdir(dir), ['acks.log']);
  await log.close();
  const again = await reopen(t, dir);
  t.same(again.state, { frontier: 0, acked: [] });
});

t.test('reopen returns the last snapshot written', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeSnapshots(dir, 0, 5);
  const { log, state } = await reopen(t, dir);
  t.same(state, snapshot(4));
  await log.write({ frontier: 10, acked: [11, 12, 40] });
  await log.close();
  t.same((await reopen(t, dir)).state, { frontier: 10, acked: [11, 12, 40] });
});

t.test('a torn tail falls back to the previous snapshot and is truncated away', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeSnapshots(dir, 0, 3);
  const path = join(dir, 'acks.log');
  const whole = (await stat(path)).size;
  const frameBytes = whole / 3;
  await truncate(path, whole - 3);
  const { log, state } = await reopen(t, dir);
  t.same(state, snapshot(1));
  t.equal((await stat(path)).size, 2 * frameBytes, 'the torn frame is gone');
  await log.write(snapshot(7));
  await log.close();
  t.same((await reopen(t, dir)).state, snapshot(7), 'the next write lands after the last valid snapshot');
});

t.test('a flipped byte in the last snapshot fails its crc and falls back', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeSnapshots(dir, 0, 3);
  const path = join(dir, 'acks.log');
  const bytes = await readFile(path);
  const flipAt = bytes.length - 2;
  bytes[flipAt] = bytes[flipAt]! ^ 0xff;
  await writeFile(path, bytes);
  const { state } = await reopen(t, dir);
  t.same(state, snapshot(1));
  t.equal((await stat(path)).size, (bytes.length / 3) * 2);
});

t.test('a file with no whole snapshot opens as empty and takes writes from its start', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeSnapshots(dir, 0, 1);
  const path = join(dir, 'acks.log');
  await truncate(path, 5);
  const { log, state } = await reopen(t, dir);
  t.equal(state, null);
  t.equal((await stat(path)).size, 0);
  await log.write(snapshot(3));
  await log.close();
  t.same((await reopen(t, dir)).state, snapshot(3));
});

t.test('past bytesMax the snapshot replaces the file, which stays small', async (t) => {
  const dir = await tempPartitionDir(t);
  const bytesMax = 256;
  const { log } = await reopen(t, dir, bytesMax);
  const path = join(dir, 'acks.log');
  let sizeMax = 0;
  for (let frontier = 0; frontier < 100; frontier++) {
    await log.write(snapshot(frontier));
    sizeMax = Math.max(sizeMax, (await stat(path)).size);
  }
  t.ok(sizeMax <= bytesMax, `acks.log peaked at ${sizeMax} bytes`);
  t.same(await readdir(dir), ['acks.log'], 'no rewrite file is left behind');
  await log.close();
  const again = await reopen(t, dir, bytesMax);
  t.same(again.state, snapshot(99));
  await again.log.write(snapshot(100));
  t.ok((await stat(path)).size <= bytesMax);
});

t.test('a snapshot larger than bytesMax still replaces the file alone', async (t) => {
  const dir = await tempPartitionDir(t);
  const bytesMax = 64;
  const { log } = await reopen(t, dir, bytesMax);
  const big: AckState = { frontier: 1, acked: Array.from({ length: 50 }, (_, k) => 1_000 + k) };
  await log.write(snapshot(0));
  await log.write(big);
  await log.write(big);
  const path = join(dir, 'acks.log');
  const single = (await stat(path)).size;
  t.ok(single > bytesMax);
  await log.write(snapshot(2));
  t.ok((await stat(path)).size < single, 'the small snapshot replaced the big one');
  await log.close();
  t.same((await reopen(t, dir, bytesMax)).state, snapshot(2));
});

t.test('a rewrite file left by a crash before its rename is ignored and removed', async (t) => {
  const dir = await tempPartitionDir(t);
  await writeSnapshots(dir, 0, 2);
  await writeFile(join(dir, 'acks.log.tmp'), new Uint8Array([1, 2, 3]));
  const { state } = await reopen(t, dir);
  t.same(state, snapshot(1));
  t.same(await readdir(dir), ['acks.log']);
});

t.test('one write at a time, and only valid snapshots', async (t) => {
  const dir = await tempPartitionDir(t);
  const { log } = await reopen(t, dir);
  const first = log.write(snapshot(0));
  await t.rejects(log.write(snapshot(1)), /one ack log write at a time/);
  await first;
  await log.write(snapshot(1));
  await t.rejects(log.write({ frontier: 5, acked: [5] }), /not above 5/, 'the frontier is unacked');
  await t.rejects(log.write({ frontier: 5, acked: [8, 7] }), /not above 8/);
  await t.rejects(log.write({ frontier: -1, acked: [] }), /frontier -1 invalid/);
  await log.close();
  await t.rejects(log.write(snapshot(2)), /closed/);
  t.same((await reopen(t, dir)).state, snapshot(1));
});
