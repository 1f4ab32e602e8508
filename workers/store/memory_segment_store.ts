// The memory implementation of SegmentStore (NATS memstore beside filestore): the same frames, offsets, high
// watermarks, rolls at segmentBytesMax and retention by whole segments as PartitionLog, with no file. It also models
// what a crash keeps (crash()): sealed segments (a roll syncs them) and the synced part of the active one, as the
// file store's recovery would find them. Runs on whichever thread builds it (the partition simulation, tests);
// nothing in a running node uses it.
import assert from 'node:assert/strict';
import { faultPointHit, faultPointsArmed } from './fault_points.js';
import { indexEntryBytes } from './segment_index.js';
import { OriginPositions } from './origin_positions.js';
import { recordFieldsAssert, recordFrameBytesMax, recordFrameWrite, recordFromFrameAt } from './segment_record.js';
import type { IngressPosition, PartitionLogStats, SegmentReadResult, SegmentStore, StoredRecord } from './segment_store.js';

interface MemorySegment {
  baseOffset: number;
  /** One frame per written record, exactly the bytes the file store's .log would hold. */
  frames: Uint8Array[];
  /** timestampsSec[k]: the timestamp of record baseOffset + k (retention reads the last). */
  timestampsSec: number[];
  logBytes: number;
}

/** What a restart finds: the kept segments and, when retention deleted every segment, the tail it marked. */
interface MemoryImage {
  segments: MemorySegment[];
  mark: { nextOffset: number; lastIngress: IngressPosition | null } | null;
}

/** A promise that never settles: what an operation in flight when its process died comes to. */
const never = new Promise<never>(() => {});

export class MemorySegmentStore implements SegmentStore {
  private segments: MemorySegment[];
  private mark: MemoryImage['mark'];
  private staged: { frame: Uint8Array; timestampSec: number }[] = [];
  private nextOffsetValue = 0;
  private highWatermarkValue = 0;
  private syncedHighWatermarkValue = 0;
  private lastIngressValue: IngressPosition | null = null;
  /** lastIngress of the written records, and of the synced ones alone (what a mark may promise). */
  private writtenLastIngress: IngressPosition | null = null;
  private storedLastIngress: IngressPosition | null = null;
  private readonly origins = new OriginPositions();
  private flushing = false;
  private retaining = false;
  private closed = false;
  /** Set by crash(): this instance is the dead process's; what it had in flight never completes. */
  private crashed = false;

  private constructor(
    readonly dir: string,
    readonly segmentBytesMax: number,
    image: MemoryImage,
  ) {
    assert(Number.isSafeInteger(segmentBytesMax) && segmentBytesMax > 0, `segmentBytesMax ${segmentBytesMax} invalid`);
    this.segments = image.segments;
    this.mark = image.mark;
    const last = this.segments.at(-1);
    this.nextOffsetValue = last === undefined ? (image.mark?.nextOffset ?? 0) : last.baseOffset + last.frames.length;
    this.highWatermarkValue = this.nextOffsetValue;
    this.syncedHighWatermarkValue = this.nextOffsetValue;
    this.lastIngressValue = this.lastStoredIngress();
    this.writtenLastIngress = this.lastIngressValue;
    this.storedLastIngress = this.lastIngressValue;
    this.invariantsCheck();
  }

  /** An empty partition; dir only names it (the cursor log of a simulated partition may live there). */
  static createEmpty(opts: { dir: string; segmentBytesMax: number }): MemorySegmentStore {
    return new MemorySegmentStore(opts.dir, opts.segmentBytesMax, { segments: [], mark: null });
  }

  get nextOffset(): number {
    return this.nextOffsetValue;
  }

  get highWatermark(): number {
    return this.highWatermarkValue;
  }

  get syncedHighWatermark(): number {
    return this.syncedHighWatermarkValue;
  }

  get unsynced(): boolean {
    return this.syncedHighWatermarkValue < this.highWatermarkValue;
  }

  get oldestOffset(): number {
    return this.segments[0]?.baseOffset ?? this.highWatermarkValue;
  }

  get lastIngress(): IngressPosition | null {
    return this.lastIngressValue === null ? null : { ...this.lastIngressValue };
  }

  holdsIngress(seq: number, index: number, origin = 0): boolean {
    if (origin !== 0) return this.origins.holds(origin, seq, index);
    const last = this.lastIngressValue;
    return last !== null && (seq < last.seq || (seq === last.seq && index <= last.index));
  }

  stage(r: Omit<StoredRecord, 'offset'>): number {
    assert(!this.closed, 'stage on a closed partition log');
    recordFieldsAssert(r);
    const origin = r.origin ?? 0;
    if (this.holdsIngress(r.ingressSeq, r.ingressIndex, origin)) {
      const last = origin === 0 ? this.lastIngressValue : null;
      assert.fail(`ingress (${r.ingressSeq}, ${r.ingressIndex}) is not after (${last?.seq}, ${last?.index}) of origin ${origin}`);
    }
    const offset = this.nextOffsetValue;
    const target = new Uint8Array(recordFrameBytesMax(offset, r));
    const frameBytes = recordFrameWrite(target, 0, offset, r);
    this.staged.push({ frame: target.subarray(0, frameBytes), timestampSec: r.timestampSec });
    this.nextOffsetValue = offset + 1;
    if (origin !== 0) this.origins.stage(offset, origin, r.ingressSeq, r.ingressIndex);
    else this.lastIngressValue = { seq: r.ingressSeq, index: r.ingressIndex };
    return offset;
  }

  /** Writes the staged frames after one turn of the event loop's microtasks (so records staged meanwhile wait for
   *  the next flush, as with the file store), rolling as the file store rolls. */
  async flush(): Promise<void> {
    assert(!this.flushing, 'one flush at a time per partition log');
    assert(!this.retaining, 'flush during a retain');
    assert(!this.closed, 'flush on a closed partition log');
    if (this.staged.length === 0) return;
    this.flushing = true;
    const staged = this.staged;
    this.staged = [];
    const lastIngress = this.lastIngress;
    try {
      await Promise.resolve();
      if (this.crashed) return await never;
      if (faultPointsArmed) faultPointHit('append', this.dir);
      for (const { frame, timestampSec } of staged) this.flushFrame(frame, timestampSec);
      this.writtenLastIngress = lastIngress;
    } finally {
      this.flushing = false;
    }
    this.invariantsCheck();
  }

  private flushFrame(frame: Uint8Array, timestampSec: number): void {
    let segment = this.segments.at(-1);
    // A record larger than segmentBytesMax still goes alone into a fresh segment.
    if (segment === undefined || (segment.logBytes > 0 && segment.logBytes + frame.byteLength > this.segmentBytesMax)) {
      if (segment !== undefined && faultPointsArmed) faultPointHit('roll', this.dir);
      segment = { baseOffset: this.highWatermarkValue, frames: [], timestampsSec: [], logBytes: 0 };
      this.segments.push(segment);
    }
    segment.frames.push(frame);
    segment.timestampsSec.push(timestampSec);
    segment.logBytes += frame.byteLength;
    this.highWatermarkValue += 1;
  }

  async sync(): Promise<void> {
    assert(!this.closed, 'sync on a closed partition log');
    if (!this.unsynced) return;
    const highWatermark = this.highWatermarkValue;
    const lastIngress = this.writtenLastIngress;
    if (faultPointsArmed) faultPointHit('sync', this.dir);
    await Promise.resolve();
    if (this.crashed) return await never;
    this.syncedHighWatermarkValue = Math.max(this.syncedHighWatermarkValue, highWatermark);
    this.storedLastIngress = lastIngress;
  }

  async read(offset: number): Promise<SegmentReadResult> {
    return (await this.readMany([offset]))[0]!;
  }

  /** Each record is read from a copy of its frame, so a caller may transfer its buffer as it does the file store's. */
  async readMany(offsets: readonly number[]): Promise<SegmentReadResult[]> {
    assert(!this.closed, 'read on a closed partition log');
    return offsets.map((offset) => {
      assert(Number.isSafeInteger(offset) && offset >= 0, `offset ${offset} invalid`);
      if (offset >= this.highWatermarkValue) return 'past_end';
      if (offset < this.oldestOffset) return 'aged_out';
      const segment = this.segments[this.segmentIndexOf(offset)]!;
      const frame = segment.frames[offset - segment.baseOffset]!.slice();
      return recordFromFrameAt(frame, 0, frame.byteLength, offset);
    });
  }

  /** Spec §1.12, as PartitionLog.retain: whole segments from the oldest, the active one too when all of it is old. */
  async retain(cutoffSec: number): Promise<{ oldestOffset: number; deletedSegments: number }> {
    assert(!this.closed, 'retain on a closed partition log');
    assert(!this.flushing, 'retain during a flush');
    assert(!this.retaining, 'one retain at a time per partition log');
    assert(Number.isSafeInteger(cutoffSec), `cutoffSec ${cutoffSec} invalid`);
    let deletedSegments = 0;
    for (const segment of this.segments) {
      const last = segment.timestampsSec.at(-1);
      if (last !== undefined && last >= cutoffSec) break;
      deletedSegments += 1;
    }
    if (deletedSegments > 0) {
      // As the file store: the mark promises lastIngress to a restart, so what it names is synced first.
      if (deletedSegments === this.segments.length) await this.sync();
      this.retaining = true;
      try {
        await Promise.resolve();
        if (this.crashed) return await never;
        if (deletedSegments === this.segments.length) {
          this.mark = { nextOffset: this.highWatermarkValue, lastIngress: this.storedLastIngress };
        }
        this.segments.splice(0, deletedSegments);
      } finally {
        this.retaining = false;
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
      nextOffset: this.nextOffsetValue,
      highWatermark: this.highWatermarkValue,
      sizeBytes,
    };
    const oldestAtSec = this.segments[0]?.timestampsSec[0];
    if (oldestAtSec !== undefined) stats.oldestSegmentAtSec = oldestAtSec;
    return stats;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.sync();
    this.closed = true;
  }

  async destroy(): Promise<void> {
    this.closed = true;
    this.segments = [];
    this.mark = null;
  }

  /** The store a restart finds after a clean close: everything written (close synced it). */
  reopen(): MemorySegmentStore {
    assert(this.closed, 'reopen of an open memory store: close or crash it first');
    return new MemorySegmentStore(this.dir, this.segmentBytesMax, this.image(Infinity));
  }

  /** The process dies now: this instance stops (its operations in flight never complete) and the store a restart
   *  finds is returned. It keeps sealed segments (their roll synced them) and the active segment's records below
   *  syncedHighWatermark; staged and written-but-unsynced records are lost, as with a power loss. */
  crash(): MemorySegmentStore {
    const image = this.image(this.syncedHighWatermarkValue);
    this.crashed = true;
    this.closed = true;
    return new MemorySegmentStore(this.dir, this.segmentBytesMax, image);
  }

  /** A copy of the segments with the active (last) one cut at keptBelow, sealed ones whole. */
  private image(keptBelow: number): MemoryImage {
    const segments = this.segments.map((s, k): MemorySegment => {
      const count = k === this.segments.length - 1 ? Math.min(s.frames.length, Math.max(0, keptBelow - s.baseOffset)) : s.frames.length;
      const frames = s.frames.slice(0, count);
      let logBytes = 0;
      for (const frame of frames) logBytes += frame.byteLength;
      return { baseOffset: s.baseOffset, frames, timestampsSec: s.timestampsSec.slice(0, count), logBytes };
    });
    return { segments, mark: this.mark === null ? null : { ...this.mark } };
  }

  /** The ingress position of the last kept record of this node's, else the mark's; each origin's last kept record.
   *  A whole scan: the file store reads the same from its origins mark and active segment. */
  private lastStoredIngress(): IngressPosition | null {
    let local: IngressPosition | null = null;
    for (const segment of this.segments) {
      segment.frames.forEach((frame, k) => {
        const record = recordFromFrameAt(frame, 0, frame.byteLength, segment.baseOffset + k);
        const position = { seq: record.ingressSeq, index: record.ingressIndex };
        if (record.origin === undefined) local = position;
        else this.origins.recovered(record.origin, position);
      });
    }
    return local ?? (this.mark === null ? null : this.mark.lastIngress);
  }

  private segmentIndexOf(offset: number): number {
    let k = this.segments.length - 1;
    while (k > 0 && this.segments[k]!.baseOffset > offset) k -= 1;
    return k;
  }

  private invariantsCheck(): void {
    assert(this.oldestOffset <= this.highWatermarkValue, 'oldestOffset above highWatermark');
    assert(this.syncedHighWatermarkValue <= this.highWatermarkValue, 'syncedHighWatermark above highWatermark');
    assert(this.highWatermarkValue <= this.nextOffsetValue, 'highWatermark above nextOffset');
    const last = this.segments.at(-1);
    if (last !== undefined) assert.equal(last.baseOffset + last.frames.length, this.highWatermarkValue, 'last segment does not end at highWatermark');
  }
}
