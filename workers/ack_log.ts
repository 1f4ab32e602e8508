// The durable ack state of one partition: <partitionDir>/acks.log, frames [u32 len][u32 crc32][msgpack
// {frontier, acked}], each a whole snapshot, so the last valid frame is the state. Runs on the partition
// worker thread that owns the partition; only partition_worker.ts calls it. Lifecycle: open (recovery),
// then write one snapshot at a time, then close. Past bytesMax the next snapshot replaces the file.
import assert from 'node:assert/strict';
import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { encodeFrame, frameBodyBytesMax, frameHeaderBytes, scanFrames } from '../src/util/frame.js';
import { dirCreateDurably, dirSync, writeAll } from '../src/util/durable_fs.js';
import type { AckState } from './lease_table.js';

/** The lowest unacked offset and the offsets acked above it, strictly ascending (the lease table's shape). */
export type { AckState };

const ackLogFileName = 'acks.log';
/** A rewrite is written and synced under this name first, so acks.log is always whole. */
const ackLogTmpFileName = 'acks.log.tmp';
/** Bytes of acks.log after which the next snapshot starts a new file: recovery then reads at most this
 *  plus one snapshot, and a partition's ack state costs bounded disk however many acks it takes. */
export const ackLogBytesMaxDefault = 1024 * 1024;

const packr = new Packr({ useRecords: false, moreTypes: false });

export class AckLog {
  private writing = false;
  /** Set when a write fails: the file's state is unknown then, and the caller fail-stops. */
  private failed = false;
  private closed = false;

  private constructor(
    readonly dir: string,
    readonly bytesMax: number,
    /** null until the first write when open() found no acks.log. */
    private handle: FileHandle | null,
    /** Bytes of acks.log holding valid snapshots: where the next one is appended. */
    private fileBytes: number,
  ) {
    assert(Number.isSafeInteger(bytesMax) && bytesMax > frameHeaderBytes, `ack log bytesMax ${bytesMax} invalid`);
  }

  /** Opens the ack log of a partition directory (which may not exist yet) and returns its last valid
   *  snapshot, or null when it holds none. A torn or corrupt tail is truncated away. */
  static async open(partitionDir: string, opts: { bytesMax?: number } = {}): Promise<{ log: AckLog; state: AckState | null }> {
    const bytesMax = opts.bytesMax ?? ackLogBytesMaxDefault;
    // A rewrite that never reached its rename leaves this behind; acks.log is still the whole state.
    await unlinkIfPresent(join(partitionDir, ackLogTmpFileName));
    const path = join(partitionDir, ackLogFileName);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r+');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      return { log: new AckLog(partitionDir, bytesMax, null, 0), state: null };
    }
    try {
      const bytes = await handle.readFile();
      // Every snapshot was fdatasynced before the next was written, so a bad frame is the torn last write
      // or damage. Falling back to an older snapshot is safe either way: it only delivers acked messages
      // again, which at-least-once delivery allows.
      const scan = scanFrames(bytes, frameBodyBytesMax);
      const body = scan.bodies.at(-1);
      const state = body === undefined ? null : ackStateDecode(body, path);
      if (scan.validBytes < bytes.byteLength) {
        await handle.truncate(scan.validBytes);
        await handle.datasync();
      }
      return { log: new AckLog(partitionDir, bytesMax, handle, scan.validBytes), state };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** Appends one snapshot and fdatasyncs it; the ack state is durable when this resolves. */
  async write(state: AckState): Promise<void> {
    assert(!this.writing, 'one ack log write at a time');
    assert(!this.closed, 'write on a closed ack log');
    assert(!this.failed, 'write after a failed ack log write');
    const problem = ackStateProblem(state.frontier, state.acked);
    assert(problem === null, `ack state to write: ${problem}`);
    const body = packr.pack({ frontier: state.frontier, acked: state.acked });
    assert(body.byteLength <= frameBodyBytesMax, `ack snapshot of ${body.byteLength} bytes would read back as torn`);
    const frame = encodeFrame(body);
    this.writing = true;
    try {
      if (this.fileBytes > 0 && this.fileBytes + frame.byteLength > this.bytesMax) await this.rewrite(frame);
      else await this.append(frame);
    } catch (err) {
      this.failed = true;
      throw err;
    } finally {
      this.writing = false;
    }
  }

  async close(): Promise<void> {
    assert(!this.writing, 'close during an ack log write');
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

  /** The first write of a partition whose acks.log did not exist; its directory may not exist either. */
  private async create(): Promise<FileHandle> {
    await dirCreateDurably(this.dir);
    // 'wx+': open() found no file here, and only this log creates it.
    const handle = await open(join(this.dir, ackLogFileName), 'wx+');
    this.handle = handle;
    await dirSync(this.dir);
    return handle;
  }

  /** The snapshot alone becomes the new acks.log: synced under the .tmp name, renamed over the old file,
   *  then the directory synced. A crash at any point leaves the old file or the new one, each whole. */
  private async rewrite(frame: Uint8Array): Promise<void> {
    const tmpPath = join(this.dir, ackLogTmpFileName);
    const next = await open(tmpPath, 'w+');
    try {
      await writeAll(next, frame, 0);
      await next.sync();
      await rename(tmpPath, join(this.dir, ackLogFileName));
      await dirSync(this.dir);
    } catch (err) {
      await next.close();
      throw err;
    }
    const old = this.handle;
    // The handle follows the renamed file, so the next appends go to the new acks.log.
    this.handle = next;
    this.fileBytes = frame.byteLength;
    await old?.close();
  }
}

/** Checks a snapshot read back (the read half of the paired check). Its crc passed, so a malformed body
 *  is a bug or damage the crc missed, and recovery stops rather than guess. */
function ackStateDecode(body: Uint8Array, path: string): AckState {
  const decoded = packr.unpack(body) as unknown;
  if (typeof decoded !== 'object' || decoded === null || Object.keys(decoded).length !== 2) {
    throw new Error(`${path}: ack snapshot is not {frontier, acked}`);
  }
  const { frontier, acked } = decoded as Record<string, unknown>;
  const problem = ackStateProblem(frontier, acked);
  if (problem !== null) throw new Error(`${path}: ${problem}`);
  return { frontier: frontier as number, acked: acked as number[] };
}

/** Why (frontier, acked) is not a snapshot, or null: the frontier a natural number, acked natural numbers
 *  strictly ascending above it (the frontier itself is unacked by definition). */
function ackStateProblem(frontier: unknown, acked: unknown): string | null {
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

async function unlinkIfPresent(path: string): Promise<void> {
  try {
    await unlink(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}
