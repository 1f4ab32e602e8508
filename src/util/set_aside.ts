// The set-aside area of a data dir (issue 41, spec §2 Cluster member detail): files a node keeps instead of deleting
// them, each in a directory of its own under <data-dir>/set-aside/ named <kind>-<topic id>-<partition>-<unix ms>
// (partition -1 for a whole topic directory). A partition worker renames a partition it no longer owns there after a
// move's flip (kind partition), and an incoming copy whose move ended without a flip (kind staging); the front lists
// them for its member report and removes old ones. Shared: async fs only, so the front may call it.
import { lstat, readdir, rename, stat } from 'node:fs/promises';
import { dirCreateDurably } from './durable_fs.js';
import { join } from 'node:path';
import { dirSync } from './durable_fs.js';

export type SetAsideKind = 'partition' | 'topic_incarnation' | 'staging';

/** One set-aside directory as the listing finds it. */
export interface SetAsideEntry {
  kind: SetAsideKind;
  topicId: string;
  /** -1 for a whole topic directory. */
  partition: number;
  /** Absolute path of the directory. */
  dir: string;
  /** Bytes of the files under it. */
  sizeBytes: number;
  /** Unix ms of its last modification (the newest file in it, or the directory itself). */
  modifiedAtMs: number;
  /** Unix ms when it was set aside (from its name). */
  setAsideAtMs: number;
}

const setAsideDirName = 'set-aside';
const namePattern = /^(partition|topic_incarnation|staging)-([0-9a-f]{16})-(-1|0|[1-9][0-9]{0,8})-([0-9]{1,15})$/;
/** Bounds the walk of one set-aside directory (a partition holds segments, marks and a cursor log). */
const filesPerDirMax = 100_000;

export function setAsideRoot(dataDir: string): string {
  return join(dataDir, setAsideDirName);
}

export function setAsideName(kind: SetAsideKind, topicId: string, partition: number, atMs: number): string {
  return `${kind}-${topicId}-${partition}-${Math.floor(atMs)}`;
}

/** What a set-aside directory's name says, or null when it is not one of ours. */
export function parseSetAsideName(name: string): Pick<SetAsideEntry, 'kind' | 'topicId' | 'partition' | 'setAsideAtMs'> | null {
  const match = namePattern.exec(name);
  if (match === null) return null;
  return { kind: match[1] as SetAsideKind, topicId: match[2]!, partition: Number(match[3]), setAsideAtMs: Number(match[4]) };
}

/** Renames dir into the set-aside area, durably (both parents synced); returns where it went. A name taken already
 *  (two set-asides of one partition in one millisecond) gets the next millisecond. */
export async function setAsideMove(dataDir: string, dir: string, kind: SetAsideKind, topicId: string, partition: number, atMs: number): Promise<string> {
  const root = setAsideRoot(dataDir);
  await dirCreateDurably(root);
  for (let attempt = 0; attempt < 1000; attempt++) {
    const target = join(root, setAsideName(kind, topicId, partition, atMs + attempt));
    if (await exists(target)) continue;
    await rename(dir, target);
    await dirSync(root);
    await dirSync(join(dir, '..'));
    return target;
  }
  throw new Error(`no free set-aside name for ${dir}`);
}

/** Every set-aside directory with its size and last modification, oldest set-aside first. */
export async function setAsideList(dataDir: string): Promise<SetAsideEntry[]> {
  const root = setAsideRoot(dataDir);
  let names: string[];
  try {
    names = await readdir(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const entries: SetAsideEntry[] = [];
  for (const name of names) {
    const parsed = parseSetAsideName(name);
    if (parsed === null) continue;
    const dir = join(root, name);
    const usage = await dirUsage(dir);
    if (usage !== null) entries.push({ ...parsed, dir, ...usage });
  }
  return entries.sort((a, b) => a.setAsideAtMs - b.setAsideAtMs || (a.dir < b.dir ? -1 : 1));
}

/** Bytes and newest mtime of the files under dir; null when it vanished meanwhile (removed by the retention timer). */
async function dirUsage(dir: string): Promise<{ sizeBytes: number; modifiedAtMs: number } | null> {
  let top;
  try {
    top = await stat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let sizeBytes = 0;
  let modifiedAtMs = top.mtimeMs;
  const pending = [dir];
  let seen = 0;
  for (let next = pending.pop(); next !== undefined && seen < filesPerDirMax; next = pending.pop()) {
    let names: string[];
    try {
      names = await readdir(next);
    } catch {
      continue;
    }
    for (const name of names) {
      seen++;
      const path = join(next, name);
      const info = await lstat(path).catch(() => null);
      if (info === null) continue;
      if (info.isDirectory()) pending.push(path);
      else sizeBytes += info.size;
      modifiedAtMs = Math.max(modifiedAtMs, info.mtimeMs);
    }
  }
  return { sizeBytes, modifiedAtMs: Math.floor(modifiedAtMs) };
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}
