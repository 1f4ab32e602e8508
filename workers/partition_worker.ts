// Partition worker entry (worker_threads), the shell around the pure write core (partition_write_core.ts): owns the
// partitions whose workerForPartition is this worker, their PartitionLogs, and a read-only metadata replica fed on
// workerData.metadataPort. Started by the front thread; ToWorker arrives and FromWorker leaves on parentPort.
// Lifecycle: open owned partition directories, post 'ready', serve; on 'shutdown' drain the core, close, post
// 'closed'. It performs the core's effects (flush, sync, retain, destroy, timers, 'durable') and feeds completions
// back; the consume side lives in partition_consume_routes.ts, partition moves in move_source.ts and
// move_destination.ts. An fs failure while writing ends the worker (fail-stop); the ingress log replays at restart.
import assert from 'node:assert/strict';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { assertNever, type FromMetadata, type FromWorker, type PartitionWorkerData, type ToWorker } from '../src/protocol/thread_messages.js';
import type { MetadataState } from '../src/protocol/metadata_types.js';
import { createLogger, type Logger } from '../src/util/log.js';
import type { FanoutCopier } from './fanout/fanout_copier.js';
import { workerCopier } from './worker_copier.js';
import { FanoutCopyRoute } from './fanout/fanout_copy_route.js';
import { DispatchStaging, type Dispatch } from './dispatch_staging.js';
import { ConsumeRoutes, type ConsumeHost } from './partition_consume_routes.js';
import { PartitionCursorLogs } from './store/partition_cursor_logs.js';
import { PartitionWriteCore, type LogPosition, type WriteCommand, type WriteEffect, type WriteTimer } from './core/partition_write_core.js';
import { PartitionTable, type ReplicaChange } from './partition_table.js';
import { sealedHandlesOnCloseFailure } from './store/sealed_handles.js';
import { PartitionLog } from './store/segment_log.js';
import type { AckState } from './store/ack_log.js';
import { MoveSource, type MoveSourceHost } from './move_source.js';
import { MoveDestination, type MoveDestinationHost } from './move_destination.js';
import { AdoptWaits } from './adopt_waits.js';
import { SyncWaiters } from './sync_waiters.js';

/** Partitions opened at once at start: each open reads up to a 4 MiB window, so this bounds memory. */
const startOpenConcurrency = 8;

class PartitionWorker implements ConsumeHost, MoveSourceHost, MoveDestinationHost {
  readonly nodeId: number;
  readonly workerCount: number;
  readonly ackFlushIntervalMs: number;
  readonly logger: Logger;
  readonly table: PartitionTable;
  private readonly staging: DispatchStaging;
  private readonly core: PartitionWriteCore<PartitionLog, Dispatch>;
  private readonly routes: ConsumeRoutes;
  /** Fan-out copying from the parent partitions this worker owns (issue 30). */
  readonly copier: FanoutCopier<PartitionLog>;
  private readonly copyRoute: FanoutCopyRoute;
  /** Partitions (moveKey) whose records are held: frozen for a move's tail here, or being opened after its flip. */
  private readonly frozen = new Set<string>();
  private readonly source: MoveSource;
  private readonly destination: MoveDestination;
  private readonly adoptWaits = new AdoptWaits(() => this.destination.adoptingKeys());
  readonly cursorLogs = new PartitionCursorLogs<PartitionLog>();
  private readonly timers: Record<WriteTimer, NodeJS.Timeout | null> = { flush: null, sync: null, retention: null };
  private readonly syncWaiters = new SyncWaiters();
  /** Read-path closers of deleted topics, in the order the core destroys them. */
  private readonly retiring: (() => Promise<void>)[] = [];
  private shuttingDownFlag = false;
  /** Set once shutdown starts closing logs: from then on reads and stats would see empty partitions. */
  private logsClosedFlag = false;

  constructor(
    private readonly data: PartitionWorkerData,
    private readonly port: MessagePort,
  ) {
    assert(Number.isSafeInteger(data.workerCount) && data.workerCount > 0, `workerCount ${data.workerCount}`);
    assert(data.workerIndex >= 0 && data.workerIndex < data.workerCount, `workerIndex ${data.workerIndex}`);
    this.nodeId = data.nodeId;
    this.workerCount = data.workerCount;
    this.ackFlushIntervalMs = data.ackFlushIntervalMs;
    this.logger = createLogger(data.logLevel, process.stdout).child({ component: 'partition-worker', worker: data.workerIndex });
    sealedHandlesOnCloseFailure((dir, err) => this.logger.warn({ err, dir }, 'sealed segment handles: close failed'));
    this.table = new PartitionTable(data);
    this.staging = new DispatchStaging(this.table, data.nodeId, this.frozen);
    this.core = new PartitionWriteCore(data);
    this.routes = new ConsumeRoutes(this);
    this.copier = workerCopier({
      table: this.table, core: this.core, run: (cmd) => this.run(cmd), copyRoute: () => this.copyRoute, failStop: (what, err) => this.failStop(what, err),
    });
    this.copyRoute = new FanoutCopyRoute({
      nodeId: data.nodeId,
      table: this.table,
      arrive: (dispatch) => this.run({ kind: 'dispatchArrived', dispatch }),
      post: (msg, transfer) => this.port.postMessage(msg, transfer),
      answer: (answer) => this.copier.copied(answer),
    });
    this.source = new MoveSource(this);
    this.destination = new MoveDestination(this);
  }

  /** The write core's named cursors of a log (fan-out copy cursors), as a move's final chunk carries them. */
  namedCursors(log: PartitionLog): { name: string; offset: number }[] {
    return this.core.cursorNames(log).map((name) => ({ name, offset: this.core.cursorOffset(log, name)! }));
  }

  ackStateOf(log: PartitionLog): AckState | null {
    return this.routes.ackStateOf(log);
  }

  /** Opens every partition directory this worker owns, so no later dispatch creates one that exists. */
  async start(): Promise<void> {
    const jobs = await this.table.ownedOnDisk();
    const opener = async (): Promise<void> => {
      for (let job = jobs.pop(); job !== undefined; job = jobs.pop()) await this.partitionOpen(job.topicId, job.partition);
    };
    await Promise.all(Array.from({ length: startOpenConcurrency }, opener));
    await this.destination.scan();
    // Listening only now: both ports queue what arrives meanwhile, so nothing sees a half-opened worker.
    this.data.metadataPort.on('message', (msg: FromMetadata) => this.onMetadata(msg));
    this.port.on('message', (msg: ToWorker) => this.onMessage(msg));
    this.data.linkPort?.on('message', (msg: ToWorker) => this.onLinkMessage(msg));
    this.run({ kind: 'start' });
    this.post({ kind: 'ready' });
  }

  /** Opens a partition directory found on disk (at start, or a moved partition's copy after its flip). */
  async partitionOpen(topicId: string, partition: number): Promise<void> {
    const dir = this.table.dirOf(topicId, partition);
    const log = await PartitionLog.open({ dir, segmentBytesMax: this.data.segmentBytesMax });
    const restored = await this.cursorLogs.restore(log);
    this.routes.restore(log, restored.acks);
    this.table.logSet(topicId, partition, log);
    this.run({ kind: 'opened', log, highWatermark: log.offsets.highWatermark, cursors: restored.cursors });
    this.copier.opened(log, log.offsets.highWatermark);
  }

  private onMessage(msg: ToWorker): void {
    if (this.adoptWaits.holds(msg)) return;
    switch (msg.kind) {
      case 'dispatch':
      case 'handoff':
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
      case 'counters':
        return this.routes.onCounters(msg.reqId);
      case 'fanoutCopied':
        return this.copier.copied(msg);
      case 'moveRead':
        return this.source.onRead(msg);
      case 'moveRelease':
        return this.source.onRelease(msg);
      case 'moveWrite':
        return this.destination.onWrite(msg);
      case 'moveDiscard':
        return this.destination.onDiscard(msg);
      case 'shutdown':
        if (this.shuttingDownFlag) return;
        this.shuttingDownFlag = true;
        this.copier.close();
        this.routes.unparkAll();
        return this.run({ kind: 'shutdown' });
      default:
        return assertNever(msg);
    }
  }

  /** Requests other nodes forwarded (negative reqIds); dispatch and shutdown come only from the front. */
  private onLinkMessage(msg: ToWorker): void {
    if (msg.kind === 'dispatch' || msg.kind === 'shutdown' || msg.kind === 'counters' || msg.kind === 'fanoutCopied') {
      throw new Error(`node-link sent ${msg.kind} to a partition worker`);
    }
    this.onMessage(msg);
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
    this.replicaChanged(this.table.onSnapshot(index, state));
    // One worker sweeps the shared topics directory, once a snapshot judges the replica whole (index 0 judges nothing).
    if (this.data.workerIndex !== 0 || index === 0) return;
    this.table.orphanTopicDirsRemove().then(
      (removed) => {
        if (removed.length > 0) this.logger.info({ topicIds: removed }, 'removed empty directories of deleted topics');
      },
      (err: unknown) => this.logger.warn({ err }, 'sweeping empty directories of deleted topics failed'),
    );
  }

  private onCommitted(msg: Extract<FromMetadata, { kind: 'committed' }>): void {
    this.replicaChanged(this.table.onCommitted(msg));
  }

  private replicaChanged(change: ReplicaChange): void {
    for (const topic of change.configured) this.routes.topicConfigure(topic, this.table.logsOfTopic(topic.id));
    for (const topicId of change.deletedTopicIds) this.topicForget(topicId);
    for (const [log, key] of this.table.logsMovedAway()) this.partitionRelease(log, key.topicId, key.partition);
    this.destination.replicaChanged();
    // Held dispatches stage now: a partition adopted here must be held first, or staging opens an empty log for it.
    this.frozenRefresh();
    this.run({ kind: 'replicaAdvanced', appliedIndex: this.table.appliedIndex });
    // Held records are tried again: a freeze may have ended; staging hands back what still touches a frozen partition.
    this.run({ kind: 'thaw' });
    this.source.releasesAnswer();
    this.copier.linksChanged(this.table.fanoutParents());
  }

  thaw(): void {
    this.frozenRefresh();
    this.run({ kind: 'thaw' });
    for (const held of this.adoptWaits.released()) this.onMessage(held);
  }

  private frozenRefresh(): void {
    this.frozen.clear();
    for (const key of [...this.source.frozenKeys(), ...this.destination.adoptingKeys()]) this.frozen.add(key);
  }

  /** A flip gave the partition away: nothing reads, copies or stages it here; the core sets it aside ('release'). */
  private partitionRelease(log: PartitionLog, topicId: string, partition: number): void {
    this.table.logRemove(log);
    this.source.releaseBegun(topicId, partition);
    this.copier.logForget(log);
    this.retiring.push(this.routes.partitionForget(topicId, partition, log));
    this.run({ kind: 'partitionReleased', topicId, partition, log });
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
        for (const position of effect.logs) this.copier.committed(position.log, position.highWatermark);
        // Waiting consumers hear of the new records now, not a loop phase later (the scheduled post then finds none).
        return this.routes.availablePost();
      case 'sync':
        return this.complete('sync', Promise.all(effect.logs.map((log) => log.sync())), () => ({ kind: 'syncDone', logs: positionsOf(effect.logs) }));
      case 'durable':
        return this.post({ kind: 'durable', seqUpTo: effect.seqUpTo, metaIndex: this.table.appliedIndex });
      case 'synced':
        for (const waiter of effect.waiters) this.syncWaiters.wake(waiter);
        return;
      case 'handedOff':
        for (const waiter of effect.waiters) {
          if (!this.copyRoute.handedOff(waiter)) this.data.linkPort!.postMessage({ kind: 'handedOff', reqId: waiter, metaIndex: this.table.appliedIndex } satisfies FromWorker);
        }
        return;
      case 'retain':
        return this.complete('retention', this.table.retentionRound(effect.nowMs, (log, oldest) => this.routes.retained(log, oldest)), () => ({ kind: 'retentionDone' }));
      case 'destroy':
        return this.complete(`delete of topic ${effect.topicId}`, this.destroy(effect.topicId, effect.logs), () => ({ kind: 'destroyed' }));
      case 'release':
        return this.complete('set-aside of a moved partition', this.release(effect.topicId, effect.partition, effect.log), () => ({ kind: 'destroyed' }));
      case 'persistCursors':
        return this.complete('cursor persist', this.cursorLogs.persist(effect.log, effect.cursors), () => ({ kind: 'cursorsPersisted', log: effect.log }));
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
    const { logs, handoffs, deferred, refusedCopies } = this.staging.stage(dispatches);
    for (const waiter of refusedCopies) this.copyRoute.refused(waiter);
    try {
      this.run({ kind: 'staged', seqUpTo: this.staging.localSeqStaged, logs, handoffs, deferred });
    } finally {
      logs.clear();
    }
  }

  /** Resolves once every record the log holds now is synced: an ack state may name only synced offsets, or a
   *  restart after a power loss could find acks above the partition's recovered end. */
  syncedNow(log: PartitionLog): Promise<void> {
    // The core's view, which the partition simulation checks: every offset a read path has seen was committed
    // through the core, so its synced offset covers an ack state whenever it says the log is synced.
    if (!this.core.logUnsynced(log)) return Promise.resolve();
    const { waiter, synced } = this.syncWaiters.add();
    this.run({ kind: 'syncWait', waiter });
    return synced;
  }

  /** A deleted topic's logs leave the maps now (nothing stages or reads them again); the core destroys them once
   *  the rounds that may be writing them end. */
  private topicForget(topicId: string): void {
    const logs = this.table.topicRemove(topicId);
    this.copier.topicForget(topicId);
    this.retiring.push(this.routes.topicForget(topicId, logs));
    this.run({ kind: 'topicDeleted', topicId, logs });
  }

  private async destroy(topicId: string, logs: readonly PartitionLog[]): Promise<void> {
    const readPathsClose = this.retiring.shift();
    assert(readPathsClose !== undefined, `destroy of topic ${topicId} without its read paths`);
    await readPathsClose();
    await this.cursorLogs.close(logs);
    await Promise.all(logs.map((log) => log.destroy()));
    await this.table.topicDirRemoveIfEmpty(topicId);
  }

  private async release(topicId: string, partition: number, log: PartitionLog): Promise<void> {
    const readPathClose = this.retiring.shift();
    assert(readPathClose !== undefined, `set-aside of ${topicId}/${partition} without its read path`);
    await readPathClose();
    await this.cursorLogs.close([log]);
    await this.source.setAside(log, topicId, partition);
  }

  private async shutdownClose(): Promise<void> {
    // Read paths first: their last ack state is written while the logs are still open.
    await this.routes.close();
    await this.destination.close();
    await this.cursorLogs.closeAll();
    this.logsClosedFlag = true;
    const logs = this.table.removeAll();
    await Promise.all(logs.map((log) => log.close()));
    this.post({ kind: 'closed' });
    // Closing both ports lets the thread end on its own; 'closed' was posted first, so it is delivered.
    this.data.metadataPort.close();
    this.data.linkPort?.close();
    this.port.close();
  }

  logsClosed(): boolean {
    return this.logsClosedFlag;
  }

  shuttingDown(): boolean {
    return this.shuttingDownFlag;
  }

  /** An answer goes back to whoever asked: the node-link thread's reqIds are negative, the front's positive. */
  post(msg: FromWorker, transfer: ArrayBuffer[] = []): void {
    const link = this.data.linkPort;
    if (link !== undefined && 'reqId' in msg && msg.reqId < 0) link.postMessage(msg, transfer);
    else this.port.postMessage(msg, transfer);
  }

  /** Disk state after a failed write or sync is unknown, so the worker ends; the restart recovers. */
  failStop(what: string, err: unknown): never {
    this.logger.fatal({ err }, `${what} failed, exiting`);
    process.exit(1);
  }
}

function positionsOf(logs: readonly PartitionLog[]): LogPosition<PartitionLog>[] {
  return logs.map((log) => ({ log, highWatermark: log.offsets.highWatermark, syncedOffset: log.offsets.syncedHighWatermark }));
}

assert(parentPort !== null, 'partition_worker.ts runs only as a worker thread');
const worker = new PartitionWorker(workerData as PartitionWorkerData, parentPort);
worker.start().catch((err: unknown) => {
  worker.logger.fatal({ err }, 'start failed, exiting');
  process.exit(1);
});
