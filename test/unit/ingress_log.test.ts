// Goal: the ingress log answers an append only after the synced write covering it, groups concurrent appends
// into few syncs, replays exactly what is on disk after a restart, drops an unsynced tail, rolls and deletes
// segments by seq, and latches write and sync failures. Method: a real log in a temp dir per test, bodies
// built with encodeIngressEntry, disk state read back with scanFrames; fault points inject failures.
import t from 'tap';
import { constants as fsConstants } from 'node:fs';
import { mkdtemp, readFile, readdir, readlink, realpath, rm, stat, truncate, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { IngressLog, segmentFileName, type IngressLogOptions } from '../../src/front/ingress/ingress_log.js';
import { decodeIngressEntry, PayloadKind, type IngressEntry } from '../../src/protocol/ingress_frame.js';
import { pollUntil } from '../helpers/http.js';
import { encodeIngressEntry } from '../helpers/ingress_entries.js';
import { frameHeaderBytes, scanFrames } from '../../src/util/frame.js';

/** The part of a tap test that tempDir needs. */
interface Teardown {
  teardown(fn: () => unknown): void;
}

interface SyncedGroup {
  bytes: Uint8Array;
  lastSeq: number;
}

const mib = 1024 * 1024;

function entry(seq: number, payloadBytes = 16): IngressEntry {
  return {
    seq,
    topicId: '0123456789abcdef',
    timestampSec: 1,
    records: [{ partition: 0, key: null, payload: new Uint8Array(payloadBytes).fill(seq % 251), payloadKind: PayloadKind.Binary }],
  };
}

/** The frame body the log writes for entry(seq, payloadBytes). */
function body(seq: number, payloadBytes = 16): Uint8Array {
  return encodeIngressEntry(entry(seq, payloadBytes));
}

/** A segmentBytesMax past one frame of body(seq, payloadBytes) and short of two: a segment holds two such frames, since
 *  it rolls only once it holds at least the maximum. */
function rollsAfterTwoFrames(payloadBytes: number): number {
  return body(1, payloadBytes).byteLength + frameHeaderBytes + 1;
}

/** appendThen as a promise. The ordering rules throw here, at the caller, as they do for the produce handler. */
function appendSynced(log: IngressLog, appended: IngressEntry): Promise<void> {
  let settle: (error: Error | null) => void = () => undefined;
  const synced = new Promise<void>((resolve, reject) => (settle = (error) => (error === null ? resolve() : reject(error))));
  log.appendThen(appended, { appended: (error) => settle(error) });
  return synced;
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

function seqsOf(bytes: Uint8Array): number[] {
  const scan = scanFrames(bytes);
  return scan.bodies.map((b) => decodeIngressEntry(b).seq);
}

/** The frames of an open log's segment file: its bytes up to the zeros it keeps past its end (util/zero_fill.ts),
 *  which must be zeros only. */
async function framesOnDisk(t: { ok(value: unknown, message: string): unknown }, file: string): Promise<Uint8Array> {
  const bytes = new Uint8Array(await readFile(file));
  const validBytes = scanFrames(bytes).validBytes;
  t.ok(bytes.subarray(validBytes).every((b) => b === 0), 'past the frames the file holds zeros only');
  return bytes.subarray(0, validBytes);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

async function tempDir(t: Teardown): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ingress-log-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Opens a log that records every synced group. */
async function openLog(opts: IngressLogOptions) {
  const recovery = await IngressLog.open(opts);
  const groups: SyncedGroup[] = [];
  recovery.log.onSynced = (bytes, lastSeq) => groups.push({ bytes, lastSeq });
  return { ...recovery, groups };
}

/** Takes a seq, appends a body for it and waits for its sync; returns the seq. */
async function appendOne(log: IngressLog, payloadBytes = 16): Promise<number> {
  const seq = log.takeSeq();
  await appendSynced(log, entry(seq, payloadBytes));
  return seq;
}

/** A log in a fresh temp dir holding three appended frames (seqs 1 to 3), closed again; `first` is its recovery. */
async function closedLogOfThree(t: Teardown, segmentBytesMax: number) {
  const dir = await tempDir(t);
  const first = await openLog({ dir, segmentBytesMax });
  for (let i = 0; i < 3; i++) await appendOne(first.log);
  await first.log.close();
  return { dir, first };
}

/** Flips the bits of a file's last byte (a corrupt frame); returns the bytes as written back. */
async function corruptLastByte(file: string): Promise<Buffer> {
  const bytes = await readFile(file);
  bytes[bytes.byteLength - 1]! ^= 0xff;
  await writeFile(file, bytes);
  return bytes;
}

async function walFiles(dir: string): Promise<string[]> {
  return (await readdir(dir)).filter((name) => name.endsWith('.wal')).sort();
}

/** This process's descriptors of file that are open for writing with O_DSYNC (Linux: /proc/self/fd, whose links are
 *  resolved paths, and fdinfo, whose flags are octal). */
async function syncedWriters(file: string): Promise<number> {
  const resolved = await realpath(file);
  let count = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    if (target !== resolved) continue;
    const info = await readFile(`/proc/self/fdinfo/${fd}`, 'utf8').catch(() => '');
    const flags = Number.parseInt(/^flags:\s+([0-7]+)/m.exec(info)?.[1] ?? '0', 8);
    const writable = (flags & (fsConstants.O_WRONLY | fsConstants.O_RDWR)) !== 0;
    if (writable && (flags & fsConstants.O_DSYNC) === fsConstants.O_DSYNC) count += 1;
  }
  return count;
}

function concat(chunks: Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(chunks));
}

t.test('append resolves only after the sync covering it, after onSynced saw the bytes', async (t) => {
  const dir = path.join(await tempDir(t), 'data', 'ingress');
  const events: string[] = [];
  const { log, replay, replayLastSeq, groups } = await openLog({
    dir,
    segmentBytesMax: mib,
    faults: {
      sync: () => {
        events.push('sync starts');
        return undefined;
      },
    },
  });
  t.same(replay, []);
  t.same(replayLastSeq, []);
  t.same(await walFiles(dir), [segmentFileName(1)]);
  const recordGroup = log.onSynced;
  log.onSynced = (bytes, lastSeq) => {
    events.push(`onSynced after ${log.syncCount} syncs`);
    recordGroup(bytes, lastSeq);
  };
  const seqA = log.takeSeq();
  const seqB = log.takeSeq();
  t.equal(seqA, 1);
  t.equal(seqB, 2);
  const bodies = [body(seqA), body(seqB)];
  const appended = [
    appendSynced(log, entry(seqA)).then(() => events.push(`A resolved after ${log.syncCount} syncs`)),
    appendSynced(log, entry(seqB)).then(() => events.push(`B resolved after ${log.syncCount} syncs`)),
  ];
  t.equal(log.syncCount, 0);
  await Promise.all(appended);
  t.same(events, ['sync starts', 'onSynced after 1 syncs', 'A resolved after 1 syncs', 'B resolved after 1 syncs']);
  t.equal(groups.length, 1);
  const group = groups[0]!;
  t.equal(group.lastSeq, seqB);
  t.same(scanFrames(group.bytes).bodies.map(hex), bodies.map(hex));
  t.equal(scanFrames(group.bytes).validBytes, group.bytes.byteLength, 'the group is whole frames only');
  t.equal(group.bytes.byteOffset, 0, 'the group\'s frames start its own buffer, which it transfers whole');
  t.equal(hex(await framesOnDisk(t, path.join(dir, segmentFileName(1)))), hex(group.bytes), 'the file holds the group bytes');
  await log.close();
});

t.test('500 concurrent appends share few syncs and keep seq order', async (t) => {
  const dir = await tempDir(t);
  const { log, groups } = await openLog({ dir, segmentBytesMax: 64 * mib });
  const appended: Promise<void>[] = [];
  for (let i = 0; i < 500; i++) {
    const seq = log.takeSeq();
    appended.push(appendSynced(log, entry(seq)));
  }
  await Promise.all(appended);
  t.ok(log.syncCount < 50, `${log.syncCount} syncs for 500 appends`);
  t.equal(groups.length, log.syncCount, 'one onSynced per sync');
  t.same(groups.flatMap((g) => seqsOf(g.bytes)), range(1, 500));
  for (const group of groups) t.equal(group.lastSeq, seqsOf(group.bytes).at(-1));
  const onDisk = await framesOnDisk(t, path.join(dir, segmentFileName(1)));
  t.equal(hex(onDisk), hex(concat(groups.map((g) => g.bytes))));
  await log.close();
});

t.test('zeros are kept past the end while open, cut at close, and a zero tail left by a crash is dropped', async (t) => {
  const dir = await tempDir(t);
  const file = path.join(dir, segmentFileName(1));
  const first = await openLog({ dir, segmentBytesMax: 64 * mib });
  for (let i = 0; i < 3; i++) await appendOne(first.log);
  const dataBytes = concat(first.groups.map((g) => g.bytes)).byteLength;
  // The fill runs in the background after a group's sync: the fourth append waits for nothing but its own sync.
  await appendOne(first.log);
  const allBytes = concat(first.groups.map((g) => g.bytes)).byteLength;
  t.ok(dataBytes < allBytes);
  await first.log.close();
  t.equal((await stat(file)).size, allBytes, 'close cuts the zeros off');

  // What a kill -9 leaves: the frames, then zeros.
  await writeFile(file, new Uint8Array(64 * 1024), { flag: 'a' });
  const second = await openLog({ dir, segmentBytesMax: 64 * mib });
  t.same(seqsOf(concat(second.replay)), [1, 2, 3, 4]);
  t.equal((await stat(file)).size, allBytes, 'the zero tail is no frame and is truncated at open');
  t.equal(await appendOne(second.log), 5);
  await second.log.close();
  const third = await openLog({ dir, segmentBytesMax: 64 * mib });
  t.same(seqsOf(concat(third.replay)), [1, 2, 3, 4, 5]);
  await third.log.close();
});

t.test('appends that arrive while a group is syncing join the next write together', async (t) => {
  const dir = await tempDir(t);
  const late: Promise<void>[] = [];
  let syncsStarted = 0;
  const recovery = await openLog({
    dir,
    segmentBytesMax: mib,
    faults: {
      sync: () => {
        syncsStarted += 1;
        if (syncsStarted === 1) {
          for (let i = 0; i < 3; i++) {
            const seq = recovery.log.takeSeq();
            late.push(appendSynced(recovery.log, entry(seq)));
          }
        }
        return undefined;
      },
    },
  });
  await appendOne(recovery.log);
  await Promise.all(late);
  t.same(recovery.groups.map((g) => seqsOf(g.bytes)), [[1], [2, 3, 4]]);
  t.equal(recovery.log.syncCount, 2);
  await recovery.log.close();
});

t.test('the next group is written before the last group is answered, so its write runs while they are', async (t) => {
  const dir = await tempDir(t);
  let writesIssued = 0;
  let armed = false;
  let second: Promise<void> | null = null;
  const recovery = await openLog({
    dir,
    segmentBytesMax: 64 * mib,
    faults: {
      write: () => {
        writesIssued += 1;
        return undefined;
      },
      sync: () => {
        // While the measured group syncs, one more append waits for the next write.
        if (armed && second === null) second = appendSynced(recovery.log, entry(recovery.log.takeSeq()));
        return undefined;
      },
    },
  });
  // The first sync starts the zero fill ahead of the data; a write into zeros not yet written must wait for them, as
  // it may, so the measured groups come after the fill is on disk (and one more whole group after that).
  await appendOne(recovery.log);
  const file = path.join(dir, segmentFileName(1));
  const filled = await pollUntil(async () => ((await stat(file)).size >= 4 * mib ? true : undefined), 10_000);
  t.ok(filled, 'the first zero fill reached the file');
  await appendOne(recovery.log);
  armed = true;
  const writesBefore = writesIssued;
  let writesWhenAnswered = -1;
  const measured = new Promise<void>((resolve, reject) => {
    recovery.log.appendThen(entry(recovery.log.takeSeq()), {
      appended: (error) => {
        writesWhenAnswered = writesIssued - writesBefore;
        if (error === null) resolve();
        else reject(error);
      },
    });
  });
  await measured;
  await second;
  t.equal(writesWhenAnswered, 2, 'the next group\'s write was issued before the measured append heard of its sync');
  t.same(recovery.groups.slice(2).map((g) => seqsOf(g.bytes)), [[3], [4]], 'one group each, in order');
  await recovery.log.close();
});

t.test('reopen replays every frame in order and takeSeq continues', async (t) => {
  const dir = await tempDir(t);
  const first = await openLog({ dir, segmentBytesMax: mib });
  for (let i = 0; i < 3; i++) await appendOne(first.log);
  const concurrent = [first.log.takeSeq(), first.log.takeSeq()].map((seq) => appendSynced(first.log, entry(seq)));
  await Promise.all(concurrent);
  await first.log.close();
  const written = concat(first.groups.map((g) => g.bytes));

  const second = await openLog({ dir, segmentBytesMax: mib });
  t.equal(hex(concat(second.replay)), hex(written), 'replay is exactly the bytes on disk');
  t.same(seqsOf(concat(second.replay)), range(1, 5));
  t.same(second.replayLastSeq, [5]);
  t.equal(second.log.takeSeq(), 6);
  t.equal(await appendOne(second.log), 7);
  await second.log.close();

  const third = await openLog({ dir, segmentBytesMax: mib });
  t.same(seqsOf(concat(third.replay)), [1, 2, 3, 4, 5, 7]);
  t.equal(third.log.takeSeq(), 8);
  await third.log.close();
});

t.test('replay comes in chunks of whole frames of at most 4 MiB, a bigger frame alone', async (t) => {
  const dir = await tempDir(t);
  const first = await openLog({ dir, segmentBytesMax: 64 * mib });
  for (let i = 0; i < 9; i++) await appendOne(first.log, mib);
  await appendOne(first.log, 5 * mib);
  await appendOne(first.log, mib);
  await first.log.close();

  const second = await openLog({ dir, segmentBytesMax: 64 * mib });
  t.ok(second.replay.length >= 4, `${second.replay.length} chunks`);
  t.equal(second.replayLastSeq.length, second.replay.length);
  second.replay.forEach((chunk, i) => {
    const seqs = seqsOf(chunk);
    t.equal(scanFrames(chunk).validBytes, chunk.byteLength, `chunk ${i} is whole frames`);
    t.ok(chunk.byteLength <= 4 * mib || seqs.length === 1, `chunk ${i} within 4 MiB or one frame`);
    t.equal(second.replayLastSeq[i], seqs.at(-1), `chunk ${i} last seq`);
    t.equal(chunk.buffer.byteLength, chunk.byteLength, `chunk ${i} owns its buffer`);
  });
  t.same(seqsOf(concat(second.replay)), range(1, 11));
  t.equal(hex(concat(second.replay)), hex(await readFile(path.join(dir, segmentFileName(1)))));
  await second.log.close();
});

t.test('a torn tail is dropped at reopen and the file truncated', async (t) => {
  const { dir, first } = await closedLogOfThree(t, mib);
  const file = path.join(dir, segmentFileName(1));
  const keptBytes = first.groups[0]!.bytes.byteLength + first.groups[1]!.bytes.byteLength;
  await truncate(file, (await stat(file)).size - 3);

  const second = await openLog({ dir, segmentBytesMax: mib });
  t.same(seqsOf(concat(second.replay)), [1, 2]);
  t.equal((await stat(file)).size, keptBytes, 'file truncated to the valid frames');
  t.equal(second.log.takeSeq(), 3, 'the torn seq was never answered, so it is given again');
  await second.log.close();
});

t.test('a corrupt last frame is dropped at reopen and the file truncated', async (t) => {
  const { dir, first } = await closedLogOfThree(t, mib);
  const file = path.join(dir, segmentFileName(1));
  const bytes = await corruptLastByte(file);

  const second = await openLog({ dir, segmentBytesMax: mib });
  t.same(seqsOf(concat(second.replay)), [1, 2]);
  t.equal((await stat(file)).size, bytes.byteLength - first.groups[2]!.bytes.byteLength);
  t.equal(await appendOne(second.log), 3);
  await second.log.close();

  const third = await openLog({ dir, segmentBytesMax: mib });
  t.same(seqsOf(concat(third.replay)), [1, 2, 3]);
  await third.log.close();
});

t.test('a bad frame inside a sealed segment fails open, naming the file and position', async (t) => {
  const { dir } = await closedLogOfThree(t, 1);
  t.same(await walFiles(dir), [1, 2, 3].map(segmentFileName));
  const bytes = await corruptLastByte(path.join(dir, segmentFileName(2)));
  await t.rejects(IngressLog.open({ dir, segmentBytesMax: 1 }), {
    message: `ingress log: corrupt frame in ${segmentFileName(2)} at byte 0 of ${bytes.byteLength}`,
  });
});

t.test('segments roll between groups, named by first seq; markDurable deletes only covered sealed ones', async (t) => {
  const dir = await tempDir(t);
  const segmentBytesMax = rollsAfterTwoFrames(200);
  const first = await openLog({ dir, segmentBytesMax });
  for (let i = 0; i < 7; i++) await appendOne(first.log, 200);
  // Five appends in one group land in one segment although they pass segmentBytesMax.
  const grouped = range(8, 12).map(() => first.log.takeSeq()).map((seq) => appendSynced(first.log, entry(seq, 200)));
  await Promise.all(grouped);
  t.equal(first.groups.length, 8);
  await appendOne(first.log, 200);
  const expected: Record<string, number[]> = {
    [segmentFileName(1)]: [1, 2],
    [segmentFileName(3)]: [3, 4],
    [segmentFileName(5)]: [5, 6],
    [segmentFileName(7)]: [7, 8, 9, 10, 11, 12],
    [segmentFileName(13)]: [13],
  };
  t.same(await walFiles(dir), Object.keys(expected));
  for (const [name, seqs] of Object.entries(expected)) {
    t.same(seqsOf(await readFile(path.join(dir, name))), seqs, `${name} holds ${seqs.join(',')}`);
  }
  first.log.markDurable(3);
  await first.log.close();
  t.same(await walFiles(dir), [3, 5, 7, 13].map(segmentFileName), 'segment 3 ends at seq 4, past the durable 3');

  const second = await openLog({ dir, segmentBytesMax });
  t.same(seqsOf(concat(second.replay)), range(3, 13));
  t.equal(second.log.takeSeq(), 14);
  second.log.markDurable(13);
  await second.log.close();
  t.same(await walFiles(dir), [segmentFileName(13)], 'the active segment stays even when covered');
});

// Without O_DSYNC a group's write would stop in the page cache, and a kill -9 test could not tell: the bytes survive
// the process. Only a power loss loses them, so the flag is checked where the kernel shows it.
t.test('segments are written through a handle opened with O_DSYNC: new, rolled and reopened', async (t) => {
  const dir = await tempDir(t);
  const segmentBytesMax = rollsAfterTwoFrames(200);
  const first = await openLog({ dir, segmentBytesMax });
  t.equal(await syncedWriters(path.join(dir, segmentFileName(1))), 1, 'the segment of a new log');
  for (let i = 0; i < 3; i++) await appendOne(first.log, 200);
  t.same(await walFiles(dir), [1, 3].map(segmentFileName), 'seq 3 went to a new segment');
  t.equal(await syncedWriters(path.join(dir, segmentFileName(3))), 1, 'the segment rolled to');
  t.equal(await syncedWriters(path.join(dir, segmentFileName(1))), 0, 'the sealed segment is closed');
  await first.log.close();
  t.equal(await syncedWriters(path.join(dir, segmentFileName(3))), 0, 'closed with the log');

  const second = await openLog({ dir, segmentBytesMax });
  t.equal(await syncedWriters(path.join(dir, segmentFileName(3))), 1, 'the active segment of a reopened log');
  await appendOne(second.log, 200);
  await second.log.close();
});

t.test('a write fault latches failed and rejects pending and later appends', async (t) => {
  const dir = await tempDir(t);
  let pending: Promise<void> | undefined;
  const recovery = await openLog({
    dir,
    segmentBytesMax: mib,
    faults: {
      write: () => {
        const seq = recovery.log.takeSeq();
        pending = appendSynced(recovery.log, entry(seq));
        return new Error('disk full');
      },
    },
  });
  const { log, groups } = recovery;
  t.equal(log.failed, false);
  const seq = log.takeSeq();
  await t.rejects(appendSynced(log, entry(seq)), { message: 'ingress log failed', cause: { message: 'disk full' } });
  t.ok(pending, 'an append arrived while the group was in flight');
  await t.rejects(pending!, { message: 'ingress log failed' });
  t.equal(log.failed, true);
  const later = log.takeSeq();
  await t.rejects(appendSynced(log, entry(later)), { message: 'ingress log failed' });
  t.equal(log.syncCount, 0);
  t.same(groups, [], 'onSynced never ran');
  await log.close();
  t.equal((await stat(path.join(dir, segmentFileName(1)))).size, 0, 'nothing was written');
});

t.test('a sync fault latches failed and rejects pending and later appends', async (t) => {
  const dir = await tempDir(t);
  let syncs = 0;
  let pending: Promise<void> | undefined;
  const recovery = await openLog({
    dir,
    segmentBytesMax: mib,
    faults: {
      sync: () => {
        syncs += 1;
        if (syncs === 1) return undefined;
        const seq = recovery.log.takeSeq();
        pending = appendSynced(recovery.log, entry(seq));
        return new Error('EIO');
      },
    },
  });
  const { log, groups } = recovery;
  await appendOne(log);
  t.equal(log.syncCount, 1);
  const seq = log.takeSeq();
  await t.rejects(appendSynced(log, entry(seq)), { message: 'ingress log failed', cause: { message: 'EIO' } });
  await t.rejects(pending!, { message: 'ingress log failed' });
  t.equal(log.failed, true);
  const later = log.takeSeq();
  await t.rejects(appendSynced(log, entry(later)), { message: 'ingress log failed' });
  t.equal(log.syncCount, 1);
  t.equal(groups.length, 1, 'onSynced ran only for the synced group');
  await log.close();
});

t.test('close waits for the in-flight group and the appends pending behind it', async (t) => {
  const dir = await tempDir(t);
  const events: string[] = [];
  let closed: Promise<void> | undefined;
  let syncs = 0;
  const recovery = await openLog({
    dir,
    segmentBytesMax: mib,
    faults: {
      sync: () => {
        syncs += 1;
        if (syncs > 1) return undefined;
        const seq = recovery.log.takeSeq();
        void appendSynced(recovery.log, entry(seq)).then(() => events.push('pending resolved'));
        closed = recovery.log.close().then(() => {
          events.push('closed');
        });
        return undefined;
      },
    },
  });
  const { log } = recovery;
  const seq = log.takeSeq();
  const first = appendSynced(log, entry(seq)).then(() => events.push('in-flight resolved'));
  await first;
  t.ok(closed, 'close began while the first group was syncing');
  await closed;
  t.same(events, ['in-flight resolved', 'pending resolved', 'closed']);
  t.equal(log.syncCount, 2);
  const late = 99;
  await t.rejects(appendSynced(log, entry(late)), { message: 'ingress log closed' });

  const reopened = await openLog({ dir, segmentBytesMax: mib });
  t.same(seqsOf(concat(reopened.replay)), [1, 2]);
  await reopened.log.close();
});

t.test('appends must come in increasing, taken seq order', async (t) => {
  const dir = await tempDir(t);
  const { log } = await openLog({ dir, segmentBytesMax: mib });
  const a = log.takeSeq();
  const b = log.takeSeq();
  const appended = appendSynced(log, entry(b));
  t.throws(() => appendSynced(log, entry(a)), /increasing order/);
  t.throws(() => appendSynced(log, entry(b + 1)), /never gave/);
  await appended;
  await log.close();
});

t.test('appendThen tells its listener exactly once and never inside the call: after the sync, after a failure, after close', async (t) => {
  const dir = await tempDir(t);
  let failWrites = false;
  const { log } = await openLog({ dir, segmentBytesMax: mib, faults: { write: () => (failWrites ? new Error('disk full') : undefined) } });
  const calls = new Map<string, (Error | null)[]>();
  const append = (name: string): void => {
    calls.set(name, []);
    const seq = log.takeSeq();
    log.appendThen(entry(seq), { appended: (error) => calls.get(name)!.push(error) });
    t.same(calls.get(name), [], `${name}: not called inside appendThen`);
  };
  /** Waits (at most 10 s) until the named append was called back. */
  const answered = async (name: string): Promise<void> => {
    await pollUntil(async () => (calls.get(name)!.length > 0 ? true : undefined), 10_000, 10);
  };
  append('synced');
  await answered('synced');
  failWrites = true;
  append('failing');
  await answered('failing');
  append('after the failure');
  await answered('after the failure');
  await log.close();
  // A log that never failed, closed: its refusal is the close's own.
  const unfailed = (await openLog({ dir: await tempDir(t), segmentBytesMax: mib })).log;
  await unfailed.close();
  calls.set('after close', []);
  unfailed.appendThen(entry(unfailed.takeSeq()), { appended: (error) => calls.get('after close')!.push(error) });
  t.same(calls.get('after close'), [], 'after close: not called inside appendThen');
  await answered('after close');
  // A second call would come from the same microtask or group: one more turn shows none came.
  await new Promise((r) => setTimeout(r, 10));
  t.same(calls.get('synced'), [null], 'once, with null, after its sync');
  t.same(calls.get('failing')!.map((e) => e?.message), ['ingress log failed']);
  t.same(calls.get('after the failure')!.map((e) => e?.message), ['ingress log failed']);
  t.same(calls.get('after close')!.map((e) => e?.message), ['ingress log closed'], 'once after close too');
});

t.test('an entry is encoded when appended: its payload may be reused at once, and a failed encode appends nothing', async (t) => {
  const dir = await tempDir(t);
  const { log, groups } = await openLog({ dir, segmentBytesMax: mib });
  // A failed encode while no group is pending.
  t.throws(() => log.appendThen({ ...entry(log.takeSeq()), timestampSec: -1 }, { appended: () => t.fail('never called back') }), /not an unsigned/);
  const reused = entry(log.takeSeq());
  const payload = reused.records[0]!.payload;
  const expected = hex(body(reused.seq));
  const synced = appendSynced(log, reused);
  payload.fill(0xee);
  // A timestamp that is no unsigned integer cannot be encoded: appendThen throws and keeps nothing of it.
  const broken = { ...entry(log.takeSeq()), timestampSec: -1 };
  t.throws(() => log.appendThen(broken, { appended: () => t.fail('a failed append is never called back') }), /not an unsigned safe integer/);
  const after = entry(log.takeSeq());
  await Promise.all([synced, appendSynced(log, after)]);
  const frames = groups.flatMap((group) => scanFrames(group.bytes).bodies.map(hex));
  t.same(frames, [expected, hex(body(after.seq))], 'the bytes as they were when appended, and nothing of the failed ones');
  await log.close();
});

t.test('a group larger than its first buffer grows and keeps every frame', async (t) => {
  const dir = await tempDir(t);
  const { log, groups } = await openLog({ dir, segmentBytesMax: 64 * mib });
  // The first group's buffer is 4 KiB (no group before it): 40 frames of 5 KB and one of 200 KB, in one loop turn,
  // grow it several times; an entry that fails to encode after the growth leaves the frames before it whole.
  const sizes = [...new Array<number>(40).fill(5_000), 200_000, 10];
  const appended = sizes.slice(0, 41).map((size) => appendSynced(log, entry(log.takeSeq(), size)));
  t.throws(() => log.appendThen({ ...entry(log.takeSeq()), timestampSec: -1 }, { appended: () => t.fail('never called back') }), /not an unsigned/);
  appended.push(appendSynced(log, entry(log.takeSeq(), sizes[41])));
  await Promise.all(appended);
  t.equal(groups.length, 1, 'appended in one loop turn: one group, grown past its first buffer');
  t.ok(groups[0]!.bytes.byteLength > 200_000);
  // Seq 42 failed to encode and was never appended.
  const seqs = [...range(1, 41), 43];
  t.same(groups.flatMap((group) => seqsOf(group.bytes)), seqs);
  const frames = groups.flatMap((group) => scanFrames(group.bytes).bodies.map(hex));
  t.same(frames, sizes.map((size, i) => hex(body(seqs[i]!, size))), 'every frame whole, in order');
  t.equal(hex(await framesOnDisk(t, path.join(dir, segmentFileName(1)))), hex(concat(groups.map((group) => group.bytes))));
  // The next group starts from the last one's size, capped: a small append after a 400 KB group gets 64 KiB.
  await appendOne(log);
  t.equal(groups[1]!.bytes.buffer.byteLength, 64 * 1024, 'the next first buffer is capped at 64 KiB');
  await log.close();
});
