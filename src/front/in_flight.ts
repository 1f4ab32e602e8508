// Counts requests in flight per identity (user, or client IP with security off) against a cap, for the
// produce and consume limits of spec §8. Front thread; a count is given back when its request is answered.
export class InFlightPerIdentity {
  private readonly counts = new Map<string, number>();

  /** capMax 0 means no cap. Takes `weight` (clamped to the cap, spec §8) or returns false. */
  tryTake(identity: string, weight: number, capMax: number): number | null {
    if (capMax === 0) return 0;
    const taken = Math.min(weight, capMax);
    const current = this.counts.get(identity) ?? 0;
    if (current + taken > capMax) return null;
    this.counts.set(identity, current + taken);
    return taken;
  }

  give(identity: string, taken: number): void {
    if (taken === 0) return;
    const left = (this.counts.get(identity) ?? 0) - taken;
    if (left < 0) throw new Error('in-flight count went below zero');
    if (left === 0) this.counts.delete(identity);
    else this.counts.set(identity, left);
  }
}
