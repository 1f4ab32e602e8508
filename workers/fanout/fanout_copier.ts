// Fan-out copying, the parent's side (issue 30): one copy cursor per (parent partition this worker owns, child), named
// fanout:<childId>:<epoch> in the partition's cursor table. Told of commits by the write core's 'committed' effect (no
// polling), it reads committed records past each cursor and hands them to the host as one batch (fanout_copy_route.ts
// stores it in a child partition of this worker, or has the front append it to the ingress log), one batch in flight
// per cursor; the answer ('copied') moves the cursor. A delay child's cursor waits, on one timer, for its head record's
// due time. Partition worker thread; partition_worker.ts owns one and feeds it commits, metadata changes and answers.
import type { FanoutLink } from '../../src/protocol/metadata_types.js';
import type { FanoutCounterView, FanoutCursorView } from '../../src/protocol/thread_messages.js';
import type { SegmentReadResult, StoredRecord } from '../store/segment_store.js';

const cursorPrefix = 'fanout:';
/** One copy batch: at most this many records, and about this many key and payload bytes (a bigger record goes alone). */
export const copyCountMax = 4000;
export const copyBytesMax = 2 * 1024 * 1024;
/** A copy the front could not append (link not yet on its replica, ingress failure) is tried again after this. */
const retryMs = 250;
/** Commits within this span of a range's first share one commit time, the range's last: a delay child's copy may be
 *  this much late, never early, and an hour's delay keeps at most 100 entries a second per partition. */
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
  /** Stores the batch for the child; 'copied' answers it, later (never from inside this call). Answers come in the
   *  order of the batches. */
  copy(batch: CopyBatch): void;
  /** Where copy sends the child's copies of this parent partition now: 'direct' batches are never refused, 'front'
   *  ones may be (answered null). It changes when the child's partition count does. */
  copyRoute(childId: string, parentPartition: number): CopyRoute;
  failStop(what: string, err: unknown): never;
}

export type CopyRoute = 'direct' | 'front';

/** Batches of one cursor under way at once, by route: a direct batch is stored behind the last one, in order, so the
 *  next is read and stored while the last one's sync runs; a refused batch must go again before any later one. */
const inFlightMax: Record<CopyRoute, number> = { direct: 4, front: 1 };

/** Committed parent records from fromOffset on, for one child; records are views of the log's read buffers. */
export interface CopyBatch {
  parentTopicId: string;
  partition: number;
  childId: string;
  epoch: string;
  fromOffset: number;
  records: StoredRecord[];
}

/** The answer to a CopyBatch: the copies up to upToOffset are stored durably for the child; null, not now. */
export interface CopyAnswer {
  parentTopicId: string;
  partition: number;
  childId: string;
  epoch: string;
  upToOffset: number | null;
}

interface Copy {
  childId: string;
  epoch: string;
  name: string;
  delayMs: number;
  /** The next parent offset not yet copied (the cursor). */
  offset: number;
  /** The next parent offset not yet read for a batch: past offset while batches are unanswered. */
  next: number;
  /** A read is under way (one at a time: the next read starts where this one's batch ends). */
  reading: boolean;
  /** Batches handed to host.copy and not yet answered, all by route (a route change waits until none is left). */
  unanswered: number;
  route: CopyRoute;
  timer: NodeJS.Timeout | null;
  dropped: number;
  /** Records copied since this worker started (svc_fanout_committed_total). */
  copied: number;
}

/** Records below end (and from the range before's end) committed between fromMs and atMs. */
interface CommitRange {
  end: number;
  atMs: number;
  fromMs: number;
}

interface ParentLog<L> {
  log: L;
  topicId: string;
  partition: number;
  /** What readers may see (the core's 'committed'). */
  committed: number;
  /** Commits seen since commitsFrom, coalesced: records below end committed at atMs. Below commitsFrom (committed
   *  before this worker started, or before a delay child was attached) the record's timestamp bounds it. */
  commits: CommitRange[];
  commitsFrom: number;
  copies: Map<string, Copy>;
  /** A pumpAll waits in the microtask queue. */
  pumpQueued: boolean;
}

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
    const last = parent.commits[parent.commits.length - 1];
    // Commit times ascend even if the clock steps back (a later time is never early): dueEnd searches them.
    const nowMs = Math.max(this.now(), last?.atMs ?? -Infinity);
    if (parent.copies.size > 0) {
      // Measured from the range's first commit: from its last, commits closer than the span under a steady load made
      // one range that never closed, and its records never came due while the load lasted.
      if (last !== undefined && nowMs - last.fromMs < commitBucketMs) {
        last.end = visible;
        last.atMs = nowMs;
      } else parent.commits.push({ end: visible, atMs: nowMs, fromMs: nowMs });
      if (parent.commits.length > commitsMax) parent.commits = commitsCoarsened(parent.commits);
    } else parent.commitsFrom = visible;
    parent.committed = visible;
    this.pumpAll(parent);
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

  /** The log moved to another node (issue 41): nothing is copied from it here again; its cursors went with it. */
  logForget(log: L): void {
    const parent = this.parents.get(log);
    if (parent === undefined) return;
    for (const copy of parent.copies.values()) if (copy.timer !== null) clearTimeout(copy.timer);
    this.parents.delete(log);
  }

  /** Shutdown: no more copies; answers still on their way move no cursor (a restart re-sends, and the child skips
   *  what it holds). */
  close(): void {
    this.closed = true;
    for (const parent of this.parents.values()) {
      for (const copy of parent.copies.values()) if (copy.timer !== null) clearTimeout(copy.timer);
    }
  }

  /** The answer to a batch handed to host.copy. */
  copied(msg: CopyAnswer): void {
    if (this.closed) return;
    const log = this.host.logOf(msg.parentTopicId, msg.partition);
    const parent = log === undefined ? undefined : this.parents.get(log);
    const copy = parent?.copies.get(msg.childId);
    if (parent === undefined || copy === undefined || copy.epoch !== msg.epoch || copy.unanswered === 0) return;
    copy.unanswered--;
    if (msg.upToOffset === null) {
      // Only a host that allows one batch in flight refuses: nothing was sent after this one.
      copy.next = copy.offset;
      return this.retryLater(parent, copy, retryMs);
    }
    if (msg.upToOffset > copy.offset) {
      copy.copied += msg.upToOffset - copy.offset;
      copy.offset = msg.upToOffset;
      this.host.cursorSet(parent.log, copy.name, copy.offset);
      this.commitsPrune(parent);
    }
    this.pumpSoon(parent);
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
          lag: Math.max(0, parent.committed - copy.offset), dropped: copy.dropped, copied: copy.copied });
      }
    }
    return views;
  }

  private parentLogOf(log: L, committed: number): ParentLog<L> {
    let parent = this.parents.get(log);
    if (parent !== undefined) return parent;
    const key = this.host.keyOf(log);
    if (key === undefined) throw new Error('fan-out copier: a log without a key');
    parent = { log, topicId: key.topicId, partition: key.partition, committed, commits: [], commitsFrom: committed, copies: new Map(), pumpQueued: false };
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
      parent.copies.set(link.childId, {
        childId: link.childId, epoch: link.epoch, name, delayMs: link.delayMs ?? 0, offset, next: offset, reading: false,
        unanswered: 0, route: 'front', timer: null, dropped: 0, copied: 0,
      });
    }
    this.pumpAll(parent);
  }

  /** Reads the next batch past each cursor that waits for nothing, if anything committed is left. Cursors at the same
   *  offset (children that keep up) share one read: three children would otherwise read every record three times. */
  private pumpAll(parent: ParentLog<L>): void {
    if (this.closed) return;
    const byOffset = new Map<number, { copies: Copy[]; end: number }>();
    const nowMs = this.now();
    for (const copy of parent.copies.values()) {
      if (copy.reading || copy.timer !== null) continue;
      if (copy.unanswered > 0 && !this.mayAddBatch(parent, copy)) continue;
      this.droppedSkip(parent, copy);
      if (copy.next >= parent.committed) continue;
      const end = this.dueEnd(parent, copy, nowMs);
      if (end <= copy.next) {
        this.retryLater(parent, copy, this.headWaitMs(parent, copy, nowMs));
        continue;
      }
      const group = byOffset.get(copy.next);
      if (group === undefined) byOffset.set(copy.next, { copies: [copy], end });
      else {
        group.copies.push(copy);
        group.end = Math.max(group.end, end);
      }
    }
    for (const [from, group] of byOffset) this.readFor(parent, from, group.end, group.copies);
  }

  /** Where a read for the cursor may end: what is committed, or for a delay child what is due by the commit times
   *  known. Reading a full batch past a delay cursor kept only the few records due since its last read: a tenth of
   *  the worker's time went to reading and checking records a 1 s delay child then left for later. */
  private dueEnd(parent: ParentLog<L>, copy: Copy, nowMs: number): number {
    // Below commitsFrom only the records' timestamps tell, after reading (duePrefix).
    if (copy.delayMs === 0 || copy.next < parent.commitsFrom) return parent.committed;
    const commits = parent.commits;
    const due = lastIndexAtOrBefore(commits, nowMs - copy.delayMs);
    return due < 0 ? copy.next : Math.min(commits[due]!.end, parent.committed);
  }

  /** How long until the record at the delay cursor is due (it is past commitsFrom, so its commit time is known). */
  private headWaitMs(parent: ParentLog<L>, copy: Copy, nowMs: number): number {
    const head = parent.commits[firstIndexEndingAfter(parent.commits, copy.next)];
    return head === undefined ? retryMs : head.atMs + copy.delayMs - nowMs;
  }

  /** Another batch may join those under way: same route, under its bound, and nothing retention deleted at next
   *  (droppedSkip moves the cursor once every batch is answered; a read of deleted offsets would find nothing). */
  private mayAddBatch(parent: ParentLog<L>, copy: Copy): boolean {
    if (copy.next < this.host.oldestOffset(parent.log)) return false;
    return joinsBatchesUnderWay(copy, this.host.copyRoute(copy.childId, parent.partition));
  }

  /** Answers come one by one (several in one go when one sync covered them): the pump runs once after them all. */
  private pumpSoon(parent: ParentLog<L>): void {
    if (parent.pumpQueued) return;
    parent.pumpQueued = true;
    queueMicrotask(() => {
      parent.pumpQueued = false;
      if (this.parents.get(parent.log) === parent) this.pumpAll(parent);
    });
  }

  /** Spec §4 metrics: records the parent's retention deleted before they were copied are skipped and counted. */
  private droppedSkip(parent: ParentLog<L>, copy: Copy): void {
    const oldest = this.host.oldestOffset(parent.log);
    if (copy.unanswered > 0 || copy.offset >= oldest || copy.offset >= parent.committed) return;
    const to = Math.min(oldest, parent.committed);
    copy.dropped += to - copy.offset;
    copy.offset = to;
    copy.next = to;
    this.host.cursorSet(parent.log, copy.name, copy.offset);
  }

  private readFor(parent: ParentLog<L>, from: number, end: number, copies: Copy[]): void {
    const count = Math.min(end - from, copyCountMax);
    for (const copy of copies) copy.reading = true;
    const offsets = Array.from({ length: count }, (_, i) => from + i);
    this.host.read(parent.log, offsets).then(
      (results) => {
        for (const copy of copies) this.readDone(parent, copy, from, results);
      },
      (err: unknown) => this.host.failStop('fan-out copy read', err),
    );
  }

  private readDone(parent: ParentLog<L>, copy: Copy, from: number, results: SegmentReadResult[]): void {
    copy.reading = false;
    if (this.closed || parent.copies.get(copy.childId) !== copy || copy.next !== from) return;
    const { records, waitMs } = this.duePrefix(parent, copy, from, results);
    if (records.length === 0) {
      if (waitMs !== null) return this.retryLater(parent, copy, waitMs);
      // Retention took the head while it was read: the pump counts it dropped (after the answers, if any are due).
      if (results[0] === 'aged_out' && copy.unanswered === 0) this.pumpSoon(parent);
      return;
    }
    const route = this.host.copyRoute(copy.childId, parent.partition);
    // The route changed since the batches under way went: this read waits until they are answered.
    if (copy.unanswered > 0 && !joinsBatchesUnderWay(copy, route)) return;
    copy.route = route;
    copy.next = from + records.length;
    copy.unanswered++;
    this.host.copy({ parentTopicId: parent.topicId, partition: parent.partition, childId: copy.childId, epoch: copy.epoch, fromOffset: from, records });
    // A host that takes several batches gets the next one now, before this one is synced.
    if (copy.next < parent.committed) this.pumpSoon(parent);
  }

  /** The records of a batch that may go now: in offset order, up to the byte bound, and for a delay child only those
   *  already due (commit order is delivery order: the first one not due stops the batch, and waitMs is its wait). */
  private duePrefix(parent: ParentLog<L>, copy: Copy, from: number, results: SegmentReadResult[]): { records: StoredRecord[]; waitMs: number | null } {
    const records: StoredRecord[] = [];
    let bytes = 0;
    let commit = firstIndexEndingAfter(parent.commits, from);
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
      if (parent.copies.get(copy.childId) === copy) this.pumpAll(parent);
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

/** A batch by route may go beside the cursor's batches under way: they all took one route, up to its bound. */
function joinsBatchesUnderWay(copy: Copy, route: CopyRoute): boolean {
  return route === copy.route && copy.unanswered < inFlightMax[route];
}

/** The last commit range committed at or before atMs (times ascend); -1 when none was. */
function lastIndexAtOrBefore(commits: readonly { atMs: number }[], atMs: number): number {
  return firstIndexWhere(commits, (c) => c.atMs > atMs) - 1;
}

/** The first commit range holding an offset past offset (ends ascend); commits.length when none does. */
function firstIndexEndingAfter(commits: readonly { end: number }[], offset: number): number {
  return firstIndexWhere(commits, (c) => c.end > offset);
}

/** Binary search: the first index where pred holds, for a pred false then true along the array. */
function firstIndexWhere<T>(items: readonly T[], pred: (item: T) => boolean): number {
  let low = 0;
  let high = items.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (pred(items[mid]!)) high = mid;
    else low = mid + 1;
  }
  return low;
}

/** Each pair of neighbours becomes one range with the later end and the later time: its records committed at or
 *  before that time, so a due time from it is never early. */
export function commitsCoarsened<T extends { end: number; atMs: number }>(commits: T[]): T[] {
  const merged: T[] = [];
  for (let i = 0; i < commits.length; i += 2) merged.push(commits[Math.min(i + 1, commits.length - 1)]!);
  return merged;
}

/** A record committed before this worker saw it: the front accepted it within its timestamp's second, and the
 *  commit follows the acceptance by the ingress sync and a flush round, well under a second; so one more second bounds
 *  the commit from above, and a delay counted from it is never early (a little late instead). */
function committedAtBound(record: StoredRecord): number {
  return (record.timestampSec + 2) * 1000;
}
