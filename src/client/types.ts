// The shapes of the HTTP API's bodies as the client sees them (spec §2 field tables, §4 answers). Plain types, no
// code: used by api.ts, producer.ts, consumer.ts and the CLI. Answers may gain fields within /v1 (spec §9.2). Topic,
// TopicRemote, TopicDetail, PartitionStats, Message, User and Grant are docs/openapi.yaml's schemas field for field,
// optional where they are: test/unit/topic_shape.test.ts fails on a difference (the document is the source).

export interface TopicCreate {
  name: string;
  partitions?: number;
  retention_ms?: number;
  visibility_timeout_ms?: number;
  max_in_flight_per_partition?: number;
  max_acked_ahead_per_partition?: number;
  schema?: unknown;
  parent?: string;
  fanout_delay_ms?: number;
}

export interface TopicPatch {
  retention_ms?: number;
  max_in_flight_per_partition?: number;
  max_acked_ahead_per_partition?: number;
  partitions?: number;
  schema?: unknown;
  schema_base_version?: number;
}

export interface Topic {
  name: string;
  id?: string;
  partitions: number;
  retention_ms: number;
  visibility_timeout_ms: number;
  max_in_flight_per_partition: number;
  max_acked_ahead_per_partition: number;
  created_at: number;
  owner?: string;
  role?: 'standalone' | 'parent' | 'child';
  children?: string[];
  parent?: string;
  attach_epoch?: string;
  fanout_delay_ms?: number;
  attach_offsets?: number[];
  remote?: TopicRemote;
}

/** The remote object of a remote child's stub (v3.2.0). */
export interface TopicRemote {
  name: string;
  topic: string;
  target_id?: string;
  from: 'attach' | 'unconsumed' | 'earliest';
  lanes: number;
  paused?: boolean;
  pause_reason?: string;
  paused_by?: string;
  paused_at_ms?: number;
  /** Parent partition -> ascending offsets an admin accepted to lose. */
  skip?: Record<string, number[]>;
  created_by?: string;
}

export interface PartitionStats {
  index: number;
  segments: number;
  oldest_offset: number;
  next_offset: number;
  high_watermark: number;
  size_bytes: number;
  oldest_segment_at?: number;
  owner_node: string;
  status: 'ok' | 'owner_unavailable';
  owner_liveness?: 'dead' | 'unreachable' | 'unknown' | 'unassigned';
}

export interface TopicDetail extends Topic {
  schema_version?: number;
  schema?: unknown;
  partition_stats?: PartitionStats[];
  partial?: boolean;
}

export interface TopicPage {
  topics: Topic[];
  next_page_token: string;
}

export interface SchemaHistory {
  topic: string;
  version: number;
  versions: { version: number; schema: unknown }[];
}

export interface ProduceOptions {
  key?: string;
  partition?: number;
  keyEncoding?: 'base64';
  payloadEncoding?: 'base64';
}

export interface BatchMessage {
  /** Stored exactly as written (JSON); with payload_encoding base64, a base64 string of any bytes. */
  payload: unknown;
  payload_encoding?: 'base64';
  key?: string;
  key_encoding?: 'base64';
  partition?: number;
}

export interface Accepted {
  accepted: number;
}

export interface Message {
  topic: string;
  partition: number;
  offset: number;
  key?: string;
  key_encoding?: 'base64';
  payload: unknown;
  payload_encoding?: 'base64';
  timestamp: number;
  /** Absent in a replay. */
  receipt_handle?: string;
}

export interface MessageBatch {
  messages: Message[];
}

export interface ConsumeOptions {
  /** Long-poll time in ms before an empty answer (the node clamps it to its maximum, 10 s by default). */
  waitMs?: number;
  partition?: number;
  signal?: AbortSignal;
}

/** ack settles; extend renews the lease for a full visibility timeout; nack ends it now (redelivery). */
export type AckMode = 'ack' | 'extend' | 'nack';

export interface AckResult {
  status: number;
  error?: string;
}

export interface AckResults {
  results: AckResult[];
}

export interface ChildrenList {
  parent: string;
  children: { name: string; delay_ms?: number; lag_messages?: number; lag_complete?: boolean }[];
}

export interface Grant {
  action: 'produce' | 'consume' | 'create' | 'admin';
  patterns?: string[];
}

export interface UserCreate {
  username: string;
  password: string;
  grants?: Grant[];
}

export interface User {
  username: string;
  grants?: Grant[];
  root: boolean;
  created_at_ms: number;
  updated_at_ms: number;
}

export interface Member {
  id: string;
  api_address?: string;
  liveness: string;
  decommissioning?: boolean;
  partitions_owned?: number;
  /** Moves under way whose source is this member. */
  partitions_moving_off?: number;
  raft_voter?: boolean;
  raft_learner?: boolean;
  raft_leader?: boolean;
  seconds_since_heartbeat?: number | null;
  /** What holds a decommission up (spec §2); empty when none runs or nothing blocks it. */
  decommission_blocked_reasons?: BlockedReason[];
  status_error?: string;
  [field: string]: unknown;
}

/** Spec §2's codes of what blocks a decommission; a 409 names below_min_voters, no_healthy_majority or no_receivers. */
export type BlockedCode = 'below_min_voters' | 'no_healthy_majority' | 'move_target' | 'dispatch_backlog' | 'node_status_unavailable'
  | 'no_receivers' | 'owner_dead' | 'move_budget_full' | 'leader_transfer';

export interface BlockedReason {
  code: BlockedCode;
  message: string;
}

/** One partition a decommission or a rebalance would move (member ids as strings, as members show them). */
export interface PlannedMove {
  topic: string;
  partition: number;
  source: string;
  destination: string;
  /** Decommission only: false when a lost member's partition is given away empty (accept_data_loss). */
  copy?: boolean;
}

export interface DecommissionOptions {
  /** Only show the plan and what blocks it; nothing changes. */
  dryRun?: boolean;
  /** A dead member's partitions are given to live members empty: the records only it held are lost. */
  acceptDataLoss?: boolean;
}

/** A dry run's answer (200). */
export interface DecommissionPlan {
  member: Member;
  moves: PlannedMove[];
  reasons: BlockedReason[];
  /** With acceptDataLoss: records only that member held, as far as the cluster knew (lost). */
  records_only_on_member?: number;
}

/** A started decommission's answer (202). */
export interface DecommissionStarted {
  member: Member;
  records_only_on_member?: number;
}

/** spec §3 move worker states. */
export type MoveWorkerState = 'copying' | 'frozen' | 'flip_pending' | 'waiting_for_source' | 'blocked';

/** A partition move as its destination reports it (spec §2; GET /v1/cluster/moves, NOTES 16). */
export interface PartitionMove {
  topic: string;
  partition: number;
  source: string;
  destination: string;
  /** RFC 3339. */
  started_at: string;
  worker_state: MoveWorkerState;
  attempts: number;
  /** '' when none. */
  last_error: string;
  bytes_fetched: number;
  stuck_reason?: 'copy_unverifiable' | 'source_dead_copy_behind';
}
