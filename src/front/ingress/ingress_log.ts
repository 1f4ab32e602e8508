// The node's ingress log (DESIGN "Write path", step 2): one frame per produce request in
// `<dir>/<first seq, 20 digits>.wal` segments. Group commit makes one synced write (O_DSYNC) answer every
// append that arrived meanwhile. Runs on the front thread, so it never blocks: all file work is async
// on libuv's pool. The front opens it once at boot (open replays what is retained), appends from the
// produce handlers, calls markDurable on workers' 'durable' reports, and closes it at shutdown.
import assert from 'node:assert/strict';
import { constants as fsConstants } from 'node:fs';
import { open, readdir, readFile, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { decodeIngressEntry, ingressEntryBytesMax, writeIngressEntry, type IngressEntry } from '../../protocol/ingress_frame.js';
import { frameHeaderBytes, scanFrames, sealFrame, type FrameScan } from '../../util/frame.js';
import { dirCreateDurably, dirSync, writeAll } from '../../util/durable_fs.js';
import { grownOwnBytes, unzeroedOwnBytes } from '../../util/owned_bytes.js';
import { ZeroFill } from '../../util/zero_fill.js';

/** A replay chunk is one re-dispatch message, so its size stays near this; one bigger frame is a chunk alone. */
const replayChunkBytesMax = 4 * 1024 * 1024;
/** Zero-padded so that the names sort in seq order. */
const segmentNameDigits = 20;
const segmentNamePattern = /^(\d{20})\.wal$/;
/** Every write to the active segment returns only once its bytes are durable, as an fdatasync after it would make
 *  them (synchronized I/O data integrity completion; Linux reports a writeback error of the file to it as to that
 *  fdatasync). A group is then one call on libuv's pool rather than a write and an fdatasync: under
 *  load each completion waits for the front's current batch of requests, so one hop fewer per group shortens it. */
const syncedWrites = fsConstants.O_DSYNC;
/** Zeros written ahead of the active segment's end (util/zero_fill.ts), so a group's synced write needs no journal
 *  commit: one fill of this size covers about 250 groups of single produces. */
const zeroFillChunkBytes = 4 * 1024 * 1024;
/** Groups larger than this (batch produces) fill no zeros: their sync is dominated by their own data, and zeros
 *  ahead of them would double the bytes written. */
const zeroFillGroupBytesMax = 256 * 1024;
/** A group's buffer starts a quarter larger than the last group's frames, within these bounds (unless its first append
 *  needs more), and doubles when full: a trickle of single produces gets small buffers, a steady load one buffer. */
const groupBytesFirstMin = 4 * 1024;
const groupBytesFirstMax = 64 * 1024;

export interface IngressLogOptions {
  dir: string;
  /** The active segment rolls once it holds this many bytes; a group never splits, so a segment may exceed it. */
  segmentBytesMax: number;
  /** Named fault points for tests: return an Error to make that step fail. `write` fails a group before its write,
   *  `sync` after its bytes reached the file, as a synced write whose flush fails does. */
  faults?: { write?: () => Error | undefined; sync?: () => Error | undefined };
}

export interface IngressRecovery {
  log: IngressLog;
  /** Frames of every retained segment, in order, as chunks of whole frames (each chunk at most ~4 MiB unless
   *  one frame is larger), exactly the bytes on disk, for re-dispatch. Each chunk owns its ArrayBuffer, so it
   *  can be transferred. */
  replay: Uint8Array[];
  /** Last seq found in each chunk, parallel to replay. */
  replayLastSeq: number[];
}

/** The one place that builds a segment's file name. */
export function segmentFileName(baseSeq: number): string {
  assert(Number.isSafeInteger(baseSeq), 'segment base seq must be a safe integer');
  assert(baseSeq >= 1, 'segment base seq must be at least 1');
  return `${String(baseSeq).padStart(segmentNameDigits, '0')}.wal`;
}

/** The one place that parses a segment's file name; undefined for a file that is not a segment. */
export function parseSegmentFileName(name: string): number | undefined {
  const match = segmentNamePattern.exec(name);
  if (match === null) return undefined;
  const baseSeq = Number(match[1]);
  if (!Number.isSafeInteger(baseSeq) || baseSeq < 1) {
    throw new Error(`ingress log: segment name out of range: ${name}`);
  }
  return baseSeq;
}

/** Appends waiting for one synced write, each with the listener its sync (or failure) tells. Their frames are
 *  encoded straight into the group's buffer as they arrive, which the group then owns alone until it is dispatched. */
interface Group {
  buffer: Uint8Array;
  /** Bytes of whole frames at the start of buffer: the group's write. */
  used: number;
  listeners: AppendListener[];
  firstSeq: number;
  lastSeq: number;
}

/** Told once per append: null after the synced write covering its frame, else the log's failure. Must not throw. An
 *  object rather than a callback: the single produce is its own listener and makes no closure per request for it. */
export interface AppendListener {
  appended(error: Error | null): void;
}

interface Segment {
  baseSeq: number;
  /** Highest seq in the segment; baseSeq - 1 while it is empty. */
  lastSeq: number;
  /** Set while its unlink is in flight, so markDurable does not issue it twice. */
  deleting: boolean;
}

interface IngressLogState {
  dir: string;
  segmentBytesMax: number;
  faults: NonNullable<IngressLogOptions['faults']>;
  /** Ordered by seq; the last one is the active segment. */
  segments: Segment[];
  activeHandle: FileHandle;
  activeBytes: number;
}

function onSyncedUnset(): void {
  throw new Error('ingress log: onSynced was not set');
}

export class IngressLog {
  /** Called once per synced group, BEFORE the group's appends are called back, with the exact bytes written and the
   *  group's last seq: the front dispatches these bytes to partition workers. Their ArrayBuffer is the group's alone
   *  (past the bytes it holds only scratch: uninitialised memory or a failed append's partial frame) and is never
   *  touched again here, so it can be transferred. It must not throw: an exception here is a programmer error and ends
   *  the process through the unhandled rejection (fail-stop), leaving the group unanswered. */
  onSynced: (group: Uint8Array, lastSeq: number) => void = onSyncedUnset;

  private readonly dir: string;
  private readonly segmentBytesMax: number;
  private readonly faults: NonNullable<IngressLogOptions['faults']>;
  private readonly segments: Segment[];
  private activeHandle: FileHandle;
  private activeBytes: number;
  private zeroFill: ZeroFill;
  private nextSeq: number;
  private lastAppendedSeq: number;
  /** The group the next write takes; appends join it while another group is being written and synced. */
  private pending: Group | null = null;
  /** Set from the first append of an idle log until the drain finds nothing more to write. */
  private drainRun: Promise<void> | null = null;
  private failure: Error | null = null;
  private closing = false;
  private readonly deletions = new Set<Promise<void>>();
  private syncs = 0;
  /** Frame bytes of the last group written: the next group's first buffer is sized from it. */
  private lastGroupBytes = 0;

  private constructor(state: IngressLogState) {
    this.dir = state.dir;
    this.segmentBytesMax = state.segmentBytesMax;
    this.faults = state.faults;
    this.segments = state.segments;
    this.activeHandle = state.activeHandle;
    this.activeBytes = state.activeBytes;
    this.zeroFill = this.zeroFillFor(this.active().baseSeq, state.activeBytes);
    this.nextSeq = this.active().lastSeq + 1;
    this.lastAppendedSeq = this.nextSeq - 1;
  }

  /** Recovers the log in opts.dir (creating it when missing) and returns it with every retained frame. */
  static async open(opts: IngressLogOptions): Promise<IngressRecovery> {
    assert(Number.isSafeInteger(opts.segmentBytesMax), 'segmentBytesMax must be an integer');
    assert(opts.segmentBytesMax > 0, 'segmentBytesMax must be positive');
    // fs.constants lacks the flag where the platform has none; `| undefined` would then open plain handles, and every
    // 202 would promise bytes that a power loss takes back.
    if (!(syncedWrites > 0)) throw new Error('ingress log: no O_DSYNC on this platform, so no write could be made durable');
    await dirCreateDurably(opts.dir);
    const baseSeqs = await listSegments(opts.dir);
    const recovered: RecoveredFrames = { replay: [], replayLastSeq: [], lastSeq: 0 };
    const segments: Segment[] = [];
    for (const baseSeq of baseSeqs.slice(0, -1)) {
      const fileName = segmentFileName(baseSeq);
      const bytes = await readFile(path.join(opts.dir, fileName));
      const scan = scanFrames(bytes);
      if (scan.validBytes !== bytes.byteLength) {
        // Only the last segment can hold an unsynced tail; a bad frame before it was once synced.
        throw new Error(`ingress log: corrupt frame in ${fileName} at byte ${scan.validBytes} of ${bytes.byteLength}`);
      }
      recoverFrames(fileName, bytes, scan, baseSeq, recovered);
      segments.push({ baseSeq, lastSeq: Math.max(recovered.lastSeq, baseSeq - 1), deleting: false });
    }
    const lastBaseSeq = baseSeqs.at(-1) ?? 1;
    const active = await openActiveSegment(opts.dir, lastBaseSeq, baseSeqs.length > 0, recovered);
    segments.push({ baseSeq: lastBaseSeq, lastSeq: Math.max(recovered.lastSeq, lastBaseSeq - 1), deleting: false });
    const log = new IngressLog({
      dir: opts.dir,
      segmentBytesMax: opts.segmentBytesMax,
      faults: opts.faults ?? {},
      segments,
      activeHandle: active.handle,
      activeBytes: active.bytes,
    });
    return { log, replay: recovered.replay, replayLastSeq: recovered.replayLastSeq };
  }

  get failed(): boolean {
    return this.failure !== null;
  }

  /** Synced group writes done, for tests and the bench. */
  get syncCount(): number {
    return this.syncs;
  }

  /** Reserves the next ingress sequence (strictly increasing across restarts). Take the seq and append it in
   *  the same synchronous step: appends must arrive in seq order. */
  takeSeq(): number {
    const seq = this.nextSeq;
    this.nextSeq = seq + 1;
    return seq;
  }

  /** Appends entry (its seq from takeSeq) as one frame and tells `done` once, always from a microtask: null after the
   *  synced write covering it, or an error when the log has failed (then `failed` is true forever: every produce
   *  answers 500 until restart) or close has begun. A listener, not a promise: the single produce makes one append per
   *  request. The entry is encoded now, into the group's buffer, and not kept: it and its payloads may be reused once
   *  this returns. */
  appendThen(entry: IngressEntry, done: AppendListener): void {
    const seq = entry.seq;
    if (this.failure !== null) return callAll([done], this.failure);
    if (this.closing) return callAll([done], new Error('ingress log closed'));
    assert(seq > this.lastAppendedSeq, 'ingress log: seqs must be appended in increasing order');
    assert(seq < this.nextSeq, 'ingress log: append of a seq that takeSeq never gave');
    assert(this.onSynced !== onSyncedUnset, 'ingress log: onSynced must be set before the first append');
    const frameBytesMax = frameHeaderBytes + ingressEntryBytesMax(entry);
    const group = this.pending ?? newGroup(seq, frameBytesMax, this.lastGroupBytes);
    if (group.used + frameBytesMax > group.buffer.byteLength) groupGrow(group, group.used + frameBytesMax);
    // Nothing is registered before the entry is written: a throw leaves the log as it was.
    const bodyBytes = writeIngressEntry(entry, group.buffer, group.used + frameHeaderBytes);
    // A typed array drops writes past its end: a bound that fell short would lose bytes without a word.
    assert(bodyBytes <= frameBytesMax - frameHeaderBytes, 'ingress log: entry larger than its bound');
    group.used += sealFrame(group.buffer, group.used, bodyBytes);
    group.listeners.push(done);
    group.lastSeq = seq;
    this.lastAppendedSeq = seq;
    if (this.pending === null) {
      this.pending = group;
      // While a drain runs, it takes this group as soon as its current sync is done. When idle, wait for the
      // check phase so every request this loop turn delivers shares the first write.
      this.drainRun ??= nextLoopTurn().then(() => this.drain());
    }
  }

  /** The segment files that may hold seq and later ones, oldest first (the hand-off reads a backlog from them). */
  segmentsFrom(seq: number): { path: string; baseSeq: number }[] {
    return this.segments.filter((segment) => segment.lastSeq >= seq || segment === this.active())
      .map((segment) => ({ path: path.join(this.dir, segmentFileName(segment.baseSeq)), baseSeq: segment.baseSeq }));
  }

  /** Every partition owner holds everything up to seqUpTo: delete sealed segments whose frames are all
   *  <= seqUpTo. The active segment stays. A failed unlink leaves the segment for the next call to retry. */
  markDurable(seqUpTo: number): void {
    assert(seqUpTo < this.nextSeq, 'ingress log: durable report past every seq given');
    if (this.closing) return;
    for (const segment of this.segments) {
      if (segment === this.active() || segment.lastSeq > seqUpTo) return;
      if (!segment.deleting) this.deleteSegment(segment);
    }
  }

  /** Waits for the in-flight group, the pending appends and segment deletions, then cuts the zero tail off and
   *  closes the file. Every written byte was already durable before its group resolved. */
  async close(): Promise<void> {
    assert(!this.closing, 'ingress log: close called twice');
    this.closing = true;
    if (this.drainRun !== null) await this.drainRun;
    assert(this.pending === null, 'ingress log: appends left after the last drain');
    await Promise.all(this.deletions);
    // After a failure nothing is written again; the next open drops the tail, zeros or not.
    if (this.failure === null) await this.zeroFill.closeAndCut(this.activeHandle, this.activeBytes);
    else await this.zeroFill.close();
    await this.activeHandle.close();
  }

  private active(): Segment {
    const segment = this.segments.at(-1);
    assert(segment !== undefined, 'ingress log: no active segment');
    return segment;
  }

  /** Writes groups one after another until no append is waiting; each sync covers exactly one group. A synced group's
   *  answers are queued as a microtask, and the next group's write is issued before they run (writeGroup). */
  private async drain(): Promise<void> {
    for (let group = this.pending; group !== null; group = this.pending) {
      this.pending = null;
      this.lastGroupBytes = group.used;
      const bytes = group.buffer.subarray(0, group.used);
      try {
        await this.writeGroup(bytes, group.firstSeq);
      } catch (err) {
        this.fail(err, group);
        break;
      }
      this.active().lastSeq = group.lastSeq;
      this.onSynced(bytes, group.lastSeq);
      callAll(group.listeners, null);
    }
    this.drainRun = null;
  }

  private async writeGroup(bytes: Uint8Array, firstSeq: number): Promise<void> {
    if (this.activeBytes >= this.segmentBytesMax) await this.roll(firstSeq);
    // No await before the write is issued unless a fill must be written first: drain calls this right after queueing the
    // last group's answers (a microtask, about a millisecond of sends for a hundred answers), and an await here would
    // hold this group's write until they are all sent. Issued now, the write runs on the pool while they are.
    const fillWritten = this.zeroFill.reserve(this.activeBytes + bytes.byteLength);
    if (fillWritten !== null) await fillWritten;
    const writeFault = this.faults.write?.();
    if (writeFault !== undefined) throw writeFault;
    await writeAll(this.activeHandle, bytes, this.activeBytes);
    this.activeBytes += bytes.byteLength;
    const syncFault = this.faults.sync?.();
    if (syncFault !== undefined) throw syncFault;
    this.syncs += 1;
    if (bytes.byteLength <= zeroFillGroupBytesMax && !this.closing) this.zeroFill.extendIfLow(this.activeBytes);
  }

  private zeroFillFor(baseSeq: number, fileBytes: number): ZeroFill {
    return new ZeroFill({
      path: path.join(this.dir, segmentFileName(baseSeq)),
      fileBytes,
      limitBytes: this.segmentBytesMax,
      chunkBytes: zeroFillChunkBytes,
    });
  }

  /** Seals the active segment and starts one named by the next group's first seq, between two groups. */
  private async roll(baseSeq: number): Promise<void> {
    assert(baseSeq > this.active().lastSeq, 'ingress log: new segment must start past the sealed one');
    // Fills stop at segmentBytesMax and this segment holds at least that much data: it has no zero tail.
    await this.zeroFill.close();
    assert(this.zeroFill.fileBytes <= this.activeBytes, 'ingress log: zero tail left in a sealed segment');
    const handle = await createSegmentFile(this.dir, baseSeq);
    const sealed = this.activeHandle;
    this.activeHandle = handle;
    this.activeBytes = 0;
    this.segments.push({ baseSeq, lastSeq: baseSeq - 1, deleting: false });
    this.zeroFill = this.zeroFillFor(baseSeq, 0);
    await sealed.close();
  }

  /** Latches the failure: the file's state past the last sync is unknown, so nothing is written again. */
  private fail(cause: unknown, inFlight: Group): void {
    const failure = new Error('ingress log failed', { cause });
    this.failure = failure;
    callAll(inFlight.listeners, failure);
    if (this.pending !== null) callAll(this.pending.listeners, failure);
    this.pending = null;
  }

  private deleteSegment(segment: Segment): void {
    segment.deleting = true;
    const forget = (): void => {
      const index = this.segments.indexOf(segment);
      assert(index >= 0, 'ingress log: deleted segment already forgotten');
      assert(index < this.segments.length - 1, 'ingress log: the active segment must never be deleted');
      this.segments.splice(index, 1);
    };
    const deletion: Promise<void> = unlink(path.join(this.dir, segmentFileName(segment.baseSeq)))
      .then(forget, (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') forget();
        else segment.deleting = false;
      })
      .finally(() => this.deletions.delete(deletion));
    this.deletions.add(deletion);
  }
}

/** Tells every listener in one microtask, so callers never hear inside their own call (none may throw: that would be
 *  a programmer error, and the unhandled exception ends the process). */
function callAll(listeners: AppendListener[], error: Error | null): void {
  queueMicrotask(() => {
    for (const listener of listeners) listener.appended(error);
  });
}

/** firstFrameBytesMax: the first append's frame bound; lastGroupBytes: the frame bytes of the last group written. */
function newGroup(firstSeq: number, firstFrameBytesMax: number, lastGroupBytes: number): Group {
  const hinted = Math.min(groupBytesFirstMax, Math.max(groupBytesFirstMin, lastGroupBytes + (lastGroupBytes >> 2)));
  return { buffer: unzeroedOwnBytes(Math.max(firstFrameBytesMax, hinted)), used: 0, listeners: [], firstSeq, lastSeq: firstSeq };
}

/** Its own memory, since it is transferred to a partition worker; every byte up to `used` is written before a read. */
function groupGrow(group: Group, bytesMin: number): void {
  group.buffer = grownOwnBytes(group.buffer, group.used, Math.max(bytesMin, group.buffer.byteLength * 2));
}

function nextLoopTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

interface RecoveredFrames {
  replay: Uint8Array[];
  replayLastSeq: number[];
  /** Highest seq recovered so far across segments; 0 before the first frame. */
  lastSeq: number;
}

/** Checks the seqs of one segment's valid frames and appends them to the replay as copied chunks. */
function recoverFrames(fileName: string, bytes: Uint8Array, scan: FrameScan, baseSeq: number, out: RecoveredFrames): void {
  assert(baseSeq > out.lastSeq, `ingress log: ${fileName} starts at or below seq ${out.lastSeq}`);
  let chunkStart = 0;
  let chunkLastSeq = 0;
  scan.bodies.forEach((body, i) => {
    const frameStart = scan.positions[i];
    assert(frameStart !== undefined, 'scanFrames: positions parallel to bodies');
    const seq = decodeSeq(fileName, frameStart, body);
    assert(seq >= baseSeq, `ingress log: ${fileName} at byte ${frameStart} holds seq ${seq} below its base`);
    assert(seq > out.lastSeq, `ingress log: ${fileName} at byte ${frameStart} holds seq ${seq} out of order`);
    const frameEnd = frameStart + frameHeaderBytes + body.byteLength;
    if (frameEnd - chunkStart > replayChunkBytesMax && frameStart > chunkStart) {
      out.replay.push(copyOwned(bytes.subarray(chunkStart, frameStart)));
      out.replayLastSeq.push(chunkLastSeq);
      chunkStart = frameStart;
    }
    chunkLastSeq = seq;
    out.lastSeq = seq;
  });
  if (scan.validBytes > chunkStart) {
    out.replay.push(copyOwned(bytes.subarray(chunkStart, scan.validBytes)));
    out.replayLastSeq.push(chunkLastSeq);
  }
}

/** A copy with its own ArrayBuffer (Buffer#slice would share the file's), so the front can transfer each chunk. */
function copyOwned(view: Uint8Array): Uint8Array {
  return new Uint8Array(view);
}

function decodeSeq(fileName: string, frameStart: number, body: Uint8Array): number {
  let seq: unknown;
  try {
    seq = decodeIngressEntry(body).seq;
  } catch (err) {
    throw new Error(`ingress log: undecodable frame in ${fileName} at byte ${frameStart}`, { cause: err });
  }
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < 1) {
    throw new Error(`ingress log: frame in ${fileName} at byte ${frameStart} has no valid seq`);
  }
  return seq;
}

/** Opens the last segment for writing (or creates segment 1 in a new log), recovering its frames and
 *  truncating a torn or corrupt tail: a frame past the last valid one was never synced, so never answered. */
async function openActiveSegment(
  dir: string,
  baseSeq: number,
  exists: boolean,
  out: RecoveredFrames,
): Promise<{ handle: FileHandle; bytes: number }> {
  if (!exists) return { handle: await createSegmentFile(dir, baseSeq), bytes: 0 };
  const fileName = segmentFileName(baseSeq);
  const handle = await open(path.join(dir, fileName), fsConstants.O_RDWR | syncedWrites);
  try {
    const bytes = await handle.readFile();
    const scan = scanFrames(bytes);
    recoverFrames(fileName, bytes, scan, baseSeq, out);
    if (scan.validBytes < bytes.byteLength) {
      await handle.truncate(scan.validBytes);
      await handle.sync();
    }
    return { handle, bytes: scan.validBytes };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/** Creates an empty segment and syncs the directory, since otherwise the new entry can vanish on power loss. */
async function createSegmentFile(dir: string, baseSeq: number): Promise<FileHandle> {
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | syncedWrites;
  const handle = await open(path.join(dir, segmentFileName(baseSeq)), flags, 0o666);
  try {
    await dirSync(dir);
  } catch (err) {
    await handle.close();
    throw err;
  }
  return handle;
}

async function listSegments(dir: string): Promise<number[]> {
  const baseSeqs: number[] = [];
  for (const name of await readdir(dir)) {
    const baseSeq = parseSegmentFileName(name);
    if (baseSeq !== undefined) baseSeqs.push(baseSeq);
  }
  return baseSeqs.sort((a, b) => a - b);
}

