// The offsets and ingress positions of one partition's segment store: next offset, high watermark and its synced
// part, this node's ingress position and each foreign origin's (staged, written, synced), the one-flush/one-retain
// rules, what the marks of a roll and of a full retention hold, and what a restart recovers from them. The file store
// (segment_log.ts) and the memory store (memory_segment_store.ts) each own one, so the two differ only in how they
// keep bytes: when each kept its own copy they drifted, and a restart recovered different positions from each.
// Runs on the thread of the store that owns it (a partition worker, or a simulation).
import assert from 'node:assert/strict';
import { OriginPositions, type OriginMap } from './origin_positions.js';
import { recordFieldsAssert } from './segment_record.js';
import type { IngressPosition, StoredRecord } from './segment_store.js';

/** The partition's tail when retention last deleted every segment: it alone then carries the tail over a restart. */
export interface TailMark {
  nextOffset: number;
  lastIngress: IngressPosition | null;
}

/** What a flushed high watermark and this node's position stood at when a sync began: what it makes durable. */
export interface SyncPoint {
  highWatermark: number;
  lastIngress: IngressPosition | null;
}

/** What a store found where a restart looks, for PartitionOffsets.recover. */
export interface Recovered {
  /** One past the last kept record; with no segment, the tail mark's nextOffset (or 0). */
  highWatermark: number;
  tailMark: TailMark | null;
  /** The origins mark of the last roll or full retention, or null when none was written. */
  originsMark: OriginMap | null;
  /** This node's last record in the active segment, or null. */
  activeLocal: IngressPosition | null;
  /** The last record before the active segment, read only when lastSealedNeeded said so. */
  lastSealed: IngressPosition | null;
}

function positionCopy(p: IngressPosition | null | undefined): IngressPosition | null {
  return p === null || p === undefined ? null : { seq: p.seq, index: p.index };
}

/** What a segment store's callers may read of its PartitionOffsets (SegmentStore.offsets); the rest moves them, which
 *  only the store does. */
export type SegmentOffsets = Pick<PartitionOffsets,
  'nextOffset' | 'highWatermark' | 'syncedHighWatermark' | 'unsynced' | 'stagedSinceOpen' | 'lastIngress' | 'holdsIngress'>;

export class PartitionOffsets {
  private next = 0;
  private openedAt = 0;
  private high = 0;
  /** Offsets below it are synced; at most high. */
  private synced = 0;
  /** This node's last staged position, moved in place per staged record (no object per record); callers get copies. */
  private local: IngressPosition | null = null;
  /** This node's position as of the written records (what a sync makes durable), and of the synced ones alone (what
   *  a tail mark may promise to a restart). Replaced, never mutated: sync points share them. */
  private writtenLocal: IngressPosition | null = null;
  private storedLocal: IngressPosition | null = null;
  /** writtenLocal of the flush in flight, taken when it began: records staged meanwhile are the next flush's. */
  private flushLocal: IngressPosition | null = null;
  /** Positions of records other nodes handed over, per origin (issue 29). */
  private readonly origins = new OriginPositions();
  private flushingNow = false;
  private retainingNow = false;
  private closedNow = false;

  /** The offset the next staged record gets; leads highWatermark while records are staged or flushing. */
  get nextOffset(): number {
    return this.next;
  }

  /** One past the last written offset: what readers may see. */
  get highWatermark(): number {
    return this.high;
  }

  /** One past the last synced offset (the file store's: fdatasynced); at most highWatermark. */
  get syncedHighWatermark(): number {
    return this.synced;
  }

  /** Whether written records wait for a sync. */
  get unsynced(): boolean {
    return this.synced < this.high;
  }

  /** Records staged since the store was opened or created: what this node stored in the partition since it started. */
  get stagedSinceOpen(): number {
    return this.next - this.openedAt;
  }

  /** (seq, index) of this node's last staged or stored record, or null: the worker skips ingress records at or below
   *  it. Staged counts, because a staged record is stored by the next flush or the worker dies. */
  get lastIngress(): IngressPosition | null {
    return positionCopy(this.local);
  }

  get flushing(): boolean {
    return this.flushingNow;
  }

  get retaining(): boolean {
    return this.retainingNow;
  }

  get closed(): boolean {
    return this.closedNow;
  }

  /** Whether the record at (seq, index) of the ingress log of origin (0: this node's) is already staged or stored:
   *  records arrive in each origin's ingress order, so everything at or before an origin's last position is.
   *  Asked per dispatched record: allocates nothing. */
  holdsIngress(seq: number, index: number, origin = 0): boolean {
    if (origin !== 0) return this.origins.holds(origin, seq, index);
    const last = this.local;
    return last !== null && (seq < last.seq || (seq === last.seq && index <= last.index));
  }

  /** Checks a record before its frame is written; returns the offset it gets. Hot path: messages are built only when
   *  a check fails. */
  stageBegin(r: Omit<StoredRecord, 'offset'>): number {
    if (this.closedNow) assert.fail('stage on a closed partition log');
    recordFieldsAssert(r);
    const origin = r.origin ?? 0;
    if (this.holdsIngress(r.ingressSeq, r.ingressIndex, origin)) {
      const last = origin === 0 ? this.local : null;
      assert.fail(`ingress (${r.ingressSeq}, ${r.ingressIndex}) is not after (${last?.seq}, ${last?.index}) of origin ${origin}`);
    }
    return this.next;
  }

  /** The record stageBegin checked is staged (its frame written) at nextOffset. */
  stageEnd(r: Omit<StoredRecord, 'offset'>): void {
    const offset = this.next;
    this.next = offset + 1;
    const origin = r.origin ?? 0;
    if (origin !== 0) {
      // Once records come from elsewhere, a roll must know where each origin stood at its offset, this node's too:
      // the first foreign record brings this node's position along, as of the record before it, since this flush's
      // records staged before it are in no column (pure local partitions keep none, the hot path).
      const local = this.local;
      if (!this.origins.any && local !== null) this.origins.stage(offset - 1, 0, local.seq, local.index);
      this.origins.stage(offset, origin, r.ingressSeq, r.ingressIndex);
      return;
    }
    if (this.origins.any) this.origins.stage(offset, 0, r.ingressSeq, r.ingressIndex);
    if (this.local === null) this.local = { seq: r.ingressSeq, index: r.ingressIndex };
    else {
      this.local.seq = r.ingressSeq;
      this.local.index = r.ingressIndex;
    }
  }

  /** Checks that a flush may start; false when nothing is staged (stagedCount), else the flush is in flight. */
  flushBegin(stagedCount: number): boolean {
    assert(!this.flushingNow, 'one flush at a time per partition log');
    assert(!this.retainingNow, 'flush during a retain');
    assert(!this.closedNow, 'flush on a closed partition log');
    if (stagedCount === 0) return false;
    this.flushingNow = true;
    this.flushLocal = positionCopy(this.local);
    this.origins.flushBegin();
    return true;
  }

  /** The offsets below highWatermark are written: readers may see them. */
  writtenTo(highWatermark: number): void {
    assert(highWatermark >= this.high && highWatermark <= this.next, `highWatermark ${highWatermark} out of range`);
    this.high = highWatermark;
  }

  /** The flush in flight wrote all it took. */
  flushWritten(): void {
    this.writtenLocal = this.flushLocal;
    this.origins.flushEnd();
  }

  /** The flush in flight ended, written or failed (a failed flush stops the worker). */
  flushEnd(): void {
    this.flushingNow = false;
  }

  /** What a sync begun now makes durable. */
  syncPoint(): SyncPoint {
    return { highWatermark: this.high, lastIngress: this.writtenLocal };
  }

  syncDone(point: SyncPoint): void {
    this.synced = Math.max(this.synced, point.highWatermark);
    this.storedLocal = point.lastIngress;
  }

  /** Checks that a retain may start. */
  retainCheck(cutoffSec: number): void {
    assert(!this.closedNow, 'retain on a closed partition log');
    assert(!this.flushingNow, 'retain during a flush');
    assert(!this.retainingNow, 'one retain at a time per partition log');
    assert(Number.isSafeInteger(cutoffSec), `cutoffSec ${cutoffSec} invalid`);
  }

  /** A retain that deletes segments is in flight (true) or ended (false). */
  retainingSet(retaining: boolean): void {
    this.retainingNow = retaining;
  }

  /** The tail mark of a retain that deletes every segment, after a sync: it promises only what is synced. */
  tailMark(): TailMark {
    return { nextOffset: this.high, lastIngress: positionCopy(this.storedLocal) };
  }

  /** The origins mark of a roll at baseOffset during a flush: every origin's position, this node's too, as of the
   *  records below it; null when no record ever came from elsewhere (no mark is kept). Objects of its own. */
  rollOrigins(baseOffset: number): OriginMap | null {
    return this.origins.any ? this.origins.writtenBelow(baseOffset, this.writtenLocal) : null;
  }

  /** The origins mark of a retain that deletes every segment, after a sync and with no flush in flight: the mark of
   *  the last roll is older than the tail mark then, and a restart must find the newest positions in one place. */
  retainOrigins(): OriginMap | null {
    return this.origins.any ? this.origins.writtenBelow(this.high, this.storedLocal) : null;
  }

  /** The store no longer takes anything. */
  closedSet(): void {
    this.closedNow = true;
  }

  /** A foreign record found in the active segment at recovery (after the origins mark was recovered). */
  recoveredForeign(origin: number, position: IngressPosition): void {
    this.origins.recovered(origin, position);
  }

  /** Whether recovery must read the last record before the active segment: only when neither the active segment nor
   *  an origins mark says where this node stood. With no origins mark, no record before the active one is foreign. */
  static lastSealedNeeded(found: Pick<Recovered, 'activeLocal' | 'originsMark'>): boolean {
    return found.activeLocal === null && found.originsMark === null;
  }

  /** Recovery, first step: the origins mark's positions, before the active segment's foreign records move them. */
  recoverOriginsMark(originsMark: OriginMap | null): void {
    // Origin 0 too: a mark once written keeps origins.any, so every later roll and full retention rewrites it.
    for (const [origin, position] of originsMark ?? []) this.origins.recovered(origin, position);
  }

  /** Recovery, last step: the offsets, all synced, and this node's position, the newest of: its last record in the
   *  active segment; else the origins mark, which every roll and full retention rewrites once it exists (so nothing
   *  older than the active segment is newer); else the last sealed record; else the tail mark. */
  recover(found: Recovered): void {
    assert(found.tailMark === null || found.tailMark.nextOffset <= found.highWatermark, 'tail mark ahead of the segments');
    this.next = found.highWatermark;
    this.high = found.highWatermark;
    this.synced = found.highWatermark;
    this.openedAt = found.highWatermark;
    let local = found.activeLocal;
    if (local === null && found.originsMark !== null) local = found.originsMark.get(0) ?? null;
    else if (local === null) local = found.lastSealed ?? found.tailMark?.lastIngress ?? null;
    this.local = positionCopy(local);
    this.writtenLocal = positionCopy(local);
    this.storedLocal = this.writtenLocal;
  }

  /** The invariants of SegmentStore, after every call that moves offsets; lastSegmentEnd: null with no segment. */
  invariantsCheck(oldestOffset: number, lastSegmentEnd: number | null): void {
    assert(oldestOffset <= this.high, 'oldestOffset above highWatermark');
    assert(this.synced <= this.high, 'syncedHighWatermark above highWatermark');
    assert(this.high <= this.next, 'highWatermark above nextOffset');
    if (lastSegmentEnd !== null) assert.equal(lastSegmentEnd, this.high, 'last segment does not end at highWatermark');
  }
}
