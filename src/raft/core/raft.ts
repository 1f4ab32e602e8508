// The Raft core in etcd's shape (STYLE §3): tick() and step(message) feed it, propose()/proposeConfChange()/
// transferLeadership() ask it for work, ready() hands the shell what to persist, apply and send, advance() says
// the shell did it. Pure: no node:*, no clock, no Math.random (jitter comes from config.random), no await.
// Owned by the shell on the metadata thread (src/raft/shell), by the scripted tests and by the simulation.
//
// What it implements (Raft paper, Ongaro's thesis): leader election (§5.2) with pre-vote (thesis §9.6) and
// check-quorum with a leader lease (thesis §6.2, §9.6); log replication (§5.3) with etcd's conflict hints and
// probe/replicate/snapshot flow control; the commit rule of §5.4.2 (only entries of the current term are
// committed by counting, and this node's own entries count only once persisted); snapshots (§7) sent to members
// that need compacted entries; single-server membership changes (thesis §4.1) with learners; leadership
// transfer (thesis §3.10).
import { assertRaft } from './assert.js';
import { confAfter, confChangeProblem, isMember, isVoter, members } from './conf.js';
import { RaftLog } from './log.js';
import { Progress } from './progress.js';
import { committedIndex, quorumActive, voteResult } from './quorum.js';
import type {
  ConfChange,
  ConfState,
  HardState,
  LogEntry,
  ProgressStatus,
  RaftConfig,
  RaftMessage,
  RaftRole,
  RaftStatus,
  Ready,
  RestoredState,
  Snapshot,
  SoftState,
} from './types.js';

export type * from './types.js';
export { RaftInvariantError } from './assert.js';

const defaultMaxEntriesPerAppend = 64;

/** Every problem with config, as sentences; empty when it is usable. */
export function validateRaftConfig(config: RaftConfig): string[] {
  const problems: string[] = [];
  if (!isPositiveInteger(config.id)) problems.push(`id must be a positive integer, got ${config.id}`);
  if (!isPositiveInteger(config.heartbeatTicks)) problems.push(`heartbeatTicks must be a positive integer, got ${config.heartbeatTicks}`);
  if (!isPositiveInteger(config.electionTicks)) problems.push(`electionTicks must be a positive integer, got ${config.electionTicks}`);
  else if (config.electionTicks <= config.heartbeatTicks) {
    problems.push(`electionTicks (${config.electionTicks}) must exceed heartbeatTicks (${config.heartbeatTicks})`);
  }
  if (typeof config.random !== 'function') problems.push('random must be a function returning a number in [0,1)');
  if (config.maxEntriesPerAppend !== undefined && !isPositiveInteger(config.maxEntriesPerAppend)) {
    problems.push(`maxEntriesPerAppend must be a positive integer, got ${config.maxEntriesPerAppend}`);
  }
  return problems;
}

/**
 * What every node of a new cluster stores at first start, with hardState {term: 1, vote: 0, commit: n}: entries
 * 1..n of term 1, each adding one voter, so all their logs agree from the start.
 */
export function bootstrapEntries(voters: number[]): LogEntry<never>[] {
  const sorted = [...new Set(voters)].sort((a, b) => a - b);
  assertRaft(sorted.length === voters.length && sorted.length > 0 && sorted.every(isPositiveInteger), 'bootstrap: voters must be distinct positive integers');
  return sorted.map((node, i) => ({ index: i + 1, term: 1, payload: { kind: 'conf', change: { type: 'addVoter', node } } }));
}

export class RaftNode<T> {
  private readonly id: number;
  private readonly electionTicks: number;
  private readonly heartbeatTicks: number;
  private readonly random: () => number;
  private readonly preVote: boolean;
  private readonly checkQuorum: boolean;
  private readonly maxEntriesPerAppend: number;
  private readonly log: RaftLog<T>;

  private term: number;
  private vote: number;
  private leader = 0;
  private role: RaftRole = 'follower';
  /** The configuration of the whole log (snapshot conf plus every conf entry held): thesis §4.1. */
  private conf: ConfState = { voters: [], learners: [] };
  /** Index of the last conf entry in the log, or the snapshot index when the log holds none. */
  private lastConfIndex = 0;

  /** Follower/candidate: ticks since the leader was heard from or the election began. Leader: check-quorum clock. */
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout: number;
  private readonly votes = new Map<number, boolean>();
  /** Leader only: every member but this node. */
  private readonly progress = new Map<number, Progress>();
  /** Leader only: no conf change may be proposed until commit reaches this (one uncommitted change at a time). */
  private pendingConfIndex = 0;
  /** Leader only: the transfer target, 0 when none. */
  private transferee = 0;

  private messages: RaftMessage<T>[] = [];
  private previousHardState: HardState;
  private previousSoftState: SoftState = { leader: 0, role: 'follower' };
  private outstanding: Ready<T> | null = null;

  constructor(config: RaftConfig, restored: RestoredState<T>) {
    const problems = validateRaftConfig(config);
    if (problems.length > 0) throw new Error(`invalid raft config: ${problems.join('; ')}`);
    this.id = config.id;
    this.electionTicks = config.electionTicks;
    this.heartbeatTicks = config.heartbeatTicks;
    this.random = config.random;
    this.preVote = config.preVote ?? true;
    this.checkQuorum = config.checkQuorum ?? true;
    this.maxEntriesPerAppend = config.maxEntriesPerAppend ?? defaultMaxEntriesPerAppend;
    assertRestoredState(restored);
    this.log = new RaftLog<T>(restored.snapshot, restored.entries, restored.hardState.commit);
    assertRaft(this.log.lastTerm <= restored.hardState.term, `raft: stored last term ${this.log.lastTerm} above the hard state term ${restored.hardState.term}`);
    this.term = restored.hardState.term;
    this.vote = restored.hardState.vote;
    this.previousHardState = { ...restored.hardState };
    this.refreshConf();
    this.randomizedElectionTimeout = this.newElectionTimeout();
  }

  // ---- inputs --------------------------------------------------------------------------------------------------

  /** One unit of logical time, driven by the shell's timer. */
  tick(): void {
    if (this.role === 'leader') this.tickLeader();
    else this.tickElection();
    this.checkInvariants();
  }

  /** Handles any message; stale, foreign, misaddressed or malformed ones are ignored (or answered), never thrown on. */
  step(message: RaftMessage): void {
    if (!isWellFormed(message) || message.to !== this.id || message.from === this.id) return;
    this.stepMessage(message as RaftMessage<T>);
    this.checkInvariants();
  }

  /** Appends command as an entry of the current term; null when not the leader, transferring, or being removed. */
  propose(command: T): { index: number; term: number } | null {
    if (this.role !== 'leader' || this.transferee !== 0 || !isVoter(this.conf, this.id)) return null;
    const entry = this.appendAsLeader({ kind: 'command', command });
    this.checkInvariants();
    return entry;
  }

  /**
   * Proposes one single-server change (thesis §4.1). Refused when not the leader, while transferring, while
   * another change is uncommitted (including before this leader committed an entry of its term), and when
   * confChangeProblem says so: addVoter only promotes a learner, addLearner of a member, removing a non-member or
   * the last voter. Removing the leader is allowed: it steps down once the entry commits.
   */
  proposeConfChange(change: ConfChange): { index: number; term: number } | { refused: string } {
    if (this.role !== 'leader') return { refused: 'not the leader' };
    if (this.transferee !== 0) return { refused: `leadership transfer to ${this.transferee} under way` };
    if (!isVoter(this.conf, this.id)) return { refused: 'this leader is being removed' };
    if (this.pendingConfIndex > this.log.commit) {
      return { refused: `a configuration change (or this leader's first entry) at ${this.pendingConfIndex} is not yet committed` };
    }
    const problem = confChangeProblem(this.conf, change);
    if (problem !== null) return { refused: problem };
    const entry = this.appendAsLeader({ kind: 'conf', change: { type: change.type, node: change.node } });
    this.pendingConfIndex = entry.index;
    this.checkInvariants();
    return entry;
  }

  /**
   * Thesis §3.10: catches `to` up, then sends it timeoutNow so it campaigns at once. Proposals stop meanwhile; the
   * transfer aborts after an election timeout. False when not the leader or `to` is not another voter.
   */
  transferLeadership(to: number): boolean {
    if (this.role !== 'leader' || to === this.id || !isVoter(this.conf, to)) return false;
    if (this.transferee === to) return true;
    const progress = this.progress.get(to);
    assertRaft(progress !== undefined, `raft: voter ${to} has no progress on the leader`);
    this.transferee = to;
    this.electionElapsed = 0;
    if (progress.match === this.log.lastIndex) this.send({ type: 'timeoutNow', from: this.id, to, term: this.term });
    else this.sendAppend(to, true);
    this.checkInvariants();
    return true;
  }

  /** Starts an election now (with pre-vote when enabled), as an election timeout would; for tests and tools. */
  campaign(): void {
    this.hup(false);
    this.checkInvariants();
  }

  // ---- outputs -------------------------------------------------------------------------------------------------

  /** The next round of work, or null when there is none. One at a time: advance() before asking again. */
  ready(): Ready<T> | null {
    assertRaft(this.outstanding === null, 'raft: ready() called again before advance()');
    const softState: SoftState = { leader: this.leader, role: this.role };
    const softChanged = softState.leader !== this.previousSoftState.leader || softState.role !== this.previousSoftState.role;
    const hardState: HardState = { term: this.term, vote: this.vote, commit: this.log.commit };
    const termOrVoteChanged = hardState.term !== this.previousHardState.term || hardState.vote !== this.previousHardState.vote;
    const hardChanged = termOrVoteChanged || hardState.commit !== this.previousHardState.commit;
    const snapshot = this.log.pendingSnapshot ? this.log.snapshot : null;
    const entries = this.log.unstableEntries();
    const applyFrom = snapshot !== null ? snapshot.index : this.log.applied;
    const committed = this.log.slice(applyFrom + 1, Math.min(this.log.commit, this.log.stable));
    if (!softChanged && !hardChanged && snapshot === null && entries.length === 0 && committed.length === 0 && this.messages.length === 0) {
      return null;
    }
    const ready: Ready<T> = { entries, committed, messages: this.messages, mustSync: entries.length > 0 || snapshot !== null || termOrVoteChanged };
    if (softChanged) ready.softState = softState;
    if (hardChanged) ready.hardState = hardState;
    if (snapshot !== null) ready.snapshot = snapshot;
    this.messages = [];
    this.outstanding = ready;
    this.log.handedOut = committed[committed.length - 1]?.index ?? applyFrom;
    this.log.persistingTo = entries[entries.length - 1]?.index ?? 0;
    return ready;
  }

  /** The shell did everything `ready` asked: persisted it, applied its committed entries, sent its messages. */
  advance(ready: Ready<T>): void {
    assertRaft(ready === this.outstanding, 'raft: advance() with a ready that is not the outstanding one');
    this.outstanding = null;
    if (ready.softState !== undefined) this.previousSoftState = ready.softState;
    if (ready.hardState !== undefined) this.previousHardState = ready.hardState;
    if (ready.snapshot !== undefined) {
      if (this.log.snapshot === ready.snapshot) this.log.pendingSnapshot = false;
      this.log.applied = Math.max(this.log.applied, ready.snapshot.index);
    }
    const first = ready.committed[0];
    const last = ready.committed[ready.committed.length - 1];
    if (first !== undefined && last !== undefined) {
      assertRaft(first.index === this.log.applied + 1, `raft: applied ${this.log.applied} then ${first.index}`);
      this.log.applied = last.index;
    }
    const persisted = this.log.stableToPersisting();
    if (persisted && this.role === 'leader' && this.maybeCommit()) this.bcastAppend();
    this.checkInvariants();
  }

  /**
   * The shell serialized its state machine at `index` (snapshotIndex < index <= the last index handed out to
   * apply). Records the snapshot (term at index, config as of index), drops entries up to index, and returns the
   * snapshot for the shell to persist (then it may delete stored entries up to index).
   */
  compact(index: number, data: Uint8Array): Snapshot {
    assertRaft(Number.isSafeInteger(index) && index > this.log.snapshotIndex && index <= this.log.handedOut,
      `raft: compact at ${index} outside (${this.log.snapshotIndex}, ${this.log.handedOut}]`);
    const term = this.log.term(index);
    assertRaft(term !== undefined, `raft: no term held for compaction index ${index}`);
    const confState = confAfter(this.log.snapshot?.confState ?? null, this.log.slice(this.log.firstIndex, index));
    const snapshot: Snapshot = { index, term, confState, data };
    this.log.compact(snapshot);
    this.checkInvariants();
    return snapshot;
  }

  status(): RaftStatus {
    const status: RaftStatus = {
      id: this.id,
      term: this.term,
      role: this.role,
      leader: this.leader,
      commit: this.log.commit,
      applied: this.log.applied,
      lastIndex: this.log.lastIndex,
      snapshotIndex: this.log.snapshotIndex,
      confState: { voters: [...this.conf.voters], learners: [...this.conf.learners] },
      ticksSinceLeaderContact: this.role === 'leader' ? 0 : this.electionElapsed,
    };
    if (this.role === 'leader') {
      const progress: Record<number, ProgressStatus> = {};
      progress[this.id] = { match: this.log.stable, next: this.log.lastIndex + 1, recentActive: true, state: 'replicate' };
      for (const [id, pr] of this.progress) progress[id] = pr.status();
      status.progress = progress;
      if (this.transferee !== 0) status.transferee = this.transferee;
    }
    return status;
  }

  /** The log as held in memory, read-only, for tests and the simulation's invariant checks. */
  debugLog(): { snapshot: Snapshot | null; entries: readonly LogEntry<T>[]; stable: number; commit: number; version: number } {
    const { snapshot, stable, commit, version } = this.log;
    return { snapshot, entries: this.log.all(), stable, commit, version };
  }

  // ---- roles ---------------------------------------------------------------------------------------------------

  private promotable(): boolean {
    return isVoter(this.conf, this.id);
  }

  private newElectionTimeout(): number {
    const r = this.random();
    const offset = Math.floor((Number.isFinite(r) ? Math.min(Math.max(r, 0), 0.999999) : 0) * this.electionTicks);
    return this.electionTicks + offset;
  }

  private resetTimers(): void {
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout = this.newElectionTimeout();
    this.votes.clear();
    this.progress.clear();
    this.transferee = 0;
  }

  private becomeFollower(term: number, leader: number): void {
    if (term !== this.term) {
      assertRaft(term > this.term, `raft: term would move back from ${this.term} to ${term}`);
      this.term = term;
      this.vote = 0;
    }
    this.resetTimers();
    this.role = 'follower';
    this.leader = leader;
  }

  private becomePreCandidate(): void {
    assertRaft(this.role !== 'leader', 'raft: a leader cannot become a pre-candidate');
    this.resetTimers();
    this.role = 'preCandidate';
    this.leader = 0;
  }

  private becomeCandidate(): void {
    assertRaft(this.role !== 'leader', 'raft: a leader cannot become a candidate');
    this.resetTimers();
    this.term += 1;
    this.vote = this.id;
    this.role = 'candidate';
    this.leader = 0;
  }

  private becomeLeader(): void {
    assertRaft(this.role === 'candidate', `raft: only a candidate becomes leader (was ${this.role})`);
    this.resetTimers();
    this.role = 'leader';
    this.leader = this.id;
    for (const member of members(this.conf)) {
      if (member !== this.id) this.progress.set(member, new Progress(this.log.lastIndex + 1));
    }
    // Raft §5.4.2 / §8: an entry of the new term, so that earlier entries commit with it. No conf change until
    // it commits: that closes the single-server-change bug Ongaro described (raft-dev, 2015).
    const noop = this.appendAsLeader({ kind: 'noop' });
    this.pendingConfIndex = noop.index;
  }

  private hup(transfer: boolean): void {
    if (this.role === 'leader' || !this.promotable()) return;
    if (this.preVote && !transfer) this.startElection('preVote', false);
    else this.startElection('vote', transfer);
  }

  private startElection(kind: 'preVote' | 'vote', transfer: boolean): void {
    if (kind === 'preVote') this.becomePreCandidate();
    else this.becomeCandidate();
    const term = kind === 'preVote' ? this.term + 1 : this.term;
    this.votes.set(this.id, true);
    if (voteResult(this.votes, this.conf.voters) === 'won') {
      if (kind === 'preVote') this.startElection('vote', transfer);
      else this.becomeLeader();
      return;
    }
    for (const voter of this.conf.voters) {
      if (voter === this.id) continue;
      this.send({ type: kind, from: this.id, to: voter, term, index: this.log.lastIndex, logTerm: this.log.lastTerm, transfer });
    }
  }

  // ---- ticks ---------------------------------------------------------------------------------------------------

  private tickElection(): void {
    this.electionElapsed += 1;
    if (this.promotable() && this.electionElapsed >= this.randomizedElectionTimeout) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickLeader(): void {
    this.heartbeatElapsed += 1;
    this.electionElapsed += 1;
    if (this.electionElapsed >= this.electionTicks) {
      this.electionElapsed = 0;
      if (this.checkQuorum) {
        const active = (voter: number): boolean => voter === this.id || this.progress.get(voter)?.recentActive === true;
        if (!quorumActive(active, this.conf.voters)) {
          this.becomeFollower(this.term, 0);
          return;
        }
        for (const pr of this.progress.values()) pr.recentActive = false;
      }
      this.transferee = 0;
    }
    if (this.heartbeatElapsed >= this.heartbeatTicks) {
      this.heartbeatElapsed = 0;
      for (const [to, pr] of this.progress) {
        this.send({ type: 'heartbeat', from: this.id, to, term: this.term, commit: Math.min(pr.match, this.log.commit) });
      }
    }
  }

  // ---- messages ------------------------------------------------------------------------------------------------

  private stepMessage(m: RaftMessage<T>): void {
    if (m.term > this.term) {
      if (m.type === 'preVote' || m.type === 'vote') {
        const inLease = this.checkQuorum && this.leader !== 0 && this.electionElapsed < this.electionTicks;
        if (!m.transfer && inLease) return;
      }
      if (m.type === 'preVote' || (m.type === 'preVoteResp' && !m.reject)) {
        // A pre-vote changes no term: the sender has not started an election yet.
      } else if (m.type === 'app' || m.type === 'heartbeat' || m.type === 'snap') {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, 0);
      }
    } else if (m.term < this.term) {
      if ((this.checkQuorum || this.preVote) && (m.type === 'app' || m.type === 'heartbeat')) {
        // A stale leader (partitioned away, or its term overtaken): tell it our term so it steps down.
        this.send({ type: 'appResp', from: this.id, to: m.from, term: this.term, index: 0, reject: false, rejectHint: 0, logTerm: 0 });
      } else if (m.type === 'preVote') {
        this.send({ type: 'preVoteResp', from: this.id, to: m.from, term: this.term, reject: true });
      }
      return;
    }

    if (m.type === 'preVote' || m.type === 'vote') {
      const canVote = this.vote === m.from || (this.vote === 0 && this.leader === 0) || (m.type === 'preVote' && m.term > this.term);
      const respType = m.type === 'preVote' ? 'preVoteResp' : 'voteResp';
      if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
        this.send({ type: respType, from: this.id, to: m.from, term: m.term, reject: false });
        if (m.type === 'vote') {
          this.electionElapsed = 0;
          this.vote = m.from;
        }
      } else {
        this.send({ type: respType, from: this.id, to: m.from, term: this.term, reject: true });
      }
      return;
    }

    switch (this.role) {
      case 'leader':
        this.stepLeader(m);
        return;
      case 'candidate':
      case 'preCandidate':
        this.stepCandidate(m);
        return;
      case 'follower':
        this.stepFollower(m);
        return;
    }
  }

  private stepFollower(m: RaftMessage<T>): void {
    switch (m.type) {
      case 'app':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleHeartbeat(m);
        return;
      case 'snap':
        this.electionElapsed = 0;
        this.leader = m.from;
        this.handleSnapshot(m);
        return;
      case 'timeoutNow':
        this.hup(true);
        return;
      default:
        return;
    }
  }

  private stepCandidate(m: RaftMessage<T>): void {
    switch (m.type) {
      case 'app':
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case 'heartbeat':
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case 'snap':
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case 'preVoteResp':
      case 'voteResp': {
        if ((m.type === 'preVoteResp') !== (this.role === 'preCandidate')) return;
        if (!this.votes.has(m.from)) this.votes.set(m.from, !m.reject);
        const result = voteResult(this.votes, this.conf.voters);
        if (result === 'won') {
          if (this.role === 'preCandidate') this.startElection('vote', false);
          else this.becomeLeader();
        } else if (result === 'lost') {
          this.becomeFollower(this.term, 0);
        }
        return;
      }
      default:
        return;
    }
  }

  private stepLeader(m: RaftMessage<T>): void {
    if (m.type !== 'appResp' && m.type !== 'heartbeatResp') return;
    const pr = this.progress.get(m.from);
    if (pr === undefined) return;
    pr.recentActive = true;
    if (m.type === 'heartbeatResp') {
      pr.probeSent = false;
      // No snapshot report reaches the core, so a member that answers heartbeats while a snapshot is out is
      // probed again; a lost snapshot is then resent.
      if (pr.state === 'snapshot') pr.becomeProbe();
      if (pr.match < this.log.lastIndex) this.sendAppend(m.from, true);
      return;
    }
    if (m.reject) {
      let probeIndex = m.rejectHint;
      if (m.logTerm > 0) [probeIndex] = this.log.findConflictByTerm(m.rejectHint, m.logTerm);
      if (pr.maybeDecrTo(m.index, probeIndex)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    if (m.index > this.log.lastIndex) return; // not an answer to anything this leader sent
    const wasPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index)) return;
    if (pr.state === 'probe' || (pr.state === 'snapshot' && pr.match >= pr.pendingSnapshot)) pr.becomeReplicate();
    if (this.maybeCommit()) this.bcastAppend();
    else if (wasPaused) this.sendAppend(m.from, true);
    if (this.role !== 'leader') return; // maybeCommit may have stepped a removed leader down
    for (let i = 0; i < this.log.lastIndex && this.sendAppend(m.from, false); i++);
    if (m.from === this.transferee && pr.match === this.log.lastIndex) {
      this.send({ type: 'timeoutNow', from: this.id, to: m.from, term: this.term });
    }
  }

  private handleAppend(m: Extract<RaftMessage<T>, { type: 'app' }>): void {
    if (m.index < this.log.commit) {
      this.sendAppResp(m.from, this.log.commit);
      return;
    }
    const entries = m.entries;
    if (!this.log.matchTerm(m.index, m.logTerm)) {
      const [hintIndex, hintTerm] = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex), m.logTerm);
      this.send({ type: 'appResp', from: this.id, to: m.from, term: this.term, index: m.index, reject: true, rejectHint: hintIndex, logTerm: hintTerm });
      return;
    }
    const lastNew = m.index + entries.length;
    const conflict = this.log.findConflict(entries);
    if (conflict !== 0) {
      assertRaft(conflict > this.log.commit, `raft: leader ${m.from} conflicts with committed entry ${conflict} (commit ${this.log.commit})`);
      const appended = entries.slice(conflict - m.index - 1);
      const truncatedFrom = this.log.append(appended);
      if (truncatedFrom !== 0 || appended.some((entry) => entry.payload.kind === 'conf')) this.refreshConf();
    }
    this.log.commitTo(Math.min(m.commit, lastNew));
    this.sendAppResp(m.from, lastNew);
  }

  private handleHeartbeat(m: Extract<RaftMessage<T>, { type: 'heartbeat' }>): void {
    if (m.commit <= this.log.lastIndex) this.log.commitTo(m.commit);
    this.send({ type: 'heartbeatResp', from: this.id, to: m.from, term: this.term });
  }

  private handleSnapshot(m: Extract<RaftMessage<T>, { type: 'snap' }>): void {
    const snapshot = m.snapshot;
    if (snapshot.index <= this.log.commit) {
      // Stale: everything it holds is committed here already.
      this.sendAppResp(m.from, this.log.commit);
      return;
    }
    if (this.log.matchTerm(snapshot.index, snapshot.term)) {
      // The log already holds the snapshot's last entry, hence (log matching) everything before it.
      this.log.commitTo(snapshot.index);
      this.sendAppResp(m.from, this.log.commit);
      return;
    }
    this.log.restore(snapshot);
    this.refreshConf();
    this.sendAppResp(m.from, snapshot.index);
  }

  private sendAppResp(to: number, index: number): void {
    this.send({ type: 'appResp', from: this.id, to, term: this.term, index, reject: false, rejectHint: 0, logTerm: 0 });
  }

  // ---- leader helpers ------------------------------------------------------------------------------------------

  private appendAsLeader(payload: LogEntry<T>['payload']): { index: number; term: number } {
    const entry: LogEntry<T> = { index: this.log.lastIndex + 1, term: this.term, payload };
    this.log.append([entry]);
    if (payload.kind === 'conf') {
      this.refreshConf();
      // A removal may leave a majority that already holds entries of this term; the append below carries it.
      this.maybeCommit();
    }
    this.bcastAppend();
    return { index: entry.index, term: entry.term };
  }

  private bcastAppend(): void {
    for (const to of this.progress.keys()) this.sendAppend(to, true);
  }

  /** Sends `to` the entries from its next index (or the snapshot when those are compacted). True when sent. */
  private sendAppend(to: number, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    assertRaft(pr.next <= this.log.lastIndex + 1, `raft: next ${pr.next} for ${to} beyond the log end ${this.log.lastIndex}`);
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === undefined) {
      const snapshot = this.log.snapshot;
      assertRaft(snapshot !== null, `raft: entry ${prevIndex} compacted without a snapshot`);
      this.send({ type: 'snap', from: this.id, to, term: this.term, snapshot });
      pr.becomeSnapshot(snapshot.index);
      return true;
    }
    const last = Math.min(this.log.lastIndex, prevIndex + this.maxEntriesPerAppend);
    const entries = this.log.slice(prevIndex + 1, last);
    if (entries.length === 0 && !sendIfEmpty) return false;
    this.send({ type: 'app', from: this.id, to, term: this.term, index: prevIndex, logTerm: prevTerm, entries, commit: this.log.commit });
    if (pr.state === 'replicate') pr.next = last + 1;
    else pr.probeSent = true;
    return true;
  }

  /**
   * Raft §5.3/§5.4.2: commit the highest index a majority of voters holds, if it is of the current term. This
   * node counts only what it has persisted (log.stable), and only while it is a voter. A leader whose removal
   * committed steps down, after telling the most caught-up voter to campaign. Returns whether commit moved.
   */
  private maybeCommit(): boolean {
    if (this.conf.voters.length === 0) return false;
    const matchOf = (voter: number): number => (voter === this.id ? this.log.stable : this.progress.get(voter)?.match ?? 0);
    const index = committedIndex(matchOf, this.conf.voters);
    if (index <= this.log.commit || this.log.term(index) !== this.term) return false;
    this.log.commitTo(index);
    if (!isVoter(this.conf, this.id) && this.lastConfIndex <= this.log.commit) {
      this.bcastAppend();
      const best = this.conf.voters.find((voter) => this.progress.get(voter)?.match === this.log.lastIndex);
      if (best !== undefined) this.send({ type: 'timeoutNow', from: this.id, to: best, term: this.term });
      this.becomeFollower(this.term, 0);
    }
    return true;
  }

  /** Recomputes the config from the whole log (thesis §4.1: in effect once in the log); a leader syncs progress. */
  private refreshConf(): void {
    const entries = this.log.all();
    this.conf = confAfter(this.log.snapshot?.confState ?? null, entries);
    this.lastConfIndex = this.log.snapshotIndex;
    for (const entry of entries) if (entry.payload.kind === 'conf') this.lastConfIndex = entry.index;
    if (this.role !== 'leader') return;
    for (const member of members(this.conf)) {
      if (member !== this.id && !this.progress.has(member)) this.progress.set(member, new Progress(this.log.lastIndex + 1));
    }
    for (const id of [...this.progress.keys()]) if (!isMember(this.conf, id)) this.progress.delete(id);
    if (this.transferee !== 0 && !isVoter(this.conf, this.transferee)) this.transferee = 0;
  }

  private send(message: RaftMessage<T>): void {
    this.messages.push(message);
  }

  /** Fail fast on states no sequence of inputs may reach (STYLE: assert impossible states). */
  private checkInvariants(): void {
    const log = this.log;
    assertRaft(log.applied <= log.commit && log.commit <= log.lastIndex, `raft: applied ${log.applied} <= commit ${log.commit} <= last ${log.lastIndex} fails`);
    assertRaft(log.snapshotIndex <= log.stable && log.stable <= log.lastIndex, `raft: snapshot ${log.snapshotIndex} <= stable ${log.stable} <= last ${log.lastIndex} fails`);
    assertRaft(log.lastTerm <= this.term, `raft: last term ${log.lastTerm} above term ${this.term}`);
    assertRaft((this.role === 'leader') === (this.leader === this.id), `raft: role ${this.role} with leader ${this.leader}`);
    assertRaft(this.role !== 'leader' || this.vote === this.id, 'raft: a leader that did not vote for itself');
    assertRaft(this.role === 'leader' || (this.progress.size === 0 && this.transferee === 0), 'raft: leader state on a non-leader');
  }
}

function isPositiveInteger(value: number): boolean {
  return Number.isSafeInteger(value) && value > 0;
}

function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

const messageTypes = new Set(['app', 'appResp', 'heartbeat', 'heartbeatResp', 'preVote', 'vote', 'preVoteResp', 'voteResp', 'snap', 'timeoutNow']);

/** Enough shape to step without throwing: the fields the core reads are of the right kinds. */
function isWellFormed(m: RaftMessage): boolean {
  if (typeof m !== 'object' || m === null || !messageTypes.has(m.type)) return false;
  if (!isCount(m.from) || !isCount(m.to) || !isCount(m.term) || m.from === 0) return false;
  switch (m.type) {
    case 'app': {
      if (!isCount(m.index) || !isCount(m.logTerm) || !isCount(m.commit) || !Array.isArray(m.entries)) return false;
      let expected = m.index + 1;
      for (const entry of m.entries as unknown[]) {
        const e = entry as LogEntry | null;
        if (typeof e !== 'object' || e === null || e.index !== expected || !isCount(e.term) || e.term > m.term) return false;
        if (typeof e.payload !== 'object' || e.payload === null) return false;
        expected += 1;
      }
      return true;
    }
    case 'appResp':
      return isCount(m.index) && isCount(m.rejectHint) && isCount(m.logTerm) && typeof m.reject === 'boolean';
    case 'heartbeat':
      return isCount(m.commit);
    case 'preVote':
    case 'vote':
      return isCount(m.index) && isCount(m.logTerm);
    case 'preVoteResp':
    case 'voteResp':
      return typeof m.reject === 'boolean';
    case 'snap':
      return typeof m.snapshot === 'object' && m.snapshot !== null && isPositiveInteger(m.snapshot.index) && isCount(m.snapshot.term)
        && m.snapshot.term <= m.term && typeof m.snapshot.confState === 'object' && m.snapshot.confState !== null;
    case 'heartbeatResp':
    case 'timeoutNow':
      return true;
  }
}

/** The stored state must describe a possible log (storage checks its own reads too). */
function assertRestoredState<T>(restored: RestoredState<T>): void {
  const { hardState, snapshot } = restored;
  assertRaft(isCount(hardState.term) && isCount(hardState.vote) && isCount(hardState.commit), 'raft: stored hard state holds a non-count');
  assertRaft(hardState.vote === 0 || hardState.term > 0, 'raft: stored vote without a term');
  if (snapshot !== null) {
    assertRaft(isPositiveInteger(snapshot.index) && isCount(snapshot.term) && snapshot.term <= hardState.term, 'raft: stored snapshot position is impossible');
  }
}
