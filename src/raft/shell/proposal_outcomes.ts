// How long a metadata write may wait, and what a client is told when it cannot be confirmed: shared by the shell's
// write path and its membership changes. Spec §7/§8: "leader unreachable" and "committed but unconfirmed" both carry
// Retry-After: 2, and an entry that may still commit must never be answered "nothing changed".
import type { ProposeReply } from '../../protocol/peer_messages.js';
import { assertNever } from '../../protocol/thread_messages.js';
import type { ApplyOutcome } from './apply_waiters.js';

/** How long a write waits to be applied (or forwarded and applied) before it is answered 503. */
export const proposalTimeoutMs = 5_000;
/** A follower waits for the leader's answer a little longer than the leader waits for its commit, so a leader that
 *  could not commit says so instead of the follower guessing "unreachable". */
export const forwardTimeoutMs = proposalTimeoutMs + 2_000;
export const leaderUnreachableRetryAfterSeconds = 2;
/** A forget on the leader waits for two entries (the Raft seat, then the member record); a follower forwarding it
 *  waits for both and some slack. */
export const forgetForwardTimeoutMs = 2 * proposalTimeoutMs + 2_000;

export function applyFailure(outcome: Exclude<ApplyOutcome, 'applied'>): Extract<ProposeReply, { ok: false }> {
  switch (outcome) {
    case 'superseded':
      return { ok: false, status: 503, error: 'leadership changed before the change committed; nothing changed', retryAfterSeconds: 1 };
    case 'timeout':
      return { ok: false, status: 503, error: 'the change was not confirmed within 5 s (no quorum?); read back before resending', retryAfterSeconds: leaderUnreachableRetryAfterSeconds };
    case 'closed':
      // The entry is in the log and may still commit elsewhere: the client must not resend blindly.
      return { ok: false, status: 503, error: 'this node stopped before it could confirm the change: it may be committed; read back, do not resend', retryAfterSeconds: leaderUnreachableRetryAfterSeconds };
    default:
      return assertNever(outcome);
  }
}
