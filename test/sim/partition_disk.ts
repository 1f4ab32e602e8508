// A simulated disk for the partition simulation (partition_sim.test.ts): one SimLog per partition, shaped like
// PartitionLog (stage without I/O, flush writes what was staged at its call, sync makes written records durable
// up to the high watermark of its call, retain deletes synced records older than a cutoff). A crash drops the
// staged records and every written record above the synced offset, and the persisted cursor table survives as it
// was last written whole. No real I/O: the simulation decides when each flush and sync completes.

/** One record's identity: where it was in the ingress log. */
export interface IngressKey {
  seq: number;
  index: number;
}

export interface SimRecord extends IngressKey {
  offset: number;
  timestampMs: number;
}

export class SimLog {
  /** Written records from oldestOffset on (retention removes a prefix). */
  private records: SimRecord[] = [];
  private staged: SimRecord[] = [];
  /** Taken by the flush in flight, written when it completes. */
  private flushing: SimRecord[] | null = null;
  oldestOffset = 0;
  highWatermark = 0;
  syncedOffset = 0;
  private nextOffsetValue = 0;
  /** (seq, index) of the last staged or stored record: records arrive in ingress order, so dedupe is one compare. */
  private lastKey: IngressKey | null = null;
  /** (seq, index) of the last synced record, kept like next_offset.mark when retention empties the log. */
  private syncedLastKey: IngressKey | null = null;
  /** The cursor table as last persisted whole (a crash keeps it). */
  persistedCursors: { name: string; offset: number }[] = [];

  constructor(readonly partition: number) {}

  get nextOffset(): number {
    return this.nextOffsetValue;
  }

  get flushInFlight(): boolean {
    return this.flushing !== null;
  }

  get stagedCount(): number {
    return this.staged.length + (this.flushing?.length ?? 0);
  }

  holdsIngress(seq: number, index: number): boolean {
    const last = this.lastKey;
    return last !== null && (seq < last.seq || (seq === last.seq && index <= last.index));
  }

  stage(key: IngressKey, timestampMs: number): void {
    if (this.holdsIngress(key.seq, key.index)) throw new Error(`p${this.partition}: staged (${key.seq}, ${key.index}) twice`);
    this.staged.push({ ...key, offset: this.nextOffsetValue, timestampMs });
    this.nextOffsetValue += 1;
    this.lastKey = { ...key };
  }

  /** A flush takes what is staged now; flushEnd writes it. */
  flushBegin(): void {
    if (this.flushing !== null) throw new Error(`p${this.partition}: two flushes at once`);
    this.flushing = this.staged;
    this.staged = [];
  }

  /** Writes the flush's records; rolledUpTo (a segment roll) syncs the written records below it. */
  flushEnd(rolledUpTo: number | null): SimRecord[] {
    const written = this.flushing;
    if (written === null) throw new Error(`p${this.partition}: flushEnd without a flush`);
    this.flushing = null;
    for (const record of written) this.records.push(record);
    this.highWatermark += written.length;
    if (rolledUpTo !== null) this.syncTo(Math.min(rolledUpTo, this.highWatermark));
    return written;
  }

  /** fdatasync: what was written by the sync's call (offset) is durable. */
  syncTo(offset: number): void {
    if (offset <= this.syncedOffset) return;
    this.syncedOffset = offset;
    const last = this.recordAt(offset - 1);
    if (last !== undefined) this.syncedLastKey = { seq: last.seq, index: last.index };
  }

  recordAt(offset: number): SimRecord | undefined {
    return offset < this.oldestOffset ? undefined : this.records[offset - this.oldestOffset];
  }

  /** Deletes the prefix of synced records older than cutoffMs (whole segments are synced by their roll). */
  retain(cutoffMs: number): number {
    let drop = 0;
    while (drop < this.records.length) {
      const record = this.records[drop]!;
      if (record.offset >= this.syncedOffset || record.timestampMs >= cutoffMs) break;
      drop += 1;
    }
    this.records.splice(0, drop);
    this.oldestOffset += drop;
    return this.oldestOffset;
  }

  /** Power loss: staged and unsynced written records are gone; the log reopens at its synced offset. */
  crash(): void {
    this.staged = [];
    this.flushing = null;
    this.records.splice(this.syncedOffset - this.oldestOffset);
    this.highWatermark = this.syncedOffset;
    this.nextOffsetValue = this.syncedOffset;
    this.lastKey = this.syncedLastKey === null ? null : { ...this.syncedLastKey };
  }
}
