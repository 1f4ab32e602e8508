// The Raft core in etcd's shape: propose() and tick() feed it, ready() hands the shell what to persist, send
// and apply, advance() acknowledges that the shell did it. Pure: no node:*, no clock, no randomness, no await.
// Owned by raft_thread.ts on the metadata thread; built once at start from the stored hard state and log tail.
// This build runs a one-voter group; election and replication arrive later beside quorum.ts, same interface.
import { assertRaft } from './assert.js';
import { RaftLog, type LogEntry } from './log.js';
import { committedIndex } from './quorum.js';

export type { LogEntry } from './log.js';

/** What must survive a crash besides the entries (Raft Figure 2: currentTerm, votedFor; etcd adds commit). */
export interface HardState {
  term: number;
  /** The voter this node voted for in term; 0 when none. */
  vote: number;
  /** The raftCommitIndex when the hard state was produced. */
  commit: number;
}

/** A message to another voter. A lone voter has no peers, so it sends none; replication adds more types. */
export interface RaftMessage {
  type: 'heartbeat';
  from: number;
  to: number;
  term: number;
  commit: number;
}

/**
 * One round of work for the shell, which must, in order: apply `committed` (already durable, see below),
 * persist `entries` and `hardState` (synced when mustSync), send `messages`, then call advance(ready).
 *
 * Commit rule, chosen here: an entry counts toward the quorum only once it is persisted, so the entries of
 * ready N appear in `committed` of a later ready, never of ready N. Committed entries are therefore durable
 * before they are handed out, and the shell may apply them before it awaits this ready's persist, which
 * overlaps applying one batch with syncing the next (group commit).
 */
export interface Ready<T = unknown> {
  /** Present when term, vote or commit changed since the last advanced ready. */
  hardState?: HardState;
  /** New entries to append to storage, contiguous after everything already persisted. */
  entries: LogEntry<T>[];
  messages: RaftMessage[];
  /** Entries to apply, in index order, continuing exactly after the last applied index. */
  committed: LogEntry<T>[];
  /** True when there are entries or term or vote changed. A commit-only hard state need not be synced (etcd):
   *  losing it to a crash loses nothing, since the commit index is recomputed from the persisted log. */
  mustSync: boolean;
}

export interface RaftConfig {
  /** This node's voter id, a positive integer. */
  id: number;
  /** Every voter's id, including this node's. This build accepts exactly one. */
  voters: number[];
  /** Ticks between a leader's heartbeats to each other voter. */
  heartbeatTicks: number;
}

/** What the shell read back from storage. */
export interface StoredRaftState {
  hardState: HardState;
  lastIndex: number;
  /** Term of the entry at lastIndex; 0 when the log is empty. */
  lastTerm: number;
  /** How far the shell's state machine has already applied; the core starts with the stored log applied. */
  appliedIndex: number;
}

/** Every problem with config, as sentences; empty when it is usable. */
export function validateRaftConfig(config: RaftConfig): string[] {
  const problems: string[] = [];
  if (!isPositiveInteger(config.id)) problems.push(`id must be a positive integer, got ${config.id}`);
  if (!config.voters.every(isPositiveInteger)) problems.push(`voters must be positive integers, got ${JSON.stringify(config.voters)}`);
  if (new Set(config.voters).size !== config.voters.length) problems.push(`voters must not repeat, got ${JSON.stringify(config.voters)}`);
  if (!config.voters.includes(config.id)) problems.push(`voters must include this node's id ${config.id}`);
  // Without election and replication a second voter could never be counted, so nothing would ever commit.
  if (config.voters.length !== 1) problems.push(`voters must hold exactly one voter in this build, got ${config.voters.length}`);
  if (!isPositiveInteger(config.heartbeatTicks)) problems.push(`heartbeatTicks must be a positive integer, got ${config.heartbeatTicks}`);
  return problems;
}

export class RaftNode<T = unknown> {
  private readonly id: number;
  private readonly voters: readonly number[];
  private readonly peers: readonly number[];
  private readonly heartbeatTicks: number;
  private readonly log: RaftLog<T>;
  /** Highest persisted index per voter; the commit rule in quorum.ts reads only this. */
  private readonly matchIndexes = new Map<number, number>();
  private term: number;
  private vote: number;
  private commit: number;
  private heartbeatElapsedTicks = 0;
  private pendingMessages: RaftMessage[] = [];
  /** The hard state of the last advanced ready (or the stored one), to tell whether it changed. */
  private previousHardState: HardState;
  /** The ready handed out and not yet advanced; etcd's contract allows one at a time. */
  private outstanding: Ready<T> | null = null;

  constructor(config: RaftConfig, stored: StoredRaftState) {
    const problems = validateRaftConfig(config);
    if (problems.length > 0) throw new Error(`invalid raft config: ${problems.join('; ')}`);
    assertStoredState(stored, config.voters);
    this.id = config.id;
    this.voters = [...config.voters];
    this.peers = config.voters.filter((voter) => voter !== config.id);
    this.heartbeatTicks = config.heartbeatTicks;
    this.log = new RaftLog<T>(stored.lastIndex, stored.lastTerm, stored.appliedIndex);
    this.previousHardState = { ...stored.hardState };
    this.term = stored.hardState.term;
    this.vote = stored.hardState.vote;
    // A lone voter wins any election with its own vote. It campaigns only when it does not already hold that
    // vote for the stored term: with no other voter, no second leader of that term can exist.
    if (this.vote !== this.id) {
      this.term += 1;
      this.vote = this.id;
    }
    // Everything in storage is persisted here, so it counts as this voter's match.
    this.matchIndexes.set(this.id, stored.lastIndex);
    this.commit = Math.max(stored.hardState.commit, committedIndex(this.matchIndexes, this.voters));
    assertRaft(this.log.appliedIndex === this.commit, `raft: start with applied ${this.log.appliedIndex} equal to commit ${this.commit}`);
  }

  get raftCommitIndex(): number {
    return this.commit;
  }

  get lastIndex(): number {
    return this.log.lastIndex;
  }

  get appliedIndex(): number {
    return this.log.appliedIndex;
  }

  /** Appends data as a new entry of the current term and returns its index. The lone voter always leads. */
  propose(data: T): number {
    return this.log.append(this.term, data).index;
  }

  /** One unit of logical time, driven by the shell's timer. */
  tick(): void {
    this.heartbeatElapsedTicks += 1;
    if (this.heartbeatElapsedTicks < this.heartbeatTicks) return;
    this.heartbeatElapsedTicks = 0;
    for (const peer of this.peers) {
      this.pendingMessages.push({ type: 'heartbeat', from: this.id, to: peer, term: this.term, commit: this.commit });
    }
  }

  /** The next round of work, or null when there is none. Call advance() before asking again. */
  ready(): Ready<T> | null {
    assertRaft(this.outstanding === null, 'raft: ready() called again before advance()');
    const entries = this.log.unstableEntries();
    const committed = this.log.slice(this.log.appliedIndex, this.commit);
    const hardState: HardState = { term: this.term, vote: this.vote, commit: this.commit };
    const termOrVoteChanged = hardState.term !== this.previousHardState.term || hardState.vote !== this.previousHardState.vote;
    const hardStateChanged = termOrVoteChanged || hardState.commit !== this.previousHardState.commit;
    if (entries.length === 0 && committed.length === 0 && !hardStateChanged && this.pendingMessages.length === 0) return null;
    const lastCommitted = committed[committed.length - 1];
    assertRaft(lastCommitted === undefined || lastCommitted.index <= this.log.stableIndex, 'raft: committed entry not yet persisted');
    const ready: Ready<T> = {
      entries,
      messages: this.pendingMessages,
      committed,
      mustSync: entries.length > 0 || termOrVoteChanged,
    };
    if (hardStateChanged) ready.hardState = hardState;
    this.pendingMessages = [];
    this.outstanding = ready;
    return ready;
  }

  /** The shell has done everything ready asked: entries persisted, committed applied, messages sent. */
  advance(ready: Ready<T>): void {
    assertRaft(ready === this.outstanding, 'raft: advance() with a ready that is not the outstanding one');
    this.outstanding = null;
    if (ready.hardState !== undefined) this.previousHardState = ready.hardState;
    const lastApplied = ready.committed[ready.committed.length - 1];
    if (lastApplied !== undefined) this.log.appliedTo(lastApplied.index);
    const lastPersisted = ready.entries[ready.entries.length - 1];
    if (lastPersisted !== undefined) {
      this.log.stableTo(lastPersisted.index);
      this.matchIndexes.set(this.id, lastPersisted.index);
      this.maybeCommit();
    }
  }

  private maybeCommit(): void {
    const candidate = committedIndex(this.matchIndexes, this.voters);
    // Raft §5.4.2: counting replicas commits only entries of the current term.
    if (candidate > this.commit && this.log.termAt(candidate) === this.term) this.commit = candidate;
  }
}

function isPositiveInteger(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0;
}

function isCount(value: number): boolean {
  return Number.isSafeInteger(value) && value >= 0;
}

/** Paired with storage's checks after reading: the stored state must describe a possible log. */
function assertStoredState(stored: StoredRaftState, voters: readonly number[]): void {
  const { hardState, lastIndex, lastTerm, appliedIndex } = stored;
  assertRaft(isCount(hardState.term) && isCount(hardState.vote) && isCount(hardState.commit), 'raft: stored hard state holds a non-count');
  assertRaft(isCount(lastIndex) && isCount(lastTerm) && isCount(appliedIndex), 'raft: stored log position holds a non-count');
  assertRaft((lastIndex === 0) === (lastTerm === 0), `raft: stored last index ${lastIndex} and last term ${lastTerm} disagree`);
  assertRaft(lastTerm <= hardState.term, `raft: stored last term ${lastTerm} above the hard state term ${hardState.term}`);
  assertRaft(hardState.commit <= lastIndex, `raft: stored commit ${hardState.commit} beyond the last index ${lastIndex}`);
  assertRaft(hardState.vote === 0 || voters.includes(hardState.vote), `raft: stored vote ${hardState.vote} is not a voter`);
  assertRaft(hardState.vote === 0 || hardState.term > 0, 'raft: stored vote without a term');
}
