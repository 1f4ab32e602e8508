// File helpers shared by every log on disk (ingress log, segment logs, ack logs): whole writes and reads at a
// position, and directory syncs so a new or renamed file's entry survives a power loss. Async fs, so the front
// thread may use them too, except writeAllSync, writevAllSync and readExactSync, which block: partition workers
// only.
import { readSync, writevSync, writeSync } from 'node:fs';
import { mkdir, open, rename, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';

/** Writes all of bytes at position, blocking the calling thread: a partition worker, never the front thread. */
export function writeAllSync(fd: number, bytes: Uint8Array, position: number): void {
  let done = 0;
  while (done < bytes.byteLength) {
    const written = writeSync(fd, bytes, done, bytes.byteLength - done, position + done);
    if (written <= 0) throw new Error(`write made no progress at byte ${position + done}`);
    done += written;
  }
}

/** writeAllSync of pieces written back to back from position, with one writev when the kernel takes them whole. */
export function writevAllSync(fd: number, pieces: Uint8Array[], position: number): void {
  let total = 0;
  for (const piece of pieces) total += piece.byteLength;
  const written = writevSync(fd, pieces, position);
  if (written === total) return;
  // A short writev (a full disk, a signal): the rest one piece at a time, which reports the error if there is one.
  let at = position;
  for (const piece of pieces) {
    const done = Math.min(Math.max(written - (at - position), 0), piece.byteLength);
    if (done < piece.byteLength) writeAllSync(fd, piece.subarray(done), at + done);
    at += piece.byteLength;
  }
}

/** Reads exactly length bytes at position (a read may return less than asked); a short file is an error. */
export async function readExact(handle: FileHandle, position: number, length: number): Promise<Uint8Array> {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await handle.read(out, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`short read: ${done} of ${length} bytes at ${position}`);
    done += bytesRead;
  }
  return out;
}

/** readExact, blocking the calling thread: partition workers only, never the front thread. */
export function readExactSync(fd: number, position: number, length: number): Uint8Array {
  const out = new Uint8Array(length);
  let done = 0;
  while (done < length) {
    const bytesRead = readSync(fd, out, done, length - done, position + done);
    if (bytesRead === 0) throw new Error(`short read: ${done} of ${length} bytes at ${position}`);
    done += bytesRead;
  }
  return out;
}

/** Writes all of bytes at position (a write may take less than asked). The first write is issued before this returns:
 *  the ingress log relies on it to have a group's write running while the last group's answers are sent. */
export async function writeAll(handle: FileHandle, bytes: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, done, bytes.byteLength - done, position + done);
    if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${position + done}`);
    done += bytesWritten;
  }
}

export async function dirSync(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Replaces dir/name atomically and durably: written and synced as name.tmp, renamed, directory synced. */
export async function fileReplaceDurably(dir: string, name: string, bytes: Uint8Array): Promise<void> {
  const tmpPath = join(dir, `${name}.tmp`);
  const handle = await open(tmpPath, 'w');
  try {
    await writeAll(handle, bytes, 0);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmpPath, join(dir, name));
  await dirSync(dir);
}

/** mkdir -p, then syncs the parent of every directory it created so the new entries survive a crash. */
export async function dirCreateDurably(dir: string): Promise<void> {
  const target = resolve(dir);
  const firstCreated = await mkdir(target, { recursive: true });
  if (firstCreated === undefined) return;
  const top = resolve(firstCreated);
  for (let created = target; ; created = dirname(created)) {
    await dirSync(dirname(created));
    if (created === top || dirname(created) === created) return;
  }
}
