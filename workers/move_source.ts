// The source side of partition moves on a partition worker (issue 41, docs/architecture.md "Partition moves"):
// 'moveRead' answers a chunk of the partition's synced records (final, with the cursor table, once the replica holds
// the move frozen and everything staged is synced and in the chunk); while a move of a partition this worker holds is
// frozen, its records are held (frozenKeys feeds dispatch_staging.ts); when the flip gives the partition away, its
// log leaves the worker and is set aside, and 'moveRelease' is answered once that is done. Partition worker thread;
// the shell (partition_worker.ts) owns one and feeds it requests and replica changes.
import type { Logger } from 'pino';
import { moveKey } from '../src/protocol/metadata_types.js';
import type { FromWorker, MoveChunk, MoveCursor, ToWorker } from '../src/protocol/thread_messages.js';
import { setAsideMove } from '../src/util/set_aside.js';
import { chunkCrc32, chunkRecordBytes, chunkRecordsEncode } from './store/move_chunk.js';
import { ackCursorEncode, ackCursorName } from './store/cursor_log.js';
import type { AckState } from './store/ack_log.js';
import type { PartitionTable } from './partition_table.js';
import type { PartitionLog, StoredRecord } from './store/segment_log.js';

type ReadRequest = Extract<ToWorker, { kind: 'moveRead' }>;
type ReleaseRequest = Extract<ToWorker, { kind: 'moveRelease' }>;

/** Offsets read from the log at a time while filling a chunk. */
const readBatchOffsets = 256;
/** A chunk whose first read finds its offsets removed by retention starts again from the new oldest, this often. */
const agedOutRetriesMax = 3;

export interface MoveSourceHost {
  readonly nodeId: number;
  readonly table: PartitionTable;
  readonly logger: Logger;
  /** The partition's ack state now (null: nothing was ever acked). */
  ackStateOf(log: PartitionLog): AckState | null;
  /** The write core's named cursors of the partition (fan-out copy cursors). */
  namedCursors(log: PartitionLog): MoveCursor[];
  post(msg: FromWorker, transfer?: ArrayBuffer[]): void;
}

export class MoveSource {
  /** Partitions whose logs left the table and are being set aside. */
  private readonly releasing = new Set<string>();
  private releaseWaiters: ReleaseRequest[] = [];
  /** Chunk reads in flight per log: a release closes the log only after them. */
  private readonly reading = new Map<PartitionLog, Set<Promise<unknown>>>();

  constructor(private readonly host: MoveSourceHost) {}

  /** The partitions of this worker that a move holds frozen on this node: their records wait. */
  frozenKeys(): string[] {
    const keys: string[] = [];
    for (const move of this.host.table.moves()) {
      if (move.phase === 'frozen' && move.source === this.host.nodeId && this.host.table.owns(move.topicId, move.partition)) {
        keys.push(moveKey(move.topicId, move.partition));
      }
    }
    return keys;
  }

  onRead(msg: ReadRequest): void {
    const { table } = this.host;
    const key = moveKey(msg.topicId, msg.partition);
    if (!table.nodeOwns(msg.topicId, msg.partition) || this.releasing.has(key)) return this.refuse(msg.reqId, 'partitionMoved', msg);
    const log = table.logOf(msg.topicId, msg.partition);
    if (log === undefined) return this.answer(msg.reqId, this.emptyChunk(msg));
    const read = this.chunkRead(log, msg);
    let reads = this.reading.get(log);
    if (reads === undefined) this.reading.set(log, (reads = new Set()));
    reads.add(read);
    read.then(
      (chunk) => this.answer(msg.reqId, chunk),
      (err: unknown) => {
        this.host.logger.error({ err, topicId: msg.topicId, partition: msg.partition }, 'move read failed');
        this.refuse(msg.reqId, 'partitionUnreadable', msg);
      },
    ).finally(() => {
      reads.delete(read);
      if (reads.size === 0) this.reading.delete(log);
    });
  }

  /** A partition that never stored a record here: no records, from its start offset. */
  private emptyChunk(msg: ReadRequest): MoveChunk {
    const start = this.host.table.topicOf(msg.topicId)?.startOffsets?.[msg.partition] ?? 0;
    const final = this.frozenHere(msg.topicId, msg.partition);
    return { firstOffset: start, fromOffset: start, nextOffset: start, syncedEnd: start, count: 0, records: new Uint8Array(0), crc32: 0, final, ...(final ? { cursors: [] } : {}) };
  }

  private frozenHere(topicId: string, partition: number): boolean {
    const move = this.host.table.moveOf(topicId, partition);
    return move !== undefined && move.phase === 'frozen' && move.source === this.host.nodeId;
  }

  /** Synced records from fromOffset (or the oldest kept) up to maxBytes (at least one record when any is left). */
  private async chunkRead(log: PartitionLog, msg: ReadRequest): Promise<MoveChunk> {
    const syncedEnd = log.offsets.syncedHighWatermark;
    let records: StoredRecord[] = [];
    let from = 0;
    for (let attempt = 0; attempt <= agedOutRetriesMax; attempt++) {
      from = Math.min(Math.max(msg.fromOffset, log.oldestOffset), syncedEnd);
      const read = await this.recordsRead(log, from, syncedEnd, msg.maxBytes);
      if (read !== 'aged_out') {
        records = read;
        break;
      }
    }
    const nextOffset = from + records.length;
    const bytes = chunkRecordsEncode(records, this.host.nodeId);
    // Final only when nothing is staged past what this chunk holds: frozen, nothing more is staged (it is held).
    const key = this.host.table.keyOf(log);
    const final = key !== undefined && this.frozenHere(key.topicId, key.partition) && nextOffset === syncedEnd && log.offsets.nextOffset === syncedEnd;
    const chunk: MoveChunk = {
      firstOffset: log.oldestOffset, fromOffset: from, nextOffset, syncedEnd, count: records.length, records: bytes, crc32: chunkCrc32(bytes), final,
    };
    if (final) chunk.cursors = this.cursorsOf(log);
    return chunk;
  }

  /** The cursor table a final chunk carries: the ack state as its cursor log keeps it, and the named cursors. Open
   *  leases are not carried: their messages are delivered again after the flip (at least once). */
  private cursorsOf(log: PartitionLog): MoveCursor[] {
    const cursors = this.host.namedCursors(log);
    const ack = this.host.ackStateOf(log);
    if (ack !== null) {
      const cursor = ackCursorEncode(ack);
      cursors.unshift({ name: ackCursorName, offset: cursor.offset, ...(cursor.state === null ? {} : { state: cursor.state }) });
    }
    return cursors;
  }

  /** Records [from, end) up to maxBytes; 'aged_out' when retention removed the first meanwhile. */
  private async recordsRead(log: PartitionLog, from: number, end: number, maxBytes: number): Promise<StoredRecord[] | 'aged_out'> {
    const records: StoredRecord[] = [];
    let bytes = 0;
    for (let next = from; next < end; ) {
      const offsets: number[] = [];
      for (let o = next; o < Math.min(end, next + readBatchOffsets); o++) offsets.push(o);
      const results = await log.readMany(offsets);
      for (const result of results) {
        if (typeof result === 'string') return records.length === 0 ? 'aged_out' : records;
        const recordBytes = chunkRecordBytes(result, this.host.nodeId);
        if (records.length > 0 && bytes + recordBytes > maxBytes) return records;
        records.push(result);
        bytes += recordBytes;
      }
      next += offsets.length;
    }
    return records;
  }

  onRelease(msg: ReleaseRequest): void {
    this.releaseWaiters.push(msg);
    this.releasesAnswer();
  }

  /** The flip gave the partition away: its log left the table; set aside follows (releaseDone). */
  releaseBegun(topicId: string, partition: number): void {
    this.releasing.add(moveKey(topicId, partition));
  }

  /** Closes the log after the chunk reads in flight and renames its directory into the set-aside area. */
  async setAside(log: PartitionLog, topicId: string, partition: number): Promise<void> {
    const reads = this.reading.get(log);
    if (reads !== undefined) await Promise.allSettled([...reads]);
    await log.close();
    const dataDir = this.host.table.dataDir();
    const dir = await setAsideMove(dataDir, log.dir, 'partition', topicId, partition, Date.now()).catch((err: unknown) => {
      // Never written to disk (created, staged nothing it kept): nothing to set aside.
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    });
    if (dir !== null) this.host.logger.info({ topicId, partition, dir }, 'moved partition set aside');
    this.releasing.delete(moveKey(topicId, partition));
    this.releasesAnswer();
  }

  /** Answers each moveRelease whose flip this replica applied and whose copy is aside. */
  releasesAnswer(): void {
    const { table } = this.host;
    this.releaseWaiters = this.releaseWaiters.filter((msg) => {
      if (table.appliedIndex < msg.metaIndex) return true;
      const key = moveKey(msg.topicId, msg.partition);
      if (this.releasing.has(key)) return true;
      if (table.nodeOwns(msg.topicId, msg.partition)) this.refuse(msg.reqId, 'partitionUnreadable', msg);
      else this.host.post({ kind: 'moveReleased', reqId: msg.reqId });
      return false;
    });
  }

  private answer(reqId: number, chunk: MoveChunk): void {
    this.host.post({ kind: 'moveChunk', reqId, chunk }, [chunk.records.buffer as ArrayBuffer]);
  }

  private refuse(reqId: number, id: 'partitionMoved' | 'partitionUnreadable', msg: { topicId: string; partition: number }): void {
    const refusal = id === 'partitionMoved' ? { id, args: [msg.topicId, msg.partition] as [string, number] } : { id, args: [] as [] };
    this.host.post({ kind: 'failed', reqId, refusal });
  }
}
