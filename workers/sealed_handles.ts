// Open read handles (.idx and .log) of sealed segments, kept between reads: a consumer catching up reads one sealed
// segment run after run, and opening and closing both files for every run cost four thread-pool round trips beside
// the two reads. One cache per thread (module state: each partition worker has its own), bounded, least recently
// used first out; a handle is closed once it is out of the cache and no read holds it. Sealed segments never change,
// so a handle stays valid until its segment is deleted: retention and topic deletion forget it first, so a read
// that starts afterwards finds the file gone, as it would without the cache.
import { open, type FileHandle } from 'node:fs/promises';
import { segmentPath } from './partition_dirs.js';

/** Segments with open handles per thread: two descriptors and at most ~320 KiB of read-ahead each. */
const sealedSegmentsOpenMax = 32;

export interface SealedSegmentFiles {
  idx: FileHandle;
  log: FileHandle;
  /** The last window of .idx entries read (segment_log.ts reads ahead), so that most runs need one read, not two. */
  idxWindow: { firstEntry: number; bytes: Uint8Array } | null;
  /** The last window of .log bytes read, from its first byte: a consumer's next runs are usually inside it. */
  logWindow: { firstByte: number; bytes: Uint8Array } | null;
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

function keyOf(dir: string, baseOffset: number): string {
  return segmentPath(dir, baseOffset, 'log');
}

/** Runs read with the sealed segment's open handles, opening them if no earlier read left them open. An open that
 *  fails (ENOENT after retention) rejects and caches nothing. */
export async function withSealedSegment<T>(dir: string, baseOffset: number, read: (files: SealedSegmentFiles) => Promise<T>): Promise<T> {
  const key = keyOf(dir, baseOffset);
  let entry = entries.get(key);
  if (entry === undefined) {
    entry = { dir, opened: openBoth(dir, baseOffset), users: 0, dropped: false, closed: false };
    entries.set(key, entry);
    evictBeyondMax();
  } else {
    // Most recently used last.
    entries.delete(key);
    entries.set(key, entry);
  }
  entry.users += 1;
  try {
    return await read(await entry.opened);
  } catch (err) {
    // A failed open must not stay cached; a failed read leaves handles that may still be good for others.
    if (entries.get(key) === entry && (await settled(entry.opened)) === 'failed') drop(key, entry);
    throw err;
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
    return { idx, log: await open(segmentPath(dir, baseOffset, 'log'), 'r'), idxWindow: null, logWindow: null };
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
    (files) => Promise.all([files.idx.close(), files.log.close()]),
    () => undefined,
  ).catch((err: unknown) => process.stderr.write(`sealed segment handles of ${entry.dir}: close failed: ${String(err)}\n`));
}

function settled(promise: Promise<unknown>): Promise<'ok' | 'failed'> {
  return promise.then(() => 'ok' as const, () => 'failed' as const);
}
