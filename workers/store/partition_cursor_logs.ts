// The cursor log of each partition this worker owns (cursor_log.ts, <partition dir>/cursors.log), opened once and
// shared by its two writers: the read path's ack state (cursor "ack", through ack_log.ts) and the write core's table
// of named cursors (fan-out copy, remote link and partition-move cursors). Runs on the partition worker thread; the
// worker shell opens a partition's log at start or on first use, and closes it when the topic is deleted or the
// worker shuts down, after both writers are done.
import { AckLog, type RestoredAcks } from './ack_log.js';
import type { CursorEntry } from '../core/partition_cursors.js';
import { ackCursorName, CursorLog } from './cursor_log.js';
import type { SegmentStore } from './segment_store.js';

/** What a partition's cursor log held at start, split by writer. */
export interface RestoredCursors {
  acks: RestoredAcks;
  /** The write core's named cursors: every cursor but the ack state. */
  cursors: CursorEntry[];
}

export class PartitionCursorLogs<L extends SegmentStore> {
  private readonly logs = new Map<L, Promise<CursorLog>>();

  /** Opens the cursor log of a partition found on disk at start. */
  async restore(log: L): Promise<RestoredCursors> {
    const opened = CursorLog.open(log.dir);
    this.logs.set(log, opened);
    const cursorLog = await opened;
    const cursors: CursorEntry[] = [];
    for (const name of cursorLog.names()) {
      if (name !== ackCursorName) cursors.push({ name, offset: cursorLog.get(name)!.offset });
    }
    return { acks: AckLog.over(cursorLog, log.dir), cursors };
  }

  /** The partition's cursor log, opened on first use (its directory exists: a flush stored records there). */
  of(log: L): Promise<CursorLog> {
    let opened = this.logs.get(log);
    if (opened === undefined) {
      opened = CursorLog.open(log.dir);
      this.logs.set(log, opened);
    }
    return opened;
  }

  /** Writes the write core's cursor table; the core named only synced offsets (partition_cursors.ts). */
  async persist(log: L, entries: readonly CursorEntry[]): Promise<void> {
    const cursorLog = await this.of(log);
    const updates: [string, { offset: number; state: null } | null][] = entries.map((entry) => [entry.name, { offset: entry.offset, state: null }]);
    // The table is every cursor but the ack state: a name it no longer has was dropped (a detached fan-out link).
    const kept = new Set(entries.map((entry) => entry.name));
    for (const name of cursorLog.names()) if (name !== ackCursorName && !kept.has(name)) updates.push([name, null]);
    await cursorLog.write(updates);
  }

  /** Closes the cursor logs of these partitions (a deleted topic's), after the writes already asked for. */
  async close(logs: readonly L[]): Promise<void> {
    const closing: Promise<void>[] = [];
    for (const log of logs) {
      const opened = this.logs.get(log);
      this.logs.delete(log);
      if (opened !== undefined) closing.push(opened.then((cursorLog) => cursorLog.close()));
    }
    await Promise.all(closing);
  }

  async closeAll(): Promise<void> {
    await this.close([...this.logs.keys()]);
  }
}
