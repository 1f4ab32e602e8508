// Every message that crosses a thread boundary inside one node, one discriminated union per channel.
// Only plain data crosses a port: no class instances, no Error objects. Byte payloads travel as
// Uint8Array whose ArrayBuffer is in the transfer list. Orderings are written down in README.md here.
import type { MetadataCommand, MetadataState, ProposalCaller } from './metadata_types.js';
import type { ForgetReply } from './peer_messages.js';
import type { MetadataRefusal, WorkerRefusal } from '../errors.js';
import type { MessagePort } from 'node:worker_threads';
import type { PayloadKind } from './ingress_frame.js';
import type { MemberReportView } from './data_messages.js';

// ---------------------------------------------------------------------------------------------
// Front thread <-> metadata thread (the metadata thread's parentPort)

export type ToMetadata =
  /** Front -> metadata: propose a change. Answered by 'committed' carrying reqId, 'proposalApplied', or
   *  'proposeFailed'. On a follower the metadata thread forwards it to the leader; caller: the request's user, which
   *  the leader checks again (absent with security off and for the node's own proposals). */
  | { kind: 'propose'; reqId: number; command: MetadataCommand; caller?: ProposalCaller }
  /** Front -> metadata: the member list (GET /v1/cluster/members); answered by 'membersResult'. */
  | { kind: 'members'; reqId: number }
  /** Front -> metadata: forget a dead member (POST /v1/cluster/members/{id}/forget); answered by 'forgetResult'. */
  | { kind: 'forget'; reqId: number; id: number }
  /** Front -> metadata: catch this replica up with the leader's commit index; answered by 'caughtUpResult'. */
  | { kind: 'catchUp'; reqId: number }
  /** Front -> metadata: the API listener's address once known (it was started on port 0 with no --advertise). */
  | { kind: 'apiAddress'; address: string }
  /** Front -> metadata (issue 41): this node leads and is being decommissioned with nothing left to move: hand the
   *  leadership to the most caught-up live voter not being decommissioned. No answer; the status shows the change. */
  | { kind: 'transferLeadership' }
  /** Front -> metadata: close the log cleanly; answered by 'closed'. */
  | { kind: 'shutdown' };

/** One node as GET /v1/cluster/members shows it (spec §2 Cluster member). */
export interface MemberView {
  id: number;
  apiAddress: string;
  internalAddress: string;
  alive: boolean;
  voter: boolean;
  learner: boolean;
  leader: boolean;
  partitionsOwned: number;
  /** Seconds since the leader last heard from this member; null when no leader view is known. */
  heartbeatAgeSeconds: number | null;
}

/** What /readyz and the members route need from the metadata thread, posted on every change. */
export interface ClusterStatus {
  nodeId: number;
  term: number;
  role: 'follower' | 'preCandidate' | 'candidate' | 'leader';
  /** 0 when no leader is known. */
  leader: number;
  /** Date.now() when a message from the current leader last arrived (this node's own clock); 0 when never. */
  leaderHeardAtMs: number;
  /** The replica has applied what the leader had committed when this node started (spec §4 /readyz). */
  caughtUp: boolean;
  /** Members the liveness view (the leader's, as this node last heard it) marks dead: produce routes around their
   *  partitions (spec §1.6). */
  deadMembers: number[];
}

/** A committed entry, broadcast in log order to the front and every worker; each applies it itself. */
export interface CommittedEntry {
  index: number;
  /** null for Raft's own entries (a new leader's empty entry, membership changes): they only move the index. */
  command: MetadataCommand | null;
}

export type FromMetadata =
  /** Metadata -> front and workers: the whole state at index; at start, and again when this node installs a
   *  snapshot from the leader (the replica is replaced, later 'committed' entries continue from index). */
  | { kind: 'snapshot'; index: number; state: MetadataState }
  /** Metadata -> front and workers: newly committed entries in order. proposals maps the front's
   *  reqIds to the entry each became (present only on the front's copy). */
  | { kind: 'committed'; entries: CommittedEntry[]; proposals?: { reqId: number; index: number }[] }
  /** Metadata -> front: a proposal became the entry at index, which the front has already applied (a follower
   *  learned it from the leader after applying it). */
  | { kind: 'proposalApplied'; reqId: number; index: number }
  /** Metadata -> front: the proposal was not applied here; refusal names the catalog error (src/errors.ts) the front
   *  answers, with its status and Retry-After. */
  | { kind: 'proposeFailed'; reqId: number; refusal: MetadataRefusal }
  | { kind: 'membersResult'; reqId: number; members: MemberView[] }
  | ({ kind: 'forgetResult'; reqId: number } & ForgetReply)
  /** ok: every entry the leader had committed when asked is applied here (and so posted to the front before this). */
  | { kind: 'caughtUpResult'; reqId: number; ok: boolean }
  /** Metadata -> front: leader, role and readiness changed (also sent once a second). */
  | { kind: 'clusterStatus'; status: ClusterStatus }
  /** Metadata -> front: answer to shutdown, the log is closed. */
  | { kind: 'closed' };

// ---------------------------------------------------------------------------------------------
// Front thread <-> partition worker (the worker's parentPort). Metadata reaches workers on a second
// port, created by the front at start and handed to both the metadata thread and the worker.

/** One record as a partition stores it and answers it on replay. */
export interface StoredRecordView {
  offset: number;
  timestampSec: number;
  key: Uint8Array | null;
  payload: Uint8Array;
  payloadKind: PayloadKind;
}

/** Spec §2 Partition statistics, as one worker reports a partition it owns. */
export interface PartitionStatsView {
  index: number;
  segments: number;
  oldestOffset: number;
  nextOffset: number;
  highWatermark: number;
  sizeBytes: number;
  /** Unix seconds of the oldest segment's first record; absent when the partition holds no segment with records. */
  oldestSegmentAtSec?: number;
  /** On a fan-out parent's partition (issue 30): each child's copy cursor, the next parent offset not yet copied.
   *  Read by GET .../children for lag_messages; never shown in get-topic. */
  fanoutCursors?: FanoutCursorView[];
}

/** One copy cursor of a parent partition (workers/fanout/fanout_copier.ts). */
export interface FanoutCursorView {
  childId: string;
  epoch: string;
  offset: number;
}

/** One copy cursor as a worker reports it for a metrics scrape (svc_fanout_lag_messages, ..._dropped_messages,
 *  svc_fanout_committed_total). */
export interface FanoutCounterView {
  parentTopicId: string;
  partition: number;
  childId: string;
  /** Parent messages committed and not yet copied. */
  lag: number;
  /** Parent messages retention deleted before they were copied, since the worker started. */
  dropped: number;
  /** Parent messages copied to the child (stored durably for it) since the worker started. */
  copied: number;
}

/** One partition's consume counters as a worker reports them for a metrics scrape. */
export interface PartitionCountersView {
  topicId: string;
  partition: number;
  /** High watermark minus the acked frontier. */
  lag: number;
  /** Messages handed out under a lease since the worker started (svc_messages_consumed_total). */
  consumed: number;
  /** Records stored (or staged) in the partition since the worker opened it (svc_messages_produced_total). */
  produced: number;
}

/** Where an open partition's records start and end (issue 41): a lost owner's partition restarts elsewhere at the
 *  highest end the cluster knew, so offsets never go back. */
export interface PartitionEndView {
  topicId: string;
  partition: number;
  oldestOffset: number;
  nextOffset: number;
}

/** Bytes a worker holds on disk for one topic (its partitions' segments): svc_topic_bytes. */
export interface TopicBytesView {
  topicId: string;
  bytes: number;
}

export type ToWorker =
  /** Front -> worker: one synced ingress group (frames exactly as written to the ingress log). The
   *  worker stores the records of the partitions it owns, once each (it skips (seq, index) pairs it
   *  already holds, so a replay after a crash stores nothing twice), syncs, advances high watermarks,
   *  and answers 'durable'. metaIndex: the front's applied metadata index when it was sent; the worker
   *  holds the group until its own replica has applied that far, so it knows every topic named. */
  | { kind: 'dispatch'; metaIndex: number; frames: Uint8Array; lastSeq: number }
  /** Node-link -> worker: a synced ingress group of another node's ingress log (origin), handed over (issue 29). The
   *  worker stores the records of the partitions it owns on this node, once each per origin ((seq, index) as for
   *  'dispatch'), and answers 'handedOff' once they are synced. metaIndex: the origin's applied metadata index. */
  | { kind: 'handoff'; reqId: number; origin: number; metaIndex: number; frames: Uint8Array }
  /** Front -> worker: read one record (replay). Answered by 'readResult' or 'failed'. */
  | { kind: 'read'; reqId: number; topicId: string; partition: number; offset: number }
  /** Front -> worker: statistics of these partitions of a topic. Answered by 'statsResult'. */
  | { kind: 'stats'; reqId: number; topicId: string; partitions: number[] }
  /** Front -> worker: lease up to max messages, trying the partitions in the order given (each must be owned by
   *  this worker). Answered by 'taken' (maybe empty). A lost answer leaves leases that simply expire. With park
   *  (a long poll), a take that finds nothing waits on the worker (workers/parked_takes.ts) and is answered once
   *  it leases something, or empty on 'unpark' or when its topic is deleted; never twice. max 0 is a watch: it
   *  leases nothing and answers empty once a partition has a deliverable message (parked until then). */
  | { kind: 'take'; reqId: number; topicId: string; partitions: number[]; max: number; park?: boolean }
  /** Front -> worker: the parked take takeReqId is no longer wanted (its wait ended, its client went away, the node
   *  shuts down). Answered through that take: an empty 'taken' if it was still parked, nothing if it was answered. */
  | { kind: 'unpark'; takeReqId: number }
  /** Front -> worker: ack, extend or nack leases of one topic; answered by 'settledResult' with one status per
   *  handle, in order (204, or 410 when the lease is gone). handles: receipt handles the front checked
   *  (receiptHandlePartition), joined by ',' (receipt_handle.ts): one string crosses a port in one copy, where 100
   *  lease objects cost ~40x more to clone. */
  | { kind: 'settle'; reqId: number; topicId: string; mode: SettleMode; handles: string }
  /** Front -> worker: the client that asked for these leases went away: end them now (as a nack). No answer.
   *  handles: as for 'settle'. */
  | { kind: 'release'; topicId: string; handles: string }
  /** Front -> worker: consumer lag, and messages handed out under a lease since start, of every partition this
   *  worker has a read path for, and the bytes it holds per topic (metrics scrape). Answered by 'countersResult'. */
  | { kind: 'counters'; reqId: number }
  /** Front -> worker: the answer to 'fanoutCopy' (issue 30). upToOffset: the copies up to it are synced to the ingress
   *  log (the copy cursor moves there); null: nothing was appended (link gone on the front's replica, ingress failed,
   *  node stopping), and the worker tries again later if the link still exists. */
  | { kind: 'fanoutCopied'; parentTopicId: string; partition: number; childId: string; epoch: string; upToOffset: number | null }
  /** Node-link -> source worker (issue 41, partition moves): up to maxBytes of the partition's synced records from
   *  fromOffset (from its oldest retained offset when fromOffset is below it). Answered by 'moveChunk' or 'failed'
   *  (partitionMoved when this node does not own it). */
  | { kind: 'moveRead'; reqId: number; topicId: string; partition: number; fromOffset: number; maxBytes: number }
  /** Node-link -> source worker, once the flip applied there: the partition is no longer served here and its files
   *  are set aside. Answered by 'moveReleased' once this worker's replica reached metaIndex and the copy is aside. */
  | { kind: 'moveRelease'; reqId: number; topicId: string; partition: number; metaIndex: number }
  /** Front -> destination worker: store a chunk read from the source in the partition's incoming copy (created on
   *  the first chunk, at chunk.fromOffset); answered by 'moveWritten' once synced and read back, or 'failed'
   *  (copyUnverifiable when the bytes do not match chunk.crc32). */
  | { kind: 'moveWrite'; reqId: number; topicId: string; partition: number; chunk: MoveChunk }
  /** Front -> destination worker: the move ended without a flip; the incoming copy is set aside. Answered by
   *  'moveReleased'. */
  | { kind: 'moveDiscard'; reqId: number; topicId: string; partition: number }
  /** Front -> worker: finish what was dispatched, sync, close files; answered by 'closed'. */
  | { kind: 'shutdown' };

/** A run of a moving partition's records, as the source's worker read them (issue 41). Offsets, keys, timestamps and
 *  payload bytes are the source's; every record carries an origin (the source's own records name the source), so
 *  the destination knows what each origin already delivered and skips it when hand-offs send it again. */
export interface MoveChunk {
  /** The source's oldest retained offset when read. */
  firstOffset: number;
  /** Offset of the first record in records (max(asked fromOffset, firstOffset)). */
  fromOffset: number;
  /** The offset after the last record in records (== fromOffset when empty). */
  nextOffset: number;
  /** The source's synced end when read: nextOffset == syncedEnd means caught up. */
  syncedEnd: number;
  count: number;
  /** The records, encoded by workers/store/segment_record.ts (origin always set); a transferred buffer. */
  records: Uint8Array;
  /** crc32 of records: the destination checks it before and after writing (copy_unverifiable). */
  crc32: number;
  /** The source's replica holds the move frozen and every record it staged for the partition is in this read: the
   *  chunk ends the copy. Only then is cursors set. */
  final: boolean;
  /** With final: the partition's named cursors (the ack state "ack", fan-out copy cursors), as its cursor log holds
   *  them; open leases are not carried (they are delivered again after the flip). */
  cursors?: MoveCursor[];
}

/** One named cursor of a partition's cursor log, as a move carries it. */
export interface MoveCursor {
  name: string;
  offset: number;
  /** The cursor's own state bytes (the ack state's acked offsets, a fan-out cursor's extra), as stored. */
  state?: Uint8Array;
}

export type SettleMode = 'ack' | 'extend' | 'nack';

export type FromWorker =
  /** Worker -> front: every record of every dispatch up to lastSeq that this worker owns is synced.
   *  The ingress log may drop segments once every worker has reported past them. */
  /** metaIndex: the worker's applied metadata index when it reported; the front counts the report only once its
   *  own replica applied that far, so an ownership change the worker skipped records under is known to the front
   *  (which then sends them to the new owner) before the ingress log may drop them (issue 41). */
  | { kind: 'durable'; seqUpTo: number; metaIndex: number }
  /** Worker -> node-link: the hand-off's records of this worker's partitions are synced (or were already held).
   *  metaIndex: as for 'durable'. */
  | { kind: 'handedOff'; reqId: number; metaIndex: number }
  /** Worker -> front or node-link: a chunk of a moving partition (answers 'moveRead'). */
  | { kind: 'moveChunk'; reqId: number; chunk: MoveChunk }
  /** Destination worker -> front: the chunk is synced; the incoming copy now ends at nextOffset. */
  | { kind: 'moveWritten'; reqId: number; nextOffset: number; bytes: number }
  /** Worker: the copy is set aside ('moveRelease', 'moveDiscard'). */
  | { kind: 'moveReleased'; reqId: number }
  | { kind: 'readResult'; reqId: number; status: 'ok' | 'past_end' | 'aged_out'; record?: StoredRecordView }
  | { kind: 'statsResult'; reqId: number; stats: PartitionStatsView[] }
  /** count leases taken; messagesJson: their spec §2 Messages (each with its receipt_handle) joined by ',', built
   *  by the worker so the front only wraps them; handles: the same leases' receipt handles joined by ',' (for a
   *  release when the client went away). Strings, because one string crosses a port in one copy. */
  | { kind: 'taken'; reqId: number; count: number; messagesJson: string; handles: string }
  /** statuses[i] answers the i-th handle of the 'settle'; its buffer is transferred. */
  | { kind: 'settledResult'; reqId: number; statuses: Uint16Array }
  /** lag = high watermark - frontier (spec §4 metrics svc_consumer_lag_messages); fanout: the copy cursors of the
   *  fan-out parents' partitions this worker owns. */
  | { kind: 'countersResult'; reqId: number; counters: PartitionCountersView[]; topicBytes: TopicBytesView[]; fanout?: FanoutCounterView[];
    ends: PartitionEndView[] }
  /** Worker -> front, unasked (issue 30): committed parent records for a child, from fromOffset on, to append to the
   *  ingress log as one entry of the child topic. records: msgpack of [key, payload, payloadKind][] (one transferred
   *  buffer: read records are views of shared buffers, which a port would clone whole). At most one per (parent
   *  partition, child) is unanswered; the front answers 'fanoutCopied'. */
  | { kind: 'fanoutCopy'; parentTopicId: string; partition: number; childId: string; epoch: string; fromOffset: number; count: number; records: Uint8Array }
  /** Worker -> front, unasked: messages of these topics became deliverable (commit, lease expiry, nack, freed cap);
   *  the front wakes up to count long-poll waiters per topic. Losing one only delays a waiter to its wait's end.
   *  Sent only when the node has several workers: with one, every long poll parks on it (protocol/README.md). */
  | { kind: 'available'; topics: { topicId: string; count: number }[] }
  /** Worker -> front: a request refused on the worker, as a catalog id and its arguments (src/errors.ts): the
   *  front answers refusalError of it. */
  | { kind: 'failed'; reqId: number; refusal: WorkerRefusal }
  /** Worker -> front: started; all partitions found on disk are open. */
  | { kind: 'ready' }
  | { kind: 'closed' };

/** workerData of a partition worker. */
export interface PartitionWorkerData {
  /** This node's id: a worker stores only records of partitions the metadata places on this node. */
  nodeId: number;
  workerIndex: number;
  workerCount: number;
  dataDir: string;
  /** Segment roll size (config storage.segment_bytes). */
  segmentBytesMax: number;
  /** config storage.retention_check_interval. */
  retentionCheckIntervalMs: number;
  /** config storage.ack_flush_interval. */
  ackFlushIntervalMs: number;
  /** config storage.partition_flush_interval. */
  flushIntervalMs: number;
  /** config storage.partition_sync_interval. */
  syncIntervalMs: number;
  /** Port on which FromMetadata messages arrive. */
  metadataPort: MessagePort;
  /** Port to the node-link thread on a node of a cluster: requests other nodes forward to this worker arrive there
   *  with negative reqIds (the front's are positive), and their answers go back on it. */
  linkPort?: MessagePort;
  /** config log.level: the worker logs pino JSON lines with component=partition-worker. */
  logLevel: string;
}

/** workerData of the metadata thread. */
export interface MetadataThreadData {
  dataDir: string;
  /** One port per partition worker, for the 'snapshot' and 'committed' broadcast. */
  workerPorts: MessagePort[];
  cluster: ClusterThreadConfig;
  logLevel: string;
  /** The metadata channel of the node-to-node transport, bridged by the node-link thread (src/transport/
   *  port_channel.ts); absent on a one-node cluster, which opens no listener. */
  transportPort?: MessagePort;
}

/** The node-link thread's start (src/node_link/node_link_thread.ts). */
export interface NodeLinkThreadData {
  nodeId: number;
  listen: PeerAddressData;
  secret: Uint8Array;
  /** PEM bytes for mutual TLS on the node-to-node port (src/transport/cluster_tls.ts); null: plain TCP. */
  tls: { cert: Uint8Array; key: Uint8Array; ca: Uint8Array } | null;
  logLevel: string;
  /** The metadata thread's side is a PortChannel on the other end. */
  metadataPort: MessagePort;
  /** One port per partition worker, in worker order: forwarded requests reach the owning worker on it. */
  workerPorts: MessagePort[];
  /** The front's side is a PortChannel of the data channel, which this thread serves (issue 29). */
  dataPort: MessagePort;
}

/** The front -> the node-link thread. */
export type ToNodeLink =
  | { kind: 'shutdown' }
  /** The front's answer to 'memberReportAsk' of the same id. */
  | { kind: 'memberReport'; id: number; report: MemberReportView };

/** The node-link thread -> the front. */
export type FromNodeLink =
  /** The listener is bound (its port, when cluster.internal_port was 0). */
  | { kind: 'listening'; port: number }
  /** The listener could not bind: the node exits naming the address (issue 27 point 2). */
  | { kind: 'listenFailed'; message: string }
  /** Every connection is closed after 'shutdown'. */
  | { kind: 'closed' }
  /** Another node asked for this node's own member report (data channel 'memberReport'): the front answers it. */
  | { kind: 'memberReportAsk'; id: number };

export interface PeerAddressData {
  host: string;
  port: number;
}

/** The node's place in the cluster, resolved from config by the front at boot. */
export interface ClusterThreadConfig {
  nodeId: number;
  /** Founding voters (id -> internal address); only read when the log is empty. One entry (this node) for a
   *  one-node cluster, which opens no internal listener. */
  bootstrap: [number, PeerAddressData][];
  /** Internal address of a running cluster's node to join; null when founding. */
  join: PeerAddressData | null;
  /** Where the internal listener binds. */
  listen: PeerAddressData;
  /** Empty until the front reports the bound port (API port 0 without --advertise). */
  advertiseApi: string;
  /** With internal port 0 the thread fills in the bound port. */
  advertiseInternal: string;
  /** Empty for a one-node cluster. */
  secret: Uint8Array;
  tickMs: number;
  electionTicks: number;
  deadAfterMs: number;
  snapshotEntries: number;
}

export function assertNever(value: never): never {
  throw new Error(`unexpected message ${JSON.stringify(value)}`);
}
