// The read-path state of one partition (spec §3 "Lease of a message", DESIGN "Read path"): the frontier, the acked
// offsets above it, the delivery cursor, the lease table, the redelivery queue and the deadline heap that expires
// leases, with the in-flight and acked-ahead caps. Pure: time arrives as an argument, nonces from an injected
// source. Owned by one PartitionActor on its partition worker thread (or a test); built from the ack log's state
// at start, never persisted itself: the actor's shell persists ackState() in the background.
import type { SettleMode } from '../../src/protocol/thread_messages.js';

/** Per-topic settings the read path obeys; PATCH may change the caps while leases are held (spec §4 PATCH). */
export interface ActorConfig {
  /** Lease length in milliseconds (spec §2 visibility_timeout_ms). */
  visibilityTimeoutMs: number;
  /** Most leases held at once in this partition; at it, a take leases nothing (spec §3). */
  maxInFlightPerPartition: number;
  /** Most acked offsets held above the frontier; at it, only never-delivered offsets stop (NOTES 12). */
  maxAckedAheadPerPartition: number;
}

/** One delivery: the receipt handle is built from offset and nonce by the shell. */
export interface Lease {
  offset: number;
  nonce: string;
  deadlineMs: number;
}

export type { SettleMode };

/** What the front answers a settle (spec §4 ack): 204 settled, 410 lease gone. */
export type SettleStatus = 204 | 410;

/** The persisted part of the read path (the per-partition ack log). Offsets below frontier are all acked. */
export interface AckState {
  frontier: number;
  /** Acked offsets above the frontier, ascending. */
  acked: number[];
}

export interface LeaseTableInit {
  oldestOffset: number;
  highWatermark: number;
  /** From the ack log; defaults to oldestOffset. A frontier below oldestOffset (retention ran after the ack log was
   * last written) is raised to it. */
  frontier?: number;
  /** From the ack log: acked offsets above the frontier, in any order. */
  acked?: number[];
  config: ActorConfig;
}

export interface LeaseTableStats {
  oldestOffset: number;
  frontier: number;
  cursor: number;
  highWatermark: number;
  leases: number;
  redeliveries: number;
  acked: number;
  /** Offsets a take could lease right now under the caps. */
  deliverable: number;
}

export class LeaseInvariantError extends Error {
  override name = 'LeaseInvariantError';
}

/** Fail-stop check for the pure read path, which may not import node:assert (tidy bans node:* here). */
/** message may be a function: checks on every command then build no string unless they fail. */
export function assertLease(condition: boolean, message: string | (() => string)): asserts condition {
  if (!condition) throw new LeaseInvariantError(typeof message === 'string' ? message : message());
}

export function validateActorConfig(config: ActorConfig): void {
  const { visibilityTimeoutMs, maxInFlightPerPartition, maxAckedAheadPerPartition } = config;
  assertLease(Number.isSafeInteger(visibilityTimeoutMs) && visibilityTimeoutMs > 0, () => `visibilityTimeoutMs ${visibilityTimeoutMs}`);
  assertLease(Number.isSafeInteger(maxInFlightPerPartition) && maxInFlightPerPartition > 0, () => `maxInFlightPerPartition ${maxInFlightPerPartition}`);
  assertLease(Number.isSafeInteger(maxAckedAheadPerPartition) && maxAckedAheadPerPartition > 0, () => `maxAckedAheadPerPartition ${maxAckedAheadPerPartition}`);
}

/** A heap entry names one lease generation; it is stale once that lease ended or was extended (lazy deletion). */
interface DeadlineEntry {
  deadlineMs: number;
  offset: number;
  nonce: string;
}

/** Binary min-heap of lease deadlines, ties broken by offset so that expiry order never depends on push order. */
export class DeadlineHeap {
  private entries: DeadlineEntry[] = [];

  get size(): number {
    return this.entries.length;
  }

  peek(): DeadlineEntry | undefined {
    return this.entries[0];
  }

  push(entry: DeadlineEntry): void {
    this.entries.push(entry);
    this.siftUp(this.entries.length - 1);
  }

  pop(): DeadlineEntry | undefined {
    const top = this.entries[0];
    const last = this.entries.pop();
    if (top === undefined || last === undefined || this.entries.length === 0) return top;
    this.entries[0] = last;
    this.siftDown(0);
    return top;
  }

  /** Replaces the content (used to drop stale entries in one O(n) pass). */
  rebuild(entries: DeadlineEntry[]): void {
    this.entries = entries;
    for (let i = (entries.length >> 1) - 1; i >= 0; i--) this.siftDown(i);
  }

  /** For invariant checks only. */
  values(): readonly DeadlineEntry[] {
    return this.entries;
  }

  /** For invariant checks only: every parent sorts before its children. */
  isOrdered(): boolean {
    for (let i = 1; i < this.entries.length; i++) {
      if (before(this.entries[i]!, this.entries[(i - 1) >> 1]!)) return false;
    }
    return true;
  }

  // The sifts index only below entries.length, so every entry they read exists.
  private siftUp(start: number): void {
    const entries = this.entries;
    const entry = entries[start]!;
    let i = start;
    // Bounded by the heap's depth: i halves every step.
    while (i > 0) {
      const parentAt = (i - 1) >> 1;
      const parent = entries[parentAt]!;
      if (!before(entry, parent)) break;
      entries[i] = parent;
      i = parentAt;
    }
    entries[i] = entry;
  }

  private siftDown(start: number): void {
    const entries = this.entries;
    const n = entries.length;
    const entry = entries[start]!;
    let i = start;
    // Bounded by the heap's depth: i at least doubles every step.
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const childAt = right < n && before(entries[right]!, entries[left]!) ? right : left;
      const child = entries[childAt]!;
      if (!before(child, entry)) break;
      entries[i] = child;
      i = childAt;
    }
    entries[i] = entry;
  }
}

function before(a: DeadlineEntry, b: DeadlineEntry): boolean {
  return a.deadlineMs < b.deadlineMs || (a.deadlineMs === b.deadlineMs && a.offset < b.offset);
}

/** Dead queue slots tolerated before a shift copies the live rest down (amortized O(1) per shift). */
const redeliveryQueueDeadSlotsMax = 1024;

/** FIFO of offsets to deliver again; an array with a moving head, compacted once the dead prefix dominates. */
class OffsetQueue {
  private items: number[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  push(offset: number): void {
    this.items.push(offset);
  }

  shift(): number {
    const offset = this.items[this.head];
    assertLease(offset !== undefined, 'redelivery queue: shift on an empty queue');
    this.head += 1;
    if (this.head >= redeliveryQueueDeadSlotsMax && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return offset;
  }

  /** Retention: offsets below oldestOffset no longer exist. Keeps the order of the rest. */
  removeBelow(oldestOffset: number): void {
    this.items = this.items.slice(this.head).filter((offset) => offset >= oldestOffset);
    this.head = 0;
  }

  values(): number[] {
    return this.items.slice(this.head);
  }
}

/** Slots the delivery window starts with; it doubles when the window outgrows it. */
const windowSlotsInitial = 64;

/**
 * Per-offset state of the offsets [frontier, cursor) of a LeaseTable: leased (with nonce and deadline), acked, or
 * neither (queued for redelivery). A ring indexed by offset modulo its power-of-two size, which the table keeps at
 * least cursor - frontier slots long, so two offsets of the window never share a slot; slots outside the window are
 * always empty. Maps and a Set keyed by offset cost a batch consume's worker more than the rest of leasing and
 * settling; these are array reads. The caller range-checks every offset against the window first: an offset outside
 * it may share a slot with one inside.
 */
class DeliveryWindow {
  private nonces: (string | null)[];
  private deadlines: Float64Array;
  private acks: Uint8Array;
  private mask: number;
  private leaseCount = 0;
  private ackedCount = 0;

  /** Leased offsets in the window. */
  get leases(): number {
    return this.leaseCount;
  }

  /** Acked offsets in the window. */
  get acked(): number {
    return this.ackedCount;
  }

  constructor(slots = windowSlotsInitial) {
    this.nonces = new Array<string | null>(slots).fill(null);
    this.deadlines = new Float64Array(slots);
    this.acks = new Uint8Array(slots);
    this.mask = slots - 1;
  }

  get slots(): number {
    return this.mask + 1;
  }

  /** Makes the ring hold the window [from, to), keeping the state of every offset in it; call before a slot of an
   *  offset at or beyond from + the ring's size is used. */
  cover(from: number, to: number): void {
    const slots = this.mask + 1;
    if (to - from <= slots) return;
    let grown = slots * 2;
    while (grown < to - from) grown *= 2;
    // Every offset with state lies in [from, from + slots): the window before it grew.
    this.resize(from, from + slots, grown);
  }

  /** Gives a burst's memory back: once the window [from, to) uses under an eighth of a grown ring, the ring shrinks to
   *  twice the window (a window must double again before it grows back, so resizes stay rare). */
  fit(from: number, to: number): void {
    const slots = this.mask + 1;
    if (slots <= windowSlotsInitial || (to - from) * 8 >= slots) return;
    let fitted = windowSlotsInitial;
    while (fitted < (to - from) * 2) fitted *= 2;
    this.resize(from, to, fitted);
  }

  /** A ring of `slots` holding the state of the offsets [from, to), the only ones with state. */
  private resize(from: number, to: number, slots: number): void {
    const next = new DeliveryWindow(slots);
    for (let offset = from; offset < to; offset++) {
      const at = offset & this.mask;
      const nonce = this.nonces[at]!;
      if (nonce !== null) next.leaseSet(offset, nonce, this.deadlines[at]!);
      if (this.acks[at] === 1) next.ackSet(offset);
    }
    this.nonces = next.nonces;
    this.deadlines = next.deadlines;
    this.acks = next.acks;
    this.mask = next.mask;
  }

  /** The lease's nonce, or null when the offset is not leased. */
  nonceOf(offset: number): string | null {
    return this.nonces[offset & this.mask]!;
  }

  deadlineOf(offset: number): number {
    return this.deadlines[offset & this.mask]!;
  }

  leaseSet(offset: number, nonce: string, deadlineMs: number): void {
    const at = offset & this.mask;
    if (this.nonces[at] === null) this.leaseCount += 1;
    this.nonces[at] = nonce;
    this.deadlines[at] = deadlineMs;
  }

  leaseDelete(offset: number): void {
    const at = offset & this.mask;
    if (this.nonces[at] === null) return;
    this.nonces[at] = null;
    this.leaseCount -= 1;
  }

  isAcked(offset: number): boolean {
    return this.acks[offset & this.mask] === 1;
  }

  ackSet(offset: number): void {
    const at = offset & this.mask;
    if (this.acks[at] === 1) return;
    this.acks[at] = 1;
    this.ackedCount += 1;
  }

  /** For invariant checks only: leased and acked slots in the whole ring. */
  countAll(): { leases: number; acked: number } {
    let leases = 0;
    let acked = 0;
    for (let at = 0; at <= this.mask; at++) {
      if (this.nonces[at] !== null) leases += 1;
      if (this.acks[at] === 1) acked += 1;
    }
    return { leases, acked };
  }

  ackDelete(offset: number): boolean {
    const at = offset & this.mask;
    if (this.acks[at] !== 1) return false;
    this.acks[at] = 0;
    this.ackedCount -= 1;
    return true;
  }
}

/** Heap entries allowed beyond twice the live leases before a compaction pass drops the stale ones. */
const deadlineHeapSlackEntries = 64;

/**
 * Offsets of a partition: oldestOffset <= frontier <= cursor <= highWatermark. Every offset in [frontier, cursor)
 * is in exactly one of: acked, leased, queued for redelivery. That partition is what makes "no message lost" a
 * counting invariant (checkCounts), and what keeps the frontier's offset always deliverable again, so the
 * acked-ahead cap can never wedge a partition (NOTES 12).
 */
export class LeaseTable {
  private oldestOffset: number;
  private frontier: number;
  /** Next offset never delivered. */
  private cursor: number;
  private highWatermark: number;
  /** Leases and acks of the offsets in [frontier, cursor). */
  private readonly window = new DeliveryWindow();
  private readonly redeliveries = new OffsetQueue();
  private readonly deadlines = new DeadlineHeap();
  private config: ActorConfig;
  /** Most leases allowed: the cap, or more while leases held before a PATCH lowered it are still out. */
  private leasesCeiling: number;
  /** Bumped whenever frontier or acked change, so the actor knows when the ack log needs writing. */
  private ackVersionValue = 0;

  constructor(init: LeaseTableInit) {
    validateActorConfig(init.config);
    const { oldestOffset, highWatermark } = init;
    assertLease(Number.isSafeInteger(oldestOffset) && oldestOffset >= 0, () => `restore: oldestOffset ${oldestOffset}`);
    assertLease(Number.isSafeInteger(highWatermark) && highWatermark >= oldestOffset, () => `restore: highWatermark ${highWatermark} below oldestOffset ${oldestOffset}`);
    const frontier = init.frontier ?? oldestOffset;
    assertLease(Number.isSafeInteger(frontier) && frontier <= highWatermark, () => `restore: frontier ${frontier} above highWatermark ${highWatermark}`);
    this.config = { ...init.config };
    this.leasesCeiling = init.config.maxInFlightPerPartition;
    this.oldestOffset = oldestOffset;
    this.highWatermark = highWatermark;
    this.frontier = Math.max(frontier, oldestOffset);
    let ackedMax = -1;
    for (const offset of init.acked ?? []) {
      // DESIGN: acks only name offsets below the durable high watermark, so a stored ack above it is damage.
      assertLease(Number.isSafeInteger(offset) && offset < highWatermark, () => `restore: acked offset ${offset} not below highWatermark ${highWatermark}`);
      ackedMax = Math.max(ackedMax, offset);
    }
    // No lease survives a restart. Unacked offsets below the largest acked one were delivered before the crash,
    // so they go to the redelivery queue (NOTES 12: redelivery is never held by the acked-ahead cap); the cursor
    // starts past every acked offset so no acked offset is ever delivered again.
    this.cursor = Math.max(this.frontier, ackedMax + 1);
    this.window.cover(this.frontier, this.cursor);
    for (const offset of init.acked ?? []) {
      if (offset >= this.frontier) this.window.ackSet(offset);
    }
    this.advanceFrontier();
    for (let offset = this.frontier; offset < this.cursor; offset++) {
      if (!this.window.isAcked(offset)) this.redeliveries.push(offset);
    }
  }

  get ackVersion(): number {
    return this.ackVersionValue;
  }

  /** Moves every lease whose deadline is at or before nowMs to the redelivery queue; returns how many. */
  expire(nowMs: number): number {
    let expired = 0;
    // Bounded: every pass pops one heap entry.
    for (let budget = this.deadlines.size; budget > 0; budget--) {
      const top = this.deadlines.peek();
      if (top === undefined || top.deadlineMs > nowMs) break;
      this.deadlines.pop();
      if (!this.isLiveEntry(top)) continue;
      // Spec §3: a lease that runs out makes the message available at once, under a new handle when delivered.
      this.window.leaseDelete(top.offset);
      this.redeliveries.push(top.offset);
      expired += 1;
    }
    this.lowerLeasesCeiling();
    this.compactDeadlines();
    return expired;
  }

  /**
   * Leases up to max offsets: redeliveries first (FIFO), then offsets never delivered. Call after expire(nowMs).
   * Every new lease needs leases.size below the in-flight cap; a never-delivered offset also needs the acked set
   * below the acked-ahead cap (NOTES 12).
   */
  take(max: number, nowMs: number, nonceSource: () => string): Lease[] {
    assertLease(Number.isSafeInteger(max) && max >= 0, () => `take: max ${max}`);
    const out: Lease[] = [];
    const deadlineMs = nowMs + this.config.visibilityTimeoutMs;
    // Bounded by max: every pass leases one offset.
    while (out.length < max && this.window.leases < this.config.maxInFlightPerPartition && this.redeliveries.length > 0) {
      out.push(this.lease(this.redeliveries.shift(), nonceSource(), deadlineMs));
    }
    while (
      out.length < max &&
      this.window.leases < this.config.maxInFlightPerPartition &&
      this.window.acked < this.config.maxAckedAheadPerPartition &&
      this.cursor < this.highWatermark
    ) {
      const offset = this.cursor;
      this.window.cover(this.frontier, offset + 1);
      // Restore starts the cursor past every acked offset, so a never-delivered offset is never acked.
      assertLease(!this.window.isAcked(offset), () => `take: offset ${offset} at the cursor is acked`);
      this.cursor += 1;
      out.push(this.lease(offset, nonceSource(), deadlineMs));
    }
    return out;
  }

  /** Settles the lease (offset, nonce). Call after expire(nowMs). Anything but a live lease is 410 (spec §3). */
  settle(offset: number, nonce: string, mode: SettleMode, nowMs: number): SettleStatus {
    // Offsets outside the window hold no lease (and may share a slot with one inside).
    if (!(offset >= this.frontier && offset < this.cursor)) return 410;
    // A lease at its deadline has run out even if expire was not called: never let a late settle win.
    if (this.window.nonceOf(offset) !== nonce || this.window.deadlineOf(offset) <= nowMs) return 410;
    switch (mode) {
      case 'ack':
        // Spec §3: settled, never delivered again.
        this.window.leaseDelete(offset);
        this.markAcked(offset);
        break;
      case 'extend': {
        // Spec §3: renewed for a full visibility_timeout_ms from now; the old heap entry goes stale.
        const deadlineMs = nowMs + this.config.visibilityTimeoutMs;
        this.window.leaseSet(offset, nonce, deadlineMs);
        this.deadlines.push({ deadlineMs, offset, nonce });
        break;
      }
      case 'nack':
        // Spec §3: the lease ends now and the message is deliverable at once.
        this.window.leaseDelete(offset);
        this.redeliveries.push(offset);
        break;
      default:
        return assertNeverMode(mode);
    }
    this.lowerLeasesCeiling();
    this.compactDeadlines();
    return 204;
  }

  /** The log committed up to highWatermark (exclusive); it never goes back. */
  commit(highWatermark: number): void {
    assertLease(Number.isSafeInteger(highWatermark), () => `commit: highWatermark ${highWatermark}`);
    assertLease(highWatermark >= this.highWatermark, () => `commit: highWatermark ${highWatermark} below ${this.highWatermark}`);
    this.highWatermark = highWatermark;
  }

  /**
   * Retention deleted everything below oldestOffset (spec §1.12: lost to consumers even if unacked). Leases,
   * acks and redeliveries below it are dropped; a settle of a dropped lease then answers 410.
   */
  retain(oldestOffset: number): void {
    assertLease(Number.isSafeInteger(oldestOffset), () => `retain: oldestOffset ${oldestOffset}`);
    assertLease(oldestOffset >= this.oldestOffset, () => `retain: oldestOffset ${oldestOffset} below ${this.oldestOffset}`);
    assertLease(oldestOffset <= this.highWatermark, () => `retain: oldestOffset ${oldestOffset} above highWatermark ${this.highWatermark}`);
    this.oldestOffset = oldestOffset;
    if (this.frontier >= oldestOffset) return;
    // Bounded by the window: the offsets leaving it are emptied, as slots outside it must be.
    for (let offset = this.frontier; offset < Math.min(oldestOffset, this.cursor); offset++) {
      this.window.leaseDelete(offset);
      this.window.ackDelete(offset);
    }
    this.redeliveries.removeBelow(oldestOffset);
    this.frontier = oldestOffset;
    this.cursor = Math.max(this.cursor, oldestOffset);
    this.advanceFrontier();
    this.window.fit(this.frontier, this.cursor);
    this.ackVersionValue += 1;
    this.lowerLeasesCeiling();
    this.compactDeadlines();
  }

  /** New caps apply to new leases only; leases already held stay until they end. */
  configure(config: ActorConfig): void {
    validateActorConfig(config);
    this.config = { ...config };
    this.leasesCeiling = Math.max(config.maxInFlightPerPartition, this.window.leases);
  }

  /** Offsets a take could lease now (call after expire): what the shell's waiters can hope for. */
  deliverable(): number {
    const room = Math.max(0, this.config.maxInFlightPerPartition - this.window.leases);
    const fresh = this.window.acked < this.config.maxAckedAheadPerPartition ? this.highWatermark - this.cursor : 0;
    return Math.min(room, this.redeliveries.length + fresh);
  }

  /** The earliest deadline of a live lease, or null without leases. Drops stale heap tops on the way. */
  earliestDeadlineMs(): number | null {
    // Bounded: every pass pops one heap entry.
    for (let budget = this.deadlines.size; budget > 0; budget--) {
      const top = this.deadlines.peek();
      if (top === undefined) break;
      if (this.isLiveEntry(top)) return top.deadlineMs;
      this.deadlines.pop();
    }
    return null;
  }

  ackState(): AckState {
    const acked: number[] = [];
    if (this.window.acked > 0) {
      for (let offset = this.frontier; offset < this.cursor; offset++) if (this.window.isAcked(offset)) acked.push(offset);
    }
    return { frontier: this.frontier, acked };
  }

  /** For tests: the slots of the delivery window's ring. */
  windowSlots(): number {
    return this.window.slots;
  }

  /** Consumer lag (spec metrics svc_consumer_lag_messages): committed messages not yet behind the frontier. */
  lag(): number {
    return this.highWatermark - this.frontier;
  }

  stats(): LeaseTableStats {
    return {
      oldestOffset: this.oldestOffset,
      frontier: this.frontier,
      cursor: this.cursor,
      highWatermark: this.highWatermark,
      leases: this.window.leases,
      redeliveries: this.redeliveries.length,
      acked: this.window.acked,
      deliverable: this.deliverable(),
    };
  }

  /** The O(1) invariants, cheap enough for every command on the hot path. */
  checkCounts(): void {
    const { oldestOffset, frontier, cursor, highWatermark } = this;
    assertLease(oldestOffset <= frontier, () => `oldestOffset ${oldestOffset} > frontier ${frontier}`);
    assertLease(frontier <= cursor, () => `frontier ${frontier} > cursor ${cursor}`);
    assertLease(cursor <= highWatermark, () => `cursor ${cursor} > highWatermark ${highWatermark}`);
    const { leases, acked } = this.window;
    const held = acked + leases + this.redeliveries.length;
    assertLease(held === cursor - frontier, () => `acked ${acked} + leases ${leases} + redeliveries ${this.redeliveries.length} != cursor ${cursor} - frontier ${frontier}`);
    assertLease(leases <= this.leasesCeiling, () => `leases ${leases} over the ceiling ${this.leasesCeiling}`);
    assertLease(this.leasesCeiling >= this.config.maxInFlightPerPartition, () => `ceiling ${this.leasesCeiling} below the cap`);
  }

  /** Every invariant, O(window + redeliveries + heap): run by tests and the simulator after each command. */
  checkInvariants(): void {
    this.checkCounts();
    const { frontier, cursor, window } = this;
    let leases = 0;
    let acked = 0;
    for (let offset = frontier; offset < cursor; offset++) {
      const nonce = window.nonceOf(offset);
      if (nonce !== null) {
        leases += 1;
        assertLease(!window.isAcked(offset), () => `lease ${offset} is acked`);
        assertLease(Number.isFinite(window.deadlineOf(offset)), () => `lease ${offset} deadline ${window.deadlineOf(offset)}`);
      }
      if (window.isAcked(offset)) {
        acked += 1;
        assertLease(offset > frontier, () => `acked ${offset} at the frontier`);
      }
    }
    assertLease(leases === window.leases && acked === window.acked, () => `window counts ${window.leases} leases, ${window.acked} acked; [${frontier}, ${cursor}) holds ${leases}, ${acked}`);
    const everywhere = window.countAll();
    assertLease(everywhere.leases === leases && everywhere.acked === acked, () => `slots outside [${frontier}, ${cursor}) hold state`);
    const queued = new Set<number>();
    for (const offset of this.redeliveries.values()) {
      assertLease(offset >= frontier && offset < cursor, () => `redelivery ${offset} outside [${frontier}, ${cursor})`);
      assertLease(!window.isAcked(offset), () => `redelivery ${offset} is acked`);
      assertLease(window.nonceOf(offset) === null, () => `redelivery ${offset} is leased`);
      assertLease(!queued.has(offset), () => `redelivery ${offset} queued twice`);
      queued.add(offset);
    }
    // Every lease must be able to expire: its exact generation sits in the heap.
    const generations = new Set(this.deadlines.values().map((e) => `${e.offset}:${e.nonce}:${e.deadlineMs}`));
    for (let offset = frontier; offset < cursor; offset++) {
      const nonce = window.nonceOf(offset);
      if (nonce === null) continue;
      assertLease(generations.has(`${offset}:${nonce}:${window.deadlineOf(offset)}`), () => `lease ${offset} has no heap entry`);
    }
    assertLease(this.deadlines.isOrdered(), 'deadline heap out of order');
    assertLease(this.deadlines.size <= 2 * window.leases + deadlineHeapSlackEntries, () => `deadline heap ${this.deadlines.size} entries for ${window.leases} leases`);
  }

  /** Whether a heap entry names the lease its offset holds now (not one since settled, expired or extended). */
  private isLiveEntry(entry: DeadlineEntry): boolean {
    const offset = entry.offset;
    return offset >= this.frontier && offset < this.cursor && this.window.nonceOf(offset) === entry.nonce &&
      this.window.deadlineOf(offset) === entry.deadlineMs;
  }

  private lease(offset: number, nonce: string, deadlineMs: number): Lease {
    assertLease(typeof nonce === 'string' && nonce.length > 0, () => `lease ${offset}: empty nonce`);
    assertLease(this.window.nonceOf(offset) === null, () => `lease ${offset}: already leased`);
    this.window.leaseSet(offset, nonce, deadlineMs);
    this.deadlines.push({ deadlineMs, offset, nonce });
    return { offset, nonce, deadlineMs };
  }

  private markAcked(offset: number): void {
    assertLease(offset >= this.frontier && offset < this.cursor, () => `ack ${offset} outside [${this.frontier}, ${this.cursor})`);
    // In-order acks, the common case, move the frontier without marking the slot.
    if (offset === this.frontier) this.frontier += 1;
    else this.window.ackSet(offset);
    this.advanceFrontier();
    this.window.fit(this.frontier, this.cursor);
    this.ackVersionValue += 1;
  }

  /** Moves the frontier over contiguous acked offsets, emptying their slots. Bounded by the acked count. */
  private advanceFrontier(): void {
    while (this.frontier < this.cursor && this.window.ackDelete(this.frontier)) this.frontier += 1;
  }

  /** A lowered cap stops binding only once the leases held above it have ended; the ceiling follows them down. */
  private lowerLeasesCeiling(): void {
    this.leasesCeiling = Math.max(this.config.maxInFlightPerPartition, Math.min(this.leasesCeiling, this.window.leases));
  }

  /** Lazy deletion leaves stale entries behind every ack, nack and extend; rebuild before they dominate. The live
   *  entries are found in the heap itself (at most one per lease: an extend within the same millisecond pushes the
   *  same entry twice), so the pass is bounded by the heap, not by the window. */
  private compactDeadlines(): void {
    if (this.deadlines.size <= 2 * this.window.leases + deadlineHeapSlackEntries) return;
    const live: DeadlineEntry[] = [];
    const kept = new Set<number>();
    for (const entry of this.deadlines.values()) {
      if (!this.isLiveEntry(entry) || kept.has(entry.offset)) continue;
      kept.add(entry.offset);
      live.push(entry);
    }
    this.deadlines.rebuild(live);
  }
}

function assertNeverMode(mode: never): never {
  throw new LeaseInvariantError(`settle: unknown mode ${String(mode)}`);
}
