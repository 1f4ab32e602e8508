// The Raft core's plain-data types: what the shell stores, sends and applies. Pure type declarations; imported by
// the core (src/raft/core), the shell on the metadata thread (src/raft/shell) and the tests. Everything here is
// plain data (numbers, strings, booleans, arrays, plain objects, Uint8Array) because the shell encodes messages
// with msgpackr for the TCP transport between nodes and stores entries and snapshots in sqlite.

/** A configuration: which nodes vote and which only receive entries. Both lists sorted ascending, disjoint. */
export interface ConfState {
  voters: number[];
  learners: number[];
}

/**
 * One single-server membership change (Raft thesis §4.1). addVoter promotes a learner (a node that is neither is
 * refused by proposeConfChange: thesis §4.2.1, a new server catches up as a non-voting member first; bootstrap
 * entries are the one place addVoter adds a node from nothing). removeVoter removes a voter or a learner.
 */
export interface ConfChange {
  type: 'addVoter' | 'removeVoter' | 'addLearner';
  node: number;
}

export type EntryPayload<T> = { kind: 'command'; command: T } | { kind: 'conf'; change: ConfChange } | { kind: 'noop' };

export interface LogEntry<T = unknown> {
  index: number;
  term: number;
  payload: EntryPayload<T>;
}

/** What must survive a crash besides the log (Raft Figure 2: currentTerm, votedFor; etcd adds commit). */
export interface HardState {
  term: number;
  /** The node this node voted for in term; 0 when none. */
  vote: number;
  commit: number;
}

/** The state machine at `index` (data is opaque to Raft), with the term of that entry and the config as of it. */
export interface Snapshot {
  index: number;
  term: number;
  confState: ConfState;
  data: Uint8Array;
}

export type RaftRole = 'follower' | 'preCandidate' | 'candidate' | 'leader';

export interface SoftState {
  /** 0 when unknown. */
  leader: number;
  role: RaftRole;
}

/**
 * Messages between Raft nodes, in etcd's vocabulary. Sender and receiver are the Raft cores of two nodes (the
 * shells carry them over TCP). Any message may be lost, delayed, duplicated or reordered: the core retries on its
 * own clock (heartbeats, probes, elections), so a loss only costs time.
 * - app: leader -> member. Entries after (index, logTerm) plus the leader's commit (MsgApp).
 * - appResp: member -> leader. Accepts up to `index`, or rejects `index` with a hint: the follower's log may match
 *   up to rejectHint, whose term is logTerm (etcd's findConflictByTerm; the paper's §5.3 optimisation).
 * - heartbeat / heartbeatResp: leader -> member and back; commit is min(the member's match, leader commit).
 * - preVote / vote and their responses: candidate -> voter; term is the term the candidate would take. transfer
 *   marks an election started by timeoutNow, which voters grant even inside a leader lease.
 * - snap: leader -> member whose next entries the leader compacted away.
 * - timeoutNow: leader -> transfer target: campaign now (thesis §3.10).
 */
export type RaftMessage<T = unknown> =
  | { type: 'app'; from: number; to: number; term: number; index: number; logTerm: number; entries: LogEntry<T>[]; commit: number }
  | { type: 'appResp'; from: number; to: number; term: number; index: number; reject: boolean; rejectHint: number; logTerm: number }
  | { type: 'heartbeat'; from: number; to: number; term: number; commit: number }
  | { type: 'heartbeatResp'; from: number; to: number; term: number }
  | { type: 'preVote' | 'vote'; from: number; to: number; term: number; index: number; logTerm: number; transfer: boolean }
  | { type: 'preVoteResp' | 'voteResp'; from: number; to: number; term: number; reject: boolean }
  | { type: 'snap'; from: number; to: number; term: number; snapshot: Snapshot }
  | { type: 'timeoutNow'; from: number; to: number; term: number };

export type RaftMessageType = RaftMessage['type'];

/**
 * One round of work for the shell, which must, in order: if `snapshot`, replace its whole stored log with it
 * (delete every stored entry, keep this snapshot) and restore its state machine from snapshot.data; persist
 * `entries` (first delete stored entries from entries[0].index on) and `hardState` (synced when mustSync); apply
 * `committed`; send `messages` only once all of this ready's writes are durable; then call advance(ready).
 * `committed` holds only entries persisted by an earlier ready, so the shell may apply them before (or while)
 * this ready's writes sync.
 */
export interface Ready<T> {
  /** Present when leader or role changed. */
  softState?: SoftState;
  /** Present when term, vote or commit changed. */
  hardState?: HardState;
  /** Received from a leader. */
  snapshot?: Snapshot;
  entries: LogEntry<T>[];
  /** In order, right after the last applied index (after `snapshot` when there is one). */
  committed: LogEntry<T>[];
  messages: RaftMessage<T>[];
  /** True when there are entries or a snapshot, or term or vote changed; a commit-only hard state need not sync. */
  mustSync: boolean;
}

export interface RaftConfig {
  /** This node's id, a positive integer. */
  id: number;
  /** Ticks a follower waits without hearing from a leader before campaigning (randomized up to 2x). */
  electionTicks: number;
  /** Ticks between a leader's heartbeats; below electionTicks. */
  heartbeatTicks: number;
  /** Seeded PRNG in [0,1): picks each randomized election timeout in [electionTicks, 2*electionTicks). */
  random: () => number;
  /** Thesis §9.6; default true. */
  preVote?: boolean;
  /** Leader steps down without a quorum's contact for an election timeout; followers keep a leader lease. Default true. */
  checkQuorum?: boolean;
  /** Entries per app message; default 64. */
  maxEntriesPerAppend?: number;
}

export interface RestoredState<T> {
  hardState: HardState;
  /** The latest stored snapshot, or null. */
  snapshot: Snapshot | null;
  /** Every stored entry after snapshot.index (or from index 1), contiguous. */
  entries: LogEntry<T>[];
}

export interface ProgressStatus {
  match: number;
  next: number;
  recentActive: boolean;
  state: 'probe' | 'replicate' | 'snapshot';
}

export interface RaftStatus {
  id: number;
  term: number;
  role: RaftRole;
  leader: number;
  commit: number;
  applied: number;
  lastIndex: number;
  snapshotIndex: number;
  confState: ConfState;
  /** Ticks since this node last heard from a leader of its term (0 on the leader). */
  ticksSinceLeaderContact: number;
  /** Leader only: every member, this node included. */
  progress?: Record<number, ProgressStatus>;
  /** Leader only, while a transfer is under way. */
  transferee?: number;
}
