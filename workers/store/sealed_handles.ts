// Open read handles (.idx and .log) of sealed segments, kept between reads with a window read ahead of each: a
// consumer catching up reads one sealed segment run after run, and opening and closing both files for every run cost
// four thread-pool round trips beside the two reads, which the windows then mostly spare too. One cache per thread
// (module state: each partition worker has its own), bounded, least recently used first out; a handle is closed once
// it is out of the cache and no read holds it. Sealed segments never change, so a handle stays valid until its
// segment is deleted: retention and topic deletion forget it first, so a read that starts afterwards finds the file
// gone, as it would without the cache.
import { open, type FileHandle } from 'node:fs/promises';
import { readExact } from '../../src/util/durable_fs.js';
import { segmentPath } from './partition_dirs.js';

/** Segments with open handles per thread: two descriptors and at most 320 KiB of windows each. */
const sealedSegmentsOpenMax = 32;
/** Read at once from a sealed .idx: 16,384 entries, so a batch consume's next runs find theirs in memory. */
const idxWindowBytes = 64 * 1024;
/** Read at once from a sealed .log: about 2,000 records of 100 B, the same for the records themselves. */
const logWindowBytes = 256 * 1024;

/** Reads of one file through the window last read from it: a read inside it needs no file read; one outside reads
 *  from its start up to windowBytes (or its end, if longer), which becomes the window. A read that falls inside a
 *  window still being read waits for that read instead of issuing its own: a batch consume's connections ask for a
 *  partition's next runs together, and each issued a read of the whole window (three times the bytes of the records
 *  in a catch-up measured by consume-batch, nineteen reads in twenty overlapping another). Views of the window are
 *  returned: whoever sends bytes to another thread copies them (partition_worker.ts recordCopy). */
export class ReadAhead {
  private firstByte = 0;
  private bytes: Uint8Array = new Uint8Array(0);
  /** The window read last issued, until it completes. */
  private pending: { firstByte: number; endByte: number; bytes: Promise<Uint8Array> } | null = null;

  constructor(readonly handle: FileHandle, private readonly windowBytes: number) {}

  /** Bytes [start, end) of the file, which holds fileBytes. */
  async read(start: number, end: number, fileBytes: number): Promise<Uint8Array> {
    if (start >= this.firstByte && end <= this.firstByte + this.bytes.byteLength) {
      return this.bytes.subarray(start - this.firstByte, end - this.firstByte);
    }
    const pending = this.pending;
    if (pending !== null && start >= pending.firstByte && end <= pending.endByte) {
      return (await pending.bytes).subarray(start - pending.firstByte, end - pending.firstByte);
    }
    const endByte = Math.min(fileBytes, Math.max(end, start + this.windowBytes));
    const reading = { firstByte: start, endByte, bytes: readExact(this.handle, start, endByte - start) };
    this.pending = reading;
    try {
      const bytes = await reading.bytes;
      [this.firstByte, this.bytes] = [start, bytes];
      return bytes.subarray(0, end - start);
    } finally {
      if (this.pending === reading) this.pending = null;
    }
  }
}

export interface SealedSegmentFiles {
  idx: ReadAhead;
  log: ReadAhead;
}

interface Entry {
  dir: string;
  opened: Promise<SealedSegmentFiles>;
  /** Reads holding the handles now. */
  users: number;
  /** Out of the cache: closed when the last user lets go. */
  dropped: boolean;
  closed: boolean;
}

const entries = new Map<string, Entry>();
/** Where a failed close is reported: the partition worker's logger once it set one (sealedHandlesOnCloseFailure). */
let closeFailureReport = (dir: string, err: unknown): void => {
  process.stderr.write(`sealed segment handles of ${dir}: close failed: ${String(err)}\n`);
};

/** The thread's logger takes the report of a failed close (a close failure loses nothing; it is only logged). */
export function sealedHandlesOnCloseFailure(report: (dir: string, err: unknown) => void): void {
  closeFailureReport = report;
}

function keyOf(dir: string, baseOffset: number): string {
  return segmentPath(dir, baseOffset, 'log');
}

/** Runs read with the sealed segment's open handles, opening them if no earlier read left them open. An open that
 *  fails (ENOENT after retention) rejects, and its entry leaves the cache at once. */
export async function withSealedSegment<T>(dir: string, baseOffset: number, read: (files: SealedSegmentFiles) => Promise<T>): Promise<T> {
  const key = keyOf(dir, baseOffset);
  let entry = entries.get(key);
  if (entry === undefined) {
    const opened: Entry = { dir, opened: openBoth(dir, baseOffset), users: 0, dropped: false, closed: false };
    opened.opened.catch(() => drop(key, opened));
    entries.set(key, (entry = opened));
    evictBeyondMax();
  } else {
    // Most recently used last.
    entries.delete(key);
    entries.set(key, entry);
  }
  entry.users += 1;
  try {
    return await read(await entry.opened);
  } finally {
    entry.users -= 1;
    if (entry.dropped) closeIfUnused(entry);
  }
}

/** Closes the handles of a segment about to be deleted (retention), once no read holds them. */
export function forgetSealedSegment(dir: string, baseOffset: number): void {
  const key = keyOf(dir, baseOffset);
  const entry = entries.get(key);
  if (entry !== undefined) drop(key, entry);
}

/** Closes the handles of every segment of a partition directory (its log closes or is destroyed). */
export function forgetSealedSegmentsOf(dir: string): void {
  for (const [key, entry] of [...entries]) if (entry.dir === dir) drop(key, entry);
}

/** For tests: segments with handles in the cache. */
export function sealedSegmentsOpen(): number {
  return entries.size;
}

async function openBoth(dir: string, baseOffset: number): Promise<SealedSegmentFiles> {
  const idx = await open(segmentPath(dir, baseOffset, 'idx'), 'r');
  try {
    const log = await open(segmentPath(dir, baseOffset, 'log'), 'r');
    return { idx: new ReadAhead(idx, idxWindowBytes), log: new ReadAhead(log, logWindowBytes) };
  } catch (err) {
    await idx.close();
    throw err;
  }
}

function evictBeyondMax(): void {
  // Bounded: each pass removes one entry.
  while (entries.size > sealedSegmentsOpenMax) {
    const [key, entry] = entries.entries().next().value as [string, Entry];
    drop(key, entry);
  }
}

function drop(key: string, entry: Entry): void {
  if (entries.get(key) === entry) entries.delete(key);
  entry.dropped = true;
  closeIfUnused(entry);
}

function closeIfUnused(entry: Entry): void {
  if (entry.users > 0 || entry.closed) return;
  entry.closed = true;
  entry.opened.then(
    (files) => Promise.all([files.idx.handle.close(), files.log.handle.close()]),
    () => undefined,
  ).catch((err: unknown) => closeFailureReport(entry.dir, err));
}
