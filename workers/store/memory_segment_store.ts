// The memory implementation of SegmentStore (NATS memstore beside filestore): the same frames, offsets, high
// watermarks, rolls at segmentBytesMax and retention by whole segments as PartitionLog, with no file. It also models
// what a crash keeps (crash()): sealed segments (a roll syncs them), the synced part of the active one and the marks,
// as the file store's recovery would find them. Offsets and ingress positions are PartitionOffsets', as the file
// store's are: this file only keeps bytes. Runs on whichever thread builds it (the partition simulation, tests);
// nothing in a running node uses it.
import assert from 'node:assert/strict';
import { faultPointHit, faultPointsArmed } from './fault_points.js';
import { indexEntryBytes } from './segment_index.js';
import type { OriginMap } from './origin_positions.js';
import { PartitionOffsets, type SegmentOffsets, type TailMark } from './partition_offsets.js';
import { recordFrameBytesMax, recordFrameWrite, recordFromFrameAt } from './segment_record.js';
import type { IngressPosition, PartitionLogStats, SegmentReadResult, SegmentStore, StoredRecord } from './segment_store.js';

interface MemorySegment {
  baseOffset: number;
  /** One frame per written record, exactly the bytes the file store's .log would hold. */
  frames: Uint8Array[];
  /** timestampsSec[k]: the timestamp of record baseOffset + k (retention reads the last). */
  timestampsSec: number[];
  logBytes: number;
}

/** What a restart finds: the kept segments and the marks the file store would keep (next_offset.mark when retention
 *  deleted every segment, origins.mark of the last roll or full retention), each durable once written. */
interface MemoryImage {
  segments: MemorySegment[];
  tailMark: TailMark | null;
  originsMark: OriginMap | null;
}

/** A promise that never settles: what an operation in flight when its process died comes to. */
const never = new Promise<never>(() => {});

export class MemorySegmentStore implements SegmentStore {
  private segments: MemorySegment[];
  private tailMark: TailMark | null;
  private originsMark: OriginMap | null;
  private staged: { frame: Uint8Array; timestampSec: number }[] = [];
  /** Offsets and ingress positions; offsets is the same object as callers may read it. */
  private readonly book = new PartitionOffsets();
  readonly offsets: SegmentOffsets = this.book;
  /** Set by crash(): this instance is the dead process's; what it had in flight never completes. */
  private crashed = false;

  private constructor(
    readonly dir: string,
    readonly segmentBytesMax: number,
    image: MemoryImage,
  ) {
    assert(Number.isSafeInteger(segmentBytesMax) && segmentBytesMax > 0, `segmentBytesMax ${segmentBytesMax} invalid`);
    this.segments = image.segments;
    this.tailMark = image.tailMark;
    this.originsMark = image.originsMark;
    this.recover();
    this.invariantsCheck();
  }

  /** An empty partition; dir only names it (the cursor log of a simulated partition may live there). */
  static createEmpty(opts: { dir: string; segmentBytesMax: number; startOffset?: number }): MemorySegmentStore {
    // A start past 0 is kept as the file store's start mark is: a tail mark, so a crash image keeps it.
    const startOffset = opts.startOffset ?? 0;
    const tailMark = startOffset > 0 ? { nextOffset: startOffset, lastIngress: null } : null;
    return new MemorySegmentStore(opts.dir, opts.segmentBytesMax, { segments: [], tailMark, originsMark: null });
  }

  get oldestOffset(): number {
    return this.segments[0]?.baseOffset ?? this.book.highWatermark;
  }

  stage(r: Omit<StoredRecord, 'offset'>): number {
    const offset = this.book.stageBegin(r);
    const target = new Uint8Array(recordFrameBytesMax(offset, r));
    const frameBytes = recordFrameWrite(target, 0, offset, r);
    this.staged.push({ frame: target.subarray(0, frameBytes), timestampSec: r.timestampSec });
    this.book.stageEnd(r);
    return offset;
  }

  /** Writes the staged frames after one turn of the event loop's microtasks (so records staged meanwhile wait for
   *  the next flush, as with the file store), rolling as the file store rolls. */
  async flush(): Promise<void> {
    if (!this.book.flushBegin(this.staged.length)) return;
    const staged = this.staged;
    this.staged = [];
    try {
      await Promise.resolve();
      if (this.crashed) return await never;
      if (faultPointsArmed) faultPointHit('append', this.dir);
      for (const { frame, timestampSec } of staged) this.flushFrame(frame, timestampSec);
      this.book.flushWritten();
    } finally {
      this.book.flushEnd();
    }
    this.invariantsCheck();
  }

  private flushFrame(frame: Uint8Array, timestampSec: number): void {
    let segment = this.segments.at(-1);
    const highWatermark = this.book.highWatermark;
    // A record larger than segmentBytesMax still goes alone into a fresh segment.
    if (segment === undefined || (segment.logBytes > 0 && segment.logBytes + frame.byteLength > this.segmentBytesMax)) {
      if (segment !== undefined) {
        if (faultPointsArmed) faultPointHit('roll', this.dir);
        // As the file store's roll: the sealed segments' positions go to the origins mark.
        this.originsMark = this.book.rollOrigins(highWatermark) ?? this.originsMark;
      }
      segment = { baseOffset: highWatermark, frames: [], timestampsSec: [], logBytes: 0 };
      this.segments.push(segment);
    }
    segment.frames.push(frame);
    segment.timestampsSec.push(timestampSec);
    segment.logBytes += frame.byteLength;
    this.book.writtenTo(highWatermark + 1);
  }

  async sync(): Promise<void> {
    assert(!this.book.closed, 'sync on a closed partition log');
    if (!this.book.unsynced) return;
    const point = this.book.syncPoint();
    if (faultPointsArmed) faultPointHit('sync', this.dir);
    await Promise.resolve();
    if (this.crashed) return await never;
    this.book.syncDone(point);
  }

  async read(offset: number): Promise<SegmentReadResult> {
    return (await this.readMany([offset]))[0]!;
  }

  /** Each record is read from a copy of its frame, so a caller may transfer its buffer as it does the file store's. */
  async readMany(offsets: readonly number[]): Promise<SegmentReadResult[]> {
    assert(!this.book.closed, 'read on a closed partition log');
    return offsets.map((offset) => {
      assert(Number.isSafeInteger(offset) && offset >= 0, `offset ${offset} invalid`);
      if (offset >= this.book.highWatermark) return 'past_end';
      if (offset < this.oldestOffset) return 'aged_out';
      const segment = this.segments[this.segmentIndexOf(offset)]!;
      const frame = segment.frames[offset - segment.baseOffset]!.slice();
      return recordFromFrameAt(frame, 0, frame.byteLength, offset);
    });
  }

  /** Spec §1.12, as PartitionLog.retain: whole segments from the oldest, the active one too when all of it is old. */
  async retain(cutoffSec: number): Promise<{ oldestOffset: number; deletedSegments: number }> {
    this.book.retainCheck(cutoffSec);
    let deletedSegments = 0;
    for (const segment of this.segments) {
      const last = segment.timestampsSec.at(-1);
      if (last !== undefined && last >= cutoffSec) break;
      deletedSegments += 1;
    }
    if (deletedSegments > 0) {
      // As the file store: the marks promise positions to a restart, so what they name is synced first.
      const all = deletedSegments === this.segments.length;
      if (all) await this.sync();
      this.book.retainingSet(true);
      try {
        await Promise.resolve();
        if (this.crashed) return await never;
        if (all) {
          this.originsMark = this.book.retainOrigins() ?? this.originsMark;
          this.tailMark = this.book.tailMark();
        }
        this.segments.splice(0, deletedSegments);
      } finally {
        this.book.retainingSet(false);
      }
    }
    this.invariantsCheck();
    return { oldestOffset: this.oldestOffset, deletedSegments };
  }

  stats(): PartitionLogStats {
    let sizeBytes = 0;
    for (const s of this.segments) sizeBytes += s.logBytes + s.frames.length * indexEntryBytes;
    const stats: PartitionLogStats = {
      segments: this.segments.length,
      oldestOffset: this.oldestOffset,
      nextOffset: this.book.nextOffset,
      highWatermark: this.book.highWatermark,
      sizeBytes,
    };
    const oldestAtSec = this.segments[0]?.timestampsSec[0];
    if (oldestAtSec !== undefined) stats.oldestSegmentAtSec = oldestAtSec;
    return stats;
  }

  async close(): Promise<void> {
    if (this.book.closed) return;
    await this.sync();
    this.book.closedSet();
  }

  async destroy(): Promise<void> {
    this.book.closedSet();
    this.segments = [];
    this.tailMark = null;
    this.originsMark = null;
  }

  /** The store a restart finds after a clean close: everything written (close synced it). */
  reopen(): MemorySegmentStore {
    assert(this.book.closed, 'reopen of an open memory store: close or crash it first');
    return new MemorySegmentStore(this.dir, this.segmentBytesMax, this.image(Infinity));
  }

  /** The process dies now: this instance stops (its operations in flight never complete) and the store a restart
   *  finds is returned. It keeps sealed segments (their roll synced them) and the active segment's records below
   *  syncedHighWatermark; staged and written-but-unsynced records are lost, as with a power loss. */
  crash(): MemorySegmentStore {
    const image = this.image(this.book.syncedHighWatermark);
    this.crashed = true;
    this.book.closedSet();
    return new MemorySegmentStore(this.dir, this.segmentBytesMax, image);
  }

  /** A copy of the segments with the active (last) one cut at keptBelow, sealed ones whole, and of the marks. */
  private image(keptBelow: number): MemoryImage {
    const segments = this.segments.map((s, k): MemorySegment => {
      const count = k === this.segments.length - 1 ? Math.min(s.frames.length, Math.max(0, keptBelow - s.baseOffset)) : s.frames.length;
      const frames = s.frames.slice(0, count);
      let logBytes = 0;
      for (const frame of frames) logBytes += frame.byteLength;
      return { baseOffset: s.baseOffset, frames, timestampsSec: s.timestampsSec.slice(0, count), logBytes };
    });
    const tailMark = this.tailMark === null ? null : { ...this.tailMark };
    const originsMark = this.originsMark === null ? null : new Map([...this.originsMark].map(([o, p]) => [o, { ...p }]));
    return { segments, tailMark, originsMark };
  }

  /** What PartitionLog.open recovers, from the same places: the origins mark, a scan of the active segment, the last
   *  sealed record when needed, the tail mark. */
  private recover(): void {
    this.book.recoverOriginsMark(this.originsMark);
    const active = this.segments.at(-1);
    let activeLocal: IngressPosition | null = null;
    active?.frames.forEach((frame, k) => {
      const record = this.recordAt(active, k);
      const position = { seq: record.ingressSeq, index: record.ingressIndex };
      if (record.origin === undefined) activeLocal = position;
      else this.book.recoveredForeign(record.origin, position);
    });
    const sealed = this.segments.at(-2);
    const found = { activeLocal, originsMark: this.originsMark };
    let lastSealed: IngressPosition | null = null;
    if (sealed !== undefined && PartitionOffsets.lastSealedNeeded(found)) {
      const record = this.recordAt(sealed, sealed.frames.length - 1);
      lastSealed = { seq: record.ingressSeq, index: record.ingressIndex };
    }
    const highWatermark = active === undefined ? (this.tailMark?.nextOffset ?? 0) : active.baseOffset + active.frames.length;
    this.book.recover({ ...found, highWatermark, tailMark: this.tailMark, lastSealed });
  }

  private recordAt(segment: MemorySegment, k: number): StoredRecord {
    const frame = segment.frames[k]!;
    return recordFromFrameAt(frame, 0, frame.byteLength, segment.baseOffset + k);
  }

  private segmentIndexOf(offset: number): number {
    let k = this.segments.length - 1;
    while (k > 0 && this.segments[k]!.baseOffset > offset) k -= 1;
    return k;
  }

  private invariantsCheck(): void {
    const last = this.segments.at(-1);
    this.book.invariantsCheck(this.oldestOffset, last === undefined ? null : last.baseOffset + last.frames.length);
  }
}
