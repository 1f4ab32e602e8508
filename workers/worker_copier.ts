// The fan-out copier of a partition worker (workers/fanout/fanout_copier.ts) wired to the worker's partition table,
// write core and copy route: the copier reads committed records and moves copy cursors through them. Partition worker
// thread; partition_worker.ts builds one at start.
import { FanoutCopier } from './fanout/fanout_copier.js';
import type { FanoutCopyRoute } from './fanout/fanout_copy_route.js';
import type { PartitionWriteCore, WriteCommand } from './core/partition_write_core.js';
import type { Dispatch } from './dispatch_staging.js';
import type { PartitionTable } from './partition_table.js';
import type { PartitionLog } from './store/segment_log.js';

export interface CopierShell {
  table: PartitionTable;
  core: PartitionWriteCore<PartitionLog, Dispatch>;
  run(cmd: WriteCommand<PartitionLog, Dispatch>): void;
  /** Built after the copier (it answers into it). */
  copyRoute(): FanoutCopyRoute;
  failStop(what: string, err: unknown): never;
}

export function workerCopier(shell: CopierShell): FanoutCopier<PartitionLog> {
  const { table, core } = shell;
  return new FanoutCopier<PartitionLog>({
    linksOf: (topicId) => table.fanoutLinksOf(topicId),
    keyOf: (log) => table.keyOf(log),
    logOf: (topicId, partition) => table.logOf(topicId, partition),
    logsOfTopic: (topicId) => table.logsOfTopic(topicId),
    committedOf: (log) => core.committedOffset(log),
    oldestOffset: (log) => log.oldestOffset,
    read: (log, offsets) => log.readMany(offsets, { fromTail: true }),
    cursorOffset: (log, name) => core.cursorOffset(log, name),
    cursorNames: (log) => core.cursorNames(log),
    cursorSet: (log, name, offset) => shell.run({ kind: 'cursorSet', log, name, offset }),
    cursorDrop: (log, name) => shell.run({ kind: 'cursorDrop', log, name }),
    copy: (batch) => shell.copyRoute().copy(batch),
    copyRoute: (childId, partition) => shell.copyRoute().routeOf(childId, partition),
    failStop: (what, err) => shell.failStop(what, err),
  });
}
