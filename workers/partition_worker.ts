// Partition worker entry (worker_threads): owns the partitions whose workerForPartition is this worker,
// their PartitionLogs, and a read-only metadata replica fed on workerData.metadataPort. Started by the
// front thread; ToWorker arrives and FromWorker leaves on parentPort. Lifecycle: open owned partition
// directories, post 'ready', serve dispatch/read/stats, and on 'shutdown' finish rounds, close, post
// 'closed'. An fs failure while flushing ends the worker (fail-stop); the ingress log replays at restart.
import assert from 'node:assert/strict';
import { readdir, rmdir } from 'node:fs/promises';
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { decodeIngressEntry, type IngressEntry } from '../src/protocol/ingress_frame.js';
import { workerForPartition } from '../src/protocol/ownership.js';
import {
  assertNever,
  type FromMetadata,
  type FromWorker,
  type PartitionStatsView,
  type PartitionWorkerData,
  type ToWorker,
} from '../src/protocol/thread_messages.js';
import { applyCommand, type MetadataState, type TopicRecord } from '../src/raft/metadata/state.js';
import { scanFrames } from '../src/util/frame.js';
import { parsePartitionDirName, parseTopicDirName, partitionDir, topicDir, topicsDir } from './partition_dirs.js';
import { PartitionLog } from './segment_log.js';

type Dispatch = Extract<ToWorker, { kind: 'dispatch' }>;
type ReadRequest = Extract<ToWorker, { kind: 'read' }>;
type StatsRequest = Extract<ToWorker, { kind: 'stats' }>;

/** Partitions opened at once at start: each open reads up to a 4 MiB window, so this bounds memory. */
const startOpenConcurrency = 8;

class PartitionWorker {
  private replica: MetadataState | null = null;
  private appliedIndex = -1;
  private topicsById = new Map<string, TopicRecord>();
  /** topicId -> partition -> log. Only partitions this worker owns. */
  private logs = new Map<string, Map<number, PartitionLog>>();
  /** Dispatches waiting until the replica has applied their metaIndex, in arrival order. */
  private held: Dispatch[] = [];
  /** Logs with staged records that no flush round has taken yet. */
  private dirty = new Set<PartitionLog>();
  /** lastSeq of the last fully staged dispatch not yet covered by a round, or null. */
  private uncoveredSeq: number | null = null;
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
        const log = await PartitionLog.open({ dir: this.dirOf(job.topicId, job.partition), segmentBytesMax: this.data.segmentBytesMax });
        this.logSet(job.topicId, job.partition, log);
      }
    };
    await Promise.all(Array.from({ length: startOpenConcurrency }, opener));
    // Listening only now: both ports queue what arrives meanwhile, so nothing sees a half-opened worker.
    this.data.metadataPort.on('message', (msg: FromMetadata) => this.onMetadata(msg));
    this.port.on('message', (msg: ToWorker) => this.onMessage(msg));
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
      case 'closed':
        // Answers to the front's proposals and shutdown travel on the front's port, never here.
        throw new Error(`metadata sent ${msg.kind} to a partition worker`);
      default:
        return assertNever(msg);
    }
  }

  private onSnapshot(index: number, state: MetadataState): void {
    assert(this.replica === null, 'second metadata snapshot');
    this.replica = state;
    this.appliedIndex = index;
    this.topicsByIdRebuild();
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
      const result = applyCommand(replica, entry.command);
      this.appliedIndex = entry.index;
      if (result.ok && result.deletedTopicId !== undefined) this.topicForget(result.deletedTopicId);
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
    // Fresh, exactly sized copies: the read buffer holds the frame header too, and transferred
    // buffers must be owned by the message alone.
    const payload = result.payload.slice();
    const key = result.key === null ? null : result.key.slice();
    const record = { offset: result.offset, timestampSec: result.timestampSec, key, payload, payloadKind: result.payloadKind };
    const transfer = key === null ? [payload.buffer] : [payload.buffer, key.buffer];
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
    // Dispatches still waiting for metadata were never answered 'durable'; the ingress log keeps them.
    this.held = [];
    this.shutdownFinish().catch((err: unknown) => this.failStop('shutdown', err));
  }

  private async shutdownFinish(): Promise<void> {
    while (this.round !== null) await this.round;
    assert(this.uncoveredSeq === null, 'staged dispatches left without a round');
    await this.deletions;
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
    const scan = scanFrames(dispatch.frames);
    assert.equal(scan.validBytes, dispatch.frames.byteLength, 'dispatch frames are not whole, valid frames');
    for (const body of scan.bodies) {
      const entry = decodeIngressEntry(body);
      assert(entry.seq <= dispatch.lastSeq, `ingress entry ${entry.seq} after dispatch lastSeq ${dispatch.lastSeq}`);
      const topic = this.topicsById.get(entry.topicId);
      // A topic this replica no longer holds was deleted after the produce: its records are dropped.
      if (topic !== undefined) this.dispatchStageEntry(entry, topic);
    }
    this.uncoveredSeq = dispatch.lastSeq;
  }

  private dispatchStageEntry(entry: IngressEntry, topic: TopicRecord): void {
    entry.records.forEach((record, index) => {
      if (!this.owns(entry.topicId, record.partition)) return;
      if (record.partition >= topic.partitions) return;
      const log = this.logs.get(entry.topicId)?.get(record.partition) ?? this.logCreate(entry.topicId, record.partition);
      const last = log.lastIngress;
      // Already staged or stored: a replay after a crash or a re-sent hand-off stores nothing twice.
      if (last !== null && (entry.seq < last.seq || (entry.seq === last.seq && index <= last.index))) return;
      log.stage({
        timestampSec: entry.timestampSec,
        key: record.key,
        payload: record.payload,
        payloadKind: record.payloadKind,
        ingressSeq: entry.seq,
        ingressIndex: index,
      });
      this.dirty.add(log);
    });
  }

  /** Group commit: one round at a time flushes every dirty log concurrently, then reports 'durable'. */
  private roundStart(): void {
    if (this.round !== null || this.uncoveredSeq === null) return;
    const seqUpTo = this.uncoveredSeq;
    const logs = [...this.dirty];
    this.uncoveredSeq = null;
    this.dirty.clear();
    this.round = Promise.all(logs.map((log) => log.flush())).then(
      () => {
        this.round = null;
        this.post({ kind: 'durable', seqUpTo });
        this.roundStart();
      },
      (err: unknown) => this.failStop('flush', err),
    );
  }

  /** A deleted topic's logs leave the maps now (nothing stages or reads them again) and are destroyed
   *  once the round that may be flushing them ends. */
  private topicForget(topicId: string): void {
    const partitions = this.logs.get(topicId);
    this.logs.delete(topicId);
    const logs = partitions === undefined ? [] : [...partitions.values()];
    for (const log of logs) this.dirty.delete(log);
    const round = this.round;
    this.deletions = this.deletions
      .then(async () => {
        await round;
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
  }

  private owns(topicId: string, partition: number): boolean {
    return workerForPartition(topicId, partition, this.data.workerCount) === this.data.workerIndex;
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

function errorText(err: unknown): string {
  return err instanceof Error ? (err.stack ?? err.message) : String(err);
}

assert(parentPort !== null, 'partition_worker.ts runs only as a worker thread');
const worker = new PartitionWorker(workerData as PartitionWorkerData, parentPort);
worker.start().catch((err: unknown) => {
  process.stderr.write(`partition worker: start failed: ${errorText(err)}\n`);
  process.exit(1);
});
