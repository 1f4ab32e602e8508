// Fan-out copying, the parent's side (issue 30): one copy cursor per (parent partition this worker owns, child), named
// fanout:<childId>:<epoch> in the partition's cursor table. Told of commits by the write core's 'committed' effect (no
// polling), it reads committed records past each cursor and posts them to the front ('fanoutCopy'), one batch in
// flight per cursor; the front appends them to its ingress log as the child's entry and answers 'fanoutCopied', which
// moves the cursor. A delay child's cursor waits, on one timer, for its head record's due time. Partition worker
// thread; partition_worker.ts owns one and feeds it commits, metadata changes and the front's answers.
import { Packr } from 'msgpackr';
import type { FanoutLink } from '../src/protocol/metadata_types.js';
import type { FanoutCounterView, FanoutCursorView, FromWorker } from '../src/protocol/thread_messages.js';
import type { SegmentReadResult, StoredRecord } from './segment_store.js';

const cursorPrefix = 'fanout:';
/** One copy batch: at most this many records, and about this many key and payload bytes (a bigger record goes alone). */
export const copyCountMax = 4000;
export const copyBytesMax = 2 * 1024 * 1024;
/** A copy the front could not append (link not yet on its replica, ingress failure) is tried again after this. */
const retryMs = 250;
/** Commits closer than this share one commit time, the later one: a delay child's copy may be this much late, never
 *  early, and an hour's delay keeps at most 100 entries a second per partition. */
const commitBucketMs = 10;
/** Commit times kept per parent partition; past it, neighbours merge pairwise into the later time (a long delay under
 *  steady load would otherwise keep 100 a second for up to a year): coarser, still never early. */
export const commitsMax = 65_536;

export function fanoutCursorName(childId: string, epoch: string): string {
  return `${cursorPrefix}${childId}:${epoch}`;
}

/** What the copier needs of the worker: its metadata, logs, cursor table (through the write core) and port. */
export interface CopierHost<L> {
  linksOf(topicId: string): readonly FanoutLink[];
  keyOf(log: L): { topicId: string; partition: number } | undefined;
  logOf(topicId: string, partition: number): L | undefined;
  logsOfTopic(topicId: string): Iterable<L>;
  /** What the log's readers were last told (the write core's committed offset). */
  committedOf(log: L): number;
  oldestOffset(log: L): number;
  read(log: L, offsets: number[]): Promise<SegmentReadResult[]>;
  cursorOffset(log: L, name: string): number | undefined;
  cursorNames(log: L): string[];
  cursorSet(log: L, name: string, offset: number): void;
  cursorDrop(log: L, name: string): void;
  post(msg: FromWorker, transfer: ArrayBuffer[]): void;
  failStop(what: string, err: unknown): never;
}

interface Copy {
  childId: string;
  epoch: string;
  name: string;
  delayMs: number;
  /** The next parent offset not yet copied. */
  offset: number;
  /** A read or an unanswered 'fanoutCopy' is under way. */
  busy: boolean;
  timer: NodeJS.Timeout | null;
  dropped: number;
}

interface ParentLog<L> {
  log: L;
  topicId: string;
  partition: number;
  /** What readers may see (the core's 'committed'). */
  committed: number;
  /** Commits seen since commitsFrom, coalesced: records below end committed at atMs. Below commitsFrom (committed
   *  before this worker started, or before a delay child was attached) the record's timestamp bounds it. */
  commits: { end: number; atMs: number }[];
  commitsFrom: number;
  copies: Map<string, Copy>;
}

const packr = new Packr({ useRecords: false, moreTypes: false });

export class FanoutCopier<L> {
  private readonly parents = new Map<L, ParentLog<L>>();
  private closed = false;

  constructor(private readonly host: CopierHost<L>, private readonly now: () => number = Date.now) {}

  /** A log found on disk at start: records below highWatermark committed before this worker ran. */
  opened(log: L, highWatermark: number): void {
    this.parentLogOf(log, highWatermark);
  }

  /** The write core's 'committed': readers may now see offsets below visible. */
  committed(log: L, visible: number): void {
    let parent = this.parents.get(log);
    if (parent === undefined) {
      const key = this.host.keyOf(log);
      if (key === undefined || this.host.linksOf(key.topicId).length === 0) return;
      parent = this.parentLogOf(log, 0);
      this.linksApply(parent);
    }
    if (visible <= parent.committed) return;
    const nowMs = this.now();
    if (parent.copies.size > 0) {
      const last = parent.commits[parent.commits.length - 1];
      if (last !== undefined && nowMs - last.atMs < commitBucketMs) {
        last.end = visible;
        last.atMs = nowMs;
      } else parent.commits.push({ end: visible, atMs: nowMs });
      if (parent.commits.length > commitsMax) parent.commits = commitsCoarsened(parent.commits);
    } else parent.commitsFrom = visible;
    parent.committed = visible;
    for (const copy of parent.copies.values()) this.pump(parent, copy);
  }

  /** The metadata replica changed: cursors follow the links (new attach, detach, re-attach with a new epoch). */
  linksChanged(parentTopicIds: Iterable<string>): void {
    for (const topicId of parentTopicIds) {
      for (const log of this.host.logsOfTopic(topicId)) if (!this.parents.has(log)) this.parentLogOf(log, this.host.committedOf(log));
    }
    for (const parent of this.parents.values()) this.linksApply(parent);
  }

  /** A deleted topic's logs are gone: nothing is copied from them again. */
  topicForget(topicId: string): void {
    for (const [log, parent] of this.parents) {
      if (parent.topicId !== topicId) continue;
      for (const copy of parent.copies.values()) if (copy.timer !== null) clearTimeout(copy.timer);
      this.parents.delete(log);
    }
  }

  /** Shutdown: no more copies; answers still on their way move no cursor (a restart re-sends, and the child skips
   *  what it holds). */
  close(): void {
    this.closed = true;
    for (const parent of this.parents.values()) {
      for (const copy of parent.copies.values()) if (copy.timer !== null) clearTimeout(copy.timer);
    }
  }

  /** The front's answer to a 'fanoutCopy'. */
  copied(msg: { parentTopicId: string; partition: number; childId: string; epoch: string; upToOffset: number | null }): void {
    if (this.closed) return;
    const log = this.host.logOf(msg.parentTopicId, msg.partition);
    const parent = log === undefined ? undefined : this.parents.get(log);
    const copy = parent?.copies.get(msg.childId);
    if (parent === undefined || copy === undefined || copy.epoch !== msg.epoch || !copy.busy) return;
    copy.busy = false;
    if (msg.upToOffset === null) return this.retryLater(parent, copy, retryMs);
    if (msg.upToOffset > copy.offset) {
      copy.offset = msg.upToOffset;
      this.host.cursorSet(parent.log, copy.name, copy.offset);
      this.commitsPrune(parent);
    }
    this.pump(parent, copy);
  }

  /** The copy cursors of a partition, for its statistics (GET .../children lag). */
  cursorsOf(log: L): FanoutCursorView[] | undefined {
    const parent = this.parents.get(log);
    if (parent === undefined || parent.copies.size === 0) return undefined;
    return [...parent.copies.values()].map((c) => ({ childId: c.childId, epoch: c.epoch, offset: c.offset }));
  }

  /** Every copy cursor's lag and losses, for a metrics scrape. */
  counters(): FanoutCounterView[] {
    const views: FanoutCounterView[] = [];
    for (const parent of this.parents.values()) {
      for (const copy of parent.copies.values()) {
        views.push({ parentTopicId: parent.topicId, partition: parent.partition, childId: copy.childId,
          lag: Math.max(0, parent.committed - copy.offset), dropped: copy.dropped });
      }
    }
    return views;
  }

  private parentLogOf(log: L, committed: number): ParentLog<L> {
    let parent = this.parents.get(log);
    if (parent !== undefined) return parent;
    const key = this.host.keyOf(log);
    if (key === undefined) throw new Error('fan-out copier: a log without a key');
    parent = { log, topicId: key.topicId, partition: key.partition, committed, commits: [], commitsFrom: committed, copies: new Map() };
    this.parents.set(log, parent);
    return parent;
  }

  /** Cursors of links that ended (detach, delete, an older epoch) are dropped; new links start at their persisted
   *  cursor, else at the attach offset. */
  private linksApply(parent: ParentLog<L>): void {
    const links = this.host.linksOf(parent.topicId);
    const wanted = new Map(links.map((link) => [fanoutCursorName(link.childId, link.epoch), link]));
    for (const [childId, copy] of parent.copies) {
      if (wanted.has(copy.name)) continue;
      if (copy.timer !== null) clearTimeout(copy.timer);
      parent.copies.delete(childId);
    }
    for (const name of this.host.cursorNames(parent.log)) {
      if (name.startsWith(cursorPrefix) && !wanted.has(name)) this.host.cursorDrop(parent.log, name);
    }
    for (const [name, link] of wanted) {
      if (parent.copies.has(link.childId)) continue;
      if (parent.copies.size === 0) {
        parent.commits = [];
        parent.commitsFrom = parent.committed;
      }
      const offset = this.host.cursorOffset(parent.log, name) ?? link.attachOffsets[parent.partition] ?? 0;
      const copy: Copy = { childId: link.childId, epoch: link.epoch, name, delayMs: link.delayMs ?? 0, offset, busy: false, timer: null, dropped: 0 };
      parent.copies.set(link.childId, copy);
      this.pump(parent, copy);
    }
  }

  /** Reads the next batch past the cursor, if anything committed is left and nothing is under way. */
  private pump(parent: ParentLog<L>, copy: Copy): void {
    if (this.closed || copy.busy || copy.timer !== null) return;
    const oldest = this.host.oldestOffset(parent.log);
    if (copy.offset < oldest && copy.offset < parent.committed) {
      // Spec §4 metrics: the parent's retention deleted these before they were copied.
      const to = Math.min(oldest, parent.committed);
      copy.dropped += to - copy.offset;
      copy.offset = to;
      this.host.cursorSet(parent.log, copy.name, copy.offset);
    }
    const count = Math.min(parent.committed - copy.offset, copyCountMax);
    if (count <= 0) return;
    copy.busy = true;
    const from = copy.offset;
    const offsets = Array.from({ length: count }, (_, i) => from + i);
    this.host.read(parent.log, offsets).then(
      (results) => this.readDone(parent, copy, from, results),
      (err: unknown) => this.host.failStop('fan-out copy read', err),
    );
  }

  private readDone(parent: ParentLog<L>, copy: Copy, from: number, results: SegmentReadResult[]): void {
    copy.busy = false;
    if (this.closed || parent.copies.get(copy.childId) !== copy || copy.offset !== from) return;
    const { records, waitMs } = this.duePrefix(parent, copy, from, results);
    if (records.length === 0) {
      if (waitMs !== null) return this.retryLater(parent, copy, waitMs);
      // Retention took the head while it was read: pump counts it dropped.
      if (results[0] === 'aged_out') this.pump(parent, copy);
      return;
    }
    const packed = packr.pack(records.map((r) => [r.key, r.payload, r.payloadKind]));
    // packr reuses its buffer: the transferred bytes must be a copy of their own.
    const bytes = new Uint8Array(packed);
    copy.busy = true;
    this.host.post({
      kind: 'fanoutCopy', parentTopicId: parent.topicId, partition: parent.partition, childId: copy.childId, epoch: copy.epoch,
      fromOffset: from, count: records.length, records: bytes,
    }, [bytes.buffer]);
  }

  /** The records of a batch that may go now: in offset order, up to the byte bound, and for a delay child only those
   *  already due (commit order is delivery order: the first one not due stops the batch, and waitMs is its wait). */
  private duePrefix(parent: ParentLog<L>, copy: Copy, from: number, results: SegmentReadResult[]): { records: StoredRecord[]; waitMs: number | null } {
    const records: StoredRecord[] = [];
    let bytes = 0;
    let commit = 0;
    const nowMs = this.now();
    for (let i = 0; i < results.length; i++) {
      const record = results[i]!;
      if (typeof record === 'string') break;
      const size = record.payload.byteLength + (record.key?.byteLength ?? 0);
      if (records.length > 0 && bytes + size > copyBytesMax) break;
      if (copy.delayMs > 0) {
        const offset = from + i;
        while (commit < parent.commits.length && parent.commits[commit]!.end <= offset) commit++;
        const at = offset >= parent.commitsFrom && commit < parent.commits.length ? parent.commits[commit]!.atMs : committedAtBound(record);
        const dueMs = at + copy.delayMs;
        if (dueMs > nowMs) return { records, waitMs: records.length === 0 ? dueMs - nowMs : null };
      }
      records.push(record);
      bytes += size;
    }
    return { records, waitMs: null };
  }

  private retryLater(parent: ParentLog<L>, copy: Copy, waitMs: number): void {
    if (copy.timer !== null) clearTimeout(copy.timer);
    copy.timer = setTimeout(() => {
      copy.timer = null;
      if (parent.copies.get(copy.childId) === copy) this.pump(parent, copy);
    }, Math.max(1, Math.ceil(waitMs)));
  }

  /** Commit times no delay cursor still needs are dropped. */
  private commitsPrune(parent: ParentLog<L>): void {
    let low = Infinity;
    for (const copy of parent.copies.values()) if (copy.delayMs > 0) low = Math.min(low, copy.offset);
    let drop = 0;
    while (drop < parent.commits.length && parent.commits[drop]!.end <= low) drop++;
    if (drop > 0) parent.commits.splice(0, drop);
  }
}

/** Each pair of neighbours becomes one range with the later end and the later time: its records committed at or
 *  before that time, so a due time from it is never early. */
export function commitsCoarsened(commits: { end: number; atMs: number }[]): { end: number; atMs: number }[] {
  const merged: { end: number; atMs: number }[] = [];
  for (let i = 0; i < commits.length; i += 2) merged.push(commits[Math.min(i + 1, commits.length - 1)]!);
  return merged;
}

/** A record committed before this worker saw it: the front accepted it within its timestamp's second, and the
 *  commit follows the acceptance by the ingress sync and a flush round, well under a second; so one more second bounds
 *  the commit from above, and a delay counted from it is never early (a little late instead). */
function committedAtBound(record: StoredRecord): number {
  return (record.timestampSec + 2) * 1000;
}
