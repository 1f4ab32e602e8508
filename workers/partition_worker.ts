// Partition worker entry (worker_threads): owns the partitions whose workerForPartition is this worker,
// their PartitionLogs, and a read-only metadata replica fed on workerData.metadataPort. Started by the
// front thread; ToWorker arrives and FromWorker leaves on parentPort. Lifecycle: open owned partition
// directories, post 'ready', serve dispatch/read/stats, and on 'shutdown' finish rounds, close, post
// 'closed'. Flush rounds write records and make them visible; sync rounds fdatasync them at most
// syncIntervalMs later and only then report 'durable', so the ingress log keeps every record until it is synced
// here. An fs failure while flushing or syncing ends the worker (fail-stop); the ingress log replays at restart.
import assert from 'node:assert/strict';
import { readdir, rmdir } from 'node:fs/promises';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { decodeIngressEntry, type IngressEntry } from '../src/protocol/ingress_frame.js';
import { messageJsonPrefix, messageJsonText } from '../src/protocol/message_json.js';
import { workerForPartition } from '../src/protocol/ownership.js';
import { forEachJoinedHandle, formatReceiptHandle, handleSeparator } from '../src/protocol/receipt_handle.js';
import {
  assertNever,
  type FromMetadata,
  type FromWorker,
  type PartitionStatsView,
  type PartitionWorkerData,
  type SettleMode,
  type StoredRecordView,
  type ToWorker,
} from '../src/protocol/thread_messages.js';
import type { MetadataState, TopicRecord } from '../src/protocol/metadata_types.js';
import { applyCommand } from '../src/raft/metadata/state.js';
import { checkedFrameBodies } from '../src/util/frame.js';
import { parsePartitionDirName, parseTopicDirName, partitionDir, topicDir, topicsDir } from './partition_dirs.js';
import { AckLog, type AckState } from './ack_log.js';
import type { ActorConfig, HeldLease, Lease } from './partition_actor.js';
import { ParkedTakes, type TakeRequest } from './parked_takes.js';
import { PartitionReadPath } from './partition_read_path.js';
import { PartitionLog } from './segment_log.js';

type Dispatch = Extract<ToWorker, { kind: 'dispatch' }>;
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

/** Partitions opened at once at start: each open reads up to a 4 MiB window, so this bounds memory. */
const startOpenConcurrency = 8;

class PartitionWorker {
  private replica: MetadataState | null = null;
  private appliedIndex = -1;
  private topicsById = new Map<string, TopicRecord>();
  /** topicId -> partition -> log. Only partitions this worker owns. */
  private logs = new Map<string, Map<number, PartitionLog>>();
  /** Which topic and partition each open log holds. */
  private logKeys = new Map<PartitionLog, { topicId: string; partition: number }>();
  /** The consume side of partitions that were committed to, consumed or settled since start. */
  private readPaths = new Map<PartitionLog, PartitionReadPath>();
  /** Ack logs found at start, until the partition's read path takes them over. */
  private restoredAcks = new Map<PartitionLog, { log: AckLog; state: AckState | null }>();
  /** Deliverable counts per topic id gathered during one turn of the event loop, posted once. */
  private available = new Map<string, number>();
  /** Long polls waiting here for their topic's records. */
  private parked = new ParkedTakes();
  private retentionDue = false;
  /** topic id -> partition -> whether this worker owns it (see owns()). */
  private ownedByTopic = new Map<string, boolean[]>();
  private lastRoundStartMs = 0;
  private roundTimer: NodeJS.Timeout | null = null;
  private retentionTimer: NodeJS.Timeout | null = null;
  /** Dispatches waiting until the replica has applied their metaIndex, in arrival order. */
  private held: Dispatch[] = [];
  /** Logs with staged records that no flush round has taken yet. */
  private dirty = new Set<PartitionLog>();
  /** lastSeq of the last fully staged dispatch not yet covered by a round, or null. */
  private uncoveredSeq: number | null = null;
  /** Logs written by a flush round and not yet synced. */
  private unsynced = new Set<PartitionLog>();
  /** lastSeq of the last flushed dispatch whose records are not all synced yet, or null. */
  private unsyncedSeq: number | null = null;
  private syncDue = false;
  private syncTimer: NodeJS.Timeout | null = null;
  /** The sync round in flight; it runs beside flush rounds (a partition log keeps its own sync apart from rolls). */
  private syncRound: Promise<void> | null = null;
  /** Called once the next sync round ends (ack writes wait for the records they name to be synced). */
  private syncWaiters: (() => void)[] = [];
  private round: Promise<void> | null = null;
  /** Topic deletions run one after another, each after the round that was in flight when it arrived. */
  private deletions: Promise<void> = Promise.resolve();
  private shuttingDown = false;
  /** Set once shutdown starts closing logs: from then on reads and stats would see empty partitions. */
  private logsClosed = false;

  constructor(
    private readonly data: PartitionWorkerData,
    private readonly port: MessagePort,
  ) {
    assert(Number.isSafeInteger(data.workerCount) && data.workerCount > 0, `workerCount ${data.workerCount}`);
    assert(data.workerIndex >= 0 && data.workerIndex < data.workerCount, `workerIndex ${data.workerIndex}`);
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
        const dir = this.dirOf(job.topicId, job.partition);
        const log = await PartitionLog.open({ dir, segmentBytesMax: this.data.segmentBytesMax });
        this.restoredAcks.set(log, await AckLog.open(dir));
        this.logSet(job.topicId, job.partition, log);
      }
    };
    await Promise.all(Array.from({ length: startOpenConcurrency }, opener));
    // Listening only now: both ports queue what arrives meanwhile, so nothing sees a half-opened worker.
    this.data.metadataPort.on('message', (msg: FromMetadata) => this.onMetadata(msg));
    this.port.on('message', (msg: ToWorker) => this.onMessage(msg));
    this.retentionTimer = setInterval(() => this.retentionRequest(), this.data.retentionCheckIntervalMs);
    this.post({ kind: 'ready' });
  }

  private onMessage(msg: ToWorker): void {
    switch (msg.kind) {
      case 'dispatch':
        return this.onDispatch(msg);
      case 'read':
        return this.onRead(msg);
      case 'stats':
        return this.onStats(msg);
      case 'take':
        return this.onTake(msg);
      case 'unpark':
        return this.onUnpark(msg.takeReqId);
      case 'settle':
        return this.onSettle(msg);
      case 'release':
        return this.onRelease(msg);
      case 'lags':
        return this.onLags(msg.reqId);
      case 'shutdown':
        return this.onShutdown();
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
    this.heldRelease();
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
    this.heldRelease();
  }

  private onDispatch(msg: Dispatch): void {
    // After shutdown nothing more is answered 'durable'; the ingress log hands these over again at start.
    if (this.shuttingDown) return;
    this.held.push(msg);
    this.heldRelease();
  }

  private onRead(msg: ReadRequest): void {
    if (this.logsClosed) return this.postShuttingDown(msg.reqId);
    assert(this.owns(msg.topicId, msg.partition), `read of ${msg.topicId}/${msg.partition} sent to the wrong worker`);
    const log = this.logs.get(msg.topicId)?.get(msg.partition);
    // No log: nothing was ever stored. Reads carry no metaIndex, so the topic may also be unknown to this
    // replica yet (just created) or already forgotten (just deleted); either way there is no record.
    if (log === undefined) {
      this.post({ kind: 'readResult', reqId: msg.reqId, status: 'past_end' });
      return;
    }
    log.read(msg.offset).then(
      (result) => this.readAnswer(msg.reqId, result),
      (err: unknown) => {
        process.stderr.write(`partition worker ${this.data.workerIndex}: read ${msg.topicId}/${msg.partition}@${msg.offset} failed: ${errorText(err)}\n`);
        this.post({ kind: 'failed', reqId: msg.reqId, status: 500, error: 'partition unreadable' });
      },
    );
  }

  private readAnswer(reqId: number, result: Awaited<ReturnType<PartitionLog['read']>>): void {
    if (typeof result === 'string') {
      this.post({ kind: 'readResult', reqId, status: result });
      return;
    }
    const transfer: ArrayBuffer[] = [];
    const record = recordCopy(result, transfer);
    this.post({ kind: 'readResult', reqId, status: 'ok', record }, transfer);
  }

  private onStats(msg: StatsRequest): void {
    if (this.logsClosed) return this.postShuttingDown(msg.reqId);
    const stats: PartitionStatsView[] = msg.partitions.map((partition) => {
      assert(this.owns(msg.topicId, partition), `stats of ${msg.topicId}/${partition} sent to the wrong worker`);
      const log = this.logs.get(msg.topicId)?.get(partition);
      if (log === undefined) return { index: partition, segments: 0, oldestOffset: 0, nextOffset: 0, highWatermark: 0, sizeBytes: 0 };
      return { index: partition, ...log.stats() };
    });
    this.post({ kind: 'statsResult', reqId: msg.reqId, stats });
  }

  private onShutdown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const take of this.parked.removeAll()) this.postShuttingDown(take.reqId);
    // Dispatches still waiting for metadata were never answered 'durable'; the ingress log keeps them.
    this.held = [];
    this.shutdownFinish().catch((err: unknown) => this.failStop('shutdown', err));
  }

  private async shutdownFinish(): Promise<void> {
    if (this.roundTimer !== null) clearTimeout(this.roundTimer);
    if (this.syncTimer !== null) clearTimeout(this.syncTimer);
    // While shutting down a round starts at once; keep going until nothing staged or unsynced is left.
    for (this.roundStart(); this.round !== null || this.syncRound !== null; this.roundStart()) {
      await Promise.all([this.round, this.syncRound]);
    }
    assert(this.uncoveredSeq === null, 'staged dispatches left without a round');
    assert(this.unsynced.size === 0, 'written records left without a sync round');
    await this.deletions;
    if (this.retentionTimer !== null) clearInterval(this.retentionTimer);
    // Read paths first: their last ack state is written while the logs are still open.
    await Promise.all([...this.readPaths.values()].map((path) => path.close()));
    this.readPaths.clear();
    await Promise.all([...this.restoredAcks.values()].map((restored) => restored.log.close()));
    const logs = [...this.logs.values()].flatMap((partitions) => [...partitions.values()]);
    this.logsClosed = true;
    this.logs.clear();
    await Promise.all(logs.map((log) => log.close()));
    this.post({ kind: 'closed' });
    // Closing both ports lets the thread end on its own; 'closed' was posted first, so it is delivered.
    this.data.metadataPort.close();
    this.port.close();
  }

  /** Stages every held dispatch the replica can now judge, in order, then starts a round if none runs. */
  private heldRelease(): void {
    while (this.replica !== null) {
      const dispatch = this.held[0];
      if (dispatch === undefined || dispatch.metaIndex > this.appliedIndex) break;
      this.held.shift();
      this.dispatchStage(dispatch);
    }
    this.roundStart();
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
    this.uncoveredSeq = dispatch.lastSeq;
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
        this.dirty.add(log);
        dirtied[partition] = true;
      }
    }
  }

  /** A flush round writes every dirty log concurrently and tells each partition's read path its new high watermark
   *  (consumers see records only now); retention runs as a round of its own, so it never overlaps a flush of the same
   *  log. A sync round fdatasyncs every written log and only then reports 'durable'; one runs at a time, beside the
   *  others, so consumers never wait for a sync. */
  private roundStart(): void {
    const shutdownSyncDue = this.shuttingDown && this.round === null && this.uncoveredSeq === null &&
      (this.unsynced.size > 0 || this.syncWaiters.length > 0);
    if (this.syncRound === null && (this.syncDue || shutdownSyncDue)) this.syncRoundStart();
    if (this.round !== null) return;
    if (this.retentionDue && !this.shuttingDown) {
      this.retentionDue = false;
      this.round = this.retentionRound().then(
        () => {
          this.round = null;
          this.roundStart();
        },
      ).catch((err: unknown) => this.failStop('retention', err));
      return;
    }
    if (this.uncoveredSeq === null) return;
    // A flush round costs one write per touched partition: with a flush interval set, rounds start at most once per
    // interval so that each write covers more dispatches. Only consumers wait for it; producers had their 202.
    const waitMs = this.lastRoundStartMs + this.data.flushIntervalMs - Date.now();
    if (waitMs > 0 && !this.shuttingDown) {
      this.roundTimer ??= setTimeout(() => {
        this.roundTimer = null;
        this.roundStart();
      }, waitMs);
      return;
    }
    this.lastRoundStartMs = Date.now();
    const seqUpTo = this.uncoveredSeq;
    const logs = [...this.dirty];
    this.uncoveredSeq = null;
    this.dirty.clear();
    // Read paths exist before the flush, so each sees its high watermark move and reports what became available.
    for (const log of logs) this.readPathOf(log);
    this.round = Promise.all(logs.map((log) => log.flush())).then(
      () => {
        this.round = null;
        for (const log of logs) {
          // Its topic was deleted while the round wrote it: the deletion destroys it once this round ends.
          if (!this.logKeys.has(log)) continue;
          this.readPathOf(log)?.committed(log.highWatermark);
          if (log.unsynced) this.unsynced.add(log);
        }
        // Waiting consumers hear of the new records now, not a loop phase later (the scheduled post then finds none).
        this.availablePost();
        this.unsyncedSeq = seqUpTo;
        this.durableReport();
        this.roundStart();
      },
    ).catch((err: unknown) => this.failStop('flush', err));
  }

  /** Reports 'durable' for the last flushed dispatch when nothing written waits for a sync (nor is being synced: an
   *  earlier dispatch's records may be), else makes sure a sync round comes. */
  private durableReport(): void {
    if (this.unsynced.size > 0) {
      this.syncSchedule();
      return;
    }
    if (this.syncRound !== null || this.unsyncedSeq === null) return;
    this.post({ kind: 'durable', seqUpTo: this.unsyncedSeq });
    this.unsyncedSeq = null;
  }

  /** A sync round at most syncIntervalMs after records were first written unsynced. */
  private syncSchedule(): void {
    if (this.syncDue || this.syncTimer !== null) return;
    if (this.data.syncIntervalMs === 0) {
      this.syncDue = true;
      return;
    }
    this.syncTimer = setTimeout(() => {
      this.syncTimer = null;
      this.syncDue = true;
      this.roundStart();
    }, this.data.syncIntervalMs);
  }

  private syncRoundStart(): void {
    this.syncDue = false;
    if (this.syncTimer !== null) {
      clearTimeout(this.syncTimer);
      this.syncTimer = null;
    }
    const logs = [...this.unsynced];
    const seqUpTo = this.unsyncedSeq;
    const waiters = this.syncWaiters;
    this.unsynced.clear();
    this.unsyncedSeq = null;
    this.syncWaiters = [];
    this.syncRound = Promise.all(logs.map((log) => log.sync())).then(
      () => {
        this.syncRound = null;
        if (seqUpTo !== null) this.post({ kind: 'durable', seqUpTo });
        for (const wake of waiters) wake();
        // A flush round that ended meanwhile waited for this sync before reporting.
        this.durableReport();
        this.roundStart();
      },
    ).catch((err: unknown) => this.failStop('sync', err));
  }

  /** Resolves once every record the log holds now is synced: an ack state may name only synced offsets, or a
   *  restart after a power loss could find acks above the partition's recovered end. */
  private syncedNow(log: PartitionLog): Promise<void> {
    if (!log.unsynced) return Promise.resolve();
    return new Promise((resolve) => {
      this.syncWaiters.push(resolve);
      this.syncDue = true;
      this.roundStart();
    });
  }

  private retentionRequest(): void {
    this.retentionDue = true;
    this.roundStart();
  }

  /** Spec §1.12: segments whose newest record is older than the topic's retention_ms are deleted. */
  private async retentionRound(): Promise<void> {
    const nowMs = Date.now();
    for (const [log, key] of this.logKeys) {
      const topic = this.topicsById.get(key.topicId);
      if (topic === undefined || topic.retentionMs === 0 || log.highWatermark === log.oldestOffset) continue;
      const cutoffSec = Math.floor((nowMs - topic.retentionMs) / 1000);
      const before = log.oldestOffset;
      const { oldestOffset } = await log.retain(cutoffSec);
      if (oldestOffset !== before) this.readPathOf(log)?.retained(oldestOffset);
    }
  }

  private onTake(msg: TakeRequest): void {
    if (this.logsClosed) return this.postShuttingDown(msg.reqId);
    const taken = this.lease(msg);
    if (taken.length > 0 || msg.park !== true) return this.answerTaken(msg, taken);
    // Nothing would unpark it once shutdown has begun.
    if (this.shuttingDown) return this.postShuttingDown(msg.reqId);
    this.parked.park(msg);
  }

  private onUnpark(takeReqId: number): void {
    const take = this.parked.remove(takeReqId);
    if (take !== undefined) this.answerTaken(take, []);
  }

  /** Answers the topic's parked takes, oldest first, that can lease something now. */
  private serveParked(topicId: string): void {
    for (const take of this.parked.ofTopic(topicId)) {
      if (!take.partitions.some((partition) => (this.readPathOfPartition(topicId, partition)?.deliverable() ?? 0) > 0)) continue;
      const taken = this.lease(take);
      if (taken.length === 0) continue;
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
      assert(this.owns(take.topicId, partition), `take of ${take.topicId}/${partition} sent to the wrong worker`);
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
    const log = this.logs.get(topicId)?.get(partition);
    return log === undefined ? null : this.readPathOf(log);
  }

  private answerTaken(msg: TakeRequest, taken: Leased[]): void {
    if (taken.length === 0) {
      this.post({ kind: 'taken', reqId: msg.reqId, count: 0, messagesJson: '', handles: '' });
      return;
    }
    const topicName = this.topicsById.get(msg.topicId)?.name ?? '';
    Promise.all(taken.map((t) => t.path.readMany(t.leases.map((l) => l.offset)))).then(
      (perPartition) => {
        // Two strings, built by concatenation: a port copies a string once, an array item by item.
        let messagesJson = '';
        let handles = '';
        let count = 0;
        perPartition.forEach((records, i) => {
          const { partition, leases: partitionLeases } = taken[i]!;
          const prefix = messageJsonPrefix(topicName, partition);
          records.forEach((record, k) => {
            // Retention deleted it between the lease and the read: the lease is gone with it.
            if (typeof record === 'string') return;
            const handle = formatReceiptHandle(partition, record.offset, partitionLeases[k]!.nonce);
            const separator = count === 0 ? '' : handleSeparator;
            messagesJson += separator + messageJsonText(prefix, record, handle);
            handles += separator + handle;
            count += 1;
          });
        });
        this.post({ kind: 'taken', reqId: msg.reqId, count, messagesJson, handles });
      },
      (err: unknown) => {
        process.stderr.write(`partition worker ${this.data.workerIndex}: read for consume of ${msg.topicId} failed: ${errorText(err)}\n`);
        for (const t of taken) t.path.settle(t.leases, 'nack');
        this.post({ kind: 'failed', reqId: msg.reqId, status: 500, error: 'partition unreadable' });
      },
    );
  }

  private onSettle(msg: SettleRequest): void {
    if (this.logsClosed) return this.postShuttingDown(msg.reqId);
    const statuses = this.settleJoined(msg.topicId, msg.handles, msg.mode);
    this.post({ kind: 'settledResult', reqId: msg.reqId, statuses }, [statuses.buffer as ArrayBuffer]);
  }

  private onLags(reqId: number): void {
    const lags: { topicId: string; partition: number; lag: number }[] = [];
    for (const [log, path] of this.readPaths) {
      const key = this.logKeys.get(log);
      if (key !== undefined) lags.push({ topicId: key.topicId, partition: key.partition, lag: path.lag() });
    }
    this.post({ kind: 'lagsResult', reqId, lags });
  }

  private onRelease(msg: ReleaseRequest): void {
    if (this.logsClosed) return;
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
      const path = this.owns(topicId, partition) ? this.readPathOfPartition(topicId, partition) : null;
      const run = path === null ? null : path.settle(leases.slice(start, end), mode);
      for (let i = start; i < end; i++) statuses[i] = run === null ? 410 : run[i - start]!;
      start = end;
    }
    return statuses;
  }

  /** The read path of an open log whose topic the replica knows, built on first use. */
  private readPathOf(log: PartitionLog): PartitionReadPath | null {
    const existing = this.readPaths.get(log);
    if (existing !== undefined) return existing;
    const key = this.logKeys.get(log);
    const topic = key === undefined ? undefined : this.topicsById.get(key.topicId);
    if (key === undefined || topic === undefined || this.logsClosed) return null;
    const restored = this.restoredAcks.get(log);
    this.restoredAcks.delete(log);
    const path = new PartitionReadPath(log, restored?.log ?? null, restored?.state ?? null, actorConfigOf(topic), this.data.ackFlushIntervalMs, {
      onAvailable: (count) => this.availableAdd(key.topicId, count),
      syncedNow: () => this.syncedNow(log),
      onFatal: (what, err) => this.failStop(what, err),
    });
    this.readPaths.set(log, path);
    return path;
  }

  private topicConfigure(topic: TopicRecord): void {
    for (const log of this.logs.get(topic.id)?.values() ?? []) this.readPaths.get(log)?.configure(actorConfigOf(topic));
  }

  /** Counts gathered in one turn go to the front in one message. */
  private availableAdd(topicId: string, count: number): void {
    if (count <= 0) return;
    if (this.available.size === 0) setImmediate(() => this.availablePost());
    this.available.set(topicId, (this.available.get(topicId) ?? 0) + count);
  }

  private availablePost(): void {
    const topics = [...this.available].map(([topicId, count]) => ({ topicId, count }));
    this.available.clear();
    if (this.parked.size > 0) for (const { topicId } of topics) this.serveParked(topicId);
    // With one worker every long poll parks here, so no waiter on the front listens (protocol/README.md).
    if (topics.length > 0 && !this.logsClosed && this.data.workerCount > 1) this.post({ kind: 'available', topics });
  }

  /** A deleted topic's logs leave the maps now (nothing stages or reads them again) and are destroyed
   *  once the round that may be flushing them ends. */
  private topicForget(topicId: string): void {
    this.ownedByTopic.delete(topicId);
    // Their consumes answer 404 now (the front checks the topic when a wait ends without messages).
    for (const take of this.parked.removeTopic(topicId)) this.answerTaken(take, []);
    const partitions = this.logs.get(topicId);
    this.logs.delete(topicId);
    const logs = partitions === undefined ? [] : [...partitions.values()];
    for (const log of logs) {
      this.dirty.delete(log);
      this.unsynced.delete(log);
    }
    const paths = logs.map((log) => this.readPaths.get(log)).filter((p) => p !== undefined);
    const restored = logs.map((log) => this.restoredAcks.get(log)).filter((r) => r !== undefined);
    for (const log of logs) {
      this.readPaths.delete(log);
      this.restoredAcks.delete(log);
      this.logKeys.delete(log);
    }
    const rounds = Promise.all([this.round, this.syncRound]);
    this.deletions = this.deletions
      .then(async () => {
        await rounds;
        await Promise.all([...paths.map((path) => path.discard()), ...restored.map((r) => r.log.close())]);
        await Promise.all(logs.map((log) => log.destroy()));
        await topicDirRemoveIfEmpty(topicDir(this.data.dataDir, topicId));
      })
      .catch((err: unknown) => this.failStop(`delete of topic ${topicId}`, err));
  }

  private topicsByIdRebuild(): void {
    this.topicsById.clear();
    for (const topic of this.replica!.topics.values()) this.topicsById.set(topic.id, topic);
  }

  private logCreate(topicId: string, partition: number): PartitionLog {
    const log = PartitionLog.createEmpty({ dir: this.dirOf(topicId, partition), segmentBytesMax: this.data.segmentBytesMax });
    this.logSet(topicId, partition, log);
    return log;
  }

  private logSet(topicId: string, partition: number, log: PartitionLog): void {
    let partitions = this.logs.get(topicId);
    if (partitions === undefined) {
      partitions = new Map();
      this.logs.set(topicId, partitions);
    }
    assert(!partitions.has(partition), `partition ${topicId}/${partition} opened twice`);
    partitions.set(partition, log);
    this.logKeys.set(log, { topicId, partition });
  }

  /** Ownership never changes for a worker's lifetime; it is asked for every record and settle, so it is kept. */
  private owns(topicId: string, partition: number): boolean {
    let owned = this.ownedByTopic.get(topicId);
    if (owned === undefined) this.ownedByTopic.set(topicId, (owned = []));
    let answer = owned[partition];
    if (answer === undefined) {
      answer = workerForPartition(topicId, partition, this.data.workerCount) === this.data.workerIndex;
      owned[partition] = answer;
    }
    return answer;
  }

  private dirOf(topicId: string, partition: number): string {
    return partitionDir(this.data.dataDir, topicId, partition);
  }

  private postShuttingDown(reqId: number): void {
    this.post({ kind: 'failed', reqId, status: 503, error: 'partition worker shutting down' });
  }

  private post(msg: FromWorker, transfer: ArrayBuffer[] = []): void {
    this.port.postMessage(msg, transfer);
  }

  /** Disk state after a failed write or sync is unknown, so the worker ends; the restart recovers. */
  private failStop(what: string, err: unknown): never {
    process.stderr.write(`partition worker ${this.data.workerIndex}: ${what} failed, exiting: ${errorText(err)}\n`);
    process.exit(1);
  }
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

function errorText(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

assert(parentPort !== null, 'partition_worker.ts runs only as a worker thread');
const worker = new PartitionWorker(workerData as PartitionWorkerData, parentPort);
worker.start().catch((err: unknown) => {
  process.stderr.write(`partition worker: start failed: ${errorText(err)}\n`);
  process.exit(1);
});
