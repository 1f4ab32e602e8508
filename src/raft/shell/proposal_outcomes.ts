// How long a metadata write may wait, and which refusal a client gets when it cannot be confirmed: shared by the
// shell's write path and its membership changes. An entry that may still commit must never be answered "nothing
// changed"; the texts and Retry-After of the refusals are the catalog's (src/errors.ts).
import type { ProposeReply } from '../../protocol/peer_messages.js';
import { assertNever } from '../../protocol/thread_messages.js';
import type { ApplyOutcome } from './apply_waiters.js';

/** How long a write waits to be applied (or forwarded and applied) before it is answered 503. */
export const proposalTimeoutMs = 5_000;
/** A follower waits for the leader's answer a little longer than the leader waits for its commit, so a leader that
 *  could not commit says so instead of the follower guessing "unreachable". */
export const forwardTimeoutMs = proposalTimeoutMs + 2_000;
/** A forget on the leader waits for two entries (the Raft seat, then the member record); a follower forwarding it
 *  waits for both and some slack. */
export const forgetForwardTimeoutMs = 2 * proposalTimeoutMs + 2_000;

export function applyFailure(outcome: Exclude<ApplyOutcome, 'applied'>): Extract<ProposeReply, { ok: false }> {
  switch (outcome) {
    case 'superseded':
      return { ok: false, refusal: { id: 'leadershipChanged', args: [] } };
    case 'timeout':
      return { ok: false, refusal: { id: 'changeUnconfirmed', args: [] } };
    case 'closed':
      // The entry is in the log and may still commit elsewhere: the client must not resend blindly.
      return { ok: false, refusal: { id: 'stoppedUnconfirmed', args: [] } };
    default:
      return assertNever(outcome);
  }
}
