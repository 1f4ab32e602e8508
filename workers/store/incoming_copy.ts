// The incoming copy of a partition moving to this node (issue 41): a PartitionLog in its own directory
// (partition_dirs.ts incomingPartitionDir) that the worker does not serve until the move's flip gives it the
// partition, then renames into topics/. Chunks read from the source are checked (crc32, frames, offsets), stored
// with their offsets, keys, timestamps, payloads and ingress positions unchanged, synced, read back and compared; a
// record whose origin is this node is stored as its own (origin 0), so its ingress position is this node's. The final
// chunk's cursors go to the copy's cursor log. Partition worker thread; workers/move_destination.ts owns these.
// Lifecycle: create (at the first chunk's offset, kept in next_offset.mark) or open (a restart), write chunks one at
// a time, then close (before the flip's rename or a set-aside).
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import type { MoveChunk } from '../../src/protocol/thread_messages.js';
import { CursorLog } from './cursor_log.js';
import { chunkCrc32, chunkFrames, chunkRecordsDecode, chunkRecordsEncode } from './move_chunk.js';
import { PartitionLog } from './segment_log.js';
import type { StoredRecord } from './segment_store.js';

/** What a write did: the copy's new end, or why the chunk was not stored (copy_unverifiable); damaged: records were
 *  written and did not read back as sent, so the copy must not be continued. */
export type CopyWriteResult = { nextOffset: number; bytes: number } | { problem: string; damaged: boolean };

export class IncomingCopy {
  private writing = false;

  private constructor(readonly log: PartitionLog, private readonly selfId: number) {}

  /** The copy a restart finds in dir, or null when there is none. */
  static async open(dir: string, segmentBytesMax: number, selfId: number): Promise<IncomingCopy | null> {
    try {
      await stat(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    }
    return new IncomingCopy(await PartitionLog.open({ dir, segmentBytesMax }), selfId);
  }

  /** A new copy whose first record is startOffset, durably (a restart finds it even before any record). */
  static async create(dir: string, segmentBytesMax: number, selfId: number, startOffset: number): Promise<IncomingCopy> {
    const log = PartitionLog.createEmpty({ dir, segmentBytesMax, startOffset });
    await log.startMarkWrite();
    return new IncomingCopy(log, selfId);
  }

  get nextOffset(): number {
    return this.log.offsets.nextOffset;
  }

  /** Stores the records of chunk past the copy's end; the caller checked chunk.fromOffset <= nextOffset. */
  async write(chunk: MoveChunk): Promise<CopyWriteResult> {
    assert(!this.writing, 'one write at a time per incoming copy');
    assert(chunk.fromOffset <= this.log.offsets.nextOffset, `chunk at ${chunk.fromOffset} past the copy's end ${this.log.offsets.nextOffset}`);
    if (chunkCrc32(chunk.records) !== chunk.crc32) return { problem: 'the chunk does not match its crc32', damaged: false };
    const decoded = chunkRecordsDecode(chunk.records, chunk.fromOffset, chunk.count);
    if (typeof decoded === 'string') return { problem: decoded, damaged: false };
    if (chunk.fromOffset + chunk.count !== chunk.nextOffset) return { problem: `nextOffset ${chunk.nextOffset} does not follow the records`, damaged: false };
    if (chunk.cursors?.some((c) => c.offset > chunk.nextOffset) === true) return { problem: 'a cursor names an offset past the chunk', damaged: false };
    const skip = this.log.offsets.nextOffset - chunk.fromOffset;
    const fresh = decoded.slice(skip);
    const order = this.ingressOrderProblem(fresh);
    if (order !== null) return { problem: order, damaged: false };
    this.writing = true;
    try {
      for (const record of fresh) {
        const origin = record.origin === this.selfId ? 0 : record.origin;
        const offset = this.log.stage({ ...record, origin });
        assert.equal(offset, record.offset, 'an incoming copy staged a record at another offset');
      }
      await this.log.flush();
      await this.log.sync();
      const readBack = await this.readBackProblem(chunk, skip);
      if (readBack !== null) return { problem: readBack, damaged: true };
      if (chunk.final && chunk.cursors !== undefined && chunk.cursors.length > 0) await this.cursorsWrite(chunk);
    } finally {
      this.writing = false;
    }
    return { nextOffset: this.log.offsets.nextOffset, bytes: chunk.records.byteLength };
  }

  /** Each origin's records must come in its ingress order, as the source's store kept them (stage asserts it). */
  private ingressOrderProblem(records: readonly StoredRecord[]): string | null {
    const last = new Map<number, StoredRecord>();
    for (const record of records) {
      const origin = record.origin === this.selfId ? 0 : record.origin!;
      const previous = last.get(origin);
      const after = previous === undefined
        ? !this.log.offsets.holdsIngress(record.ingressSeq, record.ingressIndex, origin)
        : record.ingressSeq > previous.ingressSeq || (record.ingressSeq === previous.ingressSeq && record.ingressIndex > previous.ingressIndex);
      if (!after) return `record at offset ${record.offset} goes back in the ingress order of origin ${record.origin}`;
      last.set(origin, record);
    }
    return null;
  }

  /** Reads back what this write stored, once synced, and compares it frame for frame with what the source sent. */
  private async readBackProblem(chunk: MoveChunk, skip: number): Promise<string | null> {
    const sent = chunkFrames(chunk.records).slice(skip);
    if (sent.length === 0) return null;
    const first = chunk.fromOffset + skip;
    const results = await this.log.readMany(sent.map((_, k) => first + k));
    for (let k = 0; k < results.length; k++) {
      const result = results[k]!;
      if (typeof result === 'string') return `offset ${first + k} reads back ${result}`;
      const stored = chunkRecordsEncode([result], this.selfId);
      if (Buffer.compare(stored, sent[k]!) !== 0) return `offset ${first + k} reads back other bytes than were sent`;
    }
    return null;
  }

  /** The final chunk's cursors (ack state, fan-out copy cursors) become the copy's cursor log, all at once. */
  private async cursorsWrite(chunk: MoveChunk): Promise<void> {
    const cursorLog = await CursorLog.open(this.log.dir);
    try {
      // Every offset named is synced: the chunk's records were, and its cursors name none past them.
      const updates = chunk.cursors!.map((c) => [c.name, { offset: c.offset, state: c.state ?? null }] as const);
      await cursorLog.write(updates);
    } finally {
      await cursorLog.close();
    }
  }

  async close(): Promise<void> {
    await this.log.close();
  }
}
