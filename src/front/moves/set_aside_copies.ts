// The set-aside copies of this node (spec §2 Cluster member, issue 41): a moved partition's old files on its source
// (kind partition) and a discarded incoming copy (kind staging), which workers rename under <data-dir>/set-aside/
// instead of deleting them. Listed for the member report with async fs on a timer (the report itself is read
// synchronously), and removed once older than cluster.set_aside_retention_ms. Front thread; front_start.ts starts it.
import { rm } from 'node:fs/promises';
import type { SetAsideCopyView } from '../../protocol/data_messages.js';
import type { MetadataState } from '../../protocol/metadata_types.js';
import type { Logger } from '../../util/log.js';
import { setAsideList } from '../../util/set_aside.js';

const refreshMs = 5_000;

export interface SetAsideListing {
  count: number;
  bytes: number;
  copies: SetAsideCopyView[];
}

export class SetAsideCopies {
  private listing: SetAsideListing = { count: 0, bytes: 0, copies: [] };
  private timer: NodeJS.Timeout | null = null;
  constructor(private readonly dataDir: string, private readonly retentionMs: number, private readonly state: () => MetadataState,
    private readonly log: Logger) {}

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

  /** Lists the copies (src/util/set_aside.ts), removing those set aside longer than the retention first. */
  async refresh(nowMs = Date.now()): Promise<void> {
    const copies: SetAsideCopyView[] = [];
    let bytes = 0;
    const names = new Map<string, string>();
    for (const topic of this.state().topics.values()) names.set(topic.id, topic.name);
    for (const entry of await setAsideList(this.dataDir)) {
      if (nowMs - entry.setAsideAtMs >= this.retentionMs) {
        await rm(entry.dir, { recursive: true, force: true });
        this.log.info({ directory: entry.dir }, 'removed a set-aside copy past its retention');
        continue;
      }
      copies.push({
        kind: entry.kind, topic: names.get(entry.topicId) ?? entry.topicId, partition: entry.partition,
        directory: entry.dir, sizeBytes: entry.sizeBytes, modifiedAtMs: entry.modifiedAtMs,
      });
      bytes += entry.sizeBytes;
    }
    this.listing = { count: copies.length, bytes, copies };
  }
}
