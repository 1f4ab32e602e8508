// Waits on the front's metadata replica reaching an index (issue 41, MOVES.md "Records accepted elsewhere"): a
// worker's durable report and an owner's handedOff carry the metadata index the confirmer had applied; the front
// counts them only once its own replica applied that far, so an ownership change the confirmer skipped records under
// is known here (and their re-send queued) before the ingress log may drop them. Front thread; write_path.ts makes
// one and tells it of every index the replica applies.

export class AppliedIndex {
  private waiters: { index: number; resolve: () => void }[] = [];

  constructor(readonly now: () => number) {}

  /** Resolves once the replica applied index (at once when it has). */
  until(index: number): Promise<void> {
    if (this.now() >= index) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ index, resolve }));
  }

  /** The replica applied more entries. */
  advanced(): void {
    if (this.waiters.length === 0) return;
    const now = this.now();
    const ready = this.waiters.filter((waiter) => waiter.index <= now);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((waiter) => waiter.index > now);
    for (const waiter of ready) waiter.resolve();
  }
}
