// Goal: the failed-login throttle of spec §5.2/§8 and NOTES 11 under a fake clock: 5 failures then 429 with
// Retry-After, one checked attempt per 12 s, a success resets, and the node check budget. Pure; no node.
import t from 'tap';
import { BrokerError } from '../../src/errors.js';
import { LoginThrottle } from '../../src/front/login_throttle.js';

const limits = { failedLoginThreshold: 5, retryIntervalMs: 12_000, checkBudget: 32, checkRefillPerSecond: 4 };

function refusal(fn: () => void): BrokerError | null {
  try {
    fn();
    return null;
  } catch (error) {
    if (error instanceof BrokerError) return error;
    throw error;
  }
}

t.test('five failures lock the user until one check per interval', async (t) => {
  const throttle = new LoginThrottle(limits, 0);
  t.ok(throttle.idle);
  for (let i = 0; i < 4; i++) {
    t.equal(refusal(() => throttle.admit('alice', true, i)), null, `attempt ${i + 1} is checked`);
    throttle.recordFailure('alice', i);
  }
  t.equal(refusal(() => throttle.admit('alice', true, 10)), null, 'fifth attempt is checked');
  throttle.recordFailure('alice', 10);
  const locked = refusal(() => throttle.admit('alice', true, 1_010));
  t.equal(locked?.status, 429);
  t.equal(locked?.headers['Retry-After'], '11');
  t.equal(refusal(() => throttle.admit('alice', false, 5_000))?.status, 429, 'a cached right password is refused too');
  t.equal(refusal(() => throttle.admit('bob', true, 5_000)), null, 'other users are not throttled');
  t.equal(refusal(() => throttle.admit('alice', true, 12_010)), null, 'one check 12 s after the fifth failure');
  t.equal(refusal(() => throttle.admit('alice', true, 12_011))?.status, 429, 'and only one per interval');
  throttle.recordSuccess('alice');
  t.ok(throttle.idle, 'a success resets');
  t.equal(refusal(() => throttle.admit('alice', true, 12_012)), null);
});

t.test('users with recent failures share the node budget', async (t) => {
  const throttle = new LoginThrottle(limits, 0);
  for (let u = 0; u < 40; u++) throttle.recordFailure(`u${u}`, 0);
  let admitted = 0;
  for (let u = 0; u < 40; u++) if (refusal(() => throttle.admit(`u${u}`, true, 0)) === null) admitted++;
  t.equal(admitted, 32, 'the budget holds 32 checks');
  const refused = refusal(() => throttle.admit('u39', true, 0));
  t.equal(refused?.status, 429);
  t.equal(refusal(() => throttle.admit('u39', true, 250)), null, 'refilled at 4 a second');
});
