// What the metadata threads of two nodes say to each other over the node-to-node transport
// (src/transport, metadata channel): one-way messages (Raft's own, and the leader's liveness view) and requests with
// replies (a follower forwarding a write, a joining node asking in, a forget, a readiness check). Plain data only:
// the transport msgpackr-encodes it.
import type { RaftMessage } from './raft_messages.js';
import type { MetadataCommand, ProposalCaller } from './metadata_types.js';
import type { MetadataRefusal } from '../errors.js';

export type PeerMessage =
  | { kind: 'raft'; message: RaftMessage }
  /** Leader -> every member, once a second: how long ago the leader last heard from each node. */
  | { kind: 'liveness'; term: number; heardAgoMs: [number, number][] };

export type PeerRequest =
  /** Follower -> leader: propose this change; answered once it is applied on the leader. caller: the user the
   *  follower authenticated, checked again by the leader (spec §5); a leader of a release without the field ignores
   *  it and so applies only the follower's check (spec §9), and a follower of such a release sends none. */
  | { kind: 'propose'; command: MetadataCommand; caller?: ProposalCaller }
  /** New node -> any node (forwarded to the leader): add me as a learner. */
  | { kind: 'join'; id: number; apiAddress: string; internalAddress: string }
  /** Follower -> leader: forget a dead member (spec §4 forget). */
  | { kind: 'forget'; id: number }
  /** Follower -> leader: your commit index, so this node knows when its replica caught up (spec §4 /readyz). */
  | { kind: 'commitIndex' };

export type ProposeReply =
  | { ok: true; index: number; term: number }
  /** refusal: a catalog id of src/errors.ts; the front answers its status, text and Retry-After. */
  | { ok: false; refusal: MetadataRefusal };

/** A refusal as it crosses nodes: the wire shape every 3.2 release reads (status, text, Retry-After seconds), so
 *  nodes of two releases still understand each other's replies during a rolling upgrade (spec §9). The catalog id
 *  stays on the node that refused; src/raft/shell/peer_replies.ts converts both ways. */
export interface PeerRefusal {
  status: number;
  error: string;
  retryAfterSeconds?: number;
}

/** The answer to a forwarded 'propose' on the wire. */
export type PeerProposeReply = { ok: true; index: number; term: number } | ({ ok: false } & PeerRefusal);

/** The answer to a forwarded 'forget' on the wire: 204 when forgotten. */
export type PeerForgetReply = { status: 204 } | PeerRefusal;

export type JoinReply = { ok: true } | { ok: false; error: string };

/** ok: forgotten (204); else a catalog id of src/errors.ts, answered with its status, text and Retry-After. */
export type ForgetReply = { ok: true } | { ok: false; refusal: MetadataRefusal };

export type CommitIndexReply = { ok: true; commit: number } | { ok: false; error: string };
