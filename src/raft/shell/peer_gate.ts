// Who may ask what of this node's metadata over the node-to-node transport (issue 40). The cluster secret admits a
// connection; membership admits a request: propose and forget only from a member (a node with a member record in
// the applied metadata, or a voter or learner of the Raft configuration, as a joining node is between its join and
// its record), a join from a member (a follower forwarding it) or from the joining node itself, and Raft messages
// only under the sender's own node id. The leader also leaves a line for every user or grant change another node
// proposed, so a change that entered through the internal port is on record on the leader whichever node sent it.
// Metadata thread; one per shell.
import { isMember } from '../core/conf.js';
import { userChangeTarget } from '../../metadata/caller_check.js';
import type { ConfState } from '../../protocol/raft_messages.js';
import type { MetadataCommand, MetadataState } from '../../protocol/metadata_types.js';
import type { PeerRequest, ProposeReply } from '../../protocol/peer_messages.js';
import { LogBudget } from '../../transport/log_budget.js';

/** A peer may send these at will: its refusals share one budget of lines. */
const refusalLogLines = { lines: 20, windowMs: 60_000 } as const;

export interface PeerGateHost {
  state(): MetadataState;
  conf(): ConfState;
  log(level: 'info' | 'warn', fields: object, msg: string): void;
}

export class PeerGate {
  private readonly refusalLog: LogBudget;

  constructor(private readonly host: PeerGateHost) {
    this.refusalLog = new LogBudget(
      { info: (fields, msg) => host.log('info', fields, msg ?? ''), warn: (fields, msg) => host.log('warn', fields, msg ?? '') },
      refusalLogLines.lines,
      refusalLogLines.windowMs,
    );
  }

  isMember(id: number): boolean {
    return this.host.state().members.has(id) || isMember(this.host.conf(), id);
  }

  /** Every member by the same rule, ascending: the transport serves the data channel to these only. */
  memberIds(): number[] {
    const conf = this.host.conf();
    const ids = new Set([...this.host.state().members.keys(), ...conf.voters, ...conf.learners]);
    return [...ids].sort((a, b) => a - b);
  }

  /** Throws (the peer gets a remote_error) when from may not make this request; logs the refusal. */
  checkRequest(from: number, request: PeerRequest): void {
    const kind = request?.kind;
    if (kind !== 'propose' && kind !== 'forget' && kind !== 'join') return;
    if (this.isMember(from)) return;
    if (kind === 'join' && request.id === from) return;
    this.refusalLog.warn({ from, request: kind }, 'metadata: request from a node that is not a member refused');
    throw new Error(`node ${from} is not a member of this cluster`);
  }

  /** False (and logged) for a Raft message that names another sender than the connection authenticated. */
  raftSenderMatches(from: number, claimed: unknown): boolean {
    if (claimed === from) return true;
    this.refusalLog.warn({ from, claimed }, 'metadata: raft message under another node id dropped');
    return false;
  }

  /** On the leader, once a peer's proposal is decided: a line for a user or grant change. The node the client
   *  called writes the spec's audit line with the status the client got; this one names the proposing node. */
  peerProposalDecided(from: number, command: MetadataCommand, reply: ProposeReply): void {
    const target = userChangeTarget(command);
    if (target === null) return;
    const outcome = reply.ok ? { outcome: 'committed', index: reply.index } : { outcome: 'refused', refusal: reply.refusal.id };
    this.host.log('info', { event: command.type, target, proposer: from, ...outcome }, 'metadata: user change proposed by another node');
  }
}
