// Writes that carry their caller (spec §5: the leader checks the caller again before proposing), held on the leader
// while its applied state cannot yet answer for that caller: a change of the caller's account this leader proposed
// is not applied yet, or the leader has not applied an entry of its own term (entries of an earlier term, not yet
// applied, may change the account). Checked any earlier, a write could be proposed right behind a user.delete or a
// revoke it was never checked against. Held writes are checked and proposed once the state has caught up, in the
// order they came; the wait is one commit round. Owned by the metadata shell; no I/O.
import type { MetadataRefusal } from '../../errors.js';

interface Held {
  username: string;
  deadlineMs: number;
  /** Checks the write again and proposes it (or holds it once more). */
  retry: () => void;
  refuse: (refusal: MetadataRefusal) => void;
}

export class CallerHolds {
  /** Username -> log index of the last change of that account this leader proposed, until applied. */
  private readonly changeAt = new Map<string, number>();
  private held: Held[] = [];
  /** The term of the last entry applied while this node led in that term. */
  private termApplied = -1;

  /** An entry of term was applied while this node led in term: everything before it is applied too. */
  leaderApplied(term: number): void {
    this.termApplied = term;
  }

  /** This leader proposed a change of username's account as the entry at index. */
  userChangeProposed(username: string, index: number): void {
    this.changeAt.set(username, Math.max(index, this.changeAt.get(username) ?? 0));
  }

  /** Whether a write by username can be checked now, by the leader of term that applied up to appliedIndex. */
  ready(username: string, term: number, appliedIndex: number): boolean {
    return this.termApplied === term && appliedIndex >= (this.changeAt.get(username) ?? 0);
  }

  hold(username: string, deadlineMs: number, retry: () => void, refuse: (refusal: MetadataRefusal) => void): void {
    this.held.push({ username, deadlineMs, retry, refuse });
  }

  /** After an apply or a tick: retries what can be checked now; a node that no longer leads refuses what it held
   *  (nothing was proposed, so the client may send again). */
  release(leading: boolean, term: number, appliedIndex: number): void {
    for (const [username, index] of this.changeAt) if (index <= appliedIndex) this.changeAt.delete(username);
    if (this.held.length === 0) return;
    const held = this.held;
    this.held = [];
    for (const write of held) {
      if (!leading) write.refuse({ id: 'noLeader', args: [] });
      else if (this.ready(write.username, term, appliedIndex)) write.retry();
      else this.held.push(write);
    }
  }

  /** A leader that cannot apply its own entries in time cannot commit either: nothing was proposed. */
  expire(nowMs: number): void {
    const expired = this.held.filter((write) => write.deadlineMs <= nowMs);
    if (expired.length === 0) return;
    this.held = this.held.filter((write) => write.deadlineMs > nowMs);
    for (const write of expired) write.refuse({ id: 'noLeader', args: [] });
  }

  closeAll(): void {
    const held = this.held;
    this.held = [];
    for (const write of held) write.refuse({ id: 'metadataLogUnavailable', args: [] });
  }
}
