// The consume side of a partition worker (runs on its thread, called only from the worker's port loop): reads,
// stats, takes (and long polls parked here), settles, releases and partition counters, routed to each partition's
// PartitionReadPath, built the first time the partition is committed to, consumed or settled. The write side
// (partition_worker.ts and its pure write core) tells it of new high watermarks, retention and deleted topics.
// Lifecycle: built at worker start; close() at shutdown writes the last ack states.
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { messageJsonPrefix, messageJsonText } from '../src/body/message_json.js';
import { forEachJoinedHandle, formatReceiptHandle, handleSeparator } from '../src/protocol/receipt_handle.js';
import type { FanoutCounterView, FanoutCursorView, FromWorker, PartitionCountersView, PartitionEndView, PartitionStatsView, SettleMode, StoredRecordView, ToWorker } from '../src/protocol/thread_messages.js';
import type { TopicRecord } from '../src/protocol/metadata_types.js';
import type { AckState, RestoredAcks } from './store/ack_log.js';
import type { ActorConfig, HeldLease, Lease } from './core/partition_actor.js';
import { ParkedTakes, type TakeRequest } from './parked_takes.js';
import { PartitionReadPath } from './partition_read_path.js';
import type { PartitionCursorLogs } from './store/partition_cursor_logs.js';
import type { PartitionTable } from './partition_table.js';
import type { PartitionLog } from './store/segment_log.js';

type ReadRequest = Extract<ToWorker, { kind: 'read' }>;
type StatsRequest = Extract<ToWorker, { kind: 'stats' }>;
type SettleRequest = Extract<ToWorker, { kind: 'settle' }>;
type ReleaseRequest = Extract<ToWorker, { kind: 'release' }>;
/** Leases of one partition taken for one consume. */
interface Leased {
  partition: number;
  path: PartitionReadPath;
  leases: Lease[];
}

/** What the consume side needs of the worker: its partition table, its port and its fail-stop. */
export interface ConsumeHost {
  readonly table: PartitionTable;
  readonly workerCount: number;
  readonly ackFlushIntervalMs: number;
  readonly logger: Logger;
  /** Reads and stats would see empty partitions once shutdown closes the logs. */
  logsClosed(): boolean;
  shuttingDown(): boolean;
  /** Fan-out copy cursors (workers/fanout/fanout_copier.ts), reported with the statistics and counters. */
  readonly copier: { cursorsOf(log: PartitionLog): FanoutCursorView[] | undefined; counters(): FanoutCounterView[] };
  /** Resolves once every record the log holds now is synced. */
  syncedNow(log: PartitionLog): Promise<void>;
  /** The partition's cursor logs, which the ack state is written to. */
  readonly cursorLogs: PartitionCursorLogs<PartitionLog>;
  post(msg: FromWorker, transfer?: ArrayBuffer[]): void;
  failStop(what: string, err: unknown): never;
}

export class ConsumeRoutes {
  private readonly readPaths = new Map<PartitionLog, PartitionReadPath>();
  private readonly restoredAcks = new Map<PartitionLog, RestoredAcks>();
  /** Deliverable counts per topic id gathered during one turn of the event loop, posted once. */
  private readonly available = new Map<string, number>();
  /** Long polls waiting here for their topic's records. */
  private readonly parked = new ParkedTakes();

  constructor(private readonly host: ConsumeHost) {}

  restore(log: PartitionLog, restored: RestoredAcks): void {
    this.restoredAcks.set(log, restored);
  }

  /** A partition a move's flip gave to another node answers 421 (the asking front retries at the new owner). */
  private movedAway(reqId: number, topicId: string, partitions: readonly number[]): boolean {
    const table = this.host.table;
    if (table.topicOf(topicId) === undefined) return false;
    const moved = partitions.find((partition) => !table.nodeOwns(topicId, partition));
    if (moved === undefined) return false;
    this.host.post({ kind: 'failed', reqId, refusal: { id: 'partitionMoved', args: [topicId, moved] } });
    return true;
  }

  onRead(msg: ReadRequest): void {
    if (this.host.logsClosed()) return this.postShuttingDown(msg.reqId);
    assert(this.host.table.owns(msg.topicId, msg.partition), `read of ${msg.topicId}/${msg.partition} sent to the wrong worker`);
    if (this.movedAway(msg.reqId, msg.topicId, [msg.partition])) return;
    const log = this.host.table.logOf(msg.topicId, msg.partition);
    // No log: nothing was ever stored. Reads carry no metaIndex, so the topic may also be unknown to this
    // replica yet (just created) or already forgotten (just deleted); either way there is no record.
    if (log === undefined) return this.host.post({ kind: 'readResult', reqId: msg.reqId, status: 'past_end' });
    log.read(msg.offset).then(
      (result) => this.readAnswer(msg.reqId, result),
      (err: unknown) => {
        this.host.logger.error({ err, topicId: msg.topicId, partition: msg.partition, offset: msg.offset }, 'read failed');
        this.host.post({ kind: 'failed', reqId: msg.reqId, refusal: { id: 'partitionUnreadable', args: [] } });
      },
    );
  }

  private readAnswer(reqId: number, result: Awaited<ReturnType<PartitionLog['read']>>): void {
    if (typeof result === 'string') return this.host.post({ kind: 'readResult', reqId, status: result });
    const transfer: ArrayBuffer[] = [];
    const record = recordCopy(result, transfer);
    this.host.post({ kind: 'readResult', reqId, status: 'ok', record }, transfer);
  }

  onStats(msg: StatsRequest): void {
    if (this.host.logsClosed()) return this.postShuttingDown(msg.reqId);
    if (this.movedAway(msg.reqId, msg.topicId, msg.partitions)) return;
    const stats: PartitionStatsView[] = msg.partitions.map((partition) => {
      assert(this.host.table.owns(msg.topicId, partition), `stats of ${msg.topicId}/${partition} sent to the wrong worker`);
      const log = this.host.table.logOf(msg.topicId, partition);
      if (log === undefined) return { index: partition, segments: 0, oldestOffset: 0, nextOffset: 0, highWatermark: 0, sizeBytes: 0 };
      const fanoutCursors = this.host.copier.cursorsOf(log);
      return fanoutCursors === undefined ? { index: partition, ...log.stats() } : { index: partition, ...log.stats(), fanoutCursors };
    });
    this.host.post({ kind: 'statsResult', reqId: msg.reqId, stats });
  }

  onTake(msg: TakeRequest): void {
    if (this.host.logsClosed()) return this.postShuttingDown(msg.reqId);
    if (this.movedAway(msg.reqId, msg.topicId, msg.partitions)) return;
    if (msg.max === 0) return this.onWatch(msg);
    const taken = this.lease(msg);
    if (taken.length > 0 || msg.park !== true) return this.answerTaken(msg, taken);
    // Nothing would unpark it once shutdown has begun.
    if (this.host.shuttingDown()) return this.postShuttingDown(msg.reqId);
    this.parked.park(msg);
  }

  /** A take of max 0 leases nothing: it answers (empty) once one of its partitions has a deliverable message, so a
   *  node that waits on several owners takes from whichever has one (issue 29 point 4). */
  private onWatch(msg: TakeRequest): void {
    if (msg.park !== true || this.anyDeliverable(msg)) return this.answerTaken(msg, []);
    if (this.host.shuttingDown()) return this.postShuttingDown(msg.reqId);
    this.parked.park(msg);
  }

  private anyDeliverable(take: TakeRequest): boolean {
    return take.partitions.some((partition) => (this.readPathOfPartition(take.topicId, partition)?.deliverable() ?? 0) > 0);
  }

  onUnpark(takeReqId: number): void {
    const take = this.parked.remove(takeReqId);
    if (take !== undefined) this.answerTaken(take, []);
  }

  /** Shutdown answers every parked take 503: nothing would unpark them. */
  unparkAll(): void {
    for (const take of this.parked.removeAll()) this.postShuttingDown(take.reqId);
  }

  /** Answers the topic's parked takes, oldest first, that can lease something now (and its watches). */
  private serveParked(topicId: string): void {
    for (const take of this.parked.ofTopic(topicId)) {
      if (!this.anyDeliverable(take)) continue;
      // A watch (max 0) answers empty: its asker takes next.
      const taken = take.max === 0 ? [] : this.lease(take);
      if (taken.length === 0 && take.max > 0) continue;
      this.parked.remove(take.reqId);
      this.answerTaken(take, taken);
    }
  }

  /** Leases up to take.max messages from its partitions, in its order; the records are read by answerTaken. */
  private lease(take: TakeRequest): Leased[] {
    const taken: Leased[] = [];
    let count = 0;
    for (const partition of take.partitions) {
      if (count >= take.max) break;
      assert(this.host.table.owns(take.topicId, partition), `take of ${take.topicId}/${partition} sent to the wrong worker`);
      const path = this.readPathOfPartition(take.topicId, partition);
      if (path === null) continue;
      const leases = path.take(take.max - count);
      if (leases.length === 0) continue;
      taken.push({ partition, path, leases });
      count += leases.length;
    }
    return taken;
  }

  private readPathOfPartition(topicId: string, partition: number): PartitionReadPath | null {
    const log = this.host.table.logOf(topicId, partition);
    return log === undefined ? null : this.readPathOf(log);
  }

  private answerTaken(msg: TakeRequest, taken: Leased[]): void {
    if (taken.length === 0) return this.host.post({ kind: 'taken', reqId: msg.reqId, count: 0, messagesJson: '', handles: '' });
    const topicName = this.host.table.topicOf(msg.topicId)?.name ?? '';
    Promise.all(taken.map((t) => t.path.readMany(t.leases.map((l) => l.offset)))).then(
      (perPartition) => {
        // Two strings, built by concatenation: a port copies a string once, an array item by item.
        let messagesJson = '';
        let handles = '';
        let count = 0;
        perPartition.forEach((records, i) => {
          const { partition, path, leases: partitionLeases } = taken[i]!;
          const prefix = messageJsonPrefix(topicName, partition);
          const countBefore = count;
          records.forEach((record, k) => {
            // Retention deleted it between the lease and the read: the lease is gone with it.
            if (typeof record === 'string') return;
            const handle = formatReceiptHandle(partition, record.offset, partitionLeases[k]!.nonce);
            const separator = count === 0 ? '' : handleSeparator;
            messagesJson += separator + messageJsonText(prefix, record, handle);
            handles += separator + handle;
            count += 1;
          });
          path.handedOut(count - countBefore);
        });
        this.host.post({ kind: 'taken', reqId: msg.reqId, count, messagesJson, handles });
      },
      (err: unknown) => {
        this.host.logger.error({ err, topicId: msg.topicId }, 'read for consume failed');
        for (const t of taken) t.path.settle(t.leases, 'nack');
        this.host.post({ kind: 'failed', reqId: msg.reqId, refusal: { id: 'partitionUnreadable', args: [] } });
      },
    );
  }

  onSettle(msg: SettleRequest): void {
    if (this.host.logsClosed()) return this.postShuttingDown(msg.reqId);
    const statuses = this.settleJoined(msg.topicId, msg.handles, msg.mode);
    this.host.post({ kind: 'settledResult', reqId: msg.reqId, statuses }, [statuses.buffer as ArrayBuffer]);
  }

  onCounters(reqId: number): void {
    const counters: PartitionCountersView[] = [];
    for (const [log, path] of this.readPaths) {
      const key = this.host.table.keyOf(log);
      if (key !== undefined) counters.push({ topicId: key.topicId, partition: key.partition, lag: path.lag(), consumed: path.consumed, produced: log.offsets.stagedSinceOpen });
    }
    // Every open log counts here, consumed or not: svc_topic_bytes is what the node holds.
    const bytesByTopic = new Map<string, number>();
    const ends: PartitionEndView[] = [];
    for (const [log, key] of this.host.table.entries()) {
      const stats = log.stats();
      bytesByTopic.set(key.topicId, (bytesByTopic.get(key.topicId) ?? 0) + stats.sizeBytes);
      ends.push({ topicId: key.topicId, partition: key.partition, oldestOffset: stats.oldestOffset, nextOffset: stats.nextOffset });
    }
    const topicBytes = [...bytesByTopic].map(([topicId, bytes]) => ({ topicId, bytes }));
    this.host.post({ kind: 'countersResult', reqId, counters, topicBytes, fanout: this.host.copier.counters(), ends });
  }

  onRelease(msg: ReleaseRequest): void {
    if (this.host.logsClosed()) return;
    this.settleJoined(msg.topicId, msg.handles, 'nack');
  }

  /** Settles joined receipt handles, one status per handle in order: each run of handles of one partition is one
   *  command of its actor. A lease of a partition this worker holds no log for, or of a topic it does not know, is
   *  gone: 410. */
  private settleJoined(topicId: string, handles: string, mode: SettleMode): Uint16Array {
    const partitions: number[] = [];
    const leases: HeldLease[] = [];
    forEachJoinedHandle(handles, (partition, offset, nonce) => {
      partitions.push(partition);
      leases.push({ offset, nonce });
    });
    const statuses = new Uint16Array(leases.length);
    // Bounded: every pass settles at least one handle.
    for (let start = 0; start < leases.length; ) {
      const partition = partitions[start]!;
      let end = start + 1;
      while (end < leases.length && partitions[end] === partition) end++;
      const path = this.host.table.owns(topicId, partition) ? this.readPathOfPartition(topicId, partition) : null;
      const run = path === null ? null : path.settle(leases.slice(start, end), mode);
      for (let i = start; i < end; i++) statuses[i] = run === null ? 410 : run[i - start]!;
      start = end;
    }
    return statuses;
  }

  /** The read path of an open log whose topic the replica knows, built on first use. */
  readPathOf(log: PartitionLog): PartitionReadPath | null {
    const existing = this.readPaths.get(log);
    if (existing !== undefined) return existing;
    const key = this.host.table.keyOf(log);
    const topic = key === undefined ? undefined : this.host.table.topicOf(key.topicId);
    if (key === undefined || topic === undefined || this.host.logsClosed()) return null;
    const restored = this.restoredAcks.get(log);
    this.restoredAcks.delete(log);
    const path = new PartitionReadPath(log, restored?.log ?? null, restored?.state ?? null, actorConfigOf(topic), this.host.ackFlushIntervalMs, {
      onAvailable: (count) => this.availableAdd(key.topicId, count),
      syncedNow: () => this.host.syncedNow(log),
      onFatal: (what, err) => this.host.failStop(what, err),
      cursorLog: () => this.host.cursorLogs.of(log),
    });
    this.readPaths.set(log, path);
    return path;
  }

  /** Spec §4 PATCH: caps reach the partitions' read paths as soon as the replica applies them. */
  topicConfigure(topic: TopicRecord, logs: Iterable<PartitionLog>): void {
    for (const log of logs) this.readPaths.get(log)?.configure(actorConfigOf(topic));
  }

  /** A flush round wrote these logs up to their new high watermarks: consumers see the records now. */
  committed(log: PartitionLog, highWatermark: number): void {
    this.readPathOf(log)?.committed(highWatermark);
  }

  retained(log: PartitionLog, oldestOffset: number): void {
    this.readPathOf(log)?.retained(oldestOffset);
  }

  /** Counts gathered in one turn go to the front in one message. */
  private availableAdd(topicId: string, count: number): void {
    if (count <= 0) return;
    if (this.available.size === 0) setImmediate(() => this.availablePost());
    this.available.set(topicId, (this.available.get(topicId) ?? 0) + count);
  }

  /** Waiting consumers hear of new records now; called after each flush round and once per loop turn. */
  availablePost(): void {
    const topics = [...this.available].map(([topicId, count]) => ({ topicId, count }));
    this.available.clear();
    if (this.parked.size > 0) for (const { topicId } of topics) this.serveParked(topicId);
    // With one worker every long poll parks here, so no waiter on the front listens (protocol/README.md).
    if (topics.length > 0 && !this.host.logsClosed() && this.host.workerCount > 1) this.host.post({ kind: 'available', topics });
  }

  /** The ack state a move's final chunk carries: the read path's now, else the one found at start (null: none). */
  ackStateOf(log: PartitionLog): AckState | null {
    return this.readPaths.get(log)?.ackState() ?? this.restoredAcks.get(log)?.state ?? null;
  }

  /** A partition a move's flip gave away: its parked takes end empty (the front asks the new owner), its read path
   *  leaves now (open leases are dropped: their messages are delivered again there) and the returned closer discards
   *  it once the set-aside runs. */
  partitionForget(topicId: string, partition: number, log: PartitionLog): () => Promise<void> {
    for (const take of [...this.parked.ofTopic(topicId)]) {
      if (!take.partitions.includes(partition)) continue;
      this.parked.remove(take.reqId);
      this.answerTaken(take, []);
    }
    const path = this.readPaths.get(log);
    this.readPaths.delete(log);
    this.restoredAcks.delete(log);
    return async () => {
      await path?.discard();
    };
  }

  /** A deleted topic: its parked takes end empty (the front answers 404), its read paths leave now and the returned
   *  closer discards them once the deletion runs. */
  topicForget(topicId: string, logs: readonly PartitionLog[]): () => Promise<void> {
    for (const take of this.parked.removeTopic(topicId)) this.answerTaken(take, []);
    const paths = logs.map((log) => this.readPaths.get(log)).filter((p) => p !== undefined);
    for (const log of logs) {
      this.readPaths.delete(log);
      this.restoredAcks.delete(log);
    }
    return async () => {
      await Promise.all(paths.map((path) => path.discard()));
    };
  }

  /** Shutdown: writes each read path's last ack state while the logs are still open. */
  async close(): Promise<void> {
    await Promise.all([...this.readPaths.values()].map((path) => path.close()));
    this.readPaths.clear();
    this.restoredAcks.clear();
  }

  private postShuttingDown(reqId: number): void {
    this.host.post({ kind: 'failed', reqId, refusal: { id: 'partitionWorkerShuttingDown', args: [] } });
  }
}

/** Fresh, exactly sized copies of a record read from disk: the read buffer holds frame headers too, and
 *  transferred buffers must be owned by the message alone. */
function recordCopy(result: StoredRecordView, transfer: ArrayBuffer[]): StoredRecordView {
  const payload = result.payload.slice();
  const key = result.key === null ? null : result.key.slice();
  transfer.push(payload.buffer);
  if (key !== null) transfer.push(key.buffer);
  return { offset: result.offset, timestampSec: result.timestampSec, key, payload, payloadKind: result.payloadKind };
}

function actorConfigOf(topic: TopicRecord): ActorConfig {
  return {
    visibilityTimeoutMs: topic.visibilityTimeoutMs,
    maxInFlightPerPartition: topic.maxInFlightPerPartition,
    maxAckedAheadPerPartition: topic.maxAckedAheadPerPartition,
  };
}
