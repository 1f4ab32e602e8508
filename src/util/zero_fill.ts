// Zeros written ahead of an append-only log file's end, so that appends overwrite blocks the file already owns.
// An fdatasync after an append that grows the file must commit the new size and block allocation through the
// filesystem journal; after an overwrite inside the file it only writes the data and flushes the device cache.
// Measured on this project's virtio disk (ext4), a 15 KB write + fdatasync: 0.6-3.8 ms p50 appending, 0.23-0.26 ms
// p50 overwriting preallocated zeros (docs/performance.md). Used by the ingress log (front thread) and the
// segment logs (partition workers); one instance per active file, closed with it. Async fs on the front thread;
// partition workers write their fills with blocking calls (blockingWrites).
//
// Safety rules, which the callers' recovery relies on:
// - Zeros are only ever written past every byte of data: a fill covers [preparedBytes, +chunk) and reserve()
//   moves preparedBytes past a data write before that write is issued, waiting for the write of a fill it would
//   reach into (not for that fill's fdatasync: data overwriting zeros not yet synced costs that data's own
//   fdatasync a journal commit at worst).
// - Readers treat a frame length of 0 as the end of the log (util/frame.ts), so a zero tail is no frame.
// - The fill writes and syncs through its own file handle. Linux reports a writeback error once per open file, so
//   the data handle still hears of it: at its next fdatasync, or at its next write when it was opened with O_DSYNC
//   (the ingress log's). A failed fill can never hide a data write's failure. A fill that fails only stops filling;
//   appends then grow the file as before.
import { close, fdatasync, openSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { promisify } from 'node:util';
import { writeAll, writeAllSync } from './durable_fs.js';

const fdatasyncAsync = promisify(fdatasync);
const closeAsync = promisify(close);

export interface ZeroFillOptions {
  path: string;
  /** The file's current size: everything below it is data (or zeros) already. */
  fileBytes: number;
  /** No zeros past this size (a log rolls to a new file there). */
  limitBytes: number;
  /** Most bytes of zeros per fill: one write and one fdatasync. */
  chunkBytes: number;
  /** Bytes of the first fill (default chunkBytes); each later fill doubles the one before, up to chunkBytes, so a
   *  file written to once holds a small zero tail and a busy one a large one. */
  firstChunkBytes?: number;
  /** Open, write and close a descriptor of its own for each fill with blocking calls, leaving only the fdatasync to
   *  libuv's thread pool (default: one async handle kept until close). For partition workers, which may block and
   *  have thousands of files that must not hold a further descriptor each: an async fill's open and write waited in
   *  the pool behind partition fdatasyncs, and held the data writes behind them for hundreds of milliseconds. */
  blockingWrites?: boolean;
}

/** One buffer of zeros per largest chunk size for every fill of the thread (thousands of partitions may each have
 *  one ZeroFill; they share it, so memory does not grow per file). */
const zerosByChunkBytes = new Map<number, Uint8Array>();

function zerosOf(bytes: number): Uint8Array {
  let zeros = zerosByChunkBytes.get(bytes);
  if (zeros === undefined) zerosByChunkBytes.set(bytes, (zeros = new Uint8Array(bytes)));
  return zeros;
}

export class ZeroFill {
  /** End of the data reserved and the zeros written so far: data may be written below it without growing the file. */
  private preparedBytes: number;
  /** End of the zeros known written: data below it overwrites them and never races a fill's write. */
  private writtenBytes: number;
  /** The fill in flight, until its zeros are written and synced. */
  private fill: Promise<void> | null = null;
  /** The fill in flight, until its zeros are written: what a data write that reaches into them waits for. Not the
   *  sync: that fdatasync also flushes every unsynced byte of data in the file, which under a heavy append load
   *  took hundreds of milliseconds, and only the overwrite's fast fdatasync depends on it, never correctness. */
  private fillWritten: Promise<void> | null = null;
  private handle: FileHandle | null = null;
  private stopped = false;
  /** Size of the last fill (0 before the first): the next starts once less than half of it is left. */
  private lastChunkBytes = 0;

  constructor(private readonly options: ZeroFillOptions) {
    const first = options.firstChunkBytes ?? options.chunkBytes;
    if (!(first > 0 && first <= options.chunkBytes)) throw new Error(`zero fill: first chunk ${first} out of range`);
    this.preparedBytes = options.fileBytes;
    this.writtenBytes = options.fileBytes;
  }

  /** Resolves once no fill is in flight (for tests: the file's size is then fileBytes). */
  async idle(): Promise<void> {
    if (this.fill !== null) await this.fill;
  }

  /** The file's size once the fills in flight are done: data end plus the zero tail. */
  get fileBytes(): number {
    return this.preparedBytes;
  }

  /** Call before writing data that ends at dataEnd: reserves it, once a fill that covers any of it is written. Returns
   *  that wait, or null when there is none: the caller can then issue its write in the same synchronous step (an await
   *  would queue it behind every microtask already waiting, such as the ingress log's answers to the last group). */
  reserve(dataEnd: number): Promise<void> | null {
    if (dataEnd > this.writtenBytes && this.fillWritten !== null) {
      return this.fillWritten.then(() => {
        if (dataEnd > this.preparedBytes) this.preparedBytes = dataEnd;
      });
    }
    if (dataEnd > this.preparedBytes) this.preparedBytes = dataEnd;
    return null;
  }

  /** Call after a data write: starts the next fill when less than half the last fill's zeros is left past dataEnd. */
  extendIfLow(dataEnd: number): void {
    if (this.stopped || this.fill !== null) return;
    if (this.lastChunkBytes > 0 && this.preparedBytes - dataEnd >= this.lastChunkBytes / 2) return;
    const chunkBytes = this.lastChunkBytes === 0
      ? (this.options.firstChunkBytes ?? this.options.chunkBytes)
      : Math.min(this.options.chunkBytes, this.lastChunkBytes * 2);
    const from = this.preparedBytes;
    const bytes = Math.min(chunkBytes, this.options.limitBytes - from);
    if (bytes <= 0) return;
    this.lastChunkBytes = chunkBytes;
    this.preparedBytes = from + bytes;
    let markWritten = (): void => undefined;
    this.fillWritten = new Promise<void>((resolve) => (markWritten = resolve));
    const written = (): void => {
      this.writtenBytes = from + bytes;
      this.fillWritten = null;
      markWritten();
    };
    this.fill = this.fillRun(from, bytes, written).then(
      () => {
        this.fill = null;
      },
      () => {
        // Stop filling. The region may hold some zeros; nothing is in flight, so data may overwrite it.
        this.stopped = true;
        this.fill = null;
        this.fillWritten = null;
        markWritten();
      },
    );
  }

  /** Waits for the fill in flight and closes the fill's handle. */
  async close(): Promise<void> {
    this.stopped = true;
    if (this.fill !== null) await this.fill;
    if (this.handle !== null) await this.handle.close().catch(() => undefined);
    this.handle = null;
  }

  /** Closes, then cuts the zero tail off at dataEnd through the data's handle and syncs the cut (a roll, a clean
   *  close). fdatasync commits the new size: it is needed to read the data back. */
  async closeAndCut(data: FileHandle, dataEnd: number): Promise<void> {
    await this.close();
    if (this.preparedBytes > dataEnd) {
      await data.truncate(dataEnd);
      await data.datasync();
    }
  }

  private async fillRun(from: number, bytes: number, written: () => void): Promise<void> {
    // Shared by concurrent fills: only ever read, never written.
    const zeros = zerosOf(this.options.chunkBytes).subarray(0, bytes);
    if (this.options.blockingWrites === true) {
      const fd = openSync(this.options.path, 'r+');
      try {
        writeAllSync(fd, zeros, from);
        written();
        await fdatasyncAsync(fd);
      } finally {
        await closeAsync(fd);
      }
      return;
    }
    const handle = (this.handle ??= await open(this.options.path, 'r+'));
    await writeAll(handle, zeros, from);
    written();
    await handle.datasync();
  }
}
