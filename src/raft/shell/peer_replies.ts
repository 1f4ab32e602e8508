// Replies to forwarded metadata requests between the wire shape nodes of every 3.2 release share (status, text,
// Retry-After: PeerRefusal in src/protocol/peer_messages.ts) and this node's catalog refusals. The leader converts
// its refusal to the wire shape when it answers a peer; the follower relays what came as a 'peerRefusal'. Runs on
// the metadata thread.
import { refusalError, specErrorStatuses, type ErrorStatus, type MetadataRefusal } from '../../errors.js';
import type { ForgetReply, PeerForgetReply, PeerProposeReply, PeerRefusal, ProposeReply } from '../../protocol/peer_messages.js';

function peerRefusalOf(refusal: MetadataRefusal): PeerRefusal {
  const error = refusalError(refusal);
  const retryAfter = error.headers['Retry-After'];
  return retryAfter === undefined
    ? { status: error.status, error: error.message }
    : { status: error.status, error: error.message, retryAfterSeconds: Number(retryAfter) };
}

/** What a peer's refusal becomes here; one this release cannot answer as it came is a 500 naming the leader's text. */
function refusalOfPeer(raw: Partial<PeerRefusal>): MetadataRefusal {
  const status = raw.status as ErrorStatus;
  const error = typeof raw.error === 'string' ? raw.error : 'the leader refused without a reason';
  if (!specErrorStatuses.includes(status) || status < 400) return { id: 'peerRefusal', args: [500, `leader answered ${String(raw.status)}: ${error}`] };
  const retryAfterSeconds = raw.retryAfterSeconds;
  if (typeof retryAfterSeconds !== 'number' || !Number.isSafeInteger(retryAfterSeconds) || retryAfterSeconds < 0) {
    return { id: 'peerRefusal', args: [status, error] };
  }
  return { id: 'peerRefusal', args: [status, error, retryAfterSeconds] };
}

export function proposeReplyToPeer(reply: ProposeReply): PeerProposeReply {
  return reply.ok ? reply : { ok: false, ...peerRefusalOf(reply.refusal) };
}

export function proposeReplyFromPeer(raw: unknown): ProposeReply {
  const reply = (raw ?? {}) as Partial<PeerProposeReply> & Partial<PeerRefusal>;
  if (reply.ok === true && Number.isSafeInteger(reply.index) && Number.isSafeInteger(reply.term)) {
    return { ok: true, index: reply.index as number, term: reply.term as number };
  }
  return { ok: false, refusal: refusalOfPeer(reply) };
}

export function forgetReplyToPeer(reply: ForgetReply): PeerForgetReply {
  return reply.ok ? { status: 204 } : peerRefusalOf(reply.refusal);
}

export function forgetReplyFromPeer(raw: unknown): ForgetReply {
  const reply = (raw ?? {}) as Partial<PeerRefusal>;
  return reply.status === 204 ? { ok: true } : { ok: false, refusal: refusalOfPeer(reply) };
}
