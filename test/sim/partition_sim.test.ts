// Goal: the partition write core and read core together keep the write path's promises under any interleaving of
// produce, metadata lag, flush and sync completions (slow syncs, segment rolls), retention, consumes, cursor moves,
// ack-state sync waits and crashes that lose the unsynced tail: oldest <= high watermark <= next offset, nothing
// reported durable is ever lost, an offset a consumer has seen never changes meaning, and no cursor is persisted above
// the synced offset. Method: one fake clock, a simulated disk (partition_disk.ts), a front that keeps an ingress log
// and replays it after a crash from at or below its last 'durable' seq, and a shell that performs every effect of
// PartitionWriteCore and PartitionActor with seeded delays. A failure names SEED=<n>; see test/sim/README.md.
import t from 'tap';
import { createHash, type Hash } from 'node:crypto';
import { PartitionActor, type Lease } from '../../workers/core/partition_actor.js';
import { PartitionWriteCore, type WriteCommand, type WriteEffect, type WriteTimer } from '../../workers/core/partition_write_core.js';
import { Prng } from '../helpers/prng.js';
import { seededRuns } from '../helpers/seeded_runs.js';
import { SimLog, type IngressKey } from './partition_disk.js';

const seedCount = 20;
const stepsPerSeed = 3000;
/** Partitions 0-2 are topic A's; partition 3 is topic B, deleted now and then and created again (a new topic id,
 *  so a new log: a recreated topic never inherits old records). */
const partitionCount = 4;
const topicBPartition = 3;
const retentionMs = 400;
const cursorName = 'copy';

class SimFailure extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new SimFailure(message);
}

/** One ingress log entry as the front wrote it: the records' partitions in order. */
interface Entry {
  seq: number;
  metaIndex: number;
  timestampMs: number;
  partitions: number[];
  /** Which incarnation of topic B the entry's records for it belong to. */
  topicBGeneration: number;
}

interface SimDispatch {
  metaIndex: number;
  lastSeq: number;
  entries: Entry[];
}

type Effect = WriteEffect<SimLog, SimDispatch>;

interface Pending {
  atMs: number;
  id: number;
  what: string;
  run: () => void;
}

class Simulation {
  private readonly prng: Prng;
  private readonly trace: Hash = createHash('sha256');
  private nowMs = 0;
  private step = 0;
  private readonly logs: SimLog[] = [];
  private core!: PartitionWriteCore<SimLog, SimDispatch>;
  private actors: PartitionActor[] = [];
  private pending: Pending[] = [];
  private nextPendingId = 1;
  private timers = new Map<WriteTimer, number>();
  private waiters = new Map<number, { log: SimLog; highWatermark: number }>();
  private nextWaiter = 1;
  private nonce = 0;
  /** The front: its ingress log, the metadata index it judges produces at, and the last 'durable' it heard. */
  private readonly ingress: Entry[] = [];
  private frontMetaIndex = 0;
  private workerMetaIndex = 0;
  private durableSeq = -1;
  /** The last 'durable' of this run of the worker: monotonic between crashes. */
  private durableSeqSinceBoot = -1;
  /** Per partition, the ingress keys of its records in ingress order: offset o must always hold expected[o]. */
  private readonly expected: IngressKey[][] = [];
  /** Per partition, how many of expected have a seq at or below durableSeq. */
  private readonly durableCount: number[] = [];
  /** `${partition}:${offset}` -> the record a consumer saw there. */
  private readonly seen = new Map<string, IngressKey>();
  private flushing = false;
  private topicBGeneration = 0;
  /** Logs a sync round is syncing, and deleted logs: neither may be destroyed, nor named again, early. */
  private readonly syncing = new Set<SimLog>();
  private readonly deleted = new Set<SimLog>();
  private retaining = false;
  private drained = false;
  readonly counts = { produced: 0, leased: 0, crashes: 0, durable: 0, syncs: 0, retained: 0, cursorPersists: 0, waits: 0, deletions: 0 };

  constructor(readonly seed: number) {
    this.prng = new Prng(seed);
    for (let p = 0; p < partitionCount; p++) {
      this.logs.push(new SimLog(p));
      this.expected.push([]);
      this.durableCount.push(0);
    }
    this.boot();
  }

  run(steps: number): { traceHash: string; counts: Simulation['counts'] } {
    try {
      for (this.step = 0; this.step < steps; this.step++) {
        this.stepOnce();
        this.checkInvariants();
      }
      this.shutdown();
    } catch (error) {
      const message = error instanceof Error ? (error.stack ?? error.message) : String(error);
      throw new SimFailure(`step ${this.step} at ${this.nowMs} ms: ${message}`);
    }
    return { traceHash: this.trace.digest('hex'), counts: this.counts };
  }

  private stepOnce(): void {
    const roll = this.prng.next();
    if (roll < 0.3) return this.produce();
    if (roll < 0.36) return this.replicaAdvance();
    if (roll < 0.5) return this.consume();
    if (roll < 0.54) return this.cursorMove();
    if (roll < 0.56) return this.syncWait();
    if (roll < 0.563) return this.crash();
    if (roll < 0.566) return this.topicBDelete();
    this.advance();
  }

  /** Worker start: opens every log at what survived, restores cursors, replays the ingress log. */
  private boot(): void {
    this.core = new PartitionWriteCore({ flushIntervalMs: this.prng.pick([0, 0, 5]), syncIntervalMs: this.prng.pick([0, 10, 30]), retentionCheckIntervalMs: 100 });
    this.actors = this.logs.map((log) => this.actorNew(log));
    for (const log of this.logs) {
      for (const cursor of log.persistedCursors) check(cursor.offset <= log.highWatermark, `p${log.partition}: persisted cursor ${cursor.offset} above the recovered end ${log.highWatermark}`);
      this.handle({ kind: 'opened', log, highWatermark: log.highWatermark, cursors: log.persistedCursors });
    }
    this.durableSeqSinceBoot = -1;
    this.handle({ kind: 'start' });
    this.handle({ kind: 'replicaAdvanced', appliedIndex: this.workerMetaIndex });
  }

  private actorNew(log: SimLog): PartitionActor {
    return new PartitionActor({
      oldestOffset: log.oldestOffset,
      highWatermark: log.highWatermark,
      config: { visibilityTimeoutMs: 50, maxInFlightPerPartition: 20, maxAckedAheadPerPartition: 50 },
      nonceSource: () => `n${this.nonce++}`,
    });
  }

  private produce(): void {
    if (this.prng.chance(0.1)) this.frontMetaIndex += 1;
    const entries: Entry[] = [];
    for (let n = this.prng.int(1, 3); n > 0; n--) {
      const partitions = Array.from({ length: this.prng.int(1, 4) }, () => this.prng.int(0, partitionCount - 1));
      const entry: Entry = { seq: this.ingress.length, metaIndex: this.frontMetaIndex, timestampMs: this.nowMs, partitions, topicBGeneration: this.topicBGeneration };
      this.ingress.push(entry);
      partitions.forEach((p, index) => this.expected[p]!.push({ seq: entry.seq, index }));
      entries.push(entry);
      this.counts.produced += partitions.length;
    }
    this.dispatch(entries);
  }

  private dispatch(entries: Entry[]): void {
    const metaIndex = Math.max(...entries.map((e) => e.metaIndex));
    this.handle({ kind: 'dispatchArrived', dispatch: { metaIndex, lastSeq: entries.at(-1)!.seq, entries } });
  }

  private replicaAdvance(): void {
    if (this.workerMetaIndex >= this.frontMetaIndex) return;
    this.workerMetaIndex += 1;
    this.handle({ kind: 'replicaAdvanced', appliedIndex: this.workerMetaIndex });
  }

  /** A consumer leases from one partition, checks what each offset holds, and acks some of it. */
  private consume(): void {
    const p = this.prng.int(0, partitionCount - 1);
    const actor = this.actors[p]!;
    const leased = actor.handle({ kind: 'take', max: this.prng.int(1, 5) }, this.nowMs).find((e) => e.kind === 'leased');
    const leases: Lease[] = leased?.kind === 'leased' ? leased.leases : [];
    const log = this.logs[p]!;
    for (const lease of leases) {
      check(lease.offset < actor.stats().highWatermark && lease.offset < log.highWatermark, `p${p}: leased ${lease.offset} past what is written`);
      const record = log.recordAt(lease.offset);
      // Retention removed it after the lease: the shell answers the lease gone.
      if (record === undefined) continue;
      this.seeOffset(p, lease.offset, record);
      this.counts.leased += 1;
    }
    const acked = leases.filter(() => this.prng.chance(0.7)).map((l) => ({ offset: l.offset, nonce: l.nonce }));
    if (acked.length > 0) actor.handle({ kind: 'settle', leases: acked, mode: 'ack' }, this.nowMs);
  }

  private seeOffset(p: number, offset: number, key: IngressKey): void {
    const id = `${p}:${offset}`;
    const before = this.seen.get(id);
    check(before === undefined || (before.seq === key.seq && before.index === key.index),
      `p${p}: offset ${offset} held (${before?.seq}, ${before?.index}) and now (${key.seq}, ${key.index})`);
    this.seen.set(id, { seq: key.seq, index: key.index });
  }

  /** A fan-out copy cursor follows the committed records of one partition. */
  private cursorMove(): void {
    const log = this.prng.pick(this.logs);
    // A recreated topic's log is new to the core until records are staged to it: nothing to follow yet.
    if (!this.core.holdsLog(log)) return;
    const highWatermark = this.actors[log.partition]!.stats().highWatermark;
    const from = this.core.cursorOffset(log, cursorName) ?? log.oldestOffset;
    if (from > highWatermark) return;
    this.handle({ kind: 'cursorSet', log, name: cursorName, offset: this.prng.int(from, highWatermark) });
  }

  /** An ack-state write waits until everything the log holds is synced. */
  private syncWait(): void {
    const log = this.prng.pick(this.logs);
    if (!this.core.logUnsynced(log)) return;
    const waiter = this.nextWaiter++;
    this.waiters.set(waiter, { log, highWatermark: log.highWatermark });
    this.counts.waits += 1;
    this.handle({ kind: 'syncWait', waiter });
  }

  /** Time moves to the next completion or timer (or a little when nothing is due), which then runs. */
  private advance(): void {
    let nextMs = this.nowMs + this.prng.int(1, 20);
    let fire: (() => void) | null = null;
    for (const [timer, atMs] of this.timers) {
      if (atMs <= nextMs) {
        nextMs = atMs;
        fire = () => {
          this.timers.delete(timer);
          this.handle({ kind: 'timerFired', timer });
        };
      }
    }
    const event = this.pending.reduce<Pending | null>((a, b) => (a === null || b.atMs < a.atMs || (b.atMs === a.atMs && b.id < a.id) ? b : a), null);
    if (event !== null && event.atMs < nextMs) {
      nextMs = event.atMs;
      fire = () => {
        this.pending = this.pending.filter((e) => e !== event);
        event.run();
      };
    }
    this.nowMs = Math.max(this.nowMs, nextMs);
    fire?.();
  }

  private later(delayMs: number, what: string, run: () => void): void {
    this.pending.push({ atMs: this.nowMs + delayMs, id: this.nextPendingId++, what, run });
  }

  private handle(cmd: WriteCommand<SimLog, SimDispatch>): void {
    const effects = this.core.handle(cmd, this.nowMs);
    this.trace.update(`${this.step} ${this.nowMs} ${describe(cmd)} -> ${effects.map(describe).join(' ')}\n`);
    for (const effect of effects) this.perform(effect);
  }

  private perform(effect: Effect): void {
    switch (effect.kind) {
      case 'stage':
        return this.stage(effect.dispatches);
      case 'append':
        return this.append(effect.logs);
      case 'committed':
        for (const position of effect.logs) {
          check(!this.deleted.has(position.log), `p${position.log.partition}: committed to a deleted log`);
          check(position.highWatermark <= position.log.highWatermark, `p${position.log.partition}: committed past what is written`);
          this.actors[position.log.partition]!.handle({ kind: 'committed', highWatermark: position.highWatermark }, this.nowMs);
        }
        return;
      case 'sync':
        return this.sync(effect.logs);
      case 'durable':
        return this.durable(effect.seqUpTo);
      case 'synced':
        for (const waiter of effect.waiters) {
          const waited = this.waiters.get(waiter);
          check(waited !== undefined, `waiter ${waiter} answered twice`);
          // A deleted topic's log is never synced again; its waiter (an ack write that will be discarded) just goes on.
          check(this.deleted.has(waited.log) || waited.log.syncedOffset >= waited.highWatermark, `p${waited.log.partition}: a sync waiter woke at ${waited.log.syncedOffset} < ${waited.highWatermark}`);
          this.waiters.delete(waiter);
        }
        return;
      case 'retain':
        return this.retain(effect.nowMs);
      case 'persistCursors':
        return this.persistCursors(effect.log, effect.cursors);
      case 'schedule':
        this.timers.set(effect.timer, effect.atMs);
        return;
      case 'cancel':
        this.timers.delete(effect.timer);
        return;
      case 'drained':
        this.drained = true;
        return;
      case 'destroy':
        return this.destroy(effect.logs);
    }
  }

  private stage(dispatches: SimDispatch[]): void {
    const touched = new Set<SimLog>();
    for (const dispatch of dispatches) {
      for (const entry of dispatch.entries) {
        entry.partitions.forEach((p, index) => {
          const log = this.logs[p]!;
          // A deleted topic's records are dropped (the replica no longer holds it); a replay stores nothing twice.
          if (p === topicBPartition && entry.topicBGeneration !== this.topicBGeneration) return;
          if (log.holdsIngress(entry.seq, index)) return;
          log.stage({ seq: entry.seq, index }, entry.timestampMs);
          touched.add(log);
        });
      }
    }
    this.handle({ kind: 'staged', seqUpTo: dispatches.at(-1)!.lastSeq, logs: touched });
  }

  private append(logs: SimLog[]): void {
    check(!this.retaining, 'a flush round while a retention round runs');
    for (const log of logs) check(!this.deleted.has(log), `p${log.partition}: a deleted log flushed`);
    this.flushing = true;
    for (const log of logs) log.flushBegin();
    this.later(this.prng.int(0, 4), 'flush', () => {
      this.flushing = false;
      for (const log of logs) {
        const rolledUpTo = this.prng.chance(0.1) ? this.prng.int(log.syncedOffset, log.highWatermark + log.stagedCount) : null;
        const written = log.flushEnd(rolledUpTo);
        // A deleted topic's log may finish its last flush; what it holds no longer counts.
        if (!this.deleted.has(log)) for (const record of written) this.writtenCheck(log, record.offset, record);
      }
      this.handle({ kind: 'flushDone', logs: logs.map((log) => ({ log, highWatermark: log.highWatermark, syncedOffset: log.syncedOffset })) });
    });
  }

  /** Offsets are given in ingress order with replays skipped, so offset o holds the o-th record of the partition. */
  private writtenCheck(log: SimLog, offset: number, key: IngressKey): void {
    const want = this.expected[log.partition]![offset];
    check(want !== undefined && want.seq === key.seq && want.index === key.index,
      `p${log.partition}: offset ${offset} written as (${key.seq}, ${key.index}), expected (${want?.seq}, ${want?.index})`);
    const seen = this.seen.get(`${log.partition}:${offset}`);
    if (seen !== undefined) this.seeOffset(log.partition, offset, key);
  }

  private sync(logs: SimLog[]): void {
    for (const log of logs) check(!this.deleted.has(log), `p${log.partition}: a deleted log synced`);
    for (const log of logs) this.syncing.add(log);
    const upTo = logs.map((log) => log.highWatermark);
    // Slow sync: sometimes the disk takes far longer than the sync interval.
    const delayMs = this.prng.chance(0.05) ? this.prng.int(50, 300) : this.prng.int(0, 8);
    this.later(delayMs, 'sync', () => {
      logs.forEach((log, i) => log.syncTo(upTo[i]!));
      for (const log of logs) this.syncing.delete(log);
      this.counts.syncs += 1;
      this.handle({ kind: 'syncDone', logs: logs.map((log) => ({ log, highWatermark: log.highWatermark, syncedOffset: log.syncedOffset })) });
    });
  }

  private durable(seqUpTo: number): void {
    check(seqUpTo >= this.durableSeqSinceBoot, `durable ${seqUpTo} after ${this.durableSeqSinceBoot}`);
    check(seqUpTo < this.ingress.length, `durable ${seqUpTo} past every produce`);
    this.durableSeqSinceBoot = seqUpTo;
    // A restarted worker reports replayed seqs again, below what the front heard before the crash: it keeps the most.
    if (seqUpTo < this.durableSeq) return;
    this.durableSeq = seqUpTo;
    this.counts.durable += 1;
    for (let p = 0; p < partitionCount; p++) {
      const expected = this.expected[p]!;
      let count = this.durableCount[p]!;
      while (count < expected.length && expected[count]!.seq <= seqUpTo) count++;
      this.durableCount[p] = count;
    }
    this.durableCheck();
  }

  private durableCheck(): void {
    this.logs.forEach((log, p) => check(log.syncedOffset >= this.durableCount[p]!,
      `p${p}: durable up to seq ${this.durableSeq} needs ${this.durableCount[p]} synced records, ${log.syncedOffset} are`));
  }

  private retain(nowMs: number): void {
    check(!this.flushing, 'a retention round while a flush round runs');
    this.retaining = true;
    this.later(this.prng.int(1, 4), 'retain', () => {
      this.retaining = false;
      for (const log of this.logs) {
        const before = log.oldestOffset;
        const oldest = log.retain(nowMs - retentionMs);
        if (oldest === before) continue;
        this.counts.retained += oldest - before;
        this.actors[log.partition]!.handle({ kind: 'retained', oldestOffset: oldest }, this.nowMs);
      }
      this.handle({ kind: 'retentionDone' });
    });
  }

  /** Topic B is deleted: its log leaves at once, its records in flight are dropped, and a new topic B starts empty. */
  private topicBDelete(): void {
    const log = this.logs[topicBPartition]!;
    this.deleted.add(log);
    this.topicBGeneration += 1;
    this.logs[topicBPartition] = new SimLog(topicBPartition);
    this.expected[topicBPartition] = [];
    this.durableCount[topicBPartition] = 0;
    for (const id of [...this.seen.keys()]) if (id.startsWith(`${topicBPartition}:`)) this.seen.delete(id);
    this.actors[topicBPartition] = this.actorNew(this.logs[topicBPartition]!);
    this.handle({ kind: 'topicDeleted', topicId: `B${this.topicBGeneration - 1}`, logs: [log] });
  }

  private destroy(logs: SimLog[]): void {
    for (const log of logs) {
      check(this.deleted.has(log), `p${log.partition}: destroyed while its topic lives`);
      check(!log.flushInFlight && !this.syncing.has(log), `p${log.partition}: destroyed during a round that writes it`);
    }
    this.counts.deletions += 1;
    this.later(this.prng.int(1, 4), 'destroy', () => this.handle({ kind: 'destroyed' }));
  }

  private persistCursors(log: SimLog, cursors: { name: string; offset: number }[]): void {
    for (const cursor of cursors) check(cursor.offset <= log.syncedOffset, `p${log.partition}: cursor ${cursor.offset} persisted above synced ${log.syncedOffset}`);
    this.later(this.prng.int(1, 6), 'cursors', () => {
      log.persistedCursors = cursors;
      this.counts.cursorPersists += 1;
      this.handle({ kind: 'cursorsPersisted', log });
    });
  }

  /** Power loss: everything in flight is gone, the disk keeps what was synced, the worker restarts and the front
   *  replays its ingress log from a seq at or below its last 'durable' (segments are deleted whole). */
  private crash(): void {
    this.counts.crashes += 1;
    this.trace.update(`${this.step} ${this.nowMs} crash\n`);
    this.pending = [];
    this.timers.clear();
    this.waiters.clear();
    this.flushing = false;
    this.retaining = false;
    this.syncing.clear();
    for (const log of this.logs) log.crash();
    this.durableCheck();
    for (const id of this.seen.keys()) {
      const [p, offset] = id.split(':').map(Number) as [number, number];
      const record = this.logs[p]!.recordAt(offset);
      if (record !== undefined) this.seeOffset(p, offset, record);
    }
    this.workerMetaIndex = Math.max(0, this.frontMetaIndex - this.prng.int(0, 1));
    this.boot();
    const from = this.prng.int(Math.max(0, this.durableSeq - 4), this.durableSeq + 1);
    for (let seq = from; seq < this.ingress.length; ) {
      const count = this.prng.int(1, 4);
      this.dispatch(this.ingress.slice(seq, seq + count));
      seq += count;
    }
  }

  /** Shutdown drains: the replica catches up first so no dispatch is left held, then everything is synced and
   *  reported; a crash after it loses nothing. */
  private shutdown(): void {
    while (this.workerMetaIndex < this.frontMetaIndex) this.replicaAdvance();
    this.handle({ kind: 'shutdown' });
    for (let guard = 0; !this.drained; guard++) {
      check(guard < 10_000, `shutdown never drained (${this.pending.length} pending)`);
      this.advance();
      this.checkInvariants();
    }
    check(this.pending.length === 0, 'work left after the drain');
    for (const log of this.logs) {
      check(log.stagedCount === 0, `p${log.partition}: staged records left after the drain`);
      check(log.syncedOffset === log.highWatermark, `p${log.partition}: unsynced records left after the drain`);
    }
    if (this.ingress.length > 0) check(this.durableSeq === this.ingress.length - 1, `drained at durable ${this.durableSeq} of ${this.ingress.length - 1}`);
    this.logs.forEach((log, p) => check(log.highWatermark === this.expected[p]!.length, `p${p}: ${log.highWatermark} stored of ${this.expected[p]!.length}`));
  }

  /** Read-only, every step: no randomness drawn. */
  private checkInvariants(): void {
    for (const log of this.logs) {
      const p = log.partition;
      check(log.oldestOffset <= log.highWatermark && log.highWatermark <= log.nextOffset, `p${p}: oldest ${log.oldestOffset} hw ${log.highWatermark} next ${log.nextOffset}`);
      check(log.syncedOffset <= log.highWatermark, `p${p}: synced ${log.syncedOffset} above hw ${log.highWatermark}`);
      const stats = this.actors[p]!.stats();
      check(stats.oldestOffset <= stats.highWatermark && stats.highWatermark <= log.highWatermark, `p${p}: read core at ${stats.oldestOffset}..${stats.highWatermark}, log hw ${log.highWatermark}`);
      for (const cursor of log.persistedCursors) check(cursor.offset <= log.syncedOffset, `p${p}: persisted cursor ${cursor.offset} above synced ${log.syncedOffset}`);
    }
    this.durableCheck();
  }
}

/** A compact, deterministic line for the trace: logs by partition, dispatches by lastSeq. */
function describe(item: Effect | WriteCommand<SimLog, SimDispatch>): string {
  return JSON.stringify(item, (key, value: unknown) => {
    if (value instanceof SimLog) return `p${value.partition}`;
    if (value instanceof Set) return [...(value as Set<SimLog>)].map((log) => `p${log.partition}`);
    if (key === 'dispatch' || key === 'dispatches') return Array.isArray(value) ? value.map((d: SimDispatch) => d.lastSeq) : (value as SimDispatch).lastSeq;
    return value;
  });
}

seededRuns(t, {
  file: 'dist/test/sim/partition_sim.test.js',
  seedCount,
  stepsPerSeed,
  simulate: (seed, steps) => new Simulation(seed).run(steps),
  check: (t, seed, result) => t.ok(result.counts.durable > 0 && result.counts.leased > 0, `SEED=${seed}: ${JSON.stringify(result.counts)}`),
  describe: (error) => (error instanceof Error ? (error.stack ?? error.message) : String(error)),
});
