// Goal: the partition actor follows spec §3 "Lease of a message" row by row, holds both caps (NOTES 12), and emits
// the effects the shell relies on (available only for what the caps let through, scheduleTimer, ackStateChanged).
// Method: drive PartitionActor directly under a fake clock with a counting nonce source; the full invariant walk
// runs after every command.
import t from 'tap';
import { PartitionActor, type ActorConfig, type ActorInit, type Lease, type PartitionCommand, type PartitionEffect } from '../../workers/core/partition_actor.js';

const visibilityTimeoutMs = 1000;
const roomyConfig: ActorConfig = { visibilityTimeoutMs, maxInFlightPerPartition: 100, maxAckedAheadPerPartition: 100 };

/** An actor under a fake clock; every command is followed by the full invariant walk. */
function harness(init: Partial<Omit<ActorInit, 'config'>> & { config?: Partial<ActorConfig> } = {}) {
  let nonces = 0;
  const actor = new PartitionActor({
    oldestOffset: 0,
    highWatermark: 0,
    ...init,
    config: { ...roomyConfig, ...init.config },
    nonceSource: () => `n${++nonces}`,
  });
  actor.checkInvariants();
  let nowMs = 0;
  const h = {
    actor,
    get nowMs() {
      return nowMs;
    },
    at(ms: number) {
      nowMs = ms;
    },
    handle(cmd: PartitionCommand): PartitionEffect[] {
      const effects = actor.handle(cmd, nowMs);
      actor.checkInvariants();
      return effects;
    },
    take(max = 100): Lease[] {
      const leased = h.handle({ kind: 'take', max }).find((e) => e.kind === 'leased');
      if (leased?.kind !== 'leased') throw new Error('take without a leased effect');
      return leased.leases;
    },
    offsets(max = 100): number[] {
      return h.take(max).map((l) => l.offset);
    },
    settle(lease: Pick<Lease, 'offset' | 'nonce'>, mode: 'ack' | 'extend' | 'nack' = 'ack'): number {
      const settled = h.handle({ kind: 'settle', leases: [{ offset: lease.offset, nonce: lease.nonce }], mode }).find((e) => e.kind === 'settled');
      if (settled?.kind !== 'settled') throw new Error('settle without a settled effect');
      return settled.statuses[0]!;
    },
  };
  return h;
}

function availableCount(effects: PartitionEffect[]): number {
  return effects.reduce((sum, e) => sum + (e.kind === 'available' ? e.count : 0), 0);
}

function timers(effects: PartitionEffect[]): number[] {
  return effects.flatMap((e) => (e.kind === 'scheduleTimer' ? [e.atMs] : []));
}

function lease(leases: Lease[], offset: number): Lease {
  const found = leases.find((l) => l.offset === offset);
  if (found === undefined) throw new Error(`no lease for ${offset}`);
  return found;
}

t.test('§3 available -> leased: a consume leases the next message for visibility_timeout_ms', async (t) => {
  const h = harness();
  t.same(h.take(), [], 'nothing committed, nothing leased');
  t.equal(availableCount(h.handle({ kind: 'committed', highWatermark: 2 })), 2, 'a commit wakes waiters');
  h.at(50);
  const effects = h.handle({ kind: 'take', max: 1 });
  t.same(effects, [
    { kind: 'leased', leases: [{ offset: 0, nonce: 'n1', deadlineMs: 50 + visibilityTimeoutMs }] },
    { kind: 'scheduleTimer', atMs: 50 + visibilityTimeoutMs },
  ]);
  t.same(h.offsets(), [1], 'the next consume gets the next message');
  t.same(h.take(), [], 'each message goes to one lease holder at a time');
});

t.test('§3 leased -> settled: an ack answers 204 and the message is never delivered again', async (t) => {
  const h = harness({ highWatermark: 2 });
  const [first, second] = h.take();
  if (first === undefined || second === undefined) throw new Error('two leases expected');
  const effects = h.handle({ kind: 'settle', leases: [{ offset: first.offset, nonce: first.nonce }], mode: 'ack' });
  t.same(effects, [{ kind: 'settled', statuses: [204] }, { kind: 'ackStateChanged' }]);
  t.same(h.actor.ackState(), { frontier: 1, acked: [] });
  t.equal(h.settle(first), 410, 'a settled handle answers 410');
  t.equal(h.settle(first, 'extend'), 410);
  t.equal(h.settle(first, 'nack'), 410);
  h.at(10 * visibilityTimeoutMs);
  t.same(h.offsets(), [1], 'after every deadline passed only the unacked message comes back');
  t.equal(h.settle(second), 410, 'the expired lease of 1 is gone');
});

t.test('§3 leased -> leased: extend renews for a full timeout from now, not from the old deadline', async (t) => {
  const h = harness({ highWatermark: 1 });
  const [held] = h.take();
  if (held === undefined) throw new Error('lease expected');
  t.equal(held.deadlineMs, 1000);
  h.at(900);
  const effects = h.handle({ kind: 'settle', leases: [{ offset: held.offset, nonce: held.nonce }], mode: 'extend' });
  t.same(effects, [{ kind: 'settled', statuses: [204] }, { kind: 'scheduleTimer', atMs: 1900 }], 'no ack state change; the timer moves');
  h.at(1000);
  t.same(availableCount(h.handle({ kind: 'timer' })), 0, 'the old deadline passes without expiry');
  t.same(h.take(), []);
  h.at(1899);
  t.equal(h.settle(held, 'extend'), 204, 'the same handle stays valid and extends again');
  h.at(2898);
  t.equal(h.settle(held), 204, 'acked just before the renewed deadline');
});

t.test('a batch settle is one command: a status per lease in order, one ack state change, one available count', async (t) => {
  const h = harness({ highWatermark: 5 });
  const leases = h.take(5);
  h.at(10);
  const acks = h.handle({ kind: 'settle', mode: 'ack', leases: [
    lease(leases, 0), { offset: 1, nonce: 'not-its-nonce' }, lease(leases, 2), lease(leases, 2), { offset: 9, nonce: 'n1' },
  ] });
  t.same(acks, [{ kind: 'settled', statuses: [204, 410, 204, 410, 410] }, { kind: 'ackStateChanged' }],
    'settled in order: a wrong nonce, a lease named twice and an offset never leased answer 410');
  t.same(h.actor.ackState(), { frontier: 1, acked: [2] });
  const nacks = h.handle({ kind: 'settle', mode: 'nack', leases: [lease(leases, 3), lease(leases, 4)] });
  t.same(nacks, [{ kind: 'settled', statuses: [204, 204] }, { kind: 'available', count: 2 }],
    'two nacks: one available effect counting both');
  t.same(h.offsets(), [3, 4], 'both deliverable again');
});

t.test('§3 leased -> available by nack: the lease ends now and the message is deliverable at once', async (t) => {
  const h = harness({ highWatermark: 1 });
  const [held] = h.take();
  if (held === undefined) throw new Error('lease expected');
  h.at(10);
  const effects = h.handle({ kind: 'settle', leases: [{ offset: held.offset, nonce: held.nonce }], mode: 'nack' });
  t.same(effects, [{ kind: 'settled', statuses: [204] }, { kind: 'available', count: 1 }]);
  const [again] = h.take();
  t.same(again, { offset: 0, nonce: 'n2', deadlineMs: 1010 }, 'delivered again under a new handle, same instant');
  t.equal(h.settle(held), 410, 'the nacked handle is gone');
  t.equal(h.settle({ offset: 0, nonce: 'n2' }), 204);
});

t.test('§3 leased -> available by expiry: redelivered under a new handle, the old one answers 410', async (t) => {
  const h = harness({ highWatermark: 1 });
  const [held] = h.take();
  if (held === undefined) throw new Error('lease expected');
  h.at(999);
  t.same(h.handle({ kind: 'timer' }), [{ kind: 'scheduleTimer', atMs: 1000 }], 'an early timer expires nothing and is re-armed');
  h.at(1000);
  t.same(h.handle({ kind: 'timer' }), [{ kind: 'available', count: 1 }], 'at its deadline the lease runs out');
  const [again] = h.take();
  t.equal(again?.offset, 0);
  t.not(again?.nonce, held.nonce, 'a new handle');
  t.equal(h.settle(held), 410, 'expired handle: ack 410');
  t.equal(h.settle(held, 'extend'), 410, 'expired handle: extend 410');
  t.equal(h.settle(held, 'nack'), 410, 'expired handle: nack 410');
  if (again !== undefined) t.equal(h.settle(again), 204, 'the new handle acks');
});

t.test('expiry is lazy too: with no timer fired, a settle at the deadline is 410 and a take redelivers', async (t) => {
  const h = harness({ highWatermark: 2 });
  const [a, b] = h.take();
  if (a === undefined || b === undefined) throw new Error('two leases expected');
  h.at(1000);
  t.equal(h.settle(a), 410, 'a lease whose deadline is now has run out');
  t.same(h.offsets(), [0, 1], 'both expired in deadline order, then offset order');
  h.at(500);
  t.equal(h.settle({ offset: 0, nonce: 'n3' }), 204, 'a clock stepping back does not shorten or revive anything');
});

t.test('§3 settle of something that is not a live lease: 410, state unchanged', async (t) => {
  const h = harness({ highWatermark: 3 });
  const [held] = h.take(1);
  if (held === undefined) throw new Error('lease expected');
  const before = h.actor.stats();
  t.equal(h.settle({ offset: 0, nonce: 'wrong' }), 410, 'wrong nonce');
  t.equal(h.settle({ offset: 2, nonce: 'n1' }), 410, 'never delivered');
  t.equal(h.settle({ offset: 99, nonce: 'n1' }), 410, 'beyond the high watermark');
  t.equal(h.settle({ offset: -1, nonce: 'n1' }), 410, 'negative offset');
  t.same(h.actor.stats(), before);
  t.equal(h.settle(held), 204);
  t.equal(h.settle({ offset: 0, nonce: 'n1' }, 'extend'), 410, 'below the frontier');
});

t.test('redeliveries go before new offsets, first in first out', async (t) => {
  const h = harness({ highWatermark: 10 });
  const leases = h.take(4);
  h.at(100);
  t.equal(h.settle(lease(leases, 2), 'nack'), 204);
  t.equal(h.settle(lease(leases, 0), 'nack'), 204);
  t.same(h.offsets(3), [2, 0, 4]);
  h.at(1000);
  t.same(h.offsets(3), [1, 3, 5], 'expired leases in deadline order (1 and 3 at 1000), then new offsets');
});

t.test('in-flight cap: nothing new at the cap, neither redelivery nor new offset; a freed slot wakes one', async (t) => {
  const h = harness({ config: { maxInFlightPerPartition: 3 } });
  t.equal(availableCount(h.handle({ kind: 'committed', highWatermark: 10 })), 3, 'available counts only what the cap lets through');
  const leases = h.take();
  t.same(leases.map((l) => l.offset), [0, 1, 2]);
  t.equal(availableCount(h.handle({ kind: 'committed', highWatermark: 20 })), 0, 'a commit at the cap wakes nobody');
  t.equal(h.settle(lease(leases, 2), 'nack'), 204);
  h.handle({ kind: 'configure', config: { ...roomyConfig, maxInFlightPerPartition: 2 } });
  t.same(h.take(), [], 'a queued redelivery waits too while the partition is at the cap');
  const effects = h.handle({ kind: 'settle', leases: [{ offset: 0, nonce: lease(leases, 0).nonce }], mode: 'ack' });
  t.equal(availableCount(effects), 1, 'an ack that frees a slot wakes one waiter');
  t.same(h.offsets(), [2], 'the freed slot goes to the redelivery');
  t.same(h.take(), []);
});

t.test('acked-ahead cap: stops never-delivered offsets only; redelivery proceeds; the frontier ack reopens', async (t) => {
  const h = harness({ highWatermark: 10, config: { maxAckedAheadPerPartition: 2 } });
  const leases = h.take(4);
  t.equal(h.settle(lease(leases, 1)), 204);
  t.equal(h.settle(lease(leases, 2)), 204);
  t.same(h.actor.ackState(), { frontier: 0, acked: [1, 2] });
  t.same(h.take(), [], 'two acked above the frontier: no new offset');
  t.equal(h.actor.stats().deliverable, 0);
  h.at(100);
  const nack = h.handle({ kind: 'settle', leases: [{ offset: 3, nonce: lease(leases, 3).nonce }], mode: 'nack' });
  t.equal(availableCount(nack), 1, 'the nacked message is deliverable');
  t.same(h.offsets(), [3], 'redelivery is never held by the acked-ahead cap');
  h.at(1000);
  const leased = h.take();
  t.same(leased.map((l) => l.offset), [0], 'nor is an expired lease; still no new offset');
  const ack = h.handle({ kind: 'settle', leases: [{ offset: 0, nonce: lease(leased, 0).nonce }], mode: 'ack' });
  t.same(h.actor.ackState(), { frontier: 3, acked: [] });
  t.equal(availableCount(ack), 6, 'the frontier moved past the acks: offsets 4..9 are deliverable');
  t.same(h.offsets(), [4, 5, 6, 7, 8, 9]);
});

t.test('configure lowers the caps while leases are held: those stay valid, new leases obey the new caps', async (t) => {
  const h = harness({ highWatermark: 10, config: { maxInFlightPerPartition: 4 } });
  const leases = h.take();
  t.equal(leases.length, 4);
  h.handle({ kind: 'configure', config: { visibilityTimeoutMs: 5000, maxInFlightPerPartition: 2, maxAckedAheadPerPartition: 1 } });
  t.same(h.take(), [], 'four held, cap two');
  t.equal(h.settle(lease(leases, 1)), 204, 'a lease held before the change still acks');
  t.equal(h.settle(lease(leases, 0)), 204);
  t.same(h.take(), [], 'two held, cap two');
  t.equal(h.settle(lease(leases, 3)), 204, 'acked ahead: 3 (frontier 2)');
  t.same(h.take(), [], 'acked-ahead cap 1 reached: nothing new');
  h.at(1000);
  t.same(h.take().map((l) => [l.offset, l.deadlineMs]), [[2, 6000]], 'the expired lease comes back with the new timeout');
  const raise = h.handle({ kind: 'configure', config: { ...roomyConfig, visibilityTimeoutMs: 5000 } });
  t.equal(availableCount(raise), 6, 'raising the caps wakes waiters for offsets 4..9');
});

t.test('retention: frontier and cursor jump, leases and acks below the oldest offset are dropped', async (t) => {
  const h = harness({ highWatermark: 10 });
  const leases = h.take(5);
  t.equal(h.settle(lease(leases, 1)), 204);
  const effects = h.handle({ kind: 'retained', oldestOffset: 3 });
  t.same(effects, [{ kind: 'ackStateChanged' }]);
  t.same(h.actor.ackState(), { frontier: 3, acked: [] });
  t.equal(h.settle(lease(leases, 0)), 410, 'a lease on a deleted message is gone');
  t.equal(h.settle(lease(leases, 2)), 410);
  t.equal(h.settle(lease(leases, 4)), 204, 'leases above the oldest offset stay');
  t.equal(h.actor.lag(), 7);
  h.handle({ kind: 'retained', oldestOffset: 8 });
  t.match(h.actor.stats(), { oldestOffset: 8, frontier: 8, cursor: 8, leases: 0, acked: 0 });
  t.same(h.offsets(), [8, 9], 'the cursor jumped over deleted messages');
  t.throws(() => h.handle({ kind: 'retained', oldestOffset: 7 }), 'the oldest offset never goes back');
  t.throws(() => h.handle({ kind: 'retained', oldestOffset: 11 }), 'retention never passes the high watermark');
});

t.test('restore from the ack state: acked offsets are never delivered again, the rest are', async (t) => {
  const h = harness({ oldestOffset: 2, highWatermark: 10, frontier: 3, acked: [5, 6, 8], config: { maxAckedAheadPerPartition: 2 } });
  t.match(h.actor.stats(), { frontier: 3, cursor: 9, redeliveries: 3, leases: 0, acked: 3 });
  t.equal(h.actor.lag(), 7);
  const leases = h.take();
  t.same(leases.map((l) => l.offset), [3, 4, 7], 'unacked offsets come back even over the acked-ahead cap; 9 is held by it');
  for (const l of leases) t.equal(h.settle(l), 204);
  t.same(h.actor.ackState(), { frontier: 9, acked: [] });
  t.same(h.offsets(), [9]);
});

t.test('restore tidies an ack state that retention overtook', async (t) => {
  const h = harness({ oldestOffset: 5, highWatermark: 10, frontier: 1, acked: [2, 6, 7] });
  t.same(h.actor.ackState(), { frontier: 5, acked: [6, 7] });
  t.same(h.offsets(), [5, 8, 9]);
  const fresh = harness({ oldestOffset: 4, highWatermark: 6 });
  t.same(fresh.actor.ackState(), { frontier: 4, acked: [] }, 'the frontier defaults to the oldest offset');
  t.throws(() => harness({ highWatermark: 5, acked: [5] }), 'an ack at or above the high watermark is damage');
});

t.test('lag is high watermark minus frontier', async (t) => {
  const h = harness();
  h.handle({ kind: 'committed', highWatermark: 5 });
  t.equal(h.actor.lag(), 5);
  const leases = h.take();
  t.equal(h.actor.lag(), 5, 'leasing is not consuming');
  h.settle(lease(leases, 1));
  t.equal(h.actor.lag(), 5, 'an ack above the frontier does not move it');
  h.settle(lease(leases, 0));
  t.equal(h.actor.lag(), 3);
  t.throws(() => h.handle({ kind: 'committed', highWatermark: 4 }), 'the high watermark never goes back');
});

t.test('scheduleTimer follows the earliest live deadline', async (t) => {
  const h = harness({ highWatermark: 3 });
  t.same(timers(h.handle({ kind: 'take', max: 1 })), [1000]);
  h.at(100);
  t.same(timers(h.handle({ kind: 'take', max: 1 })), [], 'a later deadline does not move the timer');
  h.at(200);
  const [third] = h.take(1);
  if (third === undefined) throw new Error('lease expected');
  t.same(timers(h.handle({ kind: 'settle', leases: [{ offset: 0, nonce: 'n1' }], mode: 'ack' })), [1100], 'the earliest lease ended');
  t.same(timers(h.handle({ kind: 'settle', leases: [{ offset: 1, nonce: 'n2' }], mode: 'nack' })), [1200]);
  t.same(timers(h.handle({ kind: 'settle', leases: [{ offset: third.offset, nonce: third.nonce }], mode: 'ack' })), [], 'no lease: nothing to arm');
  t.same(h.handle({ kind: 'timer' }), [], 'a timer with nothing due is harmless');
});

t.test('take with max 0 leases nothing; bad commands fail stop', async (t) => {
  const h = harness({ highWatermark: 3 });
  t.same(h.take(0), []);
  t.throws(() => h.handle({ kind: 'take', max: -1 }));
  t.throws(() => h.handle({ kind: 'configure', config: { ...roomyConfig, maxInFlightPerPartition: 0 } }));
  t.throws(() => h.actor.handle({ kind: 'timer' }, Number.NaN));
});
