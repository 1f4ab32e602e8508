// Goal: AckLog keeps a partition's ack state (frontier and acked set) as the "ack" cursor of its cursor log across
// reopen, takes only valid states, and restores the state of a directory written by the ack log before cursor logs.
// Method: a real partition directory under a temp dir; write states, reopen, and lay down an old-format acks.log.
// The file's recovery, compaction and migration are cursor_log.test.ts's.
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { encodeFrame } from '../../src/util/frame.js';
import { AckLog, type AckState, type RestoredAcks } from '../../workers/store/ack_log.js';
import { CursorLog, MemoryCursorLog } from '../../workers/store/cursor_log.js';

/** A partition directory that does not exist yet, as for a partition with no records. */
async function tempPartitionDir(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'ack-log-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'topics', '0123456789abcdef', '0');
}

async function reopen(t: Test, dir: string): Promise<RestoredAcks> {
  const cursors = await CursorLog.open(dir);
  t.teardown(() => cursors.close());
  return AckLog.over(cursors, dir);
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
  t.same(await readdir(dir), ['cursors.log']);
  await log.cursors.close();
  t.same((await reopen(t, dir)).state, { frontier: 0, acked: [] });
});

t.test('reopen returns the last state written, beside the partition\'s other cursors', async (t) => {
  const dir = await tempPartitionDir(t);
  const { log } = await reopen(t, dir);
  for (let frontier = 0; frontier < 5; frontier++) await log.write(snapshot(frontier));
  await log.cursors.write([['fanout:x', { offset: 2, state: null }]]);
  await log.write({ frontier: 10, acked: [11, 12, 40, 1_000_000] });
  await log.cursors.close();
  const again = await reopen(t, dir);
  t.same(again.state, { frontier: 10, acked: [11, 12, 40, 1_000_000] });
  t.same(again.log.cursors.get('fanout:x'), { offset: 2, state: null });
});

t.test('only valid states are written', async (t) => {
  const dir = await tempPartitionDir(t);
  const { log } = await reopen(t, dir);
  await log.write(snapshot(1));
  await t.rejects(log.write({ frontier: 5, acked: [5] }), /not above 5/, 'the frontier is unacked');
  await t.rejects(log.write({ frontier: 5, acked: [8, 7] }), /not above 8/);
  await t.rejects(log.write({ frontier: -1, acked: [] }), /frontier -1 invalid/);
  await log.cursors.close();
  await t.rejects(log.write(snapshot(2)), /closed/);
  t.same((await reopen(t, dir)).state, snapshot(1));
});

t.test('a directory written by the ack log before cursor logs restores its ack state', async (t) => {
  const dir = await tempPartitionDir(t);
  await mkdir(dir, { recursive: true });
  const packr = new Packr({ useRecords: false, moreTypes: false });
  const old = [snapshot(3), snapshot(8)].map((s) => encodeFrame(packr.pack({ frontier: s.frontier, acked: s.acked })));
  await writeFile(join(dir, 'acks.log'), Buffer.concat(old));
  const { log, state } = await reopen(t, dir);
  t.same(state, snapshot(8));
  await log.write(snapshot(9));
  await log.cursors.close();
  t.same(await readdir(dir), ['cursors.log'], 'the first write migrated acks.log');
  t.same((await reopen(t, dir)).state, snapshot(9));
});

t.test('over a memory cursor log, the ack state survives a crash as written', async (t) => {
  const cursors = new MemoryCursorLog();
  const { log, state } = AckLog.over(cursors, 'memory');
  t.equal(state, null);
  await log.write(snapshot(4));
  t.same(AckLog.over(cursors.crash(), 'memory').state, snapshot(4));
});
