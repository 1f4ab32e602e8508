// Partition worker entry (worker_threads), the shell around the pure write core (partition_write_core.ts): owns the
// partitions whose workerForPartition is this worker, their PartitionLogs, and a read-only metadata replica fed on
// workerData.metadataPort. Started by the front thread; ToWorker arrives and FromWorker leaves on parentPort.
// Lifecycle: open owned partition directories, post 'ready', serve; on 'shutdown' drain the core, close, post
// 'closed'. It performs the core's effects (flush, sync, retain, destroy, timers, 'durable') and feeds completions
// back; the consume side lives in partition_consume_routes.ts. An fs failure while writing ends the worker
// (fail-stop); the ingress log replays at restart.
import assert from 'node:assert/strict';
import { readdir, rmdir } from 'node:fs/promises';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { decodeIngressEntry, type IngressEntry } from '../src/protocol/ingress_frame.js';
import { workerForPartition } from '../src/protocol/ownership.js';
import { assertNever, type FromMetadata, type FromWorker, type PartitionWorkerData, type ToWorker } from '../src/protocol/thread_messages.js';
import { applyCommand, type MetadataState, type TopicRecord } from '../src/raft/metadata/state.js';
import { checkedFrameBodies } from '../src/util/frame.js';
import { createLogger, type Logger } from '../src/util/log.js';
import { AckLog } from './ack_log.js';
import { ConsumeRoutes, type ConsumeHost } from './partition_consume_routes.js';
import { parsePartitionDirName, parseTopicDirName, partitionDir, topicDir, topicsDir } from './partition_dirs.js';
import { PartitionWriteCore, type LogPosition, type WriteCommand, type WriteEffect, type WriteTimer } from './partition_write_core.js';
import { PartitionLog } from './segment_log.js';

type Dispatch = Extract<ToWorker, { kind: 'dispatch' }>;

/** Partitions opened at once at start: each open reads up to a 4 MiB window, so this bounds memory. */
const startOpenConcurrency = 8;

class PartitionWorker implements ConsumeHost {
  readonly workerCount: number;
  readonly ackFlushIntervalMs: number;
  readonly logger: Logger;
  private replica: MetadataState | null = null;
  private appliedIndex = -1;
  private topicsById = new Map<string, TopicRecord>();
  /** topicId -> partition -> log. Only partitions this worker owns. */
  private logs = new Map<string, Map<number, PartitionLog>>();
  /** Which topic and partition each open log holds. */
  private logKeys = new Map<PartitionLog, { topicId: string; partition: number }>();
  /** topic id -> partition -> whether this worker owns it (see owns()). */
  private ownedByTopic = new Map<string, boolean[]>();
  private readonly core: PartitionWriteCore<PartitionLog, Dispatch>;
  private readonly routes: ConsumeRoutes;
  private readonly timers: Record<WriteTimer, NodeJS.Timeout | null> = { flush: null, sync: null, retention: null };
  private readonly syncWaiters = new Map<number, () => void>();
  private nextSyncWaiter = 1;
  /** Read-path closers of deleted topics, in the order the core destroys them. */
  private readonly retiring: (() => Promise<void>)[] = [];
  /** Logs that gained staged records while a 'stage' effect is performed (reused: no allocation per dispatch). */
  private readonly stagedLogs = new Set<PartitionLog>();
  private shuttingDownFlag = false;
  /** Set once shutdown starts closing logs: from then on reads and stats would see empty partitions. */
  private logsClosedFlag = false;

  constructor(
    private readonly data: PartitionWorkerData,
    private readonly port: MessagePort,
  ) {
    assert(Number.isSafeInteger(data.workerCount) && data.workerCount > 0, `workerCount ${data.workerCount}`);
    assert(data.workerIndex >= 0 && data.workerIndex < data.workerCount, `workerIndex ${data.workerIndex}`);
    this.workerCount = data.workerCount;
    this.ackFlushIntervalMs = data.ackFlushIntervalMs;
    this.logger = createLogger(data.logLevel, process.stdout).child({ component: 'partition-worker', worker: data.workerIndex });
    this.core = new PartitionWriteCore(data);
    this.routes = new ConsumeRoutes(this);
  }

  /** Opens every partition directory this worker owns, so no later dispatch creates one that exists. */
  async start(): Promise<void> {
    const jobs: { topicId: string; partition: number }[] = [];
    for (const topicId of await dirNames(topicsDir(this.data.dataDir), parseTopicDirName)) {
      for (const partition of await dirNames(topicDir(this.data.dataDir, topicId), parsePartitionDirName)) {
        if (this.owns(topicId, partition)) jobs.push({ topicId, partition });
      }
    }
    const opener = async (): Promise<void> => {
      for (let job = jobs.pop(); job !== undefined; job = jobs.pop()) {
        const dir = partitionDir(this.data.dataDir, job.topicId, job.partition);
        const log = await PartitionLog.open({ dir, segmentBytesMax: this.data.segmentBytesMax });
        this.routes.restore(log, await AckLog.open(dir));
        this.logSet(job.topicId, job.partition, log);
        this.run({ kind: 'opened', log, highWatermark: log.highWatermark, cursors: [] });
      }
    };
    await Promise.all(Array.from({ length: startOpenConcurrency }, opener));
    // Listening only now: both ports queue what arrives meanwhile, so nothing sees a half-opened worker.
    this.data.metadataPort.on('message', (msg: FromMetadata) => this.onMetadata(msg));
    this.port.on('message', (msg: ToWorker) => this.onMessage(msg));
    this.run({ kind: 'start' });
    this.post({ kind: 'ready' });
  }

  private onMessage(msg: ToWorker): void {
    switch (msg.kind) {
      case 'dispatch':
        return this.run({ kind: 'dispatchArrived', dispatch: msg });
      case 'read':
        return this.routes.onRead(msg);
      case 'stats':
        return this.routes.onStats(msg);
      case 'take':
        return this.routes.onTake(msg);
      case 'unpark':
        return this.routes.onUnpark(msg.takeReqId);
      case 'settle':
        return this.routes.onSettle(msg);
      case 'release':
        return this.routes.onRelease(msg);
      case 'lags':
        return this.routes.onLags(msg.reqId);
      case 'shutdown':
        if (this.shuttingDownFlag) return;
        this.shuttingDownFlag = true;
        this.routes.unparkAll();
        return this.run({ kind: 'shutdown' });
      default:
        return assertNever(msg);
    }
  }

  private onMetadata(msg: FromMetadata): void {
    switch (msg.kind) {
      case 'snapshot':
        return this.onSnapshot(msg.index, msg.state);
      case 'committed':
        return this.onCommitted(msg);
      case 'proposeFailed':
      case 'proposalApplied':
      case 'membersResult':
      case 'forgetResult':
      case 'caughtUpResult':
      case 'clusterStatus':
      case 'closed':
        // Answers to the front's requests and shutdown travel on the front's port, never here.
        throw new Error(`metadata sent ${msg.kind} to a partition worker`);
      default:
        return assertNever(msg);
    }
  }

  private onSnapshot(index: number, state: MetadataState): void {
    // A later snapshot is one this node installed from the Raft leader: it replaces the replica outright.
    const replacing = this.replica !== null;
    this.replica = state;
    this.appliedIndex = index;
    this.topicsByIdRebuild();
    if (replacing) for (const topic of state.topics.values()) this.topicConfigure(topic);
    // Partitions of topics the metadata no longer holds were deleted while this node was down (or it died
    // between the delete and the removal): their files are removed now. A topic's create is committed before
    // any of its records can be dispatched, so a live topic is never missing here.
    for (const topicId of [...this.logs.keys()]) {
      if (!this.topicsById.has(topicId)) this.topicForget(topicId);
    }
    this.run({ kind: 'replicaAdvanced', appliedIndex: this.appliedIndex });
  }

  private onCommitted(msg: Extract<FromMetadata, { kind: 'committed' }>): void {
    const replica = this.replica;
    assert(replica !== null, 'committed entries before the metadata snapshot');
    for (const entry of msg.entries) {
      // Entries the snapshot already holds are older deltas: ignored, as every replica does.
      if (entry.index <= this.appliedIndex) continue;
      assert.equal(entry.index, this.appliedIndex + 1, `metadata entry ${entry.index} skips past ${this.appliedIndex}`);
      this.appliedIndex = entry.index;
      const command = entry.command;
      if (command === null) continue;
      const result = applyCommand(replica, command);
      if (result.ok && result.deletedTopicId !== undefined) this.topicForget(result.deletedTopicId);
      // Spec §4 PATCH: groups before a failing one stay applied, so caps may have changed even when the entry failed.
      if (command.type === 'topic.update') {
        const topic = replica.topics.get(command.name);
        if (topic !== undefined && topic.id === command.id) this.topicConfigure(topic);
      }
    }
    this.topicsByIdRebuild();
    this.run({ kind: 'replicaAdvanced', appliedIndex: this.appliedIndex });
  }

  /** One command through the core, its effects performed in order. */
  private run(cmd: WriteCommand<PartitionLog, Dispatch>): void {
    for (const effect of this.core.handle(cmd, Date.now())) this.perform(effect);
  }

  private perform(effect: WriteEffect<PartitionLog, Dispatch>): void {
    switch (effect.kind) {
      case 'stage':
        return this.stage(effect.dispatches);
      case 'append':
        // Read paths exist before the flush, so each sees its high watermark move and reports what became available.
        for (const log of effect.logs) this.routes.readPathOf(log);
        return this.complete('flush', Promise.all(effect.logs.map((log) => log.flush())), () => ({ kind: 'flushDone', logs: positionsOf(effect.logs) }));
      case 'committed':
        for (const position of effect.logs) this.routes.committed(position.log, position.highWatermark);
        // Waiting consumers hear of the new records now, not a loop phase later (the scheduled post then finds none).
        return this.routes.availablePost();
      case 'sync':
        return this.complete('sync', Promise.all(effect.logs.map((log) => log.sync())), () => ({ kind: 'syncDone', logs: positionsOf(effect.logs) }));
      case 'durable':
        return this.post({ kind: 'durable', seqUpTo: effect.seqUpTo });
      case 'synced':
        for (const waiter of effect.waiters) this.syncWaiterWake(waiter);
        return;
      case 'retain':
        return this.complete('retention', this.retentionRound(effect.nowMs), () => ({ kind: 'retentionDone' }));
      case 'destroy':
        return this.complete(`delete of topic ${effect.topicId}`, this.destroy(effect.topicId, effect.logs), () => ({ kind: 'destroyed' }));
      case 'persistCursors':
        // Nothing on this worker sets a cursor yet: the first user (fan-out copy) brings the cursor log with it.
        return this.failStop('cursor persist', new Error('no cursor log is wired to the partition worker'));
      case 'schedule':
        return this.timerArm(effect.timer, effect.atMs);
      case 'cancel':
        if (this.timers[effect.timer] !== null) clearTimeout(this.timers[effect.timer]!);
        this.timers[effect.timer] = null;
        return;
      case 'drained':
        return void this.shutdownClose().catch((err: unknown) => this.failStop('shutdown', err));
      default:
        return assertNever(effect);
    }
  }

  /** Feeds an effect's completion back to the core; a failure leaves disk state unknown, so the worker ends. */
  private complete(what: string, work: Promise<unknown>, done: () => WriteCommand<PartitionLog, Dispatch>): void {
    work.then(() => this.run(done())).catch((err: unknown) => this.failStop(what, err));
  }

  private timerArm(timer: WriteTimer, atMs: number): void {
    if (this.timers[timer] !== null) clearTimeout(this.timers[timer]!);
    this.timers[timer] = setTimeout(() => {
      this.timers[timer] = null;
      this.run({ kind: 'timerFired', timer });
    }, Math.max(0, atMs - Date.now()));
  }

  private stage(dispatches: readonly Dispatch[]): void {
    for (const dispatch of dispatches) this.dispatchStage(dispatch);
    const seqUpTo = dispatches.at(-1)!.lastSeq;
    try {
      this.run({ kind: 'staged', seqUpTo, logs: this.stagedLogs });
    } finally {
      this.stagedLogs.clear();
    }
  }

  private dispatchStage(dispatch: Dispatch): void {
    // The front computed these crcs as it wrote the group, or checked them as it read the ingress log back at start.
    for (const body of checkedFrameBodies(dispatch.frames)) {
      const entry = decodeIngressEntry(body);
      assert(entry.seq <= dispatch.lastSeq, `ingress entry ${entry.seq} after dispatch lastSeq ${dispatch.lastSeq}`);
      const topic = this.topicsById.get(entry.topicId);
      // A topic this replica no longer holds was deleted after the produce: its records are dropped.
      if (topic !== undefined) this.dispatchStageEntry(entry, topic);
    }
  }

  private dispatchStageEntry(entry: IngressEntry, topic: TopicRecord): void {
    // A batch spreads its records over the topic's partitions: each partition's log (null: not stored here) is looked
    // up once per entry, not once per record, and marked dirty once (a tenth of the worker's batch produce work was
    // these lookups and the Set adds).
    const logOf: (PartitionLog | null | undefined)[] = [];
    const dirtied: boolean[] = [];
    const records = entry.records;
    for (let index = 0; index < records.length; index++) {
      const record = records[index]!;
      const partition = record.partition;
      let log = logOf[partition];
      if (log === undefined) {
        const stored = partition < topic.partitions && this.owns(entry.topicId, partition);
        log = stored ? (this.logs.get(entry.topicId)?.get(partition) ?? this.logCreate(entry.topicId, partition)) : null;
        logOf[partition] = log;
      }
      // Already staged or stored: a replay after a crash or a re-sent hand-off stores nothing twice.
      if (log === null || log.holdsIngress(entry.seq, index)) continue;
      log.stage({
        timestampSec: entry.timestampSec,
        key: record.key,
        payload: record.payload,
        payloadKind: record.payloadKind,
        ingressSeq: entry.seq,
        ingressIndex: index,
      });
      if (dirtied[partition] !== true) {
        this.stagedLogs.add(log);
        dirtied[partition] = true;
      }
    }
  }

  /** Resolves once every record the log holds now is synced: an ack state may name only synced offsets, or a
   *  restart after a power loss could find acks above the partition's recovered end. */
  syncedNow(log: PartitionLog): Promise<void> {
    if (!log.unsynced) return Promise.resolve();
    return new Promise((resolve) => {
      const waiter = this.nextSyncWaiter++;
      this.syncWaiters.set(waiter, resolve);
      this.run({ kind: 'syncWait', waiter });
    });
  }

  private syncWaiterWake(waiter: number): void {
    const wake = this.syncWaiters.get(waiter);
    assert(wake !== undefined, `sync waiter ${waiter} woken twice`);
    this.syncWaiters.delete(waiter);
    wake();
  }

  /** Spec §1.12: segments whose newest record is older than the topic's retention_ms are deleted. */
  private async retentionRound(nowMs: number): Promise<void> {
    for (const [log, key] of this.logKeys) {
      const topic = this.topicsById.get(key.topicId);
      if (topic === undefined || topic.retentionMs === 0 || log.highWatermark === log.oldestOffset) continue;
      const cutoffSec = Math.floor((nowMs - topic.retentionMs) / 1000);
      const before = log.oldestOffset;
      const { oldestOffset } = await log.retain(cutoffSec);
      if (oldestOffset !== before) this.routes.retained(log, oldestOffset);
    }
  }

  /** A deleted topic's logs leave the maps now (nothing stages or reads them again); the core destroys them once
   *  the rounds that may be writing them end. */
  private topicForget(topicId: string): void {
    this.ownedByTopic.delete(topicId);
    const partitions = this.logs.get(topicId);
    this.logs.delete(topicId);
    const logs = partitions === undefined ? [] : [...partitions.values()];
    for (const log of logs) this.logKeys.delete(log);
    this.retiring.push(this.routes.topicForget(topicId, logs));
    this.run({ kind: 'topicDeleted', topicId, logs });
  }

  private async destroy(topicId: string, logs: readonly PartitionLog[]): Promise<void> {
    const readPathsClose = this.retiring.shift();
    assert(readPathsClose !== undefined, `destroy of topic ${topicId} without its read paths`);
    await readPathsClose();
    await Promise.all(logs.map((log) => log.destroy()));
    await topicDirRemoveIfEmpty(topicDir(this.data.dataDir, topicId));
  }

  private async shutdownClose(): Promise<void> {
    // Read paths first: their last ack state is written while the logs are still open.
    await this.routes.close();
    const logs = [...this.logs.values()].flatMap((partitions) => [...partitions.values()]);
    this.logsClosedFlag = true;
    this.logs.clear();
    await Promise.all(logs.map((log) => log.close()));
    this.post({ kind: 'closed' });
    // Closing both ports lets the thread end on its own; 'closed' was posted first, so it is delivered.
    this.data.metadataPort.close();
    this.port.close();
  }

  private topicConfigure(topic: TopicRecord): void {
    this.routes.topicConfigure(topic, this.logs.get(topic.id)?.values() ?? []);
  }

  private topicsByIdRebuild(): void {
    this.topicsById.clear();
    for (const topic of this.replica!.topics.values()) this.topicsById.set(topic.id, topic);
  }

  private logCreate(topicId: string, partition: number): PartitionLog {
    const log = PartitionLog.createEmpty({ dir: partitionDir(this.data.dataDir, topicId, partition), segmentBytesMax: this.data.segmentBytesMax });
    this.logSet(topicId, partition, log);
    return log;
  }

  private logSet(topicId: string, partition: number, log: PartitionLog): void {
    let partitions = this.logs.get(topicId);
    if (partitions === undefined) this.logs.set(topicId, (partitions = new Map()));
    assert(!partitions.has(partition), `partition ${topicId}/${partition} opened twice`);
    partitions.set(partition, log);
    this.logKeys.set(log, { topicId, partition });
  }

  /** Ownership never changes for a worker's lifetime; it is asked for every record and settle, so it is kept. */
  owns(topicId: string, partition: number): boolean {
    let owned = this.ownedByTopic.get(topicId);
    if (owned === undefined) this.ownedByTopic.set(topicId, (owned = []));
    let answer = owned[partition];
    if (answer === undefined) {
      answer = workerForPartition(topicId, partition, this.data.workerCount) === this.data.workerIndex;
      owned[partition] = answer;
    }
    return answer;
  }

  logsClosed(): boolean {
    return this.logsClosedFlag;
  }

  shuttingDown(): boolean {
    return this.shuttingDownFlag;
  }

  logOf(topicId: string, partition: number): PartitionLog | undefined {
    return this.logs.get(topicId)?.get(partition);
  }

  keyOf(log: PartitionLog): { topicId: string; partition: number } | undefined {
    return this.logKeys.get(log);
  }

  topicOf(topicId: string): TopicRecord | undefined {
    return this.topicsById.get(topicId);
  }

  post(msg: FromWorker, transfer: ArrayBuffer[] = []): void {
    this.port.postMessage(msg, transfer);
  }

  /** Disk state after a failed write or sync is unknown, so the worker ends; the restart recovers. */
  failStop(what: string, err: unknown): never {
    this.logger.fatal({ err }, `${what} failed, exiting`);
    process.exit(1);
  }
}

function positionsOf(logs: readonly PartitionLog[]): LogPosition<PartitionLog>[] {
  return logs.map((log) => ({ log, highWatermark: log.highWatermark, syncedOffset: log.syncedHighWatermark }));
}

/** Names in dir that parse. An absent dir, or a stray file where a directory would be, holds none. */
async function dirNames<T>(dir: string, parse: (name: string) => T | null): Promise<T[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return [];
    throw err;
  }
  const parsed: T[] = [];
  for (const name of names) {
    const value = parse(name);
    if (value !== null) parsed.push(value);
  }
  return parsed;
}

/** Other workers own the topic's other partitions and remove theirs concurrently: whoever empties the
 *  directory last removes it, and the others find it not empty or already gone. */
async function topicDirRemoveIfEmpty(dir: string): Promise<void> {
  try {
    await rmdir(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
  }
}

assert(parentPort !== null, 'partition_worker.ts runs only as a worker thread');
const worker = new PartitionWorker(workerData as PartitionWorkerData, parentPort);
worker.start().catch((err: unknown) => {
  worker.logger.fatal({ err }, 'start failed, exiting');
  process.exit(1);
});
