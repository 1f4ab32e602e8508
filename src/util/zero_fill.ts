// Zeros written ahead of an append-only log file's end, so that appends overwrite blocks the file already owns.
// An fdatasync after an append that grows the file must commit the new size and block allocation through the
// filesystem journal; after an overwrite inside the file it only writes the data and flushes the device cache.
// Measured on this project's virtio disk (ext4), a 15 KB write + fdatasync: 0.6-3.8 ms p50 appending, 0.23-0.26 ms
// p50 overwriting preallocated zeros (docs/performance.md). Used by the ingress log (front thread) and the
// segment logs (partition workers); one instance per active file, closed with it. Async fs only.
//
// Safety rules, which the callers' recovery relies on:
// - Zeros are only ever written past every byte of data: a fill covers [preparedBytes, +chunk) and reserve()
//   moves preparedBytes past a data write before that write is issued, waiting for a fill it would reach into.
// - Readers treat a frame length of 0 as the end of the log (util/frame.ts), so a zero tail is no frame.
// - The fill writes and syncs through its own file handle: a writeback error is then reported to the data
//   handle's next fdatasync as well (Linux reports it once per open file), so a failed fill can never hide a
//   data write's failure. A fill that fails only stops filling; appends then grow the file as before.
import { open, type FileHandle } from 'node:fs/promises';
import { writeAll } from './durable_fs.js';

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
  /** Open the fill's handle for each fill and close it after (default: keep it open until close): for callers
   *  with thousands of files, which must not hold a further descriptor each. */
  handlePerFill?: boolean;
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
  /** End of the zeros known written and synced; below it an overwrite needs no journal commit. */
  private syncedBytes: number;
  private fill: Promise<void> | null = null;
  private handle: FileHandle | null = null;
  private stopped = false;
  /** Size of the last fill (0 before the first): the next starts once less than half of it is left. */
  private lastChunkBytes = 0;

  constructor(private readonly options: ZeroFillOptions) {
    const first = options.firstChunkBytes ?? options.chunkBytes;
    if (!(first > 0 && first <= options.chunkBytes)) throw new Error(`zero fill: first chunk ${first} out of range`);
    this.preparedBytes = options.fileBytes;
    this.syncedBytes = options.fileBytes;
  }

  /** Resolves once no fill is in flight (for tests: the file's size is then fileBytes). */
  async idle(): Promise<void> {
    if (this.fill !== null) await this.fill;
  }

  /** The file's size once the fills in flight are done: data end plus the zero tail. */
  get fileBytes(): number {
    return this.preparedBytes;
  }

  /** Call before writing data that ends at dataEnd: waits for a fill that covers any of it, then reserves it. */
  async reserve(dataEnd: number): Promise<void> {
    if (dataEnd > this.syncedBytes && this.fill !== null) await this.fill;
    if (dataEnd > this.preparedBytes) this.preparedBytes = dataEnd;
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
    this.fill = this.fillRun(from, bytes).then(
      () => {
        this.syncedBytes = from + bytes;
        this.fill = null;
      },
      () => {
        // Stop filling. The region may hold some zeros; nothing is in flight, so data may overwrite it.
        this.stopped = true;
        this.fill = null;
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

  private async fillRun(from: number, bytes: number): Promise<void> {
    const handle = (this.handle ??= await open(this.options.path, 'r+'));
    try {
      // Shared by concurrent fills: only ever read, never written.
      await writeAll(handle, zerosOf(this.options.chunkBytes).subarray(0, bytes), from);
      await handle.datasync();
    } finally {
      if (this.options.handlePerFill === true) {
        this.handle = null;
        await handle.close();
      }
    }
  }
}
