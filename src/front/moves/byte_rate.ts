// A byte-rate cap shared by the moves one node copies (cluster.move_bytes_per_second): each spend waits until the
// bytes spent so far fit the rate, so the moves together never fetch faster. Front thread; move_runner.ts owns one.

export class ByteRate {
  /** Date.now() at which the bytes spent so far are paid off. */
  private paidUntilMs = 0;

  constructor(private readonly bytesPerSecond: number, private readonly now: () => number = Date.now) {}

  /** How long a spend of bytes now would wait (0 under the rate). */
  waitFor(bytes: number): number {
    const now = this.now();
    this.paidUntilMs = Math.max(this.paidUntilMs, now) + (bytes * 1000) / this.bytesPerSecond;
    // A burst of one second's worth passes at once; beyond it, the spender waits.
    return Math.max(0, this.paidUntilMs - now - 1000);
  }

  async spend(bytes: number): Promise<void> {
    const waitMs = this.waitFor(bytes);
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}
