// A budget of log lines for what strangers and peers can cause at will (refused handshakes, connections over the
// per-address cap, frames that fail their MAC): without it, a flood of connections writes a line each. A line over
// the budget is counted, not written; the next line written says how many were left out. One per PeerTransport, on
// its thread.
import type { TransportLog } from './connection.js';

export class LogBudget implements TransportLog {
  private windowStartMs = Number.NEGATIVE_INFINITY;
  private written = 0;
  private leftOut = 0;

  constructor(
    private readonly log: TransportLog,
    /** Lines per window; the rest of the window's lines are only counted. */
    private readonly linesPerWindow: number,
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  info(obj: object, msg?: string): void {
    if (this.take()) this.log.info(this.withLeftOut(obj), msg);
  }

  warn(obj: object, msg?: string): void {
    if (this.take()) this.log.warn(this.withLeftOut(obj), msg);
  }

  private take(): boolean {
    const nowMs = this.now();
    if (nowMs - this.windowStartMs >= this.windowMs) {
      this.windowStartMs = nowMs;
      this.written = 0;
    }
    if (this.written >= this.linesPerWindow) {
      this.leftOut += 1;
      return false;
    }
    this.written += 1;
    return true;
  }

  private withLeftOut(obj: object): object {
    if (this.leftOut === 0) return obj;
    const fields = { ...obj, linesLeftOut: this.leftOut };
    this.leftOut = 0;
    return fields;
  }
}
