// Cluster membership as the metadata shell runs it: the leader's once-a-second liveness broadcast and promotion of
// caught-up learners, a new node's join requests (and the leader adding it as a learner with its member record),
// each node's own member record, the transport's peer addresses from the member records, the member list of
// GET /v1/cluster/members, and forget with its 409 rules (spec §4). One instance per node, owned by the shell on the
// metadata thread; it reaches the Raft core, the state and the write path only through MembershipHost.
import { parseHostPort } from '../../config.js';
import { isMember, members } from '../core/conf.js';
import { quorumActive } from '../core/quorum.js';
import type { RaftNode } from '../core/raft.js';
import type { MetadataCommand, MetadataState } from '../../protocol/metadata_types.js';
import { movesOf } from '../../metadata/moves.js';
import { partitionsOwnedBy } from '../../metadata/placement.js';
import type { ClusterThreadConfig, MemberView } from '../../protocol/thread_messages.js';
import type { ForgetReply, JoinReply, PeerMessage, PeerRequest, ProposeReply } from '../../protocol/peer_messages.js';
import type { ApplyOutcome } from './apply_waiters.js';
import type { Liveness } from './liveness.js';
import { applyFailure, forgetForwardTimeoutMs, forwardTimeoutMs } from './proposal_outcomes.js';
import { forgetReplyFromPeer } from './peer_replies.js';
import { refusalText, type MetadataRefusal } from '../../errors.js';
import type { ChannelEndpoint } from '../../transport/channel.js';

const livenessBroadcastMs = 1_000;
const joinRetryMs = 1_000;

/** What membership needs of the shell. */
export interface MembershipHost {
  readonly core: RaftNode<MetadataCommand>;
  readonly config: ClusterThreadConfig;
  readonly transport: ChannelEndpoint | null;
  readonly liveness: Liveness;
  /** The authoritative state (replaced when a snapshot is installed, so read it each time). */
  state(): MetadataState;
  /** The replica applied what the leader had committed when this node started. */
  caughtUp(): boolean;
  stopping(): boolean;
  log(level: 'info' | 'warn' | 'error', fields: object, msg: string): void;
  kick(): void;
  /** On the leader: propose and settle once applied here. */
  proposeLocally(command: MetadataCommand, settle: (reply: ProposeReply) => void): void;
  /** Through the leader, wherever it is. */
  proposeInternal(command: MetadataCommand): Promise<ProposeReply>;
  /** Resolves once (index, term) is applied here, or with the uncertain outcome. */
  waitApplied(index: number, term: number): Promise<ApplyOutcome>;
}

export class Membership {
  private lastLivenessMs = 0;
  private lastJoinAttemptMs = 0;
  private selfRegistering = false;

  constructor(
    private readonly host: MembershipHost,
    private joining: boolean,
  ) {}

  /** Every tick: the leader's duties, a joining node's next request, this node's own member record. */
  tick(nowMs: number): void {
    if (this.host.core.status().role === 'leader') this.leaderDuties(nowMs);
    else if (this.joining) this.tryJoin(nowMs);
    this.registerSelf();
  }

  private leaderDuties(nowMs: number): void {
    if (this.host.transport !== null && nowMs - this.lastLivenessMs >= livenessBroadcastMs) {
      this.lastLivenessMs = nowMs;
      const message: PeerMessage = { kind: 'liveness', term: this.host.core.status().term, heardAgoMs: this.host.liveness.leaderViewToSend(this.host.state().members.keys(), nowMs) };
      const conf = this.host.core.status().confState;
      for (const id of members(conf)) if (id !== this.host.config.nodeId) this.host.transport.send(id, message);
    }
    // A learner becomes a voter once it holds everything committed (thesis §4.2.1: catch up before voting).
    const status = this.host.core.status();
    for (const learner of status.confState.learners) {
      const progress = status.progress?.[learner];
      if (progress !== undefined && progress.match >= status.commit) {
        const result = this.host.core.proposeConfChange({ type: 'addVoter', node: learner });
        if (!('refused' in result)) this.host.log('info', { node: learner, index: result.index }, 'metadata: promoting a caught-up learner to voter');
        break;
      }
    }
  }

  private tryJoin(nowMs: number): void {
    const conf = this.host.core.status().confState;
    if (isMember(conf, this.host.config.nodeId)) {
      this.joining = false;
      this.host.log('info', { nodeId: this.host.config.nodeId }, 'metadata: joined the cluster');
      return;
    }
    const join = this.host.config.join;
    if (join === null || this.host.transport === null || nowMs - this.lastJoinAttemptMs < joinRetryMs) return;
    this.lastJoinAttemptMs = nowMs;
    const request: PeerRequest = { kind: 'join', id: this.host.config.nodeId, apiAddress: this.host.config.advertiseApi, internalAddress: this.host.config.advertiseInternal };
    this.host.transport.requestAt(join, request, joinRetryMs * 3).then(
      ({ from, reply }) => {
        this.host.transport?.setPeer(from, join);
        const answer = reply as JoinReply;
        if (!answer.ok) this.host.log('warn', { join, error: answer.error }, 'metadata: join refused for now; retrying');
      },
      (err: unknown) => this.host.log('warn', { join, err: String(err) }, 'metadata: join request failed; retrying'),
    );
  }

  async onJoinRequest(request: Extract<PeerRequest, { kind: 'join' }>): Promise<JoinReply> {
    const status = this.host.core.status();
    if (status.role !== 'leader') {
      if (status.leader === 0 || this.host.transport === null) return { ok: false, error: 'no leader' };
      return (await this.host.transport.request(status.leader, request, forwardTimeoutMs)) as JoinReply;
    }
    const address = parseHostPort(request.internalAddress);
    if (!Number.isSafeInteger(request.id) || request.id < 1 || address === null) return { ok: false, error: 'join request: bad id or internal address' };
    this.host.transport?.setPeer(request.id, address);
    const conf = status.confState;
    if (isMember(conf, request.id)) return { ok: true };
    const change = this.host.core.proposeConfChange({ type: 'addLearner', node: request.id });
    if ('refused' in change) return { ok: false, error: `membership change refused: ${change.refused}` };
    // Its address goes into the metadata at once, so a later leader can reach the learner too.
    const member = { id: request.id, apiAddress: request.apiAddress, internalAddress: request.internalAddress, addedAtMs: Date.now() };
    this.host.proposeLocally({ type: 'member.add', member }, (reply) => {
      if (!reply.ok) this.host.log('warn', { node: request.id, error: refusalText(reply.refusal) }, 'metadata: recording a joining node failed; it records itself once caught up');
    });
    this.host.log('info', { node: request.id, index: change.index }, 'metadata: adding a joining node as a learner');
    this.host.kick();
    return { ok: true };
  }

  /** Every node takes part in placement only once its member record (API address) is in the metadata. */
  private registerSelf(): void {
    // With API port 0 the first record has no API address yet (the listener waits for the record); it is recorded
    // again once the front reports the bound port.
    if (!this.host.caughtUp() || this.selfRegistering || this.host.stopping()) return;
    const own = this.host.state().members.get(this.host.config.nodeId);
    if (own !== undefined && own.apiAddress === this.host.config.advertiseApi && own.internalAddress === this.host.config.advertiseInternal) return;
    this.selfRegistering = true;
    const member = { id: this.host.config.nodeId, apiAddress: this.host.config.advertiseApi, internalAddress: this.host.config.advertiseInternal, addedAtMs: Date.now() };
    void this.host.proposeInternal({ type: 'member.add', member }).then((reply) => {
      this.selfRegistering = false;
      if (!reply.ok) this.host.log('warn', { error: refusalText(reply.refusal) }, 'metadata: registering this node as a member failed; retrying');
    });
  }

  refreshPeers(): void {
    if (this.host.transport === null) return;
    for (const member of this.host.state().members.values()) {
      if (member.id === this.host.config.nodeId) continue;
      const address = parseHostPort(member.internalAddress);
      if (address !== null) this.host.transport.setPeer(member.id, address);
    }
  }

  liveMemberIds(): number[] {
    const nowMs = Date.now();
    const isLeader = this.host.core.status().role === 'leader';
    return [...this.host.state().members.keys()].filter((id) => this.host.liveness.alive(id, isLeader, nowMs));
  }

  deadMemberIds(): number[] {
    const live = new Set(this.liveMemberIds());
    return [...this.host.state().members.keys()].filter((id) => !live.has(id)).sort((a, b) => a - b);
  }

  memberViews(): MemberView[] {
    const nowMs = Date.now();
    const status = this.host.core.status();
    const isLeader = status.role === 'leader';
    const ids = new Set<number>([...this.host.state().members.keys(), ...members(status.confState)]);
    return [...ids].sort((a, b) => a - b).map((id) => {
      const record = this.host.state().members.get(id);
      const ago = this.host.liveness.heardAgoMs(id, isLeader, nowMs);
      return {
        id,
        apiAddress: record?.apiAddress ?? '',
        internalAddress: record?.internalAddress ?? '',
        alive: this.host.liveness.alive(id, isLeader, nowMs),
        voter: status.confState.voters.includes(id),
        learner: status.confState.learners.includes(id),
        leader: status.leader === id,
        partitionsOwned: partitionsOwnedBy(this.host.state(), id),
        heartbeatAgeSeconds: ago === null ? null : Math.round(ago / 100) / 10,
      };
    });
  }

  /** Spec §4 forget: run on the leader (forwarded there), with its 409 rules. */
  async forget(id: number): Promise<ForgetReply> {
    const status = this.host.core.status();
    if (status.role !== 'leader') {
      if (status.leader === 0 || this.host.transport === null) return refused({ id: 'noLeader', args: [] });
      try {
        return forgetReplyFromPeer(await this.host.transport.request(status.leader, { kind: 'forget', id } satisfies PeerRequest, forgetForwardTimeoutMs));
      } catch {
        return refused({ id: 'leaderUnreachable', args: [] });
      }
    }
    const conf = status.confState;
    const inConf = isMember(conf, id);
    if (!inConf && !this.host.state().members.has(id)) return refused({ id: 'memberNotFound', args: [id] });
    const nowMs = Date.now();
    // A decommissioned member that holds nothing more is removable while it still runs (issue 41).
    const drained = this.host.state().members.get(id)?.decommission !== undefined;
    if (!drained && this.host.liveness.alive(id, true, nowMs)) return refused({ id: 'memberAlive', args: [id] });
    const owned = partitionsOwnedBy(this.host.state(), id);
    if (owned > 0) return refused({ id: 'memberOwnsPartitions', args: [id, owned] });
    const moving = movesOf(this.host.state(), id);
    if (moving > 0) return refused({ id: 'memberInMove', args: [id, moving] });
    if (id === this.host.config.nodeId) return refused({ id: 'memberAlive', args: [id] });
    if (conf.voters.includes(id)) {
      const remaining = conf.voters.filter((voter) => voter !== id);
      const alive = (voter: number): boolean => this.host.liveness.alive(voter, true, nowMs);
      if (!quorumActive(alive, remaining)) {
        return refused({ id: 'forgetBreaksQuorum', args: [id, remaining.filter(alive).length, remaining.length] });
      }
    }
    if (inConf) {
      const change = this.host.core.proposeConfChange({ type: 'removeVoter', node: id });
      if ('refused' in change) return refused({ id: 'membershipChangeRefused', args: [change.refused] });
      this.host.kick();
      const outcome = await this.host.waitApplied(change.index, change.term);
      if (outcome !== 'applied') return applyFailure(outcome);
    }
    if (this.host.state().members.has(id)) {
      const reply = await new Promise<ProposeReply>((resolve) => this.host.proposeLocally({ type: 'member.forget', id }, resolve));
      if (!reply.ok) return reply;
    }
    this.host.transport?.removePeer(id);
    return { ok: true };
  }
}

function refused(refusal: MetadataRefusal): ForgetReply {
  return { ok: false, refusal };
}
