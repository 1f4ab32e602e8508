// The Raft core's log: the latest snapshot (index, term, conf) and every entry after it, held in memory (the
// metadata log is small and compaction bounds it), plus how far it is persisted (stable), committed, and handed
// to the shell to apply. Pure; owned by one RaftNode. Built at start from what the shell restored; changed by
// appends (proposals, a leader's app), truncation of a conflicting tail, snapshot install and compaction.
import { assertRaft } from './assert.js';
import type { LogEntry, Snapshot } from './types.js';

export class RaftLog<T> {
  /** The latest snapshot, stored or (pendingSnapshot) installed from a leader and not yet handed to the shell. */
  snapshot: Snapshot | null;
  pendingSnapshot = false;
  /** entries[i].index === snapshotIndex + 1 + i. */
  private entries: LogEntry<T>[];
  /** Entries up to here are durable (a ready carrying them was advanced). At least snapshotIndex. */
  stable: number;
  commit: number;
  /** Highest index applied by the shell: covered by advanced readies (their committed entries or snapshot). */
  applied: number;
  /** Highest index handed out in a ready (its committed entries or snapshot), advanced or not. */
  handedOut: number;
  /** The last entry of the outstanding ready, lowered when a truncation drops some of it before advance(). */
  persistingTo = 0;
  /** Bumped on every change to the entries or snapshot (for tests that check logs only when they change). */
  version = 0;

  constructor(snapshot: Snapshot | null, entries: LogEntry<T>[], commit: number) {
    this.snapshot = snapshot;
    this.entries = [...entries];
    const first = snapshot?.index ?? 0;
    let previousTerm = snapshot?.term ?? 0;
    this.entries.forEach((entry, i) => {
      assertRaft(entry.index === first + 1 + i, `log: restored entry ${entry.index} out of place (expected ${first + 1 + i})`);
      assertRaft(entry.term >= previousTerm && entry.term > 0, `log: restored entry ${entry.index} has term ${entry.term} after ${previousTerm}`);
      previousTerm = entry.term;
    });
    this.stable = this.lastIndex;
    assertRaft(commit <= this.lastIndex, `log: restored commit ${commit} beyond the last index ${this.lastIndex}`);
    this.commit = Math.max(commit, first);
    this.applied = first;
    this.handedOut = first;
  }

  get snapshotIndex(): number {
    return this.snapshot?.index ?? 0;
  }

  get firstIndex(): number {
    return this.snapshotIndex + 1;
  }

  get lastIndex(): number {
    return this.snapshotIndex + this.entries.length;
  }

  get lastTerm(): number {
    return this.term(this.lastIndex) ?? 0;
  }

  /** The term at index; 0 at index 0 of a log without snapshot; undefined when compacted away or beyond the end. */
  term(index: number): number | undefined {
    const snapshotIndex = this.snapshotIndex;
    if (index === snapshotIndex) return this.snapshot?.term ?? 0;
    if (index < snapshotIndex || index > this.lastIndex) return undefined;
    return this.entries[index - snapshotIndex - 1]?.term;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  entry(index: number): LogEntry<T> | undefined {
    return this.entries[index - this.snapshotIndex - 1];
  }

  /** Entries with index in [from, to]; from must be held (at least firstIndex). */
  slice(from: number, to: number): LogEntry<T>[] {
    assertRaft(from >= this.firstIndex, `log: slice from ${from} below the first index ${this.firstIndex}`);
    assertRaft(to <= this.lastIndex, `log: slice to ${to} beyond the last index ${this.lastIndex}`);
    if (to < from) return [];
    const offset = this.snapshotIndex + 1;
    return this.entries.slice(from - offset, to - offset + 1);
  }

  /** Every held entry (after the snapshot). */
  all(): readonly LogEntry<T>[] {
    return this.entries;
  }

  /** Raft §5.4.1: a candidate's log ending at (index, term) is at least as up-to-date as this one. */
  isUpToDate(index: number, term: number): boolean {
    const lastTerm = this.lastTerm;
    return term > lastTerm || (term === lastTerm && index >= this.lastIndex);
  }

  /** The first entry of entries whose index holds another term here (or is beyond the end), or 0 when all match. */
  findConflict(entries: readonly LogEntry<T>[]): number {
    for (const entry of entries) {
      if (!this.matchTerm(entry.index, entry.term)) return entry.index;
    }
    return 0;
  }

  /**
   * The largest index <= index whose term is <= term, with that term (etcd): every entry above it has a larger
   * term than term, so it cannot match a log whose entry at index has term. Stops at the compaction boundary.
   */
  findConflictByTerm(index: number, term: number): [number, number] {
    let i = Math.min(index, this.lastIndex);
    for (;;) {
      const ourTerm = this.term(i);
      if (ourTerm === undefined) return [i, 0];
      if (ourTerm <= term || i === 0) return [i, ourTerm];
      i -= 1;
    }
  }

  /**
   * Appends entries (contiguous, entries[0].index <= lastIndex + 1), first dropping every held entry from
   * entries[0].index on. Returns the index from which entries were dropped, or 0 when none were.
   */
  append(entries: readonly LogEntry<T>[]): number {
    const first = entries[0];
    if (first === undefined) return 0;
    assertRaft(first.index > this.commit, `log: append at ${first.index} would overwrite committed ${this.commit}`);
    assertRaft(first.index <= this.lastIndex + 1, `log: append at ${first.index} leaves a gap after ${this.lastIndex}`);
    let truncatedFrom = 0;
    if (first.index <= this.lastIndex) {
      truncatedFrom = first.index;
      this.entries.length = first.index - this.snapshotIndex - 1;
      this.stable = Math.min(this.stable, first.index - 1);
      this.persistingTo = Math.min(this.persistingTo, first.index - 1);
    }
    let previousTerm = this.lastTerm;
    for (const entry of entries) {
      assertRaft(entry.index === this.lastIndex + 1, `log: appended entry ${entry.index} out of place`);
      assertRaft(entry.term >= previousTerm, `log: appended entry ${entry.index} term ${entry.term} below ${previousTerm}`);
      previousTerm = entry.term;
      this.entries.push(entry);
    }
    this.version += 1;
    return truncatedFrom;
  }

  /** Entries not yet durable, to hand out in a ready. */
  unstableEntries(): LogEntry<T>[] {
    return this.slice(this.stable + 1, this.lastIndex);
  }

  /** The outstanding ready was advanced: what it carried (and was not dropped since) is durable. */
  stableToPersisting(): boolean {
    const moved = this.persistingTo > this.stable;
    if (moved) this.stable = this.persistingTo;
    this.persistingTo = 0;
    assertRaft(this.stable <= this.lastIndex, `log: stable ${this.stable} beyond the last index ${this.lastIndex}`);
    return moved;
  }

  commitTo(index: number): boolean {
    if (index <= this.commit) return false;
    assertRaft(index <= this.lastIndex, `log: commit ${index} beyond the last index ${this.lastIndex}`);
    this.commit = index;
    return true;
  }

  /** Replaces the whole log with a snapshot from a leader (not yet durable: pendingSnapshot until advanced). */
  restore(snapshot: Snapshot): void {
    assertRaft(snapshot.index > this.commit, `log: restoring snapshot ${snapshot.index} at or below commit ${this.commit}`);
    this.snapshot = snapshot;
    this.pendingSnapshot = true;
    this.entries = [];
    this.stable = snapshot.index;
    this.persistingTo = 0;
    this.commit = snapshot.index;
    this.version += 1;
  }

  /** Drops every entry up to snapshot.index, which the shell serialized its state machine at. */
  compact(snapshot: Snapshot): void {
    assertRaft(snapshot.index > this.snapshotIndex && snapshot.index <= this.stable, `log: compacting to ${snapshot.index} outside (${this.snapshotIndex}, ${this.stable}]`);
    this.entries = this.entries.slice(snapshot.index - this.snapshotIndex);
    this.snapshot = snapshot;
    this.version += 1;
  }
}
