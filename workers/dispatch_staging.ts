// Staging of what reaches a partition worker to be stored: this node's synced ingress groups ('dispatch'), other
// nodes' hand-offs ('handoff') and the worker's own fan-out copies into child partitions it holds. Each record goes
// to its partition's log unless the log already holds it by its origin and ingress position (a replay after a crash,
// a re-sent hand-off or copy stores nothing twice). A partition frozen for a move (issue 41) takes nothing: staging
// stops at the first dispatch that touches one and hands it back with the rest, which the write core holds. Partition
// worker thread; the shell (partition_worker.ts) runs the write core's 'staged' command with what stage() returns.
import assert from 'node:assert/strict';
import { decodeIngressEntry, type IngressEntry } from '../src/protocol/ingress_frame.js';
import type { ToWorker } from '../src/protocol/thread_messages.js';
import { moveKey, type TopicRecord } from '../src/protocol/metadata_types.js';
import { checkedFrameBodies } from '../src/util/frame.js';
import type { HandoffStaged } from './core/partition_write_core.js';
import type { LocalCopyDispatch } from './fanout/fanout_copy_route.js';
import type { PartitionTable } from './partition_table.js';
import type { PartitionLog } from './store/segment_log.js';
import type { StoredRecord } from './store/segment_store.js';

export type Dispatch = Extract<ToWorker, { kind: 'dispatch' | 'handoff' }> | LocalCopyDispatch;

const emptyPayload = new Uint8Array(0);

/** One record's fields for log.stage, reused for every record: stage keeps nothing of them (it writes the frame in
 *  place), and a fresh object per record (with a spread for the origin) was the hottest line of batch staging and a
 *  good part of the worker's garbage. Origin 0: this node's own record. */
const stageFields: Omit<StoredRecord, 'offset'> & { origin: number } = {
  timestampSec: 0, key: null, payload: new Uint8Array(0), payloadKind: 0, ingressSeq: 0, ingressIndex: 0, origin: 0,
};

/** Drops the last record's buffers from stageFields, so a read buffer or dispatch outlives no staging. */
function stageFieldsRelease(): void {
  stageFields.key = null;
  stageFields.payload = emptyPayload;
}

/** What stage() did: the logs staged to, each hand-off's or copy's ends, the dispatches handed back (a frozen
 *  partition) and the local copies refused (their child partition moved away: the copier sends them again). */
export interface StagedDispatches {
  logs: Set<PartitionLog>;
  handoffs: HandoffStaged<PartitionLog>[];
  deferred: Dispatch[];
  refusedCopies: number[];
}

export class DispatchStaging {
  /** The last seq of this node's ingress groups staged so far: the core's durable report reaches it once synced. */
  localSeqStaged = 0;
  private readonly stagedLogs = new Set<PartitionLog>();

  /** frozen: the partitions (moveKey) that take nothing now; empty almost always, when no check is made. */
  constructor(private readonly table: PartitionTable, private readonly nodeId: number, private readonly frozen: ReadonlySet<string>) {}

  /** Stages every record of the dispatches not held yet, up to the first that touches a frozen partition. */
  stage(dispatches: readonly Dispatch[]): StagedDispatches {
    const handoffs: HandoffStaged<PartitionLog>[] = [];
    const refusedCopies: number[] = [];
    for (let d = 0; d < dispatches.length; d++) {
      const dispatch = dispatches[d]!;
      if (this.frozen.size > 0 && this.touchesFrozen(dispatch)) {
        return { logs: this.stagedLogs, handoffs, deferred: dispatches.slice(d), refusedCopies };
      }
      if (dispatch.kind === 'copy' && this.movedAway(dispatch.childId, dispatch.partition)) {
        refusedCopies.push(dispatch.waiter);
        continue;
      }
      if (dispatch.kind === 'dispatch') {
        this.dispatchStage(dispatch, 0, null);
        // A partition moved here has this node's retained groups dispatched again (older seqs): durability reports
        // never go back.
        this.localSeqStaged = Math.max(this.localSeqStaged, dispatch.lastSeq);
        continue;
      }
      const touched = new Set<PartitionLog>();
      if (dispatch.kind === 'handoff') this.dispatchStage(dispatch, dispatch.origin, touched);
      else this.copyStage(dispatch, touched);
      handoffs.push({ waiter: dispatch.kind === 'handoff' ? dispatch.reqId : dispatch.waiter, ends: [...touched].map((log) => [log, log.offsets.nextOffset]) });
    }
    return { logs: this.stagedLogs, handoffs, deferred: [], refusedCopies };
  }

  /** Whether a record of the dispatch goes to a frozen partition. Decodes the frames a second time, only while a
   *  partition of this worker is frozen (milliseconds of a move). */
  private touchesFrozen(dispatch: Dispatch): boolean {
    if (dispatch.kind === 'copy') return this.frozen.has(moveKey(dispatch.childId, dispatch.partition));
    for (const body of checkedFrameBodies(dispatch.frames)) {
      const entry = decodeIngressEntry(body);
      for (const record of entry.records) if (this.frozen.has(moveKey(entry.topicId, record.partition))) return true;
    }
    return false;
  }

  /** A move's flip gave the partition to another node since the copy was read (a deleted topic is not moved: its
   *  copies are dropped). */
  private movedAway(topicId: string, partition: number): boolean {
    const topic = this.table.topicOf(topicId);
    return topic !== undefined && topic.owners[partition] !== this.nodeId;
  }

  /** Fan-out copies into a child partition of this worker; a child topic deleted since the copy was read takes none.
   *  Each copy is skipped when the child holds it by its source (a cursor re-sent after a crash). */
  private copyStage(copy: LocalCopyDispatch, touched: Set<PartitionLog>): void {
    if (this.table.topicOf(copy.childId) === undefined) return;
    const log = this.table.logOf(copy.childId, copy.partition) ?? this.table.logCreate(copy.childId, copy.partition);
    const fields = stageFields;
    fields.timestampSec = copy.timestampSec;
    fields.ingressIndex = 0;
    fields.origin = copy.origin;
    const records = copy.records;
    let staged = 0;
    for (let i = 0; i < records.length; i++) {
      const seq = copy.firstSeq + i;
      if (log.offsets.holdsIngress(seq, 0, copy.origin)) continue;
      const record = records[i]!;
      fields.key = record.key;
      fields.payload = record.payload;
      fields.payloadKind = record.payloadKind;
      fields.ingressSeq = seq;
      log.stage(fields);
      staged++;
    }
    stageFieldsRelease();
    if (staged === 0) return;
    touched.add(log);
    this.stagedLogs.add(log);
  }

  /** origin 0: this node's ingress group; touched collects the logs a hand-off staged to. */
  private dispatchStage(dispatch: Exclude<Dispatch, LocalCopyDispatch>, origin: number, touched: Set<PartitionLog> | null): void {
    // The front computed these crcs as it wrote the group, or checked them as it read the ingress log back at start
    // (a hand-off's frames were checked by the transport's own frame crc, and are checked again here).
    for (const body of checkedFrameBodies(dispatch.frames)) {
      const entry = decodeIngressEntry(body);
      if (dispatch.kind === 'dispatch') assert(entry.seq <= dispatch.lastSeq, `ingress entry ${entry.seq} after dispatch lastSeq ${dispatch.lastSeq}`);
      const topic = this.table.topicOf(entry.topicId);
      // A topic this replica no longer holds was deleted after the produce: its records are dropped.
      if (topic !== undefined) this.dispatchStageEntry(entry, topic, origin, touched);
    }
    stageFieldsRelease();
  }

  private dispatchStageEntry(entry: IngressEntry, topic: TopicRecord, origin: number, touched: Set<PartitionLog> | null): void {
    // A batch spreads its records over the topic's partitions: each partition's log (null: not stored here) is looked
    // up once per entry, not once per record, and marked dirty once (a tenth of the worker's batch produce work was
    // these lookups and the Set adds).
    const logOf: (PartitionLog | null | undefined)[] = [];
    const dirtied: boolean[] = [];
    const records = entry.records;
    // A fan-out copy is known by its source, (parent partition and epoch, parent offset + 1): a copy re-sent from an
    // older cursor after a crash comes in a new entry with a new seq (issue 30).
    const source = entry.source;
    for (let index = 0; index < records.length; index++) {
      const record = records[index]!;
      const partition = record.partition;
      let log = logOf[partition];
      if (log === undefined) {
        const stored = partition < topic.partitions && topic.owners[partition] === this.nodeId && this.table.owns(entry.topicId, partition);
        log = stored ? (this.table.logOf(entry.topicId, partition) ?? this.table.logCreate(entry.topicId, partition)) : null;
        logOf[partition] = log;
      }
      if (log === null) continue;
      const recordOrigin = source === undefined ? origin : source.origin;
      const seq = source === undefined ? entry.seq : source.firstSeq + index;
      const seqIndex = source === undefined ? index : 0;
      // Already staged or stored: a replay after a crash or a re-sent hand-off stores nothing twice.
      if (log.offsets.holdsIngress(seq, seqIndex, recordOrigin)) continue;
      const fields = stageFields;
      fields.timestampSec = entry.timestampSec;
      fields.key = record.key;
      fields.payload = record.payload;
      fields.payloadKind = record.payloadKind;
      fields.ingressSeq = seq;
      fields.ingressIndex = seqIndex;
      fields.origin = recordOrigin;
      log.stage(fields);
      if (dirtied[partition] !== true) {
        this.stagedLogs.add(log);
        touched?.add(log);
        dirtied[partition] = true;
      }
    }
  }
}
