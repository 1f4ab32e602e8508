// The segment store of one partition: what the partition worker and the read path may ask of a partition's records,
// with two implementations (NATS server's StreamStore: filestore and memstore): PartitionLog (segment_log.ts, files)
// and MemorySegmentStore (memory_segment_store.ts, for simulations). Runs on the partition worker thread that owns
// the partition. Both keep their offsets and ingress positions in a PartitionOffsets (partition_offsets.ts) and differ
// only in how they keep bytes; one contract suite (test/unit/segment_store.suite.ts) runs the same cases against both.
import type { PartitionStatsView, StoredRecordView } from '../../src/protocol/thread_messages.js';
import type { SegmentOffsets } from './partition_offsets.js';

/** A record as answered (StoredRecordView) plus where it came from: ingress sequence of its frame and its position
 *  in that frame, which together identify a replayed record. */
export interface StoredRecord extends StoredRecordView {
  ingressSeq: number;
  ingressIndex: number;
  /** The node whose ingress log the record came from, when another node handed it over (issue 29); absent for this
   *  node's own records. */
  origin?: number;
}

/** The partition statistics of spec §2 but the index, which the worker adds. sizeBytes counts the bytes of the
 *  records' frames and of their index entries: the logical size, which is what the files hold once sealed or closed
 *  (the memory store counts the same bytes). */
export type PartitionLogStats = Omit<PartitionStatsView, 'index'>;

export interface IngressPosition {
  seq: number;
  index: number;
}

/** What a read of one offset answers: the record, or why there is none (at or past highWatermark, or below
 *  oldestOffset, which retention removed). */
export type SegmentReadResult = StoredRecord | 'past_end' | 'aged_out';

/**
 * Lifecycle: open (recovery) or create empty, then stage/flush/sync/read/retain in any order (one flush or retain at
 * a time; a sync may run beside a flush), then close or destroy. Offsets below highWatermark never change meaning.
 * Invariant after every call: oldestOffset <= offsets.highWatermark <= offsets.nextOffset, offsets.syncedHighWatermark
 * <= offsets.highWatermark.
 */
export interface SegmentStore {
  /** The partition directory: the file store's files, and where the partition's cursor log lives. */
  readonly dir: string;
  /** A segment rolls before a frame that would take it past this many bytes; a bigger frame goes alone. */
  readonly segmentBytesMax: number;
  /** Offsets and ingress positions (nextOffset, highWatermark, syncedHighWatermark, lastIngress, holdsIngress...),
   *  kept the same way by both stores; read-only here, the store alone moves them. */
  readonly offsets: SegmentOffsets;
  /** The first kept offset; with no segment, highWatermark. */
  readonly oldestOffset: number;
  /** Assigns the next offset and buffers the record; no I/O. */
  stage(r: Omit<StoredRecord, 'offset'>): number;
  /** Writes everything staged (rolling segments as needed), then advances highWatermark. One at a time. */
  flush(): Promise<void>;
  /** Makes durable what flush wrote by the time of the call: afterwards syncedHighWatermark is at least the
   *  highWatermark of the call. */
  sync(): Promise<void>;
  read(offset: number): Promise<SegmentReadResult>;
  /** Answers in the order asked; fromTail lets records just flushed come from memory. */
  readMany(offsets: readonly number[], opts?: { fromTail?: boolean }): Promise<SegmentReadResult[]>;
  /** Spec §1.12: deletes, oldest first, every segment whose newest record is older than cutoffSec. */
  retain(cutoffSec: number): Promise<{ oldestOffset: number; deletedSegments: number }>;
  stats(): PartitionLogStats;
  /** Syncs, then closes; records still staged are dropped. */
  close(): Promise<void>;
  /** Closes and removes every record (topic deleted). */
  destroy(): Promise<void>;
}
