// Pure: one partition's table of named cursors over its committed records (fan-out copy cursors, remote link
// cursors and partition-move copy cursors are all cursors of this kind). Owned by the partition write core
// (partition_write_core.ts), which decides when the table may be persisted; runs on the partition worker thread
// that owns the partition. It reads no clock and does no I/O.

/** One cursor as it is persisted: the next offset its reader has not yet taken over. */
export interface CursorEntry {
  name: string;
  offset: number;
}

export class PartitionCursors {
  private readonly offsets = new Map<string, number>();
  /** Set since the last persist was emitted: the persisted table is behind the one here. */
  private changed = false;
  /** A persist of this table is being written by the shell: one at a time, so persists never reorder. */
  private persisting = false;
  /** The largest offset the last emitted persist named; never above the synced offset at the time. */
  private persistedOffsetMax = 0;

  constructor(restored: readonly CursorEntry[] = []) {
    for (const entry of restored) this.offsets.set(entry.name, entry.offset);
    this.persistedOffsetMax = this.offsetMax();
  }

  /** Whether a persist is wanted and none is in flight. */
  get persistWanted(): boolean {
    return this.changed && !this.persisting;
  }

  get persistedMax(): number {
    return this.persistedOffsetMax;
  }

  offsetOf(name: string): number | undefined {
    return this.offsets.get(name);
  }

  set(name: string, offset: number): void {
    if (this.offsets.get(name) === offset) return;
    this.offsets.set(name, offset);
    this.changed = true;
  }

  /** A cursor no reader needs any more (a fan-out link detached): the next persist leaves it out. */
  delete(name: string): void {
    if (this.offsets.delete(name)) this.changed = true;
  }

  names(): string[] {
    return [...this.offsets.keys()];
  }

  /** The largest offset any cursor names (0 for none): what must be synced before the table is persisted. */
  offsetMax(): number {
    let max = 0;
    for (const offset of this.offsets.values()) if (offset > max) max = offset;
    return max;
  }

  /** The table to persist now; the caller has checked offsetMax() against the synced offset. */
  persistBegin(): CursorEntry[] {
    const entries: CursorEntry[] = [];
    for (const [name, offset] of this.offsets) entries.push({ name, offset });
    this.changed = false;
    this.persisting = true;
    this.persistedOffsetMax = this.offsetMax();
    return entries;
  }

  persistEnd(): void {
    this.persisting = false;
  }
}
