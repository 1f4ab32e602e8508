// The Raft core's in-memory view of its log: the last index and term, how far the log is persisted, and the
// entries not yet applied (everything older lives only in storage). Pure; owned by one RaftNode on the metadata
// thread. Created from the stored log's tail at start; grows on propose and shrinks as entries are applied.
import { assertRaft } from './assert.js';

/** One log entry. data is opaque to Raft: the metadata thread stores MetadataCommands in it. */
export interface LogEntry<T = unknown> {
  index: number;
  term: number;
  data: T;
}

export class RaftLog<T> {
  private lastIndexValue: number;
  private lastTermValue: number;
  /** Entries up to here are in storage (the shell persisted them and called stableTo). */
  private stableIndexValue: number;
  /** Entries after appliedIndex, in order: window[i].index === appliedIndex + 1 + i. */
  private window: LogEntry<T>[] = [];
  private appliedIndexValue: number;

  /** The core starts with the stored log fully applied, so it needs no entry data from storage. */
  constructor(lastIndex: number, lastTerm: number, appliedIndex: number) {
    assertRaft(appliedIndex === lastIndex, `log: start with the stored log applied (applied ${appliedIndex}, last ${lastIndex})`);
    this.lastIndexValue = lastIndex;
    this.lastTermValue = lastTerm;
    this.stableIndexValue = lastIndex;
    this.appliedIndexValue = appliedIndex;
  }

  get lastIndex(): number {
    return this.lastIndexValue;
  }

  get lastTerm(): number {
    return this.lastTermValue;
  }

  get stableIndex(): number {
    return this.stableIndexValue;
  }

  get appliedIndex(): number {
    return this.appliedIndexValue;
  }

  append(term: number, data: T): LogEntry<T> {
    assertRaft(term >= this.lastTermValue, `log: term ${term} below the last term ${this.lastTermValue}`);
    const entry = { index: this.lastIndexValue + 1, term, data };
    this.window.push(entry);
    this.lastIndexValue = entry.index;
    this.lastTermValue = term;
    return entry;
  }

  /** Entries not yet persisted, in order. */
  unstableEntries(): LogEntry<T>[] {
    return this.slice(this.stableIndexValue, this.lastIndexValue);
  }

  /** Entries with index in (after, upTo]; all of them must still be held. */
  slice(after: number, upTo: number): LogEntry<T>[] {
    assertRaft(after >= this.appliedIndexValue, `log: slice from ${after} reaches below applied ${this.appliedIndexValue}`);
    assertRaft(upTo <= this.lastIndexValue, `log: slice to ${upTo} beyond the last index ${this.lastIndexValue}`);
    if (upTo <= after) return [];
    return this.window.slice(after - this.appliedIndexValue, upTo - this.appliedIndexValue);
  }

  termAt(index: number): number {
    if (index === this.lastIndexValue) return this.lastTermValue;
    const entry = this.window[index - this.appliedIndexValue - 1];
    assertRaft(entry !== undefined, `log: no term held for index ${index}`);
    return entry.term;
  }

  stableTo(index: number): void {
    assertRaft(index > this.stableIndexValue, `log: stable index would move back from ${this.stableIndexValue} to ${index}`);
    assertRaft(index <= this.lastIndexValue, `log: stable index ${index} beyond the last index ${this.lastIndexValue}`);
    this.stableIndexValue = index;
  }

  appliedTo(index: number): void {
    assertRaft(index > this.appliedIndexValue, `log: applied index would move back from ${this.appliedIndexValue} to ${index}`);
    assertRaft(index <= this.stableIndexValue, `log: applying ${index} before it is persisted (stable ${this.stableIndexValue})`);
    this.window = this.window.slice(index - this.appliedIndexValue);
    this.appliedIndexValue = index;
    const first = this.window[0];
    assertRaft(first === undefined || first.index === index + 1, 'log: held entries are not contiguous after applying');
  }
}
