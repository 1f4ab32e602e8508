// Goal: under any interleaving of produce, consume, ack/extend/nack (of held and stale handles), time, PATCH of the
// caps, retention and restarts, the partition actor loses no message, gives each message one lease holder at a
// time, never redelivers an acked message within one run of the actor, holds both caps, and never leaves a waiter
// asleep while a message is deliverable. Method: a seeded workload drives PartitionActor through a fake shell (one
// timer, a lagging ack-log flush) and checks every effect against an independent shadow model; a final drain
// acks everything. A failure names SEED=<n>; see test/sim/README.md to replay it.
import t from 'tap';
import { createHash } from 'node:crypto';
import {
  PartitionActor,
  type AckState,
  type ActorConfig,
  type Lease,
  type PartitionCommand,
  type PartitionEffect,
} from '../../workers/core/partition_actor.js';
import { Prng } from '../helpers/prng.js';
import { seededRuns } from '../helpers/seeded_runs.js';

const seedCount = 20;
const stepsPerSeed = 4000;
const visibilityTimeoutChoicesMs = [100, 250, 1000];
/** Handles the fake consumers keep after they stop being valid, to settle them again later (they must get 410). */
const staleHandlesMax = 64;
const heldHandlesMax = 256;


class SimFailure extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new SimFailure(message);
}

/**
 * What the actor should look like, kept the simple way: a lease is live while its deadline is after the time, and
 * an offset in [frontier, cursor) that is neither acked nor live-leased is deliverable again.
 */
class ShadowModel {
  oldestOffset = 0;
  highWatermark = 0;
  frontier = 0;
  cursor = 0;
  readonly ackedAbove = new Set<number>();
  readonly leases = new Map<number, { nonce: string; deadlineMs: number }>();

  constructor(public config: ActorConfig) {}

  restore(oldestOffset: number, highWatermark: number, state: AckState): void {
    this.oldestOffset = oldestOffset;
    this.highWatermark = highWatermark;
    this.leases.clear();
    this.ackedAbove.clear();
    this.frontier = Math.max(state.frontier, oldestOffset);
    let ackedMax = -1;
    for (const offset of state.acked) {
      if (offset < this.frontier) continue;
      this.ackedAbove.add(offset);
      ackedMax = Math.max(ackedMax, offset);
    }
    this.advanceFrontier();
    this.cursor = Math.max(this.frontier, ackedMax + 1);
  }

  isLive(offset: number, atMs: number): boolean {
    const lease = this.leases.get(offset);
    return lease !== undefined && lease.deadlineMs > atMs;
  }

  liveCount(atMs: number): number {
    let live = 0;
    for (const lease of this.leases.values()) if (lease.deadlineMs > atMs) live += 1;
    return live;
  }

  earliestLiveDeadlineMs(atMs: number): number | null {
    let earliest: number | null = null;
    for (const lease of this.leases.values()) {
      if (lease.deadlineMs > atMs && (earliest === null || lease.deadlineMs < earliest)) earliest = lease.deadlineMs;
    }
    return earliest;
  }

  /** Offsets delivered before (below the cursor) that are free to deliver again at atMs. */
  redeliverable(atMs: number): number {
    let count = 0;
    for (let offset = this.frontier; offset < this.cursor; offset++) {
      if (!this.ackedAbove.has(offset) && !this.isLive(offset, atMs)) count += 1;
    }
    return count;
  }

  /** How many offsets a take could lease at atMs under the caps. */
  deliverable(atMs: number): number {
    const room = Math.max(0, this.config.maxInFlightPerPartition - this.liveCount(atMs));
    const fresh = this.ackedAbove.size < this.config.maxAckedAheadPerPartition ? this.highWatermark - this.cursor : 0;
    return Math.min(room, this.redeliverable(atMs) + fresh);
  }

  ack(offset: number): void {
    this.leases.delete(offset);
    this.ackedAbove.add(offset);
    this.advanceFrontier();
  }

  retain(oldestOffset: number): void {
    this.oldestOffset = oldestOffset;
    for (const offset of [...this.leases.keys()]) if (offset < oldestOffset) this.leases.delete(offset);
    if (this.frontier < oldestOffset) this.frontier = oldestOffset;
    for (const offset of [...this.ackedAbove]) if (offset < this.frontier) this.ackedAbove.delete(offset);
    this.cursor = Math.max(this.cursor, oldestOffset);
    this.advanceFrontier();
  }

  private advanceFrontier(): void {
    while (this.ackedAbove.delete(this.frontier)) this.frontier += 1;
  }
}

interface SimResult {
  traceHash: string;
  highWatermark: number;
  /** What the workload reached before the drain, to see that a seed exercised the interesting paths. */
  counts: Record<string, number>;
}

class Simulation {
  private readonly rng: Prng;
  private nowMs = 0;
  /** When the actor last handled a command: the actor's lazily expired leases count as live until then. */
  private lastCommandMs = 0;
  private config: ActorConfig;
  private actor: PartitionActor;
  private readonly model: ShadowModel;
  /** The fake shell's one timer, as last armed by scheduleTimer; null when none is armed. */
  private timerAtMs: number | null = null;
  /** A consumer waits on this partition (a take came back short) and no 'available' has woken it since. */
  private waiting = false;
  /** The ack log as flushed; the shell writes it in the background, so it may lag the actor's ack state. */
  private persisted: AckState = { frontier: 0, acked: [] };
  private ackStateDirty = false;
  private nonces = 0;
  private readonly seenNonces = new Set<string>();
  private held: Lease[] = [];
  private stale: Lease[] = [];
  private readonly trace = createHash('sha256');
  private step = 0;
  private readonly counts: Record<string, number> = {};
  private lastCommand = '';
  /** The model's deliverable count as the actor saw it before the last command: the base of 'available'. */
  private pendingDeliverableBefore = 0;

  constructor(readonly seed: number) {
    this.rng = new Prng(seed);
    this.config = this.randomConfig();
    this.model = new ShadowModel(this.config);
    this.actor = this.newActor(0, 0, { frontier: 0, acked: [] });
  }

  run(steps: number): SimResult {
    try {
      for (this.step = 0; this.step < steps; this.step++) this.randomStep();
      const counts = { ...this.counts };
      this.drain();
      return { traceHash: this.trace.digest('hex'), highWatermark: this.model.highWatermark, counts };
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      throw new SimFailure(`SEED=${this.seed} step ${this.step} (${this.lastCommand}): ${why}`);
    }
  }

  private count(what: string, n = 1): void {
    this.counts[what] = (this.counts[what] ?? 0) + n;
  }

  private randomConfig(): ActorConfig {
    return {
      visibilityTimeoutMs: this.rng.pick(visibilityTimeoutChoicesMs),
      maxInFlightPerPartition: this.rng.int(1, 8),
      maxAckedAheadPerPartition: this.rng.int(1, 8),
    };
  }

  private newActor(oldestOffset: number, highWatermark: number, state: AckState): PartitionActor {
    const actor = new PartitionActor({
      oldestOffset,
      highWatermark,
      frontier: state.frontier,
      acked: state.acked,
      config: this.config,
      // Nonces stay unique across restarts, as random ones are in production.
      nonceSource: () => `s${++this.nonces}`,
    });
    actor.checkInvariants();
    return actor;
  }

  private randomStep(): void {
    const roll = this.rng.next();
    if (roll < 0.15) this.produce(this.rng.int(1, 5));
    else if (roll < 0.4) this.take(this.rng.int(1, 6));
    else if (roll < 0.68) this.settleHeld();
    else if (roll < 0.73) this.settleStale();
    else if (roll < 0.88) this.advanceTime(this.rng.int(1, Math.ceil(this.config.visibilityTimeoutMs * 1.5)));
    else if (roll < 0.94) this.flushAckState();
    else if (roll < 0.95) this.fireTimerEarly();
    else if (roll < 0.97) this.configure();
    else if (roll < 0.99) this.retain();
    else this.restart();
  }

  private produce(count: number): void {
    const highWatermark = this.model.highWatermark + count;
    const effects = this.handle({ kind: 'committed', highWatermark });
    this.model.highWatermark = highWatermark;
    this.checkCommon(effects, false);
  }

  private take(max: number): Lease[] {
    const now = this.nowMs;
    const expected = Math.min(max, this.model.deliverable(now));
    const redeliverable = this.model.redeliverable(now);
    const cursorBefore = this.model.cursor;
    const effects = this.handle({ kind: 'take', max });
    const leased = effects[0];
    check(leased?.kind === 'leased', `take answered ${JSON.stringify(leased)}`);
    const leases = leased.leases;
    check(leases.length === expected, `take ${max} leased ${leases.length}, model expects ${expected}`);
    const redeliveries = Math.min(leases.length, redeliverable);
    leases.forEach((lease, i) => {
      const { offset } = lease;
      check(offset >= this.model.frontier && offset < this.model.highWatermark, `leased ${offset} outside [frontier, hw)`);
      check(offset >= this.model.oldestOffset, `leased ${offset} below the oldest offset`);
      check(!this.model.ackedAbove.has(offset), `leased ${offset} after it was acked`);
      check(!this.model.isLive(offset, now), `leased ${offset} while another lease holds it`);
      check(lease.deadlineMs === now + this.config.visibilityTimeoutMs, `lease ${offset} deadline ${lease.deadlineMs}`);
      check(!this.seenNonces.has(lease.nonce), `nonce ${lease.nonce} reused`);
      if (i < redeliveries) check(offset < cursorBefore, `leased new offset ${offset} while redeliveries wait`);
      else check(offset === cursorBefore + i - redeliveries, `new offset ${offset} out of order`);
      this.seenNonces.add(lease.nonce);
      this.model.leases.set(offset, { nonce: lease.nonce, deadlineMs: lease.deadlineMs });
      this.model.cursor = Math.max(this.model.cursor, offset + 1);
    });
    this.count('delivered', leases.length);
    this.count('redelivered', redeliveries);
    if (leases.length < max) this.count(leases.length === 0 ? 'emptyTakes' : 'shortTakes');
    this.held.push(...leases);
    while (this.held.length > heldHandlesMax) this.retire(this.held.shift());
    if (leases.length < max) this.waiting = true;
    this.checkCommon(effects.slice(1), false);
    return leases;
  }

  /** Settles one to four held leases in one command (a batch ack), now and then one of them twice. */
  private settleHeld(): void {
    if (this.held.length === 0) return;
    const roll = this.rng.next();
    const mode = roll < 0.6 ? 'ack' : roll < 0.8 ? 'extend' : 'nack';
    const picked = Array.from({ length: this.rng.int(1, 4) }, () => this.held[this.rng.int(0, this.held.length - 1)]!);
    if (this.rng.chance(0.1)) picked.push(picked[0]!);
    const statuses = this.settle(picked, mode);
    picked.forEach((lease, i) => {
      const index = this.held.indexOf(lease);
      if (index < 0 || (mode === 'extend' && statuses[i] === 204)) return;
      this.held.splice(index, 1);
      this.retire(lease);
    });
  }

  /** Settles a handle that should be gone: one from earlier, or an invented one. */
  private settleStale(): void {
    const mode = this.rng.pick(['ack', 'extend', 'nack'] as const);
    const invented = { offset: this.rng.int(0, this.model.highWatermark + 2), nonce: `s${this.rng.int(1, this.nonces + 1)}` };
    const lease = this.stale.length > 0 && this.rng.chance(0.7) ? this.rng.pick(this.stale) : invented;
    this.settle([lease], mode);
  }

  private settle(leases: Pick<Lease, 'offset' | 'nonce'>[], mode: 'ack' | 'extend' | 'nack'): number[] {
    const now = this.nowMs;
    const effects = this.handle({ kind: 'settle', leases, mode });
    const settled = effects[0];
    check(settled?.kind === 'settled', `settle answered ${JSON.stringify(settled)}`);
    check(settled.statuses.length === leases.length, `${leases.length} leases settled, ${settled.statuses.length} statuses`);
    // The model settles them one by one, in order: a lease named twice is gone the second time unless extended.
    let acked = false;
    leases.forEach(({ offset, nonce }, i) => {
      const modelLease = this.model.leases.get(offset);
      const valid = modelLease !== undefined && modelLease.nonce === nonce && modelLease.deadlineMs > now;
      const status = settled.statuses[i];
      check(status === (valid ? 204 : 410), `${mode} of ${offset}:${nonce} answered ${status}, model says ${valid ? 204 : 410}`);
      if (valid) {
        if (mode === 'ack') this.model.ack(offset);
        else if (mode === 'nack') this.model.leases.delete(offset);
        else this.model.leases.set(offset, { nonce, deadlineMs: now + this.config.visibilityTimeoutMs });
        acked ||= mode === 'ack';
      }
      this.count(`${mode}${status}`);
    });
    this.checkCommon(effects.slice(1), acked);
    return settled.statuses;
  }

  /** Moves the clock, firing the shell's timer at its armed time on the way (bounded: each firing arms a later one). */
  private advanceTime(deltaMs: number): void {
    const targetMs = this.nowMs + deltaMs;
    for (let firings = 0; this.timerAtMs !== null && this.timerAtMs <= targetMs; firings++) {
      check(firings < 10_000, 'timer keeps firing');
      this.nowMs = Math.max(this.nowMs, this.timerAtMs);
      this.timerAtMs = null;
      this.count('timers');
      this.checkCommon(this.handle({ kind: 'timer' }), false);
    }
    this.nowMs = targetMs;
    this.checkWaiter();
  }

  /** The shell's timer may fire before its time (clock skew, a timer shared by partitions): it is spent anyway. */
  private fireTimerEarly(): void {
    if (this.timerAtMs === null) return;
    this.timerAtMs = null;
    this.count('earlyTimers');
    this.checkCommon(this.handle({ kind: 'timer' }), false);
  }

  private flushAckState(): void {
    if (!this.ackStateDirty) return;
    this.persisted = this.actor.ackState();
    this.ackStateDirty = false;
  }

  private configure(): void {
    this.config = this.randomConfig();
    const effects = this.handle({ kind: 'configure', config: this.config });
    this.model.config = this.config;
    this.checkCommon(effects, false);
  }

  private retain(): void {
    const span = this.model.highWatermark - this.model.oldestOffset;
    const oldestOffset = this.model.oldestOffset + this.rng.int(0, Math.min(span, 12));
    const frontierMoves = this.model.frontier < oldestOffset;
    if (oldestOffset > this.model.frontier) this.count('retentionPastFrontier');
    if (oldestOffset > this.model.cursor) this.count('retentionPastCursor');
    const effects = this.handle({ kind: 'retained', oldestOffset });
    this.model.retain(oldestOffset);
    this.checkCommon(effects, frontierMoves);
  }

  /** The worker dies and comes back: no lease survives, the ack log (maybe behind) decides what is acked. */
  private restart(): void {
    this.count('restarts');
    this.lastCommand = `restart from ${JSON.stringify(this.persisted)}`;
    this.trace.update(`${this.step} ${this.nowMs} ${this.lastCommand}\n`);
    const { oldestOffset, highWatermark } = this.model;
    this.actor = this.newActor(oldestOffset, highWatermark, this.persisted);
    this.model.restore(oldestOffset, highWatermark, this.persisted);
    this.stale.push(...this.held);
    this.held = [];
    this.stale = this.stale.slice(-staleHandlesMax);
    this.timerAtMs = null;
    this.waiting = false;
    this.ackStateDirty = false;
    this.checkState();
  }

  /** Long run of time, takes and acks: everything committed and not deleted must end up acked. */
  private drain(): void {
    this.lastCommand = 'drain';
    const roundsMax = this.model.highWatermark - this.model.frontier + 10;
    for (let round = 0; this.actor.lag() > 0; round++) {
      check(round < roundsMax, `drain stuck at lag ${this.actor.lag()}: ${JSON.stringify(this.actor.stats())}`);
      // Past every deadline, including leases taken or extended under a longer timeout before a PATCH.
      this.advanceTime(Math.max(...visibilityTimeoutChoicesMs) + 1);
      const leases = this.take(100);
      check(leases.length > 0, `nothing deliverable at lag ${this.actor.lag()}: a message is lost: ${JSON.stringify(this.actor.stats())}`);
      for (const lease of leases) check(this.settle([lease], 'ack')[0] === 204, `drain ack of ${lease.offset}`);
      this.held = [];
    }
    check(this.model.frontier === this.model.highWatermark, `model frontier ${this.model.frontier} != hw ${this.model.highWatermark}`);
    check(this.take(100).length === 0, 'something left after the drain');
  }

  private handle(cmd: PartitionCommand): PartitionEffect[] {
    this.lastCommand = JSON.stringify(cmd);
    const deliverableBefore = this.model.deliverable(this.lastCommandMs);
    const effects = this.actor.handle(cmd, this.nowMs);
    this.trace.update(`${this.step} ${this.nowMs} ${this.lastCommand} ${JSON.stringify(effects)}\n`);
    this.lastCommandMs = this.nowMs;
    this.pendingDeliverableBefore = deliverableBefore;
    return effects;
  }

  /**
   * Checks the effects after the answer: ackStateChanged exactly when the ack state moved, available exactly for
   * what became deliverable under the caps, scheduleTimer for the earliest live deadline; then the whole state.
   */
  private checkCommon(effects: PartitionEffect[], ackStateMoves: boolean): void {
    const now = this.nowMs;
    const changed = effects.filter((e) => e.kind === 'ackStateChanged').length;
    check(changed === (ackStateMoves ? 1 : 0), `ackStateChanged ${changed} times, model expects ${ackStateMoves ? 1 : 0}`);
    if (changed > 0) this.ackStateDirty = true;
    const gained = Math.max(0, this.model.deliverable(now) - this.pendingDeliverableBefore);
    const available = effects.filter((e) => e.kind === 'available');
    check(available.length <= 1, 'available twice');
    const announced = available[0]?.kind === 'available' ? available[0].count : 0;
    check(announced === gained, `available ${announced}, model expects ${gained}`);
    if (announced > 0) this.waiting = false;
    for (const effect of effects) {
      if (effect.kind === 'leased' || effect.kind === 'settled') throw new SimFailure(`unexpected ${effect.kind}`);
      if (effect.kind !== 'scheduleTimer') continue;
      check(effect.atMs > now, `timer armed at ${effect.atMs}, now ${now}`);
      check(effect.atMs === this.model.earliestLiveDeadlineMs(now), `timer armed at ${effect.atMs}, earliest deadline ${this.model.earliestLiveDeadlineMs(now)}`);
      this.timerAtMs = effect.atMs;
    }
    const earliestMs = this.model.earliestLiveDeadlineMs(now);
    if (earliestMs !== null) {
      check(this.timerAtMs !== null && this.timerAtMs <= earliestMs, `timer at ${this.timerAtMs} misses the deadline ${earliestMs}`);
    }
    this.checkState();
    this.checkWaiter();
  }

  /** No lost wakeup: a waiting consumer means nothing is deliverable. */
  private checkWaiter(): void {
    if (this.waiting) check(this.model.deliverable(this.nowMs) === 0, `a waiter sleeps while ${this.model.deliverable(this.nowMs)} are deliverable`);
  }

  private checkState(): void {
    this.actor.checkInvariants();
    const stats = this.actor.stats();
    const { model } = this;
    check(stats.oldestOffset === model.oldestOffset, `oldestOffset ${stats.oldestOffset} != ${model.oldestOffset}`);
    check(stats.highWatermark === model.highWatermark, `highWatermark ${stats.highWatermark} != ${model.highWatermark}`);
    check(stats.frontier === model.frontier, `frontier ${stats.frontier} != ${model.frontier}`);
    check(stats.cursor === model.cursor, `cursor ${stats.cursor} != ${model.cursor}`);
    check(stats.acked === model.ackedAbove.size, `acked ${stats.acked} != ${model.ackedAbove.size}`);
    check(stats.leases === model.liveCount(this.lastCommandMs), `leases ${stats.leases} != ${model.liveCount(this.lastCommandMs)}`);
    check(this.actor.lag() === model.highWatermark - model.frontier, `lag ${this.actor.lag()}`);
    const ackState = this.actor.ackState();
    check(ackState.frontier === model.frontier && ackState.acked.length === model.ackedAbove.size, 'ack state differs');
    for (const offset of ackState.acked) check(model.ackedAbove.has(offset), `ack state has ${offset}`);
  }

  private retire(lease: Lease | undefined): void {
    if (lease === undefined) return;
    this.stale.push(lease);
    if (this.stale.length > staleHandlesMax) this.stale.shift();
  }
}

seededRuns(t, {
  file: 'dist/test/sim/partition_actor.test.js',
  seedCount,
  stepsPerSeed,
  simulate: (seed, steps) => new Simulation(seed).run(steps),
  check: (t, seed, result) => t.ok(result.highWatermark > 0, `SEED=${seed}: hw ${result.highWatermark}, ${JSON.stringify(result.counts)}`),
});
