// The failed-login throttle (spec §5.2, §8, NOTES 11) on the front thread: after auth.failed_login_threshold
// consecutive wrong passwords for an existing user, every attempt for that user is refused with 429 and
// Retry-After, right password or not, except one checked attempt per auth.failed_login_retry_interval, the first
// one interval after the last counted failure; a success resets the count. Users with recent failures also share a
// node budget of password checks (a token bucket). Unknown users are never throttled (they have nothing to guess).
import { errors, type BrokerError } from '../errors.js';

export interface LoginThrottleLimits {
  failedLoginThreshold: number;
  retryIntervalMs: number;
  checkBudget: number;
  checkRefillPerSecond: number;
}

interface FailureRecord {
  consecutiveFailures: number;
  /** While throttled: the earliest time the next password check may run. */
  nextCheckAtMs: number;
}

export class LoginThrottle {
  private readonly failures = new Map<string, FailureRecord>();
  private budgetTokens: number;
  private budgetRefilledAtMs: number;

  constructor(private readonly limits: LoginThrottleLimits, nowMs: number) {
    this.budgetTokens = limits.checkBudget;
    this.budgetRefilledAtMs = nowMs;
  }

  /** True while no user has recent failures: the common case skips every other call. */
  get idle(): boolean {
    return this.failures.size === 0;
  }

  /** Throws 429 when a request for this user may not be answered now; `checking` when bcrypt would run. */
  admit(username: string, checking: boolean, nowMs: number): void {
    const record = this.failures.get(username);
    if (record === undefined) return;
    if (record.consecutiveFailures >= this.limits.failedLoginThreshold) {
      if (nowMs < record.nextCheckAtMs) throw tooManyFailures(record.nextCheckAtMs - nowMs);
      if (checking) record.nextCheckAtMs = nowMs + this.limits.retryIntervalMs;
    }
    if (checking) this.takeBudget(nowMs);
  }

  recordFailure(username: string, nowMs: number): void {
    const record = this.failures.get(username) ?? { consecutiveFailures: 0, nextCheckAtMs: 0 };
    record.consecutiveFailures += 1;
    if (record.consecutiveFailures >= this.limits.failedLoginThreshold) record.nextCheckAtMs = nowMs + this.limits.retryIntervalMs;
    this.failures.set(username, record);
  }

  recordSuccess(username: string): void {
    this.failures.delete(username);
  }

  private takeBudget(nowMs: number): void {
    const refill = ((nowMs - this.budgetRefilledAtMs) / 1000) * this.limits.checkRefillPerSecond;
    this.budgetTokens = Math.min(this.limits.checkBudget, this.budgetTokens + refill);
    this.budgetRefilledAtMs = nowMs;
    if (this.budgetTokens < 1) {
      throw tooManyFailures(((1 - this.budgetTokens) / this.limits.checkRefillPerSecond) * 1000);
    }
    this.budgetTokens -= 1;
  }
}

function tooManyFailures(waitMs: number): BrokerError {
  const seconds = Math.max(1, Math.ceil(waitMs / 1000));
  return errors.tooManyFailedLogins(seconds);
}
