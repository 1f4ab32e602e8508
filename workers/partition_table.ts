// A partition worker's table of what it holds: the read-only metadata replica (snapshot, then committed entries, as
// every replica keeps it) and the open PartitionLog of each owned partition. Runs on the partition worker thread;
// the worker shell (partition_worker.ts) feeds it metadata and asks it for logs; the consume routes read it.
// Lifecycle: filled from the partition directories at start, emptied at shutdown.
import assert from 'node:assert/strict';
import { readdir, rmdir } from 'node:fs/promises';
import { workerForPartition } from '../src/protocol/ownership.js';
import type { FromMetadata } from '../src/protocol/thread_messages.js';
import { moveKey, type FanoutLink, type MetadataState, type PartitionMoveRecord, type TopicRecord } from '../src/protocol/metadata_types.js';
import { applyCommand } from '../src/metadata/state.js';
import { parsePartitionDirName, parseTopicDirName, partitionDir, topicDir, topicsDir } from './store/partition_dirs.js';
import { PartitionLog } from './store/segment_log.js';

export interface PartitionKey {
  topicId: string;
  partition: number;
}

/** What one metadata message changed for the worker. */
export interface ReplicaChange {
  /** Topics whose caps may have changed: their read paths are configured again. */
  configured: TopicRecord[];
  /** Topics deleted (or gone from a snapshot) that still have logs or owners here. */
  deletedTopicIds: string[];
}

export class PartitionTable {
  private replica: MetadataState | null = null;
  /** The index of the last entry the replica holds: a dispatch waits until it reaches its metaIndex. */
  appliedIndex = -1;
  private readonly topicsById = new Map<string, TopicRecord>();
  /** topicId -> partition -> log. Only partitions this worker owns. */
  private readonly logs = new Map<string, Map<number, PartitionLog>>();
  private readonly logKeys = new Map<PartitionLog, PartitionKey>();
  /** topic id -> partition -> whether this worker owns it (see owns()). */
  private readonly ownedByTopic = new Map<string, boolean[]>();

  /** The replica may judge files found on disk: a snapshot past index 0 (or a replaced one), or entries past it,
   *  were applied. */
  judged = false;

  constructor(private readonly opts: { nodeId: number; dataDir: string; segmentBytesMax: number; workerIndex: number; workerCount: number }) {}

  /** The partitions this worker owns that have a directory on disk. */
  async ownedOnDisk(): Promise<PartitionKey[]> {
    const keys: PartitionKey[] = [];
    for (const topicId of await dirNames(topicsDir(this.opts.dataDir), parseTopicDirName)) {
      for (const partition of await dirNames(topicDir(this.opts.dataDir, topicId), parsePartitionDirName)) {
        if (this.owns(topicId, partition)) keys.push({ topicId, partition });
      }
    }
    return keys;
  }

  dirOf(topicId: string, partition: number): string {
    return partitionDir(this.opts.dataDir, topicId, partition);
  }

  onSnapshot(index: number, state: MetadataState): ReplicaChange {
    // A later snapshot is one this node installed from the Raft leader: it replaces the replica outright.
    const replacing = this.replica !== null;
    this.replica = state;
    this.appliedIndex = index;
    this.topicsByIdRebuild();
    const configured = replacing ? [...state.topics.values()] : [];
    // Partitions of topics the metadata no longer holds were deleted while this node was down (or it died
    // between the delete and the removal): their files are removed now. A topic's create is committed before
    // any of its records can be dispatched, so a live topic is never missing here. A first snapshot at index 0 is
    // an empty replica (a node joining with a new metadata log): it proves nothing about files found on disk, which
    // wait for a snapshot from the leader or a committed delete.
    const judged = replacing || index > 0;
    this.judged = judged;
    const deletedTopicIds = judged ? [...this.logs.keys()].filter((topicId) => !this.topicsById.has(topicId)) : [];
    return { configured, deletedTopicIds };
  }

  onCommitted(msg: Extract<FromMetadata, { kind: 'committed' }>): ReplicaChange {
    const replica = this.replica;
    assert(replica !== null, 'committed entries before the metadata snapshot');
    const change: ReplicaChange = { configured: [], deletedTopicIds: [] };
    for (const entry of msg.entries) {
      // Entries the snapshot already holds are older deltas: ignored, as every replica does.
      if (entry.index <= this.appliedIndex) continue;
      assert.equal(entry.index, this.appliedIndex + 1, `metadata entry ${entry.index} skips past ${this.appliedIndex}`);
      this.appliedIndex = entry.index;
      const command = entry.command;
      if (command === null) continue;
      const result = applyCommand(replica, command);
      if (result.ok && result.deletedTopicId !== undefined) change.deletedTopicIds.push(result.deletedTopicId);
      // Spec §4 PATCH: groups before a failing one stay applied, so caps may have changed even when the entry failed.
      if (command.type === 'topic.update') {
        const topic = replica.topics.get(command.name);
        if (topic !== undefined && topic.id === command.id) change.configured.push(topic);
      }
    }
    this.topicsByIdRebuild();
    // A node that joined started from an empty snapshot and holds no files from before: the entries it applied since
    // are the whole story of what it may own (a restarted node's first snapshot is past index 0 anyway).
    if (this.appliedIndex > 0) this.judged = true;
    return change;
  }

  private topicsByIdRebuild(): void {
    this.topicsById.clear();
    for (const topic of this.replica!.topics.values()) this.topicsById.set(topic.id, topic);
  }

  /** The fan-out children of a parent topic, in attach order; none for any other topic (issue 30). */
  fanoutLinksOf(topicId: string): readonly FanoutLink[] {
    return this.replica?.fanout.get(topicId)?.children ?? [];
  }

  /** The move of the partition the replica holds, if any (issue 41). */
  moveOf(topicId: string, partition: number): PartitionMoveRecord | undefined {
    return this.replica?.moves.get(moveKey(topicId, partition));
  }

  moves(): Iterable<PartitionMoveRecord> {
    return this.replica?.moves.values() ?? [];
  }

  /** Whether the replica places the partition on this node (owners[p]); false for a topic it does not hold. */
  nodeOwns(topicId: string, partition: number): boolean {
    return this.topicsById.get(topicId)?.owners[partition] === this.opts.nodeId;
  }

  /** Open logs of partitions a judged replica places on another node: a move's flip gave them away (or this worker
   *  started with the directory of a partition that moved while it was down). */
  logsMovedAway(): [PartitionLog, PartitionKey][] {
    if (!this.judged) return [];
    const moved: [PartitionLog, PartitionKey][] = [];
    for (const [log, key] of this.logKeys) {
      if (this.topicsById.has(key.topicId) && !this.nodeOwns(key.topicId, key.partition)) moved.push([log, key]);
    }
    return moved;
  }

  /** One partition's log leaves the table (it moved to another node): nothing stages or reads it again. */
  logRemove(log: PartitionLog): void {
    const key = this.logKeys.get(log);
    assert(key !== undefined, 'removing a log the table does not hold');
    this.logKeys.delete(log);
    this.logs.get(key.topicId)?.delete(key.partition);
  }

  dataDir(): string {
    return this.opts.dataDir;
  }

  segmentBytesMax(): number {
    return this.opts.segmentBytesMax;
  }

  /** The topics that have fan-out children. */
  fanoutParents(): Iterable<string> {
    return this.replica?.fanout.keys() ?? [];
  }

  topicOf(topicId: string): TopicRecord | undefined {
    return this.topicsById.get(topicId);
  }

  logOf(topicId: string, partition: number): PartitionLog | undefined {
    return this.logs.get(topicId)?.get(partition);
  }

  keyOf(log: PartitionLog): PartitionKey | undefined {
    return this.logKeys.get(log);
  }

  logsOfTopic(topicId: string): Iterable<PartitionLog> {
    return this.logs.get(topicId)?.values() ?? [];
  }

  /** Every open log with its key (deleting during the iteration is safe). */
  entries(): Iterable<[PartitionLog, PartitionKey]> {
    return this.logKeys.entries();
  }

  /** A partition known to have no directory yet: no I/O until the first flush creates it. A partition given over
   *  from a member lost for good starts at the topic's start offset (partition.reassign), so offsets never go back:
   *  the metadata keeps that offset, and the first flush makes a segment based there. */
  logCreate(topicId: string, partition: number): PartitionLog {
    const startOffset = this.topicOf(topicId)?.startOffsets?.[partition] ?? 0;
    const log = PartitionLog.createEmpty({ dir: this.dirOf(topicId, partition), segmentBytesMax: this.opts.segmentBytesMax, startOffset });
    this.logSet(topicId, partition, log);
    return log;
  }

  logSet(topicId: string, partition: number, log: PartitionLog): void {
    let partitions = this.logs.get(topicId);
    if (partitions === undefined) this.logs.set(topicId, (partitions = new Map()));
    assert(!partitions.has(partition), `partition ${topicId}/${partition} opened twice`);
    partitions.set(partition, log);
    this.logKeys.set(log, { topicId, partition });
  }

  /** The deleted topic's logs leave the table: nothing stages or reads them again. */
  topicRemove(topicId: string): PartitionLog[] {
    this.ownedByTopic.delete(topicId);
    const partitions = this.logs.get(topicId);
    this.logs.delete(topicId);
    const logs = partitions === undefined ? [] : [...partitions.values()];
    for (const log of logs) this.logKeys.delete(log);
    return logs;
  }

  /** Every open log, removed (shutdown closes them). */
  removeAll(): PartitionLog[] {
    const logs = [...this.logKeys.keys()];
    this.logs.clear();
    this.logKeys.clear();
    return logs;
  }

  /** Which worker of the node holds a partition never changes for a worker's lifetime (which node does is nodeOwns);
   *  it is asked for every record and settle, so it is kept. */
  owns(topicId: string, partition: number): boolean {
    let owned = this.ownedByTopic.get(topicId);
    if (owned === undefined) this.ownedByTopic.set(topicId, (owned = []));
    let answer = owned[partition];
    if (answer === undefined) {
      answer = workerForPartition(topicId, partition, this.opts.workerCount) === this.opts.workerIndex;
      owned[partition] = answer;
    }
    return answer;
  }

  /** Spec §1.12: segments whose newest record is older than the topic's retention_ms are deleted; onRetained hears of
   *  each log whose oldest offset moved. */
  async retentionRound(nowMs: number, onRetained: (log: PartitionLog, oldestOffset: number) => void): Promise<void> {
    for (const [log, key] of this.entries()) {
      const topic = this.topicOf(key.topicId);
      if (topic === undefined || topic.retentionMs === 0 || log.offsets.highWatermark === log.oldestOffset) continue;
      const cutoffSec = Math.floor((nowMs - topic.retentionMs) / 1000);
      const before = log.oldestOffset;
      const { oldestOffset } = await log.retain(cutoffSec);
      if (oldestOffset !== before) onRetained(log, oldestOffset);
    }
  }

  /** Removes the empty directories of topics this replica does not hold (a crash between removing a deleted topic's
   *  last partition and its directory leaves one). Only empty ones: a partition directory is removed by the worker
   *  that owns it, with its log. A live topic's directory emptied here under a first flush is made again by that
   *  flush's recursive mkdir, which recreates a parent that vanishes under it. */
  async orphanTopicDirsRemove(): Promise<string[]> {
    const removed: string[] = [];
    for (const topicId of await dirNames(topicsDir(this.opts.dataDir), parseTopicDirName)) {
      if (this.topicsById.has(topicId) || this.logs.has(topicId)) continue;
      if (await rmdirIfEmpty(topicDir(this.opts.dataDir, topicId))) removed.push(topicId);
    }
    return removed;
  }

  /** Other workers own the topic's other partitions and remove theirs concurrently: whoever empties the
   *  directory last removes it, and the others find it not empty or already gone. */
  async topicDirRemoveIfEmpty(topicId: string): Promise<void> {
    await rmdirIfEmpty(topicDir(this.opts.dataDir, topicId));
  }
}

/** Removes dir when it is empty; false when it is not, or already gone. */
async function rmdirIfEmpty(dir: string): Promise<boolean> {
  try {
    await rmdir(dir);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    return false;
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
