// One partition's log on disk, the file implementation of SegmentStore (segment_store.ts; memory_segment_store.ts is
// the other): segments <baseOffset>.log (frames [u32 len][u32 crc32][record], segment_record.ts) and their dense .idx
// (segment_index.ts), under the directory partition_dirs.ts names. Tests can fail its append, sync, roll and
// recovery truncate through fault_points.ts. Runs on the partition worker
// thread that owns the partition; only that worker's modules (partition_worker.ts, partition_table.ts, the consume
// routes and read paths) call it. Lifecycle: open (recovery) or
// createEmpty, then stage/flush/sync/read/retain in any order (one flush or retain at a time; a sync may run beside
// a flush, and what would close its handle waits for it), then close or destroy. flush() writes and moves
// highWatermark, so readers see records once they are in the page cache; sync() fdatasyncs them
// (syncedHighWatermark). Offsets below highWatermark never change meaning, not even after a power
// loss: every record came from this node's ingress log, which keeps it until a sync covers it and hands it over
// again in the same order at restart, so a lost unsynced tail is stored again at the same offsets (DESIGN
// deviation, docs/decisions.md "Partition logs: written, then synced in the background"). Retention removes whole
// segments from the old end, and next_offset.mark keeps the tail when none is left.
// While open, the active .log keeps zeros written and synced past its last frame (zeroFill*); a roll and a clean
// close cut them, so sealed segments end at their last frame. The active .idx gets its entries at a roll or a clean
// close (activeIdxComplete); until then readers take positions from memory, and open() rebuilds it from the .log.
import assert from 'node:assert/strict';
import { open, readdir, readFile, rm, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Packr } from 'msgpackr';
import { encodeFrame, frameBodyBytesMax, frameHeaderBytes, scanFrames } from '../../src/util/frame.js';
import { parseSegmentFileName, segmentPath } from './partition_dirs.js';
import { forgetSealedSegment, forgetSealedSegmentsOf, withSealedSegment } from './sealed_handles.js';
import { indexEntryBytes, indexEntryRead, segmentPositionLimit, SegmentPositions } from './segment_index.js';
import { dirCreateDurably, dirSync, fileReplaceDurably, readExact, readExactSync, writeAll, writeAllSync } from '../../src/util/durable_fs.js';
import { ZeroFill } from '../../src/util/zero_fill.js';
import { Staging, type StagedFrames } from './staging.js';
import { faultPointHit, faultPointsArmed } from './fault_points.js';
import { originsMarkFileName, originsMarkRead, originsMarkWrite } from './origin_positions.js';
import { PartitionOffsets, type SegmentOffsets, type TailMark } from './partition_offsets.js';
import { recordDecode, recordFrameBytesMax, recordFrameWrite, recordFromFrameAt } from './segment_record.js';
import type { IngressPosition, PartitionLogStats, SegmentReadResult, SegmentStore, StoredRecord } from './segment_store.js';

export type { IngressPosition, PartitionLogStats, StoredRecord } from './segment_store.js';

const packr = new Packr({ useRecords: false, moreTypes: false });

/** The last flushed chunk of the active segment is kept in memory (copied, exactly sized) when at most this big,
 *  so a consumer that keeps up reads the records it was just woken for without a file read. Bounds the memory per
 *  partition; bigger chunks (batch produce) are read from the file. */
const tailChunkBytesMax = 16 * 1024;
/** Zeros written ahead of the active .log's end (src/util/zero_fill.ts), so a flush round's write overwrites blocks
 *  the file owns and its fdatasync needs no journal commit. A partition's first fill is small (one written to once
 *  keeps 32 KiB of zeros), each later one doubles up to the most; all fills of a worker share one buffer of zeros,
 *  and each fill opens and closes its own handle, so an open partition holds no further descriptor. */
const zeroFillFirstChunkBytes = 32 * 1024;
const zeroFillChunkBytesMax = 1024 * 1024;
/** Rounds bigger than this (batch produce) start no fill: their sync is dominated by their own data. */
const zeroFillRoundBytesMax = 64 * 1024;
/** Recovery reads a log in windows of this size: bounded memory per partition, few reads per segment. */
const recoveryScanWindowBytes = 4 * 1024 * 1024;
/** Written when retention deletes every segment: it alone then carries highWatermark and lastIngress over
 *  a restart. Replaced atomically through the .tmp name; a stale one is harmless, since segments win. */
const markFileName = 'next_offset.mark';
const markTmpFileName = `${markFileName}.tmp`;

// [nextOffset, ingressSeq, ingressIndex], the ingress pair null when nothing was ever stored.
type WireMark = [number, number | null, number | null];

interface Segment {
  baseOffset: number;
  /** Records whose frames are written (for the active segment, those below highWatermark). */
  recordCount: number;
  /** Written bytes of the .log. */
  logBytes: number;
  idxBytes: number;
  /** Unix seconds of the first and the last record; null while the segment holds none (only the active
   *  one can). Retention judges a segment by its last record, the newest written. */
  timestampsSec: { first: number; last: number } | null;
}

/** The active segment's open files. */
interface ActiveFiles {
  log: FileHandle;
  idx: FileHandle;
  /** Built at the first flush into this segment: a partition never written to fills nothing. */
  zeroFill: ZeroFill | null;
  /** Entries of activePositions in the .idx file so far: flushes leave it to a roll or a clean close, since readers
   *  of the active segment use activePositions and open() rebuilds the active .idx from the .log. */
  idxEntriesWritten: number;
}

/** The last flushed chunk of the active segment: frames of offsets [firstOffset, firstOffset + count) as they are
 *  in the .log from byte position logStart. */
interface TailChunk {
  firstOffset: number;
  count: number;
  logStart: number;
  bytes: Uint8Array;
}

/** The file implementation of SegmentStore. */
export class PartitionLog implements SegmentStore {
  private segments: Segment[] = [];
  private active: ActiveFiles | null = null;
  /** See tailChunkBytesMax; null when the last chunk was bigger, or after a roll. */
  private tail: TailChunk | null = null;
  /** Frame positions of the active segment's written records; sealed segments' live in their .idx. */
  private activePositions = new SegmentPositions();
  /** Offsets and ingress positions (the synced high watermark is what was fdatasynced); offsets is the same object
   *  as callers may read it. */
  private readonly book = new PartitionOffsets();
  readonly offsets: SegmentOffsets = this.book;
  private readonly staging = new Staging();
  /** Settles (never rejects) when the sync in flight ends: a roll, retain or close waits for it before closing the
   *  handle it syncs. */
  private syncRun: Promise<void> | null = null;
  /** A roll, retain, close or destroy in flight (they close handles): a sync waits for it. */
  private handlesBusy: Promise<unknown> | null = null;

  private constructor(
    readonly dir: string,
    readonly segmentBytesMax: number,
  ) {
    assert(Number.isSafeInteger(segmentBytesMax) && segmentBytesMax > 0, `segmentBytesMax ${segmentBytesMax} invalid`);
    assert(segmentBytesMax <= segmentPositionLimit, `segmentBytesMax ${segmentBytesMax} exceeds u32 index entries`);
  }

  /** Opens a partition directory (absent is empty): checks sealed segments, truncates a torn tail. */
  static async open(opts: { dir: string; segmentBytesMax: number }): Promise<PartitionLog> {
    const log = new PartitionLog(opts.dir, opts.segmentBytesMax);
    const listing = await partitionDirList(opts.dir);
    for (let i = 0; i + 1 < listing.bases.length; i++) {
      log.segments.push(await sealedSegmentRecover(opts.dir, listing.bases[i]!, listing.bases[i + 1]!));
    }
    const originsMark = await originsMarkRead(opts.dir);
    log.book.recoverOriginsMark(originsMark);
    const activeBase = listing.bases.at(-1);
    const activeLocal = activeBase === undefined ? null : await log.openActiveRecover(activeBase);
    const tailMark = listing.hasMark ? await markRead(opts.dir) : null;
    const last = log.segments.at(-1);
    const highWatermark = last === undefined ? (tailMark?.nextOffset ?? 0) : last.baseOffset + last.recordCount;
    const found = { activeLocal, originsMark };
    const lastSealed = PartitionOffsets.lastSealedNeeded(found) ? await log.lastSealedRead() : null;
    // A tail mark is written at the highWatermark of its time and offsets only grow: recover refuses one above it.
    log.book.recover({ ...found, highWatermark, tailMark, lastSealed });
    log.invariantsCheck();
    return log;
  }

  /** A partition known to have no directory yet: no I/O until the first flush creates it. startOffset: the offset its
   *  first record gets (a partition reassigned from a lost member, an incoming copy that starts past 0), so offsets
   *  never go back; startMarkWrite keeps it over a restart before any record is written. */
  static createEmpty(opts: { dir: string; segmentBytesMax: number; startOffset?: number }): PartitionLog {
    const log = new PartitionLog(opts.dir, opts.segmentBytesMax);
    const startOffset = opts.startOffset ?? 0;
    assert(Number.isSafeInteger(startOffset) && startOffset >= 0, `startOffset ${startOffset} invalid`);
    if (startOffset > 0) log.book.recover({ highWatermark: startOffset, tailMark: null, originsMark: null, activeLocal: null, lastSealed: null });
    return log;
  }

  /** Makes the empty log's start offset durable (next_offset.mark, as a retention that deleted every segment
   *  leaves it), creating its directory: a restart opens it at that offset. */
  async startMarkWrite(): Promise<void> {
    assert(this.segments.length === 0 && this.offsets.nextOffset === this.offsets.highWatermark, 'start mark of a log that holds records');
    await dirCreateDurably(this.dir);
    await markWrite(this.dir, { nextOffset: this.offsets.highWatermark, lastIngress: null });
  }

  /** The first kept offset; with no segment, highWatermark (staged records are not kept yet). */
  get oldestOffset(): number {
    return this.segments[0]?.baseOffset ?? this.book.highWatermark;
  }

  /** Assigns the next offset and buffers the record's frame; no I/O. */
  stage(r: Omit<StoredRecord, 'offset'>): number {
    const offset = this.book.stageBegin(r);
    // The frame is written in place into the staging block (segment_record.ts), saving an encode and a copy per record.
    const staging = this.staging;
    staging.reserve(recordFrameBytesMax(offset, r));
    const at = staging.at;
    staging.commit(recordFrameWrite(staging.target, at, offset, r, staging.words), r.timestampSec);
    this.book.stageEnd(r);
    return offset;
  }

  /** Writes everything staged with its index entries (rolling segments as needed, which syncs the sealed one), then
   *  advances highWatermark to what was written. One flush at a time; records staged meanwhile wait. */
  async flush(): Promise<void> {
    const count = this.staging.count;
    if (!this.book.flushBegin(count)) return;
    const staged = this.staging.take();
    const firstOffset = this.book.nextOffset - count;
    try {
      let from = 0;
      while (from < count) {
        await this.flushSegmentPrepare(firstOffset + from, staged.frameBytes(from));
        const to = this.flushChunkEnd(staged, from);
        await this.flushChunk(staged, from, to);
        from = to;
      }
      this.book.flushWritten();
    } finally {
      this.book.flushEnd();
    }
    // Written, and the tail kept is a copy: nothing holds a view of the blocks now. (A failed flush stops the worker.)
    staged.release();
  }

  /** fdatasyncs what flush wrote by the time of the call: afterwards syncedHighWatermark is at least the
   *  highWatermark of the call. May run while a flush writes (both use positional I/O on the handle); the .idx needs
   *  no sync (open rebuilds the active one from the .log; a roll syncs the sealed one). */
  async sync(): Promise<void> {
    assert(!this.book.closed, 'sync on a closed partition log');
    for (let busy = this.syncRun ?? this.handlesBusy; busy !== null; busy = this.syncRun ?? this.handlesBusy) await busy;
    if (this.book.closed || !this.book.unsynced) return;
    const point = this.book.syncPoint();
    if (faultPointsArmed) faultPointHit('sync', this.dir);
    // Sealed segments were synced by their roll: only the active one can hold unsynced records.
    const run = this.active?.log.datasync() ?? Promise.resolve();
    this.syncRun = run.then(nothing, nothing).finally(() => (this.syncRun = null));
    // A failed sync rejects here, to the caller (the worker fail-stops); waiters only need it to have ended.
    await run;
    this.book.syncDone(point);
  }

  /** Runs work that closes handles once no sync is in flight, and keeps new syncs waiting until it is done. */
  private async withoutSync<T>(work: () => Promise<T>): Promise<T> {
    while (this.syncRun !== null) await this.syncRun;
    assert(this.handlesBusy === null, 'two handle-closing operations at once');
    const run = work();
    this.handlesBusy = run.then(nothing, nothing).finally(() => (this.handlesBusy = null));
    return run;
  }

  /** The record at offset, read from disk and checked (length, crc, offset) after reading. */
  async read(offset: number): Promise<StoredRecord | 'past_end' | 'aged_out'> {
    return (await this.readMany([offset]))[0]!;
  }

  /**
   * Reads many offsets with one file read per run of consecutive offsets in one segment (a batch consume leases
   * runs of new offsets): answers in the order asked. Records are views into one buffer per run, so the caller can
   * transfer each run's buffer once instead of copying every payload.
   */
  async readMany(offsets: readonly number[], opts: { fromTail?: boolean } = {}): Promise<SegmentReadResult[]> {
    assert(!this.book.closed, 'read on a closed partition log');
    const results: SegmentReadResult[] = new Array(offsets.length);
    const runs: { at: number; count: number }[] = [];
    for (let i = 0; i < offsets.length; i++) {
      const offset = offsets[i]!;
      assert(Number.isSafeInteger(offset) && offset >= 0, `offset ${offset} invalid`);
      if (offset >= this.book.highWatermark) results[i] = 'past_end';
      else if (offset < this.oldestOffset) results[i] = 'aged_out';
      else {
        const run = runs[runs.length - 1];
        const previous = run === undefined ? -1 : offsets[run.at + run.count - 1]!;
        const sameRun = run !== undefined && run.at + run.count === i && offset === previous + 1 &&
          this.segmentIndexOf(offset) === this.segmentIndexOf(previous);
        if (sameRun) run.count += 1;
        else runs.push({ at: i, count: 1 });
      }
    }
    await Promise.all(runs.map(async ({ at, count }) => {
      const records = await this.readRun(offsets[at]!, count, opts.fromTail === true);
      records.forEach((record, k) => (results[at + k] = record));
    }));
    return results;
  }

  /** count consecutive offsets from first, all in one segment and below the high watermark. */
  /** fromTail: records of the last flushed chunk may come from memory (tailChunkBytesMax); a replay reads the file. */
  private async readRun(first: number, count: number, fromTail: boolean): Promise<(StoredRecord | 'aged_out')[]> {
    const segmentIndex = this.segmentIndexOf(first);
    const segment = this.segments[segmentIndex]!;
    const k = first - segment.baseOffset;
    assert(k + count <= segment.recordCount, `run ${first}+${count} past its segment`);
    const isActive = this.active !== null && segmentIndex === this.segments.length - 1;
    let frameStarts: number[];
    let bytes: Uint8Array;
    try {
      const tail = fromTail ? this.tail : null;
      if (isActive && tail !== null && first >= tail.firstOffset && first + count <= tail.firstOffset + tail.count) {
        // The records were just flushed: the same bytes the file holds, still in memory.
        frameStarts = this.activeFrameStarts(segment, k, count);
        bytes = tail.bytes.subarray(frameStarts[0]! - tail.logStart, frameStarts[count]! - tail.logStart);
      } else if (isActive) {
        const files = this.active!;
        frameStarts = this.activeFrameStarts(segment, k, count);
        // The active segment holds the newest records, almost always in the page cache: a blocking read (this is a
        // partition worker) costs microseconds, a thread-pool read two thread wake-ups. Being blocking, it never
        // overlaps a roll or close of the handle. Sealed segments, older and maybe on disk only, are read through the
        // pool.
        bytes = readExactSync(files.log.fd, frameStarts[0]!, frameStarts[count]! - frameStarts[0]!);
      } else {
        ({ frameStarts, bytes } = await segmentRunReadSealed(this.dir, segment, k, count));
      }
    } catch (err) {
      // Retention may delete a sealed segment while a read of it waits to open its files.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && first < this.oldestOffset) return new Array(count).fill('aged_out');
      throw err;
    }
    const base = frameStarts[0]!;
    const records: StoredRecord[] = new Array(count);
    try {
      for (let i = 0; i < count; i++) records[i] = recordFromFrameAt(bytes, frameStarts[i]! - base, frameStarts[i + 1]! - base, first + i);
    } catch (err) {
      throw new Error(`${segmentPath(this.dir, segment.baseOffset, 'log')}: ${(err as Error).message}`);
    }
    return records;
  }

  /** Byte positions in the active .log of the frames of entries [k, k + count), and the end of the last. */
  private activeFrameStarts(segment: Segment, k: number, count: number): number[] {
    const frameStarts: number[] = new Array(count + 1);
    for (let i = 0; i <= count; i++) frameStarts[i] = k + i < segment.recordCount ? this.activePositions.at(k + i) : segment.logBytes;
    return frameStarts;
  }

  /** Spec §1.12: deletes, oldest first, every segment whose last (newest) record is older than cutoffSec,
   *  and stops at the first one still needed. The active segment goes too when all of it is old: the next
   *  flush then starts a fresh segment at highWatermark, and next_offset.mark keeps that over a restart.
   *  The shell serializes it with flush (both move segment files). Like a failed flush, a failed retain
   *  leaves memory and disk apart, and the caller fail-stops; open() recovers from the files. */
  async retain(cutoffSec: number): Promise<{ oldestOffset: number; deletedSegments: number }> {
    this.book.retainCheck(cutoffSec);
    const deletedSegments = this.retainCount(cutoffSec);
    if (deletedSegments > 0) {
      // The marks promise positions to a restart: what they name must be synced, not only written.
      const all = deletedSegments === this.segments.length;
      if (all) await this.sync();
      this.book.retainingSet(true);
      try {
        await this.withoutSync(async () => {
          // The marks must be durable before the last segment, which knows the tail, is gone.
          if (all) await this.retainMarksWrite();
          for (let k = 0; k < deletedSegments; k++) await this.retainOldestDelete();
        });
      } finally {
        this.book.retainingSet(false);
      }
    }
    this.invariantsCheck();
    return { oldestOffset: this.oldestOffset, deletedSegments };
  }

  stats(): PartitionLogStats {
    let sizeBytes = 0;
    for (const s of this.segments) sizeBytes += s.logBytes + s.idxBytes;
    const stats: PartitionLogStats = {
      segments: this.segments.length,
      oldestOffset: this.oldestOffset,
      nextOffset: this.book.nextOffset,
      highWatermark: this.book.highWatermark,
      sizeBytes,
    };
    const oldestTimestampsSec = this.segments[0]?.timestampsSec ?? null;
    if (oldestTimestampsSec !== null) stats.oldestSegmentAtSec = oldestTimestampsSec.first;
    return stats;
  }

  /** Syncs, then closes the files, cutting the active .log's zero tail. Records still staged are dropped: the caller
   *  flushes first unless destroying. */
  async close(): Promise<void> {
    if (!this.book.closed) await this.sync();
    await this.withoutSync(() => this.closeFiles(true));
  }

  /** Closes and removes the partition directory (topic deleted). */
  async destroy(): Promise<void> {
    await this.withoutSync(() => this.closeFiles(false));
    await rm(this.dir, { recursive: true, force: true });
  }

  /** For tests: resolves once the active .log's zero fill in flight (if any) is done. */
  async zeroFillIdle(): Promise<void> {
    await this.active?.zeroFill?.idle();
  }

  private async closeFiles(cutZeros: boolean): Promise<void> {
    assert(!this.book.flushing, 'close during a flush');
    assert(this.syncRun === null, 'close during a sync');
    assert(!this.book.retaining, 'close during a retain');
    if (this.book.closed) return;
    this.book.closedSet();
    forgetSealedSegmentsOf(this.dir);
    // A clean close leaves whole files (open() would rebuild the .idx from the .log all the same).
    if (cutZeros) this.activeIdxComplete();
    await this.activeFilesRetire(cutZeros ? (this.segments.at(-1)?.logBytes ?? null) : null);
  }

  /** Writes the .idx entries that flushes left out, with a blocking call (a partition worker). */
  private activeIdxComplete(): void {
    const files = this.active;
    if (files === null || files.idxEntriesWritten === this.activePositions.length) return;
    const entries = this.activePositions.encode(files.idxEntriesWritten, this.activePositions.length);
    writeAllSync(files.idx.fd, entries, files.idxEntriesWritten * indexEntryBytes);
    files.idxEntriesWritten = this.activePositions.length;
  }

  private invariantsCheck(): void {
    const last = this.segments.at(-1);
    this.book.invariantsCheck(this.oldestOffset, last === undefined ? null : last.baseOffset + last.recordCount);
    if (last === undefined) {
      assert(this.active === null, 'active files without a segment');
      return;
    }
    if (this.active !== null) assert.equal(this.activePositions.length, last.recordCount, 'active index out of step');
  }

  /** How many segments, from the oldest, hold no record at or after cutoffSec. An empty segment (only the
   *  active one can be) holds nothing to keep. */
  private retainCount(cutoffSec: number): number {
    let count = 0;
    for (const segment of this.segments) {
      if (segment.timestampsSec !== null && segment.timestampsSec.last >= cutoffSec) break;
      count += 1;
    }
    return count;
  }

  /** Leaves memory first, so reads from now on answer aged_out, then leaves the disk durably: one
   *  directory sync per segment keeps the files on disk a contiguous run at every crash point, which is
   *  what open() needs to trust the offsets they name. */
  private async retainOldestDelete(): Promise<void> {
    const segment = this.segments.shift();
    assert(segment !== undefined, 'retain deletes more segments than exist');
    if (this.segments.length === 0) await this.activeFilesRetire(null);
    forgetSealedSegment(this.dir, segment.baseOffset);
    // .log first: an interrupted removal leaves a lone .idx, which open() removes.
    await unlink(segmentPath(this.dir, segment.baseOffset, 'log'));
    await unlink(segmentPath(this.dir, segment.baseOffset, 'idx'));
    await dirSync(this.dir);
  }

  /** Makes the active segment able to take the frame at offset: creates the first one, or rolls. */
  private async flushSegmentPrepare(offset: number, bytes: number): Promise<void> {
    const last = this.segments.at(-1);
    if (last === undefined) {
      await this.segmentCreate(offset);
      return;
    }
    assert(this.active !== null, 'segments without an active segment while open');
    // A record larger than segmentBytesMax still goes alone into a fresh segment.
    if (last.logBytes > 0 && last.logBytes + bytes > this.segmentBytesMax) await this.segmentRoll(offset);
  }

  /** One past the last staged frame, from `from`, that fits the active segment (the first always does). */
  private flushChunkEnd(staged: StagedFrames, from: number): number {
    const segment = this.segments.at(-1)!;
    let bytes = segment.logBytes + staged.frameBytes(from);
    let to = from + 1;
    while (to < staged.count && bytes + staged.frameBytes(to) <= this.segmentBytesMax) {
      bytes += staged.frameBytes(to);
      to += 1;
    }
    return to;
  }

  private async flushChunk(staged: StagedFrames, from: number, to: number): Promise<void> {
    const segment = this.segments.at(-1)!;
    const files = this.active!;
    const chunkStart = staged.frameStarts[from]!;
    const chunkBytes = staged.frameEnd(to - 1) - chunkStart;
    // Positions past segment.recordCount are not visible to readers until the write below is done.
    for (let k = from; k < to; k++) this.activePositions.push(segment.logBytes + staged.frameStarts[k]! - chunkStart);
    const zeroFill = (files.zeroFill ??= new ZeroFill({
      path: segmentPath(this.dir, segment.baseOffset, 'log'),
      fileBytes: segment.logBytes,
      limitBytes: this.segmentBytesMax,
      chunkBytes: zeroFillChunkBytesMax,
      firstChunkBytes: zeroFillFirstChunkBytes,
      blockingWrites: true,
    }));
    // Data only ever overwrites zeros already written, or grows the file: never races a fill's write.
    await zeroFill.reserve(segment.logBytes + chunkBytes);
    // Written synchronously: this is a partition worker, which may block, and a write into the page cache takes
    // microseconds where a thread-pool round trip takes two thread wake-ups (the tail of a long-poll wake-up). The
    // .idx entries wait for the roll or clean close (activeIdxComplete).
    const chunkEnd = chunkStart + chunkBytes;
    if (faultPointsArmed) faultPointHit('append', segmentPath(this.dir, segment.baseOffset, 'log'));
    staged.writeRun(files.log.fd, chunkStart, chunkEnd, segment.logBytes);
    this.tail = chunkBytes <= tailChunkBytesMax
      ? { firstOffset: segment.baseOffset + segment.recordCount, count: to - from, logStart: segment.logBytes,
        bytes: staged.copyRun(chunkStart, chunkEnd) }
      : null;
    segment.recordCount += to - from;
    segment.logBytes += chunkBytes;
    segment.idxBytes += (to - from) * indexEntryBytes;
    segment.timestampsSec = {
      first: segment.timestampsSec?.first ?? staged.timestampsSec[from]!,
      last: staged.timestampsSec[to - 1]!,
    };
    this.book.writtenTo(segment.baseOffset + segment.recordCount);
    if (chunkBytes <= zeroFillRoundBytesMax) zeroFill.extendIfLow(segment.logBytes);
    this.invariantsCheck();
  }

  private async segmentCreate(baseOffset: number): Promise<void> {
    assert(this.active === null, 'segment created while another is active');
    if (this.segments.length === 0) await dirCreateDurably(this.dir);
    // 'wx+': an existing file here would mean two logs own one offset range.
    const log = await open(segmentPath(this.dir, baseOffset, 'log'), 'wx+');
    const idx = await open(segmentPath(this.dir, baseOffset, 'idx'), 'wx+');
    await dirSync(this.dir);
    this.segments.push({ baseOffset, recordCount: 0, logBytes: 0, idxBytes: 0, timestampsSec: null });
    this.active = { log, idx, zeroFill: null, idxEntriesWritten: 0 };
    this.activePositions = new SegmentPositions();
  }

  private async segmentRoll(baseOffset: number): Promise<void> {
    await this.withoutSync(async () => {
      const files = this.active!;
      if (faultPointsArmed) faultPointHit('roll', segmentPath(this.dir, baseOffset, 'log'));
      // Before anything can take the segment for sealed: sealed reads go through the .idx.
      this.activeIdxComplete();
      // Only the active segment may hold unsynced records (sync() relies on it), and open() trusts a sealed segment's
      // .idx when consistent, so both must be durable before the roll.
      await Promise.all([files.log.datasync(), files.idx.sync()]);
      // A sealed segment ends at its last frame (open() takes its size for the end of its data), and the cut must be
      // durable before the next segment exists.
      await this.activeFilesRetire(this.segments.at(-1)!.logBytes);
      // The next open finds handed-over records' origins in the active segment only: the sealed ones' go here first.
      const origins = this.book.rollOrigins(baseOffset);
      if (origins !== null) await originsMarkWrite(this.dir, origins);
      await this.segmentCreate(baseOffset);
    });
  }

  /** Closes the active files. cutZerosAt: the .log's data end, to cut the zero tail at (a roll, a clean close);
   *  null when the file is about to be removed. */
  private async activeFilesRetire(cutZerosAt: number | null): Promise<void> {
    const files = this.active;
    if (files === null) return;
    this.active = null;
    this.tail = null;
    if (files.zeroFill !== null) {
      if (cutZerosAt !== null) await files.zeroFill.closeAndCut(files.log, cutZerosAt);
      else await files.zeroFill.close();
    }
    await files.idx.close();
    await files.log.close();
  }

  private segmentIndexOf(offset: number): number {
    let low = 0;
    let high = this.segments.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (this.segments[mid]!.baseOffset <= offset) low = mid;
      else high = mid - 1;
    }
    assert(this.segments[low]!.baseOffset <= offset, `offset ${offset} below the first segment`);
    return low;
  }

  /** Scans the last segment, drops a torn or corrupt tail (and the zeros a crash left ahead of its end: a frame
   *  length of 0 ends the scan), and rebuilds its index. */
  private async openActiveRecover(baseOffset: number): Promise<IngressPosition | null> {
    const log = await open(segmentPath(this.dir, baseOffset, 'log'), 'r+');
    const positions = new SegmentPositions();
    let first: StoredRecord | null = null;
    let last: StoredRecord | null = null;
    let lastLocal: StoredRecord | null = null;
    const fileBytes = (await log.stat()).size;
    const validBytes = await logScan(log, fileBytes, (body, position) => {
      const record = recordDecode(body);
      assert.equal(record.offset, baseOffset + positions.length, `segment ${baseOffset}: offsets out of sequence`);
      positions.push(position);
      first ??= record;
      last = record;
      if (record.origin === undefined) lastLocal = record;
      else this.book.recoveredForeign(record.origin, { seq: record.ingressSeq, index: record.ingressIndex });
    });
    if (validBytes < fileBytes) {
      if (faultPointsArmed) faultPointHit('truncate', segmentPath(this.dir, baseOffset, 'log'));
      await log.truncate(validBytes);
      await log.datasync();
    }
    const idx = await open(segmentPath(this.dir, baseOffset, 'idx'), 'w+');
    const entries = positions.encode(0, positions.length);
    await writeAll(idx, entries, 0);
    const firstRecord = first as StoredRecord | null;
    const lastRecord = last as StoredRecord | null;
    const timestampsSec =
      firstRecord === null || lastRecord === null ? null : { first: firstRecord.timestampSec, last: lastRecord.timestampSec };
    const recordCount = positions.length;
    this.segments.push({ baseOffset, recordCount, logBytes: validBytes, idxBytes: entries.byteLength, timestampsSec });
    this.active = { log, idx, zeroFill: null, idxEntriesWritten: positions.length };
    this.activePositions = positions;
    const local = lastLocal as StoredRecord | null;
    return local === null ? null : { seq: local.ingressSeq, index: local.ingressIndex };
  }

  /** The ingress position of the last record before the active segment (recovery asks only when it is this node's:
   *  PartitionOffsets.lastSealedNeeded), or null when no sealed segment is kept. */
  private async lastSealedRead(): Promise<IngressPosition | null> {
    const sealed = this.segments.at(-2);
    if (sealed === undefined) return null;
    const k = sealed.recordCount - 1;
    const { frameStarts, bytes } = await segmentRunReadSealed(this.dir, sealed, k, 1);
    const record = recordFromFrameAt(bytes, 0, frameStarts[1]! - frameStarts[0]!, sealed.baseOffset + k);
    return { seq: record.ingressSeq, index: record.ingressIndex };
  }

  /** A retain that deletes every segment: the origins mark (when the partition took handed-over records) and the tail
   *  mark get the synced positions, which the last roll's origins mark would otherwise give a restart stale. */
  private async retainMarksWrite(): Promise<void> {
    const origins = this.book.retainOrigins();
    if (origins !== null) await originsMarkWrite(this.dir, origins);
    await markWrite(this.dir, this.book.tailMark());
  }
}

function nothing(): void {}

/** The segment base offsets in dir, ascending, and whether it holds a mark. What an interrupted removal
 *  or mark write leaves behind is removed: a lone .idx, a mark's .tmp. */
async function partitionDirList(dir: string): Promise<{ bases: number[]; hasMark: boolean }> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { bases: [], hasMark: false };
    throw err;
  }
  const logs = new Set<number>();
  const idxs: number[] = [];
  for (const name of names) {
    const parsed = parseSegmentFileName(name);
    if (parsed === null) continue;
    if (parsed.kind === 'log') logs.add(parsed.baseOffset);
    else idxs.push(parsed.baseOffset);
  }
  // Segment creation makes the .log first and removal unlinks it first, so only an interrupted removal
  // leaves a lone .idx; it would block creating that segment again.
  for (const base of idxs) if (!logs.has(base)) await unlink(segmentPath(dir, base, 'idx'));
  if (names.includes(markTmpFileName)) await unlink(join(dir, markTmpFileName));
  if (names.includes(`${originsMarkFileName}.tmp`)) await unlink(join(dir, `${originsMarkFileName}.tmp`));
  return { bases: [...logs].sort((a, b) => a - b), hasMark: names.includes(markFileName) };
}

/** A sealed segment's bounds and end timestamps: its .idx is trusted when consistent with the .log, else rebuilt. */
async function sealedSegmentRecover(dir: string, baseOffset: number, nextBaseOffset: number): Promise<Segment> {
  const recordCount = nextBaseOffset - baseOffset;
  assert(recordCount > 0, `sealed segment ${baseOffset} holds no offsets before ${nextBaseOffset}`);
  const log = await open(segmentPath(dir, baseOffset, 'log'), 'r');
  try {
    const logBytes = (await log.stat()).size;
    const segment: Segment = { baseOffset, recordCount, logBytes, idxBytes: recordCount * indexEntryBytes, timestampsSec: null };
    segment.timestampsSec = (await sealedIndexEnds(dir, segment, log)) ?? (await sealedIndexRebuild(dir, segment, log));
    return segment;
  } finally {
    await log.close();
  }
}

/** The first and last records' timestamps, read through the .idx; null when the .idx does not match the
 *  .log: it must hold one entry per offset, and its first and last entries must each point at one whole,
 *  valid frame holding their offset, the last one ending exactly at the end of the .log. */
async function sealedIndexEnds(dir: string, segment: Segment, log: FileHandle): Promise<{ first: number; last: number } | null> {
  let idx: FileHandle;
  try {
    idx = await open(segmentPath(dir, segment.baseOffset, 'idx'), 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    if ((await idx.stat()).size !== segment.idxBytes) return null;
    const lastK = segment.recordCount - 1;
    const lastStart = indexEntryRead(await readExact(idx, lastK * indexEntryBytes, indexEntryBytes), 0);
    const last = await sealedRecordRead(log, segment, lastK, { start: lastStart, end: segment.logBytes });
    if (last === null) return null;
    if (lastK === 0) return { first: last.timestampSec, last: last.timestampSec };
    const firstEnd = indexEntryRead(await readExact(idx, indexEntryBytes, indexEntryBytes), 0);
    const first = await sealedRecordRead(log, segment, 0, { start: 0, end: firstEnd });
    return first === null ? null : { first: first.timestampSec, last: last.timestampSec };
  } finally {
    await idx.close();
  }
}

/** Record k of a sealed segment from the bytes an index entry says hold it, or null when they are not
 *  exactly one whole, valid frame holding offset baseOffset + k. */
async function sealedRecordRead(
  log: FileHandle,
  segment: Segment,
  k: number,
  { start, end }: { start: number; end: number },
): Promise<StoredRecord | null> {
  if (!(start < end && end <= segment.logBytes && end - start <= frameHeaderBytes + frameBodyBytesMax)) return null;
  const bytes = await readExact(log, start, end - start);
  const scan = scanFrames(bytes, frameBodyBytesMax);
  const body = scan.bodies[0];
  if (body === undefined || scan.validBytes !== bytes.byteLength) return null;
  const record = recordDecode(body);
  return record.offset === segment.baseOffset + k ? record : null;
}

/** Rebuilds the .idx from a full scan of the .log; returns the first and last records' timestamps. */
async function sealedIndexRebuild(dir: string, segment: Segment, log: FileHandle): Promise<{ first: number; last: number }> {
  const positions = new SegmentPositions();
  const timestampsSec = { first: 0, last: 0 };
  const validBytes = await logScan(log, segment.logBytes, (body, position) => {
    const record = recordDecode(body);
    assert.equal(record.offset, segment.baseOffset + positions.length, `segment ${segment.baseOffset}: offsets out of sequence`);
    if (positions.length === 0) timestampsSec.first = record.timestampSec;
    timestampsSec.last = record.timestampSec;
    positions.push(position);
  });
  // Sealed data was synced before the next segment existed: damage here is not a torn write, and
  // dropping it would shift every later offset, so recovery stops (fail-stop) instead.
  if (validBytes !== segment.logBytes || positions.length !== segment.recordCount) {
    throw new Error(`sealed segment ${segmentPath(dir, segment.baseOffset, 'log')} is corrupt at byte ${validBytes}`);
  }
  const idx = await open(segmentPath(dir, segment.baseOffset, 'idx'), 'w');
  try {
    await writeAll(idx, positions.encode(0, positions.length), 0);
    await idx.sync();
  } finally {
    await idx.close();
  }
  return timestampsSec;
}

/** Replaces the mark atomically and durably: written and synced as .tmp, renamed, directory synced. */
async function markWrite(dir: string, mark: TailMark): Promise<void> {
  assert(Number.isSafeInteger(mark.nextOffset) && mark.nextOffset >= 0, `mark nextOffset ${mark.nextOffset} invalid`);
  const wire: WireMark = [mark.nextOffset, mark.lastIngress?.seq ?? null, mark.lastIngress?.index ?? null];
  await fileReplaceDurably(dir, markFileName, encodeFrame(packr.pack(wire)));
}

/** The mark, checked after reading. It only ever appears whole (renamed into place), so one that fails a
 *  check is damage, and recovery stops: guessing next_offset could give one offset two records. */
async function markRead(dir: string): Promise<TailMark> {
  const path = join(dir, markFileName);
  const bytes = await readFile(path);
  const scan = scanFrames(bytes, frameBodyBytesMax);
  const body = scan.bodies[0];
  if (body === undefined || scan.validBytes !== bytes.byteLength) throw new Error(`${path} fails its length or crc check`);
  const wire = packr.unpack(body) as unknown;
  if (!Array.isArray(wire) || wire.length !== 3) throw new Error(`${path}: malformed body`);
  const [nextOffset, seq, index] = wire as WireMark;
  if (!Number.isSafeInteger(nextOffset) || nextOffset < 0) throw new Error(`${path}: nextOffset ${nextOffset} invalid`);
  if (seq === null && index === null) return { nextOffset, lastIngress: null };
  const ingressValid = typeof seq === 'number' && typeof index === 'number' && Number.isSafeInteger(seq) && Number.isSafeInteger(index);
  if (!ingressValid || index < 0) throw new Error(`${path}: ingress position (${seq}, ${index}) invalid`);
  return { nextOffset, lastIngress: { seq, index } };
}

/** A run of count frames from entry k of a sealed segment: its index entries, then its bytes, each from the segment's
 *  read-ahead window when it holds them (sealed_handles.ts). */
async function segmentRunReadSealed(dir: string, segment: Segment, k: number, count: number): Promise<{ frameStarts: number[]; bytes: Uint8Array }> {
  const hasNext = k + count < segment.recordCount;
  return withSealedSegment(dir, segment.baseOffset, async (files) => {
    const entries = await files.idx.read(k * indexEntryBytes, (k + count + (hasNext ? 1 : 0)) * indexEntryBytes, segment.idxBytes);
    // A loop, not Array.from over an array-like: V8 takes the generic path for those, a tenth of a sealed read's CPU.
    const frameStarts: number[] = new Array(count + 1);
    for (let i = 0; i < count; i++) frameStarts[i] = indexEntryRead(entries, i);
    frameStarts[count] = hasNext ? indexEntryRead(entries, count) : segment.logBytes;
    for (let i = 0; i < count; i++) {
      if (!(frameStarts[i]! < frameStarts[i + 1]! && frameStarts[i + 1]! <= segment.logBytes)) {
        throw new Error(`segment ${segment.baseOffset}: index entry ${k + i} [${frameStarts[i]}, ${frameStarts[i + 1]}) is corrupt`);
      }
    }
    return { frameStarts, bytes: await files.log.read(frameStarts[0]!, frameStarts[count]!, segment.logBytes) };
  });
}

/** Reads frames from the start of a .log; returns the bytes covered by whole, valid frames. */
async function logScan(log: FileHandle, fileBytes: number, onFrame: (body: Uint8Array, position: number) => void): Promise<number> {
  let at = 0;
  while (at < fileBytes) {
    const window = await readExact(log, at, Math.min(recoveryScanWindowBytes, fileBytes - at));
    const scan = scanFrames(window, frameBodyBytesMax);
    for (let k = 0; k < scan.bodies.length; k++) onFrame(scan.bodies[k]!, at + scan.positions[k]!);
    if (scan.validBytes > 0) {
      at += scan.validBytes;
      continue;
    }
    // No whole frame in the window: its first frame is larger than the window, or the tail is torn.
    const body = await logScanLargeFrame(log, at, fileBytes, window);
    if (body === null) break;
    onFrame(body, at);
    at += frameHeaderBytes + body.byteLength;
  }
  return at;
}

async function logScanLargeFrame(log: FileHandle, at: number, fileBytes: number, window: Uint8Array): Promise<Uint8Array | null> {
  if (window.byteLength < frameHeaderBytes) return null;
  const bodyBytes = indexEntryRead(window, 0);
  const bytes = frameHeaderBytes + bodyBytes;
  if (bytes <= window.byteLength || bodyBytes > frameBodyBytesMax || at + bytes > fileBytes) return null;
  const frame = await readExact(log, at, bytes);
  const scan = scanFrames(frame, frameBodyBytesMax);
  return scan.validBytes === bytes ? scan.bodies[0]! : null;
}
