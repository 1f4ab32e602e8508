// Proposals waiting to see their entry applied on this node: by (index, term), because an index proposed under
// one leader may be filled by another leader's entry, and only the same term means the same entry (Raft §5.3 log
// matching). Owned by the metadata shell; no I/O. A waiter ends exactly once: applied, superseded, or timed out.

export type ApplyOutcome = 'applied' | 'superseded' | 'timeout' | 'closed';

interface Waiter {
  term: number;
  deadlineMs: number;
  settle: (outcome: ApplyOutcome) => void;
}

/** How many applied (index, term) pairs are remembered for answers that arrive after their entry was applied. */
const recentTermsKept = 4096;

export class ApplyWaiters {
  private readonly byIndex = new Map<number, Waiter[]>();
  private readonly recentTerms = new Map<number, number>();

  /** Waits for the entry at index; settles at once when it was applied recently (or is too old to tell). */
  wait(index: number, term: number, appliedIndex: number, deadlineMs: number, settle: (outcome: ApplyOutcome) => void): void {
    if (index <= appliedIndex) {
      const appliedTerm = this.recentTerms.get(index);
      // Too old to remember, or applied inside a snapshot: this node cannot tell.
      settle(appliedTerm === undefined ? 'timeout' : appliedTerm === term ? 'applied' : 'superseded');
      return;
    }
    const waiters = this.byIndex.get(index) ?? [];
    waiters.push({ term, deadlineMs, settle });
    this.byIndex.set(index, waiters);
  }

  /** The entry at index was applied with term: its waiters settle. */
  applied(index: number, term: number): void {
    this.recentTerms.set(index, term);
    this.recentTerms.delete(index - recentTermsKept);
    const waiters = this.byIndex.get(index);
    if (waiters === undefined) return;
    this.byIndex.delete(index);
    for (const waiter of waiters) waiter.settle(waiter.term === term ? 'applied' : 'superseded');
  }

  /** A snapshot replaced everything up to index: waiters at or below it cannot tell their entry, so they time out
   *  now with the uncertain answer rather than later. */
  snapshotInstalled(index: number): void {
    for (const [waitIndex, waiters] of this.byIndex) {
      if (waitIndex > index) continue;
      this.byIndex.delete(waitIndex);
      for (const waiter of waiters) waiter.settle('timeout');
    }
  }

  expire(nowMs: number): void {
    for (const [index, waiters] of this.byIndex) {
      const expired = waiters.filter((waiter) => waiter.deadlineMs <= nowMs);
      if (expired.length === 0) continue;
      const kept = waiters.filter((waiter) => waiter.deadlineMs > nowMs);
      if (kept.length === 0) this.byIndex.delete(index);
      else this.byIndex.set(index, kept);
      for (const waiter of expired) waiter.settle('timeout');
    }
  }

  closeAll(): void {
    const all = [...this.byIndex.values()].flat();
    this.byIndex.clear();
    for (const waiter of all) waiter.settle('closed');
  }
}
