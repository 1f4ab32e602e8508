// The set-aside copies of this node (spec §2 Cluster member, issue 41): a moved partition's old files on its source
// (kind partition) and a discarded incoming copy (kind staging), which workers rename under <data-dir>/set-aside/
// instead of deleting them. Listed for the member report with async fs on a timer (the report itself is read
// synchronously), and removed once older than cluster.set_aside_retention_ms. Front thread; front_start.ts starts it.
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { SetAsideCopyView } from '../../protocol/data_messages.js';
import type { MetadataState } from '../../protocol/metadata_types.js';
import type { Logger } from '../../util/log.js';

const refreshMs = 5_000;
/** A copy's directory name: <kind>.<topicId>.<partition>.<set aside at, unix ms> (MOVES.md; workers write it). */
const copyName = /^(partition|staging|topic_incarnation)\.(.+)\.(-?\d+)\.(\d+)$/;

export interface SetAsideListing {
  count: number;
  bytes: number;
  copies: SetAsideCopyView[];
}

export class SetAsideCopies {
  private listing: SetAsideListing = { count: 0, bytes: 0, copies: [] };
  private timer: NodeJS.Timeout | null = null;
  private readonly dir: string;

  constructor(dataDir: string, private readonly retentionMs: number, private readonly state: () => MetadataState, private readonly log: Logger) {
    this.dir = join(dataDir, 'set-aside');
  }

  /** The last listing (at most refreshMs old). */
  current(): SetAsideListing {
    return this.listing;
  }

  start(): void {
    const tick = (): void => {
      this.refresh().catch((error: unknown) => this.log.warn({ err: error }, 'listing set-aside copies failed')).finally(() => {
        if (this.timer !== null) this.timer = setTimeout(tick, refreshMs);
      });
    };
    this.timer = setTimeout(tick, 0);
  }

  close(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  /** Lists the copies, removing those past their retention first. */
  async refresh(nowMs = Date.now()): Promise<void> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const copies: SetAsideCopyView[] = [];
    let bytes = 0;
    for (const name of names.sort()) {
      const path = join(this.dir, name);
      const copy = await this.describe(name, path);
      if (copy === null) continue;
      if (nowMs - copy.modifiedAtMs >= this.retentionMs) {
        await rm(path, { recursive: true, force: true });
        this.log.info({ directory: path }, 'removed a set-aside copy past its retention');
        continue;
      }
      copies.push(copy);
      bytes += copy.sizeBytes;
    }
    this.listing = { count: copies.length, bytes, copies };
  }

  private async describe(name: string, path: string): Promise<SetAsideCopyView | null> {
    const info = await stat(path).catch(() => null);
    if (info === null) return null;
    const match = copyName.exec(name);
    const topicId = match?.[2] ?? '';
    let topic = topicId;
    for (const record of this.state().topics.values()) if (record.id === topicId) topic = record.name;
    return {
      kind: (match?.[1] as SetAsideCopyView['kind'] | undefined) ?? 'partition',
      topic,
      partition: match === null ? -1 : Number(match[3]),
      directory: path,
      sizeBytes: await sizeOf(path),
      modifiedAtMs: match === null ? info.mtimeMs : Number(match[4]),
    };
  }
}

/** Bytes of the files under path. */
async function sizeOf(path: string): Promise<number> {
  const info = await stat(path).catch(() => null);
  if (info === null) return 0;
  if (!info.isDirectory()) return info.size;
  let total = 0;
  for (const name of await readdir(path).catch(() => [] as string[])) total += await sizeOf(join(path, name));
  return total;
}
