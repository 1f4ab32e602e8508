// One process per data directory: `<data-dir>/LOCK` holds the owner's pid. A second node on the same
// directory stops at boot with a message naming the directory and the pid holding it; a lock left by a
// process that no longer runs (kill -9) is taken over. Main thread, at boot and at exit.
import { link, open, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';

export class DataDirLockedError extends Error {}

export interface DataDirLock {
  release(): Promise<void>;
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  const path = join(dataDir, 'LOCK');
  // Bounded: one takeover of a stale lock, then give up.
  for (let attempt = 0; attempt < 2; attempt++) {
    // The pid is written to a file of our own first and then linked in as LOCK, so LOCK never exists without its
    // pid: another node reading it in between would otherwise take an empty lock for a stale one.
    const mine = `${path}.${process.pid}`;
    const handle = await open(mine, 'w', 0o600);
    await handle.writeFile(`${process.pid}\n`);
    await handle.sync();
    await handle.close();
    try {
      await link(mine, path);
      return { release: () => rm(path, { force: true }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      await rm(mine, { force: true });
    }
    const holder = Number((await readFile(path, 'utf8').catch(() => '')).trim());
    if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isRunning(holder)) {
      throw new DataDirLockedError(`data dir ${dataDir} is locked by running process ${holder} (${path}); one node per data dir`);
    }
    await rm(path, { force: true });
  }
  throw new DataDirLockedError(`data dir ${dataDir}: could not take the lock ${path}`);
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
