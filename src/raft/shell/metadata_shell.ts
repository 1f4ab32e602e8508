// The metadata thread's shell around the pure Raft core: it persists each Ready in SQLite before sending its
// messages, applies committed entries to the authoritative MetadataState and broadcasts them to the front and the
// workers, drives ticks from a timer, sends Raft traffic over the node-to-node transport, forwards writes taken on
// a follower to the leader, places partition owners (leader), tracks readiness, and hands leadership over when it
// stops; membership (joins, liveness, members, forget) is membership.ts. One instance per node, metadata thread.
import assert from 'node:assert/strict';
import type { MessagePort } from 'node:worker_threads';
import type { LogEntry, RaftMessage, RaftNode, Ready } from '../core/raft.js';
import { encodeMetadataSnapshot, decodeMetadataSnapshot } from '../../metadata/snapshot.js';
import { fillOwners, PlacementError } from '../../metadata/placement.js';
import type { MetadataCommand, MetadataState, ProposalCaller } from '../../protocol/metadata_types.js';
import { callerRefusal, userChangeTarget } from '../../metadata/caller_check.js';
import { applyCommand } from '../../metadata/state.js';
import {
  assertNever,
  type ClusterStatus,
  type ClusterThreadConfig,
  type CommittedEntry,
  type FromMetadata,
  type ToMetadata,
} from '../../protocol/thread_messages.js';
import type { CommitIndexReply, PeerMessage, PeerRequest, ProposeReply } from '../../protocol/peer_messages.js';
import { ApplyWaiters } from './apply_waiters.js';
import { CallerHolds } from './caller_holds.js';
import { Liveness } from './liveness.js';
import { Membership } from './membership.js';
import { PeerGate } from './peer_gate.js';
import { applyFailure, forwardTimeoutMs, proposalTimeoutMs } from './proposal_outcomes.js';
import { proposeReplyFromPeer, proposeReplyToPeer, forgetReplyToPeer } from './peer_replies.js';
import type { MetadataRefusal } from '../../errors.js';
import type { SqliteRaftStorage } from './storage_sqlite.js';
import type { ChannelEndpoint } from '../../transport/channel.js';
import { TransportError } from '../../transport/peer_transport.js';

const statusRepostMs = 1_000;
/** How long a follower waits for the leader's answer to what its commit index is. */
const commitIndexAskMs = 2_000;

type ProposalSettle = (reply: ProposeReply) => void;

export interface ShellDeps {
  core: RaftNode<MetadataCommand>;
  storage: SqliteRaftStorage;
  state: MetadataState;
  appliedIndex: number;
  /** Index of the snapshot the stored log starts after. */
  snapshotIndex: number;
  front: MessagePort;
  workerPorts: readonly MessagePort[];
  transport: ChannelEndpoint | null;
  config: ClusterThreadConfig;
  log: (level: 'info' | 'warn' | 'error', fields: object, msg: string) => void;
  /** The commit index stored at start: applied before the front and workers get their first snapshot. */
  startCommit: number;
  /** Whether the log was empty at start and this node joins a running cluster. */
  joining: boolean;
}

export class MetadataShell {
  private readonly core: RaftNode<MetadataCommand>;
  private readonly storage: SqliteRaftStorage;
  private state: MetadataState;
  private appliedIndex: number;
  private snapshotIndex: number;
  private readonly config: ClusterThreadConfig;
  private readonly transport: ChannelEndpoint | null;
  private readonly waiters = new ApplyWaiters();
  private readonly holds = new CallerHolds();
  private readonly liveness: Liveness;
  private pumping = false;
  private storageFailed = false;
  private shutdownRequested = false;
  private closing = false;
  private tickTimer: NodeJS.Timeout | null = null;
  private leaderHeardAtMs = 0;
  /** This replica applied what the leader had committed when this node started. */
  private metadataCaughtUp = false;
  /** Ready (spec §4 /readyz): caught up, and on a follower the leader's liveness view has arrived too. */
  private caughtUp = false;
  /** The leader's commit index when this follower asked after starting; caught up once applied reaches it. */
  private catchUpTarget: number | null = null;
  private catchUpAsking = false;
  private lastStatusJson = '';
  /** The member ids last given to the transport, joined. */
  private lastMembers = '';
  private lastStatusPostMs = 0;
  private readonly membership: Membership;
  private readonly gate: PeerGate;
  private readonly onFrontMessageBound = (message: ToMetadata): void => this.onFrontMessage(message);

  constructor(private readonly deps: ShellDeps) {
    this.core = deps.core;
    this.storage = deps.storage;
    this.state = deps.state;
    this.appliedIndex = deps.appliedIndex;
    this.snapshotIndex = deps.snapshotIndex;
    this.config = deps.config;
    this.transport = deps.transport;
    this.liveness = new Liveness(deps.config.nodeId, deps.config.deadAfterMs, Date.now());
    this.gate = new PeerGate({ state: () => this.state, conf: () => this.core.status().confState, log: deps.log });
    this.membership = new Membership({
      core: this.core, config: this.config, transport: this.transport, liveness: this.liveness,
      state: () => this.state,
      caughtUp: () => this.metadataCaughtUp,
      stopping: () => this.shutdownRequested,
      log: deps.log,
      kick: () => this.kick(),
      proposeLocally: (command, settle) => this.proposeLocally(command, settle),
      proposeInternal: (command) => this.proposeInternal(command),
      waitApplied: (index, term) =>
        new Promise((resolve) => this.waiters.wait(index, term, this.appliedIndex, Date.now() + proposalTimeoutMs, resolve)),
    }, deps.joining);
  }

  start(): void {
    // The front and the workers get their first snapshot only once the stored committed entries are applied here:
    // a worker deletes the files of every topic its first snapshot lacks.
    if (this.appliedIndex >= this.deps.startCommit) this.broadcastSnapshot();
    // Members that joined after founding are known only from the metadata: their addresses must reach the transport
    // before anything is sent to them.
    this.membership.refreshPeers();
    this.syncMembers();
    this.deps.front.on('message', this.onFrontMessageBound);
    // A lone voter need not wait an election timeout to lead: nobody else could win or object.
    const conf = this.core.status().confState;
    if (conf.voters.length === 1 && conf.voters[0] === this.config.nodeId) this.core.campaign();
    this.tickTimer = setInterval(() => this.onTick(), this.config.tickMs);
    this.kick();
  }

  // ------------------------------------------------------------------------------------------------
  // Inputs

  private onFrontMessage(message: ToMetadata): void {
    switch (message.kind) {
      case 'propose':
        return this.onFrontPropose(message.reqId, message.command, message.caller);
      case 'members':
        return this.post({ kind: 'membersResult', reqId: message.reqId, members: this.membership.memberViews() });
      case 'forget':
        void this.membership.forget(message.id).then((reply) => this.post({ kind: 'forgetResult', reqId: message.reqId, ...reply }));
        return;
      case 'catchUp':
        void this.catchUpWithLeader().then((ok) => this.post({ kind: 'caughtUpResult', reqId: message.reqId, ok }));
        return;
      case 'apiAddress':
        this.config.advertiseApi = message.address;
        return;
      case 'transferLeadership':
        return this.handLeadershipAway();
      case 'shutdown':
        return this.onShutdown();
      default:
        return assertNever(message);
    }
  }

  /** Transport: one-way messages from a peer. */
  onPeerMessage(from: number, raw: unknown): void {
    const message = raw as PeerMessage;
    const nowMs = Date.now();
    this.liveness.heardFrom(from, nowMs);
    switch (message?.kind) {
      case 'raft':
        if (!this.gate.raftSenderMatches(from, message.message?.from)) return;
        this.core.step(message.message);
        if (from === this.core.status().leader) this.leaderHeardAtMs = nowMs;
        this.kick();
        return;
      case 'liveness':
        if (from === this.core.status().leader) this.liveness.receivedLeaderView(message.heardAgoMs, nowMs);
        return;
      default:
        this.deps.log('warn', { from }, 'metadata: unknown peer message ignored');
    }
  }

  /** Transport: requests from a peer; the reply travels back on the same connection. */
  async onPeerRequest(from: number, raw: unknown): Promise<unknown> {
    const request = raw as PeerRequest;
    this.gate.checkRequest(from, request);
    this.liveness.heardFrom(from, Date.now());
    switch (request?.kind) {
      case 'propose':
        return this.proposeAsLeader(from, request.command, request.caller ?? undefined).then(proposeReplyToPeer);
      case 'join':
        return this.membership.onJoinRequest(request);
      case 'forget':
        return this.membership.forget(request.id).then(forgetReplyToPeer);
      case 'commitIndex': {
        const status = this.core.status();
        const reply: CommitIndexReply = status.role === 'leader' ? { ok: true, commit: status.commit } : { ok: false, error: 'not the leader' };
        return reply;
      }
      default:
        throw new Error(`unknown peer request ${JSON.stringify((request as { kind?: unknown })?.kind)}`);
    }
  }

  private onTick(): void {
    // After a failed persist the core holds a ready that can never be advanced: it is not driven again.
    if (this.closing || this.storageFailed) return;
    this.core.tick();
    const nowMs = Date.now();
    this.waiters.expire(nowMs);
    this.holds.expire(nowMs);
    this.releaseHolds();
    this.membership.tick(nowMs);
    this.catchUp();
    this.postStatus(nowMs);
    this.kick();
  }

  // ------------------------------------------------------------------------------------------------
  // The Ready loop (etcd): persist, install a received snapshot, apply, send, advance

  private kick(): void {
    if (this.pumping || this.closing || this.storageFailed) return;
    this.pumping = true;
    // A rejection here is an assertion failure: rethrown unhandled, it ends the thread (fail-stop).
    void this.pump().finally(() => {
      this.pumping = false;
      if (this.shutdownRequested && !this.transferring()) void this.close();
    });
  }

  private async pump(): Promise<void> {
    for (let ready = this.core.ready(); ready !== null; ready = this.core.ready()) {
      if (!(await this.persist(ready))) return;
      if (ready.snapshot !== undefined) this.installSnapshot(ready.snapshot.index, ready.snapshot.data);
      this.applyCommitted(ready.committed);
      this.syncMembers();
      this.send(ready.messages);
      this.core.advance(ready);
      await this.maybeCompact();
      if (ready.softState !== undefined) this.postStatus(Date.now());
    }
  }

  private async persist(ready: Ready<MetadataCommand>): Promise<boolean> {
    if (this.storageFailed) return false;
    if (ready.entries.length === 0 && ready.hardState === undefined && ready.snapshot === undefined) return true;
    try {
      const write = { entries: ready.entries, ...(ready.hardState === undefined ? {} : { hardState: ready.hardState }), ...(ready.snapshot === undefined ? {} : { snapshot: ready.snapshot }) };
      await this.storage.save(write);
      return true;
    } catch (err) {
      this.storageFailed = true;
      this.deps.log('error', { err: String(err) }, 'metadata: persisting the raft log failed; this node stops taking part until restart');
      this.waiters.closeAll();
      this.holds.closeAll();
      return false;
    }
  }

  /** The transport serves the data channel to members only: it hears of every change of who they are. */
  private syncMembers(): void {
    const ids = this.gate.memberIds();
    const joined = ids.join(',');
    if (joined === this.lastMembers || this.transport === null) return;
    this.lastMembers = joined;
    this.transport.setMembers(ids);
  }

  private send(messages: readonly RaftMessage[]): void {
    if (messages.length === 0) return;
    // A lone voter has nobody to talk to; a cluster node always has a transport.
    assert.ok(this.transport !== null, 'raft messages without a transport');
    for (const message of messages) this.transport.send(message.to, { kind: 'raft', message } satisfies PeerMessage);
  }

  private installSnapshot(index: number, data: Uint8Array): void {
    this.state = decodeMetadataSnapshot(data);
    this.appliedIndex = index;
    this.snapshotIndex = index;
    this.waiters.snapshotInstalled(index);
    this.broadcastSnapshot();
    this.membership.refreshPeers();
    this.deps.log('info', { index }, 'metadata: installed a snapshot from the leader');
  }

  private applyCommitted(committed: readonly LogEntry<MetadataCommand>[]): void {
    const entries: CommittedEntry[] = [];
    const proposals: { reqId: number; index: number }[] = [];
    const status = this.core.status();
    for (const entry of committed) {
      // A snapshot installed in this ready already holds these.
      if (entry.index <= this.appliedIndex) continue;
      assert.equal(entry.index, this.appliedIndex + 1, `metadata entry ${entry.index} applied after ${this.appliedIndex}`);
      const command = entry.payload.kind === 'command' ? entry.payload.command : null;
      if (command !== null) applyCommand(this.state, command);
      this.appliedIndex = entry.index;
      entries.push({ index: entry.index, command });
      this.currentProposals = proposals;
      this.waiters.applied(entry.index, entry.term);
      this.currentProposals = null;
      if (command?.type === 'member.add' || command?.type === 'member.forget') this.membership.refreshPeers();
      // A leader has caught up once an entry of its own term is applied: everything before it is then applied too.
      if (status.role === 'leader' && entry.term === status.term) {
        this.metadataCaughtUp = true;
        this.caughtUp = true;
        this.holds.leaderApplied(entry.term);
      }
    }
    this.releaseHolds();
    if (!this.snapshotSent) {
      if (this.appliedIndex >= this.deps.startCommit) this.broadcastSnapshot();
      return;
    }
    if (entries.length === 0) return;
    this.post({ kind: 'committed', entries, proposals });
    const toWorkers: FromMetadata = { kind: 'committed', entries };
    for (const port of this.deps.workerPorts) port.postMessage(toWorkers);
  }

  /** While applyCommitted runs, front proposals applied in the same batch join its message (the front resolves
   *  them with its own apply of the same entries). */
  private currentProposals: { reqId: number; index: number }[] | null = null;

  private async maybeCompact(): Promise<void> {
    if (this.storageFailed || this.appliedIndex - this.snapshotIndex < this.config.snapshotEntries) return;
    // A snapshot from the leader stepped in during the last persist is already at or past what is applied here: the
    // next ready installs it, and compacting below it is refused by the core.
    const core = this.core.status();
    if (core.snapshotIndex >= this.appliedIndex || core.applied < this.appliedIndex) return;
    const snapshot = this.core.compact(this.appliedIndex, encodeMetadataSnapshot(this.state));
    try {
      await this.storage.compact(snapshot);
      this.snapshotIndex = snapshot.index;
    } catch (err) {
      this.storageFailed = true;
      this.deps.log('error', { err: String(err) }, 'metadata: storing a snapshot failed; this node stops taking part until restart');
    }
  }

  // ------------------------------------------------------------------------------------------------
  // Writes

  private onFrontPropose(reqId: number, command: MetadataCommand, caller: ProposalCaller | undefined): void {
    const fail = (refusal: MetadataRefusal): void => this.post({ kind: 'proposeFailed', reqId, refusal });
    if (this.storageFailed || this.shutdownRequested) return fail({ id: 'metadataLogUnavailable', args: [] });
    const status = this.core.status();
    if (status.role === 'leader') {
      this.proposeLocally(command, (reply) => (reply.ok ? undefined : fail(reply.refusal)), reqId, caller);
      return;
    }
    if (status.leader === 0 || this.transport === null) return fail({ id: 'noLeader', args: [] });
    const leader = status.leader;
    const request: PeerRequest = caller === undefined ? { kind: 'propose', command } : { kind: 'propose', command, caller };
    this.transport.request(leader, request, forwardTimeoutMs).then(
      (raw) => {
        const reply = proposeReplyFromPeer(raw);
        if (!reply.ok) return fail(reply.refusal);
        // Committed on the leader: answered once this replica applied it too.
        this.waiters.wait(reply.index, reply.term, this.appliedIndex, Date.now() + proposalTimeoutMs, (outcome) => {
          if (outcome === 'applied') return this.proposalApplied(reqId, reply.index);
          // The leader applied (index, term), so it is committed whatever this node could tell.
          fail({ id: 'committedUnconfirmed', args: [] });
        });
      },
      (err: unknown) => {
        const code = err instanceof TransportError ? err.code : 'remote_error';
        this.deps.log('warn', { leader, code, err: String(err) }, 'metadata: forwarding a write to the leader failed');
        // A request that was written may have been acted on: only a refused connection says nothing happened.
        fail({ id: code === 'unreachable' ? 'leaderUnreachable' : 'leaderUnreachableMaybeCommitted', args: [] });
      },
    );
  }

  /** On the leader: check the caller, place owners, propose, and call settle once applied here (or failed). With
   *  reqId, a success is reported to the front inside the committed message that applies it. */
  private proposeLocally(command: MetadataCommand, settle: ProposalSettle, reqId?: number, caller?: ProposalCaller): void {
    if (caller !== undefined && !this.callerChecked(command, settle, reqId, caller)) return;
    let placed: MetadataCommand;
    try {
      placed = fillOwners(this.state, command, this.membership.liveMemberIds());
    } catch (err) {
      if (err instanceof PlacementError) return settle({ ok: false, refusal: { id: 'noLiveNode', args: [] } });
      throw err;
    }
    const proposed = this.core.propose(placed);
    if (proposed === null) return settle({ ok: false, refusal: { id: 'noLeader', args: [] } });
    const account = userChangeTarget(placed);
    if (account !== null) this.holds.userChangeProposed(account, proposed.index);
    this.waiters.wait(proposed.index, proposed.term, this.appliedIndex, Date.now() + proposalTimeoutMs, (outcome) => {
      if (outcome === 'applied') {
        if (reqId !== undefined) this.proposalApplied(reqId, proposed.index);
        return settle({ ok: true, index: proposed.index, term: proposed.term });
      }
      settle(applyFailure(outcome));
    });
    this.kick();
  }

  /**
   * Spec §5: the leader checks the caller of a write again, against its own state, right before proposing (the
   * receiving node checked its replica, which may be behind). True when the write may go on; otherwise it was
   * refused (403) or held until a change of the caller's account, or an entry of this term, is applied here (a held
   * write comes back through proposeLocally).
   */
  private callerChecked(command: MetadataCommand, settle: ProposalSettle, reqId: number | undefined, caller: ProposalCaller): boolean {
    if (!this.holds.ready(caller.username, this.core.status().term, this.appliedIndex)) {
      const retry = (): void => this.proposeLocally(command, settle, reqId, caller);
      this.holds.hold(caller.username, Date.now() + proposalTimeoutMs, retry, (refusal) => settle({ ok: false, refusal }));
      return false;
    }
    const refusal = callerRefusal(this.state, caller, command);
    if (refusal === null) return true;
    settle({ ok: false, refusal });
    return false;
  }

  private releaseHolds(): void {
    const status = this.core.status();
    this.holds.release(status.role === 'leader', status.term, this.appliedIndex);
  }

  /** A peer forwarded a write: propose it if this node leads. */
  private proposeAsLeader(from: number, command: MetadataCommand, caller: ProposalCaller | undefined): Promise<ProposeReply> {
    if (this.core.status().role !== 'leader') return Promise.resolve({ ok: false, refusal: { id: 'noLeader', args: [] } });
    return new Promise((resolve) => this.proposeLocally(command, (reply) => {
      this.gate.peerProposalDecided(from, command, reply);
      resolve(reply);
    }, undefined, caller));
  }

  private proposalApplied(reqId: number, index: number): void {
    if (this.currentProposals !== null) this.currentProposals.push({ reqId, index });
    else this.post({ kind: 'proposalApplied', reqId, index });
  }

  /** Proposes a command this node needs for itself (its member record), through the leader wherever it is. */
  private proposeInternal(command: MetadataCommand): Promise<ProposeReply> {
    const status = this.core.status();
    if (status.role === 'leader') return new Promise((resolve) => this.proposeLocally(command, resolve));
    if (status.leader === 0 || this.transport === null) return Promise.resolve({ ok: false, refusal: { id: 'noLeader', args: [] } });
    return this.transport
      .request(status.leader, { kind: 'propose', command } satisfies PeerRequest, forwardTimeoutMs)
      .then(proposeReplyFromPeer, (): ProposeReply => ({ ok: false, refusal: { id: 'leaderUnreachable', args: [] } }));
  }

  // ------------------------------------------------------------------------------------------------
  // Readiness and status

  /** A follower asks the leader for its commit index once, then is caught up when it applied that far. */
  private catchUp(): void {
    if (this.caughtUp) return;
    const status = this.core.status();
    if (this.catchUpTarget !== null) {
      // Ready also means this node can tell who is alive: the leader's liveness view has arrived.
      if (this.appliedIndex >= this.catchUpTarget) this.metadataCaughtUp = true;
      if (this.metadataCaughtUp && this.liveness.hasLeaderView()) this.caughtUp = true;
      return;
    }
    if (status.role === 'leader' || status.leader === 0 || this.transport === null || this.catchUpAsking) return;
    this.catchUpAsking = true;
    void this.leaderCommitIndex(status.leader).then((commit) => {
      this.catchUpAsking = false;
      if (commit !== null) this.catchUpTarget = commit;
    });
  }

  /** The leader's commit index, or null when it cannot be asked or does not answer in time. */
  private async leaderCommitIndex(leader: number): Promise<number | null> {
    if (this.transport === null) return null;
    try {
      const reply = (await this.transport.request(leader, { kind: 'commitIndex' } satisfies PeerRequest, commitIndexAskMs)) as CommitIndexReply;
      return reply.ok ? reply.commit : null;
    } catch {
      return null;
    }
  }

  /** Spec §5: a topic a change names but this replica lacks is looked up again after catching up with the leader.
   *  Resolves true once this node applied the leader's commit index as it was when asked (at once on the leader),
   *  false when the leader cannot be asked or this node does not get there within the proposal timeout. */
  private async catchUpWithLeader(): Promise<boolean> {
    const status = this.core.status();
    if (status.role === 'leader') return true;
    if (status.leader === 0) return false;
    const target = await this.leaderCommitIndex(status.leader);
    if (target === null) return false;
    const deadlineMs = Date.now() + proposalTimeoutMs;
    // Bounded by the deadline; applied entries arrive through the ready loop meanwhile.
    while (this.appliedIndex < target) {
      if (Date.now() >= deadlineMs || this.closing) return false;
      await new Promise((resolve) => setTimeout(resolve, this.config.tickMs));
    }
    return true;
  }

  private postStatus(nowMs: number): void {
    const status = this.core.status();
    const clusterStatus: ClusterStatus = {
      nodeId: this.config.nodeId,
      term: status.term,
      role: status.role,
      leader: status.leader,
      leaderHeardAtMs: status.role === 'leader' ? nowMs : this.leaderHeardAtMs,
      caughtUp: this.caughtUp,
      deadMembers: this.membership.deadMemberIds(),
    };
    const { leaderHeardAtMs: _ignored, ...compared } = clusterStatus;
    const json = JSON.stringify(compared);
    if (json === this.lastStatusJson && nowMs - this.lastStatusPostMs < statusRepostMs) return;
    this.lastStatusJson = json;
    this.lastStatusPostMs = nowMs;
    this.post({ kind: 'clusterStatus', status: clusterStatus });
  }

  // ------------------------------------------------------------------------------------------------
  // Shutdown

  private onShutdown(): void {
    this.shutdownRequested = true;
    // A leader that stops hands its leadership to the most caught-up voter first, so the others need not wait an
    // election timeout (thesis §3.10); bounded by one election timeout, then it stops anyway.
    const status = this.core.status();
    const successor = status.role === 'leader' ? this.transferTarget() : null;
    if (successor !== null && this.core.transferLeadership(successor)) {
      this.deps.log('info', { to: successor }, 'metadata: handing leadership over before stopping');
      this.kick();
      const deadline = Date.now() + this.config.tickMs * this.config.electionTicks;
      const poll = setInterval(() => {
        if (this.core.status().role === 'leader' && Date.now() < deadline) return;
        clearInterval(poll);
        if (!this.pumping) void this.close();
      }, this.config.tickMs);
      return;
    }
    if (!this.pumping) void this.close();
  }

  /** A decommissioned leader (issue 41) hands over to a voter that stays; nothing happens when none is live. */
  private handLeadershipAway(): void {
    if (this.core.status().role !== 'leader') return;
    const successor = this.transferTarget((id) => this.state.members.get(id)?.decommission === undefined);
    if (successor !== null && this.core.transferLeadership(successor)) {
      this.deps.log('info', { to: successor }, 'metadata: handing leadership over (this node is being decommissioned)');
      this.kick();
    }
  }

  private transferring(): boolean {
    return this.core.status().transferee !== undefined && this.core.status().role === 'leader';
  }

  private transferTarget(eligible: (id: number) => boolean = () => true): number | null {
    const status = this.core.status();
    let best: number | null = null;
    let bestMatch = -1;
    for (const voter of status.confState.voters) {
      const match = status.progress?.[voter]?.match ?? -1;
      if (voter !== this.config.nodeId && match > bestMatch && this.liveness.alive(voter, true, Date.now()) && eligible(voter)) {
        best = voter;
        bestMatch = match;
      }
    }
    return best;
  }

  private async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.tickTimer !== null) clearInterval(this.tickTimer);
    this.waiters.closeAll();
    this.holds.closeAll();
    await this.transport?.close();
    await this.storage.close();
    this.post({ kind: 'closed' });
    // With no listener left the port stops holding the thread open, so it exits once idle.
    this.deps.front.off('message', this.onFrontMessageBound);
  }

  private snapshotSent = false;

  private broadcastSnapshot(): void {
    this.snapshotSent = true;
    const snapshot: FromMetadata = { kind: 'snapshot', index: this.appliedIndex, state: this.state };
    this.post(snapshot);
    for (const port of this.deps.workerPorts) port.postMessage(snapshot);
  }

  private post(message: FromMetadata): void {
    this.deps.front.postMessage(message);
  }
}
