// The Raft messages and the entries and snapshots they carry: what two nodes' Raft cores say to each other over the
// node-to-node transport (peer_messages.ts wraps them), so they live at the boundary, not in src/raft. Plain data
// only (numbers, strings, booleans, arrays, plain objects, Uint8Array): the transport encodes them with msgpackr and
// the metadata thread stores entries and snapshots in sqlite. Shared: the Raft core (src/raft/core/types.ts
// re-exports them), the metadata thread's shell, and the tests.

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

/** The state machine at `index` (data is opaque to Raft), with the term of that entry and the config as of it. */
export interface Snapshot {
  index: number;
  term: number;
  confState: ConfState;
  data: Uint8Array;
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
