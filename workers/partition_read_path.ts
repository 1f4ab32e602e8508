// The shell around one partition's pure PartitionActor (runs on its partition worker thread): it feeds the
// actor commands with the clock, performs its effects (one lease-expiry timer, ack-state persistence to the
// partition's cursor log, as its "ack" cursor, in the background, 'available' counts for long-poll waiters) and
// reads leased records from the segment store. Built by the worker the first time the partition is committed to, consumed or settled;
// closed when the partition's topic is deleted or the worker shuts down.
import { randomBytes } from 'node:crypto';
import { AckLog, type AckState } from './store/ack_log.js';
import type { CursorStore } from './store/cursor_log.js';
import { PartitionActor, type ActorConfig, type HeldLease, type Lease, type PartitionCommand, type PartitionEffect, type SettleMode, type SettleStatus } from './core/partition_actor.js';
import type { SegmentStore } from './store/segment_store.js';

export interface ReadPathHooks {
  /** Messages became deliverable: the worker tells the front, which wakes waiters. */
  onAvailable(count: number): void;
  /** Resolves once every record the partition holds now is fdatasynced. */
  syncedNow(): Promise<void>;
  /** An ack log write failed: disk state unknown, the worker stops (fail-stop). */
  onFatal(what: string, err: unknown): void;
  /** The partition's cursor log, shared with the write core's cursors; the worker opens and closes it. */
  cursorLog(): Promise<CursorStore>;
}

/** Nonces come in blocks of random bytes, turned into hex text in one call: one crypto call and one conversion serve
 *  512 deliveries, and each nonce is a 12-character substring (a toString('hex') per nonce was 3% of a partition
 *  worker's samples in consume-batch). */
const nonceHexChars = 12;
const nonceBlockHexChars = nonceHexChars * 512;
let nonceBlockHex = '';
let nonceAt = 0;

/** A fresh nonce: 6 random bytes as 12 lowercase hex digits. */
export function nextNonce(): string {
  if (nonceAt + nonceHexChars > nonceBlockHex.length) {
    nonceBlockHex = randomBytes(nonceBlockHexChars / 2).toString('hex');
    nonceAt = 0;
  }
  const nonce = nonceBlockHex.substring(nonceAt, nonceAt + nonceHexChars);
  nonceAt += nonceHexChars;
  return nonce;
}

export class PartitionReadPath {
  private readonly actor: PartitionActor;
  private timer: NodeJS.Timeout | null = null;
  private timerAtMs = 0;
  private ackDirty = false;
  private ackFlushTimer: NodeJS.Timeout | null = null;
  private ackWriting: Promise<void> | null = null;
  private closed = false;
  private consumedCount = 0;

  constructor(
    private readonly log: SegmentStore,
    private ackLog: AckLog | null,
    restored: AckState | null,
    config: ActorConfig,
    private readonly ackFlushIntervalMs: number,
    private readonly hooks: ReadPathHooks,
  ) {
    this.actor = new PartitionActor({
      oldestOffset: log.oldestOffset,
      highWatermark: log.offsets.highWatermark,
      frontier: restored?.frontier,
      acked: restored?.acked,
      config,
      nonceSource: nextNonce,
    });
  }

  /** Leases up to max offsets now; the caller reads their records. */
  take(max: number): Lease[] {
    const effects = this.run({ kind: 'take', max });
    const leased = effects.find((e) => e.kind === 'leased');
    return leased?.kind === 'leased' ? leased.leases : [];
  }

  /** Offsets a take could lease now, leaving out leases that ran out since the last command (their timer counts
   *  them when it fires). */
  deliverable(): number {
    return this.actor.deliverable();
  }

  /** One status per lease, in order. */
  settle(leases: readonly HeldLease[], mode: SettleMode): SettleStatus[] {
    const effects = this.run({ kind: 'settle', leases, mode });
    const settled = effects.find((e) => e.kind === 'settled');
    return settled?.kind === 'settled' ? settled.statuses : leases.map(() => 410);
  }

  committed(highWatermark: number): void {
    this.run({ kind: 'committed', highWatermark });
  }

  retained(oldestOffset: number): void {
    this.run({ kind: 'retained', oldestOffset });
  }

  configure(config: ActorConfig): void {
    this.run({ kind: 'configure', config });
  }

  /** The ack state now (a move's final chunk carries it). */
  ackState(): AckState {
    return this.actor.ackState();
  }

  lag(): number {
    return this.actor.lag();
  }

  /** Messages of this partition handed out under a lease since start (svc_messages_consumed_total). */
  get consumed(): number {
    return this.consumedCount;
  }

  /** A consume answer carries this many of the partition's leased records. */
  handedOut(count: number): void {
    this.consumedCount += count;
  }

  /** The leased records: a consumer that keeps up gets them from the log's in-memory tail, without a file read. */
  readMany(offsets: readonly number[]): ReturnType<SegmentStore['readMany']> {
    return this.log.readMany(offsets, { fromTail: true });
  }

  /** Stops the timers and writes the last ack state, so a clean restart redelivers nothing acked. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.ackFlushTimer !== null) clearTimeout(this.ackFlushTimer);
    while (this.ackWriting !== null) await this.ackWriting;
    if (this.ackDirty) await this.ackWrite();
  }

  /** Closes without persisting: the topic was deleted and its directory goes away. */
  async discard(): Promise<void> {
    this.closed = true;
    this.ackDirty = false;
    if (this.timer !== null) clearTimeout(this.timer);
    if (this.ackFlushTimer !== null) clearTimeout(this.ackFlushTimer);
    while (this.ackWriting !== null) await this.ackWriting;
  }

  private run(command: PartitionCommand): PartitionEffect[] {
    const effects = this.actor.handle(command, Date.now());
    for (const effect of effects) {
      switch (effect.kind) {
        case 'available':
          this.hooks.onAvailable(effect.count);
          break;
        case 'scheduleTimer':
          this.timerArm(effect.atMs);
          break;
        case 'ackStateChanged':
          this.ackDirty = true;
          this.ackFlushSchedule();
          break;
        case 'leased':
        case 'settled':
          break;
      }
    }
    return effects;
  }

  private timerArm(atMs: number): void {
    if (this.closed) return;
    if (this.timer !== null) {
      if (this.timerAtMs === atMs) return;
      clearTimeout(this.timer);
    }
    this.timerAtMs = atMs;
    // A timer that fires a little early is harmless: the actor re-arms for what is not yet due.
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.closed) this.run({ kind: 'timer' });
    }, Math.max(0, atMs - Date.now()));
  }

  private ackFlushSchedule(): void {
    if (this.closed || this.ackFlushTimer !== null || this.ackWriting !== null) return;
    this.ackFlushTimer = setTimeout(() => {
      this.ackFlushTimer = null;
      this.ackWriting = this.ackWrite()
        .catch((err: unknown) => this.hooks.onFatal('ack log write', err))
        .finally(() => {
          this.ackWriting = null;
          if (this.ackDirty) this.ackFlushSchedule();
        });
    }, this.ackFlushIntervalMs);
  }

  private async ackWrite(): Promise<void> {
    this.ackDirty = false;
    const state = this.actor.ackState();
    // Acks name offsets below the high watermark of now: once those records are synced, no restart can find the
    // ack state ahead of the partition (a lost unsynced tail would be stored again, but only after the acks load).
    await this.hooks.syncedNow();
    // The partition directory exists: acks only name delivered offsets, which a flush stored there.
    this.ackLog ??= AckLog.over(await this.hooks.cursorLog(), this.log.dir).log;
    await this.ackLog.write(state);
  }
}
