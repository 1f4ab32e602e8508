// The Raft core's plain-data types: what the shell stores, sends and applies. Pure type declarations; imported by
// the core (src/raft/core), the shell on the metadata thread (src/raft/shell) and the tests. Everything here is
// plain data (numbers, strings, booleans, arrays, plain objects, Uint8Array) because the shell encodes messages
// with msgpackr for the TCP transport between nodes and stores entries and snapshots in sqlite.

import type { ConfChange, ConfState, EntryPayload, LogEntry, RaftMessage, RaftMessageType, Snapshot } from '../../protocol/raft_messages.js';

// The types that cross nodes (messages, entries, snapshots) are declared at the boundary, in src/protocol; the core
// names them from here like its own.
export type { ConfChange, ConfState, EntryPayload, LogEntry, RaftMessage, RaftMessageType, Snapshot };

/** What must survive a crash besides the log (Raft Figure 2: currentTerm, votedFor; etcd adds commit). */
export interface HardState {
  term: number;
  /** The node this node voted for in term; 0 when none. */
  vote: number;
  commit: number;
}

export type RaftRole = 'follower' | 'preCandidate' | 'candidate' | 'leader';

export interface SoftState {
  /** 0 when unknown. */
  leader: number;
  role: RaftRole;
}

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
