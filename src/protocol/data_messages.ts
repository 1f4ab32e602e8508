// The data channel of the node-to-node transport (issue 29): what one node's node-link thread asks another's on
// behalf of its front. A forwarded request names partitions, and the owner's node-link thread hands it to the
// partition workers that own them (its own worker split, which the asking node does not know), answering with the
// workers' own FromWorker answers. Plain data only. Shared by the front (asking) and the node-link thread (serving).
import type { WorkerRefusal } from '../errors.js';
import type { MoveChunk, PartitionEndView, PartitionStatsView, SettleMode, StoredRecordView } from './thread_messages.js';

export type DataRequest =
  /** A replay of one record. Answered by the worker's 'readResult' or 'failed'. */
  | { kind: 'read'; topicId: string; partition: number; offset: number }
  /** Statistics of partitions this node owns. Answered by 'statsResult' (all of them) or 'failed'. */
  | { kind: 'stats'; topicId: string; partitions: number[] }
  /** A lease of up to max messages from these partitions, in order (over the owner's workers). With parkRef the take
   *  waits (a long poll) until it leases something or the asking node sends 'unpark' with the same parkRef; with
   *  max 0 as well, it is a watch on every partition named: it answers empty once one has a deliverable message. */
  | { kind: 'take'; topicId: string; partitions: number[]; max: number; parkRef?: number }
  /** Ack, extend or nack of receipt handles (joined by ','), answered by 'settledResult' with one status per
   *  handle, in order. */
  | { kind: 'settle'; topicId: string; mode: SettleMode; handles: string }
  /** Synced groups of the asker's ingress log (frames as written there, in seq order) with records for partitions this
   *  node owns: each stored once per (asker, seq, index), answered 'handedOff' once synced. metaIndex: the asker's
   *  applied metadata index (the owner's workers hold the records until they have applied as far). */
  | { kind: 'handoff'; metaIndex: number; frames: Uint8Array }
  /** The node's own report for GET /v1/cluster/members?detail=true, read from its front. Answered by
   *  'memberReportResult'. */
  | { kind: 'memberReport' }
  /** Issue 41: the destination of a move reads the partition from its source. Answered by 'moveChunk' or 'failed'. */
  | { kind: 'moveRead'; topicId: string; partition: number; fromOffset: number; maxBytes: number }
  /** Issue 41: after the flip the destination asks the source to confirm it let the partition go (its replica at
   *  metaIndex or past, its copy set aside). Answered by 'moveReleased' or 'failed'. */
  | { kind: 'moveRelease'; topicId: string; partition: number; metaIndex: number };

/** One-way messages of the data channel. */
export type DataMessage =
  /** The parked take of that parkRef (from the sender) is no longer wanted; it answers empty if still parked. */
  | { kind: 'unpark'; parkRef: number }
  /** Leases whose client went away: end them now (handles joined by ','). */
  | { kind: 'release'; topicId: string; handles: string };

/** What a forwarded request answers: the owning worker's answer, or a refusal it made. */
export type DataReply =
  | { kind: 'readResult'; status: 'ok' | 'past_end' | 'aged_out'; record?: StoredRecordView }
  | { kind: 'statsResult'; stats: PartitionStatsView[] }
  | { kind: 'taken'; count: number; messagesJson: string; handles: string }
  | { kind: 'settledResult'; statuses: number[] }
  /** metaIndex: the highest applied metadata index among the owner's workers that answered (thread_messages.ts
   *  'durable'). */
  | { kind: 'handedOff'; metaIndex: number }
  | { kind: 'moveChunk'; chunk: MoveChunk }
  | { kind: 'moveReleased' }
  | { kind: 'failed'; refusal: WorkerRefusal }
  | { kind: 'memberReportResult'; report: MemberReportView };

/** A set-aside partition copy (spec §2 Cluster member): files a node keeps aside instead of deleting them. */
export interface SetAsideCopyView {
  kind: 'partition' | 'topic_incarnation' | 'staging';
  topic: string;
  /** -1 for a whole topic directory. */
  partition: number;
  directory: string;
  sizeBytes: number;
  /** Unix milliseconds of the last modification. */
  modifiedAtMs: number;
}

/** A partition move this node runs as its destination (spec §2 Cluster member). */
export interface DestinationMoveView {
  topic: string;
  partition: number;
  source: number;
  destination: number;
  startedAtMs: number;
  workerState: string;
  attempts: number;
  lastError: string;
  bytesFetched: number;
  /** copy_unverifiable or source_dead_copy_behind; '' when not stuck. */
  stuckReason: string;
}

/** A member's own report (spec §2 Cluster member, detail=true), made by its front thread. */
export interface MemberReportView {
  /** The node is draining: it takes no new client produces (graceful shutdown today). */
  draining: boolean;
  /** Client produce requests admitted and not yet answered. */
  produceRequestsInFlight: number;
  /** Records in its ingress log not yet handed to their owners (confirmed by them). */
  ingressRecordsNotHandedOff: number;
  setAsideCount: number;
  setAsideBytes: number;
  /** The first 100 set-aside copies. */
  setAside: SetAsideCopyView[];
  movesAsDestination: DestinationMoveView[];
  /** Where the partitions this member holds start and end (not shown in the answer): a lost member's partitions
   *  restart elsewhere at the highest end the cluster knew (issue 41). */
  partitionEnds: PartitionEndView[];
}
