// Goal: the lease table's building blocks hold on their own: the deadline heap orders and rebuilds, lazy deletion
// stays bounded under extend and ack churn, restore rebuilds the offset partition (acked / leased / queued) from an
// ack state, settle never lets a lease at its deadline win even when expire was not called first, and the delivery
// window (a ring of slots by offset) grows far past its first 64 slots without losing or repeating an ack, and
// shrinks back once the window is small again.
// Method: drive DeadlineHeap and LeaseTable directly with literal times and nonces; no actor, no shell; for the window,
// a seeded workload with caps in the hundreds against a record of which offsets were acked.
import t from 'tap';
import { DeadlineHeap, LeaseTable, type ActorConfig } from '../../workers/core/lease_table.js';
import { Prng } from '../helpers/prng.js';

const config: ActorConfig = { visibilityTimeoutMs: 1000, maxInFlightPerPartition: 8, maxAckedAheadPerPartition: 8 };

function counter(): () => string {
  let n = 0;
  return () => `n${++n}`;
}

t.test('deadline heap pops by deadline, then by offset, whatever the push order', async (t) => {
  const heap = new DeadlineHeap();
  const pushed = [
    { deadlineMs: 30, offset: 1 },
    { deadlineMs: 10, offset: 9 },
    { deadlineMs: 20, offset: 4 },
    { deadlineMs: 10, offset: 2 },
    { deadlineMs: 50, offset: 0 },
    { deadlineMs: 20, offset: 3 },
  ];
  for (const p of pushed) heap.push({ ...p, nonce: 'x' });
  t.ok(heap.isOrdered());
  const popped: [number, number][] = [];
  for (let entry = heap.pop(); entry !== undefined; entry = heap.pop()) popped.push([entry.deadlineMs, entry.offset]);
  t.same(popped, [[10, 2], [10, 9], [20, 3], [20, 4], [30, 1], [50, 0]]);
  t.equal(heap.size, 0);
  t.equal(heap.pop(), undefined);
  heap.rebuild(pushed.map((p) => ({ ...p, nonce: 'y' })));
  t.ok(heap.isOrdered(), 'rebuild restores the heap order');
  t.equal(heap.peek()?.offset, 2);
});

t.test('deadline heap against a sorted list: 2,000 seeded pushes and pops, interleaved, rebuilds, then emptied', async (t) => {
  const prng = new Prng(12345);
  const random = (n: number): number => prng.int(0, n - 1);
  const heap = new DeadlineHeap();
  const reference: { deadlineMs: number; offset: number }[] = [];
  const order = (a: { deadlineMs: number; offset: number }, b: { deadlineMs: number; offset: number }): number => a.deadlineMs - b.deadlineMs || a.offset - b.offset;
  let mismatches = 0;
  for (let step = 0; step < 2_000; step++) {
    if (random(3) < 2) {
      const entry = { deadlineMs: random(50), offset: random(1_000) };
      heap.push({ ...entry, nonce: 'x' });
      reference.push(entry);
      reference.sort(order);
    } else {
      const popped = heap.pop();
      const expected = reference.shift();
      if (popped?.deadlineMs !== expected?.deadlineMs || popped?.offset !== expected?.offset) mismatches++;
    }
    if (step % 500 === 499) heap.rebuild(reference.map((e) => ({ ...e, nonce: 'y' })).reverse());
  }
  t.ok(heap.isOrdered(), 'still a heap');
  t.equal(heap.size, reference.length);
  t.ok(reference.length > 100, `entries left to drain (${reference.length})`);
  // Bounded by the entries left.
  while (reference.length > 0) {
    const popped = heap.pop();
    const expected = reference.shift();
    if (popped?.deadlineMs !== expected?.deadlineMs || popped?.offset !== expected?.offset) mismatches++;
  }
  t.equal(mismatches, 0, 'every pop is the least (deadline, offset) left');
  t.equal(heap.pop(), undefined, 'emptied');
});

t.test('extend churn leaves stale heap entries that compaction keeps bounded', async (t) => {
  const table = new LeaseTable({ oldestOffset: 0, highWatermark: 4, config });
  const leases = table.take(4, 0, counter());
  const statuses = new Set<number>();
  for (let nowMs = 1; nowMs <= 2000; nowMs++) {
    table.expire(nowMs);
    for (const l of leases) statuses.add(table.settle(l.offset, l.nonce, 'extend', nowMs));
    table.checkInvariants();
  }
  t.same([...statuses], [204], 'every extend of a live lease succeeds');
  t.equal(table.earliestDeadlineMs(), 3000);
  t.equal(table.expire(2999), 0, 'no stale entry expires a renewed lease');
  t.equal(table.expire(3000), 4);
});

t.test('restore rebuilds the partition of [frontier, cursor) into acked and redeliverable offsets', async (t) => {
  const table = new LeaseTable({ oldestOffset: 0, highWatermark: 20, frontier: 4, acked: [9, 4, 5, 11, 2], config });
  table.checkInvariants();
  t.same(table.ackState(), { frontier: 6, acked: [9, 11] }, 'contiguous acks move the frontier; acks below it are dropped');
  t.match(table.stats(), { frontier: 6, cursor: 12, redeliveries: 4, acked: 2, leases: 0 });
  t.same(table.take(20, 0, counter()).map((l) => l.offset), [6, 7, 8, 10, 12, 13, 14, 15], 'redeliveries in offset order, then new up to the cap');
});

t.test('a long redelivery queue keeps its order across compaction', async (t) => {
  const roomy = { ...config, maxInFlightPerPartition: 5000, maxAckedAheadPerPartition: 5000 };
  const table = new LeaseTable({ oldestOffset: 0, highWatermark: 3000, config: roomy });
  const leases = table.take(3000, 0, counter());
  // Nack in a shuffled but known order: odd offsets first, then even ones.
  const order = [...leases.filter((l) => l.offset % 2 === 1), ...leases.filter((l) => l.offset % 2 === 0)];
  for (const l of order) table.settle(l.offset, l.nonce, 'nack', 1);
  const again = [...table.take(1500, 2, counter()), ...table.take(1500, 2, counter())];
  table.checkInvariants();
  t.same(again.map((l) => l.offset), order.map((l) => l.offset), 'first nacked, first delivered again');
  t.equal(table.stats().redeliveries, 0);
});

t.test('settle treats a lease at its deadline as gone even without expire', async (t) => {
  const table = new LeaseTable({ oldestOffset: 0, highWatermark: 1, config });
  const [held] = table.take(1, 0, counter());
  if (held === undefined) throw new Error('lease expected');
  t.equal(table.settle(held.offset, held.nonce, 'ack', 1000), 410);
  t.equal(table.settle(held.offset, held.nonce, 'ack', 999), 204);
});

t.test('configuration is validated', async (t) => {
  t.throws(() => new LeaseTable({ oldestOffset: 0, highWatermark: 0, config: { ...config, visibilityTimeoutMs: 0 } }));
  t.throws(() => new LeaseTable({ oldestOffset: 0, highWatermark: 0, config: { ...config, maxAckedAheadPerPartition: 1.5 } }));
  t.throws(() => new LeaseTable({ oldestOffset: 5, highWatermark: 4, config }), 'high watermark below the oldest offset');
  t.throws(() => new LeaseTable({ oldestOffset: 0, highWatermark: 4, frontier: 5, config }), 'frontier above the high watermark');
});

t.test('a window of hundreds of offsets: seeded takes, out-of-order settles, expiry, restore and retention', async (t) => {
  const prng = new Prng(7);
  const total = 6000;
  const wide: ActorConfig = { visibilityTimeoutMs: 50, maxInFlightPerPartition: 700, maxAckedAheadPerPartition: 900 };
  let table = new LeaseTable({ oldestOffset: 0, highWatermark: total, config: wide });
  const nonce = counter();
  let held: { offset: number; nonce: string }[] = [];
  const ackedTimes = new Map<number, number>();
  let retainedBelow = 0;
  let nowMs = 0;
  let widest = 0;
  let largestRing = 0;
  const refused: string[] = [];
  for (let step = 0; step < 3000 && (table.ackState().frontier < total || held.length > 0); step++) {
    nowMs += prng.int(0, 3);
    table.expire(nowMs);
    held = held.filter((lease) => table.settle(lease.offset, lease.nonce, 'extend', nowMs) === 204);
    held.push(...table.take(prng.int(1, 120), nowMs, nonce));
    // Settle a random half, in a shuffled order: acks far from the frontier keep a wide window of acked offsets.
    const settling = held.filter(() => prng.next() < 0.5);
    held = held.filter((lease) => !settling.includes(lease));
    for (const lease of settling.sort(() => prng.next() - 0.5)) {
      const mode = prng.next() < 0.85 ? 'ack' : 'nack';
      const status = table.settle(lease.offset, lease.nonce, mode, nowMs);
      if (status !== 204) refused.push(`${mode} of ${lease.offset} at step ${step}: ${status}`);
      if (mode === 'ack') ackedTimes.set(lease.offset, (ackedTimes.get(lease.offset) ?? 0) + 1);
    }
    const { frontier, cursor } = table.stats();
    widest = Math.max(widest, cursor - frontier);
    largestRing = Math.max(largestRing, table.windowSlots());
    if (step === 400) {
      // A restart: leases are gone, the ack state comes back.
      table = new LeaseTable({ oldestOffset: retainedBelow, highWatermark: total, ...table.ackState(), config: wide });
      held = [];
    }
    if (step === 800) {
      retainedBelow = Math.min(frontier + 300, cursor);
      table.retain(retainedBelow);
      held = held.filter((lease) => lease.offset >= retainedBelow);
    }
    table.checkInvariants();
    // Everything ends acked: time runs fast enough for the held leases to expire now and then.
    if (step > 2000) nowMs += 100;
  }
  t.same(refused, [], 'every settle of a held lease is 204');
  t.ok(widest > 256, `the window grew well past its first 64 slots (widest ${widest}, ring up to ${largestRing})`);
  t.equal(table.windowSlots(), 64, 'once everything is acked the ring is back to its first 64 slots');
  t.equal(table.ackState().frontier, total, 'every offset ends acked or retained away');
  const twice = [...ackedTimes].filter(([, times]) => times > 1).map(([offset]) => offset);
  t.same(twice, [], 'no offset acked twice');
  const missing: number[] = [];
  for (let offset = retainedBelow; offset < total; offset++) if (!ackedTimes.has(offset)) missing.push(offset);
  t.same(missing, [], 'every offset above the retention point was acked');
});
