// The durable cursors of one partition: <partitionDir>/cursors.log, frames [u32 len][u32 crc32][msgpack array of
// [name, offset, state]] where each frame updates the cursors it names at once (offset null removes one), so a name's
// last update is its value. Runs on the partition worker thread that owns the partition; the read path's ack state
// (ack_log.ts, cursor "ack") is its first user, and fan-out, remote link and partition-move cursors are further names.
// Lifecycle: open (recovery), one write at a time, close. Past bytesMax a write replaces the file by one frame
// holding every cursor. A directory written before cursors existed holds acks.log: read once, migrated by the first write.
import assert from 'node:assert/strict';
import { open, readFile, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { encodeFrame, frameBodyBytesMax, frameHeaderBytes, scanFrames } from '../../src/util/frame.js';
import { dirCreateDurably, dirSync, writeAll } from '../../src/util/durable_fs.js';
import type { AckState } from '../core/lease_table.js';

/** A cursor: an offset of the partition and a small opaque state its user keeps beside it. The core keeps every
 *  persisted offset at or below the partition's synced offset, so no restart finds a cursor ahead of its records. */
export interface Cursor {
  offset: number;
  state: Uint8Array | null;
}

/** One write's updates, applied together: a cursor's new value, or null to remove it. */
export type CursorUpdates = readonly (readonly [name: string, cursor: Cursor | null])[];

const cursorLogFileName = 'cursors.log';
/** A rewrite is written and synced under this name first, so cursors.log is always whole. */
const cursorLogTmpFileName = 'cursors.log.tmp';
/** The ack state's file before cursor logs (whole {frontier, acked} snapshots); and its rewrite's leftover. */
const legacyAckFileName = 'acks.log';
const legacyAckTmpFileName = 'acks.log.tmp';
/** The name the ack state (ack_log.ts) is kept under: an acks.log read at open becomes this cursor. */
export const ackCursorName = 'ack';
/** Bytes of cursors.log after which the next write starts a new file: recovery then reads at most this plus one
 *  frame, and a partition's cursors cost bounded disk however often they move. */
export const cursorLogBytesMaxDefault = 1024 * 1024;
/** Cursor names are chosen by code (ack, fan-out link ids, ...), never by clients: short. */
const cursorNameCharsMax = 200;

const packr = new Packr({ useRecords: false, moreTypes: false });

type WireUpdate = [string, number | null, Uint8Array | null];

/** What the partition's users ask of its cursors: CursorLog (the file) and MemoryCursorLog (simulations). */
export interface CursorStore {
  get(name: string): Cursor | null;
  names(): string[];
  /** The updates are durable together when this resolves; one write at a time. */
  write(updates: CursorUpdates): Promise<void>;
  close(): Promise<void>;
}

export class CursorLog implements CursorStore {
  private writing = false;
  /** The last write asked for, settled either way: the next one starts after it. */
  private queue: Promise<void> = Promise.resolve();
  /** Set when a write fails: the file's state is unknown then, and the caller fail-stops. */
  private failed = false;
  private closed = false;

  private constructor(
    readonly dir: string,
    readonly bytesMax: number,
    private readonly cursors: Map<string, Cursor>,
    /** null until the first write when open() found no cursors.log. */
    private handle: FileHandle | null,
    /** Bytes of cursors.log holding valid frames: where the next one is appended. */
    private fileBytes: number,
    /** Set when the cursors came from acks.log: the first write moves them to cursors.log and removes it. */
    private legacyAckFile: boolean,
  ) {
    assert(Number.isSafeInteger(bytesMax) && bytesMax > frameHeaderBytes, `cursor log bytesMax ${bytesMax} invalid`);
  }

  /** Opens the cursor log of a partition directory (which may not exist yet). A torn or corrupt tail is truncated
   *  away: every frame was fdatasynced before the next was written, so a bad frame is the torn last write or damage,
   *  and the updates before it stand (an older cursor only delivers or copies records again). */
  static async open(partitionDir: string, opts: { bytesMax?: number } = {}): Promise<CursorLog> {
    const bytesMax = opts.bytesMax ?? cursorLogBytesMaxDefault;
    // A rewrite that never reached its rename leaves these behind; the files they were to replace are whole.
    await unlinkIfPresent(join(partitionDir, cursorLogTmpFileName));
    await unlinkIfPresent(join(partitionDir, legacyAckTmpFileName));
    const path = join(partitionDir, cursorLogFileName);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r+');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      const legacy = await legacyAckCursorRead(partitionDir);
      const cursors = new Map(legacy === null || legacy.cursor === null ? [] : [[ackCursorName, legacy.cursor] as const]);
      return new CursorLog(partitionDir, bytesMax, cursors, null, 0, legacy !== null);
    }
    try {
      const { cursors, validBytes } = await cursorLogRecover(handle, path);
      // A migration that renamed cursors.log into place but crashed before removing acks.log: cursors.log has it all.
      await unlinkIfPresent(join(partitionDir, legacyAckFileName));
      return new CursorLog(partitionDir, bytesMax, cursors, handle, validBytes, false);
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** The cursor's value as last written (or restored), or null. */
  get(name: string): Cursor | null {
    return this.cursors.get(name) ?? null;
  }

  /** The names of the cursors kept, in the order first written. */
  names(): string[] {
    return [...this.cursors.keys()];
  }

  /** Appends the updates as one frame and fdatasyncs it: they are durable together when this resolves. Writes of
   *  the partition's users (the read path's ack cursor, the write core's cursor table) queue behind each other, so
   *  frames reach the file in the order the writes were asked for. */
  write(updates: CursorUpdates): Promise<void> {
    const turn = this.queue.then(() => this.writeNow(updates));
    this.queue = turn.catch(() => undefined);
    return turn;
  }

  private async writeNow(updates: CursorUpdates): Promise<void> {
    assert(!this.writing, 'one cursor log write at a time');
    assert(!this.closed, 'write on a closed cursor log');
    assert(!this.failed, 'write after a failed cursor log write');
    assert(updates.length > 0, 'a cursor log write updates at least one cursor');
    for (const [name, cursor] of updates) {
      const problem = cursorProblem(name, cursor?.offset ?? null, cursor?.state ?? null);
      assert(problem === null, `cursor to write: ${problem}`);
    }
    const frame = framePack(updates.map(([name, cursor]): WireUpdate => [name, cursor?.offset ?? null, cursor?.state ?? null]));
    this.writing = true;
    try {
      const rewrite = this.legacyAckFile || (this.fileBytes > 0 && this.fileBytes + frame.byteLength > this.bytesMax);
      // Applied first so a rewrite holds them; a failure latches `failed` and the caller stops using this log.
      for (const [name, cursor] of updates) {
        if (cursor === null) this.cursors.delete(name);
        else this.cursors.set(name, { offset: cursor.offset, state: cursor.state });
      }
      if (rewrite) await this.rewrite();
      else await this.append(frame);
    } catch (err) {
      this.failed = true;
      throw err;
    } finally {
      this.writing = false;
    }
  }

  /** Closes after the writes already asked for. */
  async close(): Promise<void> {
    await this.queue;
    assert(!this.writing, 'close during a cursor log write');
    if (this.closed) return;
    this.closed = true;
    const handle = this.handle;
    this.handle = null;
    if (handle !== null) await handle.close();
  }

  private async append(frame: Uint8Array): Promise<void> {
    const handle = this.handle ?? (await this.create());
    await writeAll(handle, frame, this.fileBytes);
    await handle.datasync();
    this.fileBytes += frame.byteLength;
  }

  /** The first write of a partition whose cursors.log did not exist; its directory may not exist either. */
  private async create(): Promise<FileHandle> {
    await dirCreateDurably(this.dir);
    // 'wx+': open() found no file here, and only this log creates it.
    const handle = await open(join(this.dir, cursorLogFileName), 'wx+');
    this.handle = handle;
    await dirSync(this.dir);
    return handle;
  }

  /** One frame holding every cursor becomes the new cursors.log: synced under the .tmp name, renamed over the old
   *  file, the directory synced, and only then acks.log removed (a migration). A crash at any point leaves the old
   *  files or the new one, each whole. */
  private async rewrite(): Promise<void> {
    const frame = framePack([...this.cursors].map(([name, c]): WireUpdate => [name, c.offset, c.state]));
    const tmpPath = join(this.dir, cursorLogTmpFileName);
    const next = await open(tmpPath, 'w+');
    try {
      await writeAll(next, frame, 0);
      await next.sync();
      await rename(tmpPath, join(this.dir, cursorLogFileName));
      await dirSync(this.dir);
      if (this.legacyAckFile) {
        await unlink(join(this.dir, legacyAckFileName));
        await dirSync(this.dir);
        this.legacyAckFile = false;
      }
    } catch (err) {
      await next.close();
      throw err;
    }
    const old = this.handle;
    // The handle follows the renamed file, so the next appends go to the new cursors.log.
    this.handle = next;
    this.fileBytes = frame.byteLength;
    await old?.close();
  }
}

/** Cursors in memory with CursorLog's rules (checked updates, one write at a time, durable once a write resolves),
 *  for the partition simulation: crash() gives the cursors a restart finds, without the write in flight. */
export class MemoryCursorLog implements CursorStore {
  private durable = new Map<string, Cursor>();
  private writing = false;
  private closed = false;

  get(name: string): Cursor | null {
    return this.durable.get(name) ?? null;
  }

  names(): string[] {
    return [...this.durable.keys()];
  }

  /** Applies the updates after one microtask, as a write that had to reach the disk first. */
  async write(updates: CursorUpdates): Promise<void> {
    assert(!this.writing, 'one cursor log write at a time');
    assert(!this.closed, 'write on a closed cursor log');
    assert(updates.length > 0, 'a cursor log write updates at least one cursor');
    for (const [name, cursor] of updates) {
      const problem = cursorProblem(name, cursor?.offset ?? null, cursor?.state ?? null);
      assert(problem === null, `cursor to write: ${problem}`);
    }
    this.writing = true;
    const next = new Map(this.durable);
    for (const [name, cursor] of updates) {
      if (cursor === null) next.delete(name);
      else next.set(name, { offset: cursor.offset, state: cursor.state });
    }
    await Promise.resolve();
    this.writing = false;
    if (!this.closed) this.durable = next;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** The process dies now: this instance takes no more writes (one in flight is lost) and the cursors a restart
   *  finds are returned. */
  crash(): MemoryCursorLog {
    this.closed = true;
    const after = new MemoryCursorLog();
    after.durable = new Map(this.durable);
    return after;
  }
}

/** The ack state as a cursor: offset the frontier, state the acked offsets above it as msgpack deltas from it. */
export function ackCursorEncode(state: AckState): Cursor {
  const problem = ackStateProblem(state.frontier, state.acked);
  assert(problem === null, `ack state to write: ${problem}`);
  return { offset: state.frontier, state: packr.pack(state.acked.map((offset) => offset - state.frontier)) };
}

/** The ack state a cursor holds, checked after reading (the read half of the paired check): its frame's crc passed,
 *  so a malformed state is a bug or damage the crc missed, and recovery stops rather than guess. */
export function ackCursorDecode(cursor: Cursor, where: string): AckState {
  const deltas = cursor.state === null ? null : (packr.unpack(cursor.state) as unknown);
  if (!Array.isArray(deltas)) throw new Error(`${where}: ack cursor state is not an array`);
  const acked = deltas.map((delta: unknown) => (typeof delta === 'number' ? cursor.offset + delta : NaN));
  const problem = ackStateProblem(cursor.offset, acked);
  if (problem !== null) throw new Error(`${where}: ${problem}`);
  return { frontier: cursor.offset, acked };
}

/** Why (frontier, acked) is not an ack state, or null: the frontier a natural number, acked natural numbers
 *  strictly ascending above it (the frontier itself is unacked by definition). */
export function ackStateProblem(frontier: unknown, acked: unknown): string | null {
  const frontierValid = typeof frontier === 'number' && Number.isSafeInteger(frontier) && frontier >= 0;
  if (!frontierValid) return `frontier ${String(frontier)} invalid`;
  if (!Array.isArray(acked)) return 'acked is not an array';
  let previous = frontier;
  for (const offset of acked as unknown[]) {
    if (typeof offset !== 'number' || !Number.isSafeInteger(offset)) return `acked offset ${String(offset)} invalid`;
    if (offset <= previous) return `acked offset ${offset} is not above ${previous}`;
    previous = offset;
  }
  return null;
}

function framePack(updates: WireUpdate[]): Uint8Array {
  const body = packr.pack(updates);
  assert(body.byteLength <= frameBodyBytesMax, `cursor frame of ${body.byteLength} bytes would read back as torn`);
  return encodeFrame(body);
}

/** Replays cursors.log's valid frames in order and truncates what follows them. */
async function cursorLogRecover(handle: FileHandle, path: string): Promise<{ cursors: Map<string, Cursor>; validBytes: number }> {
  const bytes = await handle.readFile();
  const scan = scanFrames(bytes, frameBodyBytesMax);
  const cursors = new Map<string, Cursor>();
  for (const body of scan.bodies) {
    for (const [name, offset, state] of frameDecode(body, path)) {
      if (offset === null) cursors.delete(name);
      else cursors.set(name, { offset, state });
    }
  }
  if (scan.validBytes < bytes.byteLength) {
    await handle.truncate(scan.validBytes);
    await handle.datasync();
  }
  return { cursors, validBytes: scan.validBytes };
}

/** A frame's updates, checked after reading; as for the ack state, a malformed one stops recovery. */
function frameDecode(body: Uint8Array, path: string): WireUpdate[] {
  const decoded = packr.unpack(body) as unknown;
  if (!Array.isArray(decoded) || decoded.length === 0) throw new Error(`${path}: cursor frame is not a list of updates`);
  for (const update of decoded as unknown[]) {
    if (!Array.isArray(update) || update.length !== 3) throw new Error(`${path}: cursor update is not [name, offset, state]`);
    const [name, offset, state] = update as unknown[];
    const problem = cursorProblem(name, offset, state);
    if (problem !== null) throw new Error(`${path}: ${problem}`);
  }
  return decoded as WireUpdate[];
}

/** Why [name, offset, state] is not a cursor update, or null. offset null (a removal) goes with state null. */
function cursorProblem(name: unknown, offset: unknown, state: unknown): string | null {
  if (typeof name !== 'string' || name.length === 0 || name.length > cursorNameCharsMax) return `cursor name ${String(name)} invalid`;
  if (offset === null) return state === null ? null : `removed cursor ${name} carries a state`;
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) return `cursor ${name}: offset ${String(offset)} invalid`;
  if (state !== null && !(state instanceof Uint8Array)) return `cursor ${name}: state is not bytes`;
  return null;
}

/** The ack state of a directory written before cursor logs: null without an acks.log, else its last valid snapshot
 *  as the ack cursor (null when none is whole). acks.log is left as it is, torn tail too, until the first write
 *  migrates it. */
async function legacyAckCursorRead(partitionDir: string): Promise<{ cursor: Cursor | null } | null> {
  const path = join(partitionDir, legacyAckFileName);
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  const body = scanFrames(bytes, frameBodyBytesMax).bodies.at(-1);
  if (body === undefined) return { cursor: null };
  const decoded = packr.unpack(body) as unknown;
  if (typeof decoded !== 'object' || decoded === null || Object.keys(decoded).length !== 2) {
    throw new Error(`${path}: ack snapshot is not {frontier, acked}`);
  }
  const { frontier, acked } = decoded as Record<string, unknown>;
  const problem = ackStateProblem(frontier, acked);
  if (problem !== null) throw new Error(`${path}: ${problem}`);
  return { cursor: ackCursorEncode({ frontier: frontier as number, acked: acked as number[] }) };
}

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
