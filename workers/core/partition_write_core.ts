// Pure: the write side of one partition worker's partitions (STYLE §3): holding dispatches until the metadata
// replica can judge them, flush rounds (records written, then visible), sync rounds (fdatasync, then 'durable'),
// retention rounds, topic deletion, shutdown drain and each partition's cursor table. handle(command, nowMs) returns
// the effects the shell (partition_worker.ts) performs in order; the shell feeds completions back as commands. Runs
// on the partition worker thread, called by its shell from the port loop, timers and I/O completions. No clock, timers, I/O or awaits: generic over L,
// the shell's handle for one partition's log, which the core only compares by identity.
import { PartitionCursors, type CursorEntry } from './partition_cursors.js';

export type { CursorEntry };

export interface WriteCoreConfig {
  /** storage.partition_flush_interval: flush rounds start at most once per interval (0: at once). */
  flushIntervalMs: number;
  /** storage.partition_sync_interval: a sync at most this long after records were first written unsynced. */
  syncIntervalMs: number;
  /** storage.retention_check_interval. */
  retentionCheckIntervalMs: number;
}

/** What the core needs of a dispatch or hand-off: the metadata index its records were judged at (the shell reports
 *  the ingress seqs it staged in 'staged'). */
export interface HeldDispatch {
  metaIndex: number;
}

/** A partition log's offsets as the shell read them after an append or sync. */
export interface LogPosition<L> {
  log: L;
  /** One past the last written offset (what readers may see). */
  highWatermark: number;
  /** One past the last fdatasynced offset. */
  syncedOffset: number;
}

export type WriteTimer = 'flush' | 'sync' | 'retention';

/** Records another node handed over (issue 29), staged: its waiter is answered 'handedOff' once every log it touched
 *  is synced up to the end it staged to. */
export interface HandoffStaged<L> {
  waiter: number;
  ends: readonly [L, number][];
}

export type WriteCommand<L, D extends HeldDispatch> =
  /** The worker opened its partitions and listens: the retention timer starts. */
  | { kind: 'start' }
  /** A log found on disk at start (everything in it is synced), with its persisted cursors. */
  | { kind: 'opened'; log: L; highWatermark: number; cursors: readonly CursorEntry[] }
  /** A dispatch from the front; held until the replica has applied its metaIndex. */
  | { kind: 'dispatchArrived'; dispatch: D }
  /** The metadata replica applied everything up to appliedIndex (snapshot or committed entries). */
  | { kind: 'replicaAdvanced'; appliedIndex: number }
  /** The shell staged the records of the 'stage' effect's dispatches; logs gained staged records. seqUpTo is the last
   *  seq of this node's ingress log staged; handoffs, the hand-offs among them. deferred: the effect's dispatches from
   *  the first one that touches a frozen partition on (a partition move, issue 41), not staged: they are held again,
   *  with everything after them, until 'thaw'. */
  | { kind: 'staged'; seqUpTo: number; logs: Iterable<L>; handoffs?: readonly HandoffStaged<L>[]; deferred?: readonly D[] }
  /** A partition froze for a move has thawed (unfrozen, aborted, flipped away or adopted): held dispatches are tried
   *  again. */
  | { kind: 'thaw' }
  /** The partition's log left this worker (a move's flip gave it to another node): it takes nothing more and is set
   *  aside ('release') once the rounds in flight end. */
  | { kind: 'partitionReleased'; topicId: string; partition: number; log: L }
  /** The 'append' effect's flush round ended; one position per log it named. */
  | { kind: 'flushDone'; logs: readonly LogPosition<L>[] }
  /** The 'sync' effect's sync round ended; one position per log it named. */
  | { kind: 'syncDone'; logs: readonly LogPosition<L>[] }
  /** The 'retain' effect's retention round ended. */
  | { kind: 'retentionDone' }
  /** A timer set by 'schedule' fired; a cancelled or replaced one is ignored. */
  | { kind: 'timerFired'; timer: WriteTimer }
  /** Someone (an ack-state write) waits until every written record is synced; answered by 'synced'. */
  | { kind: 'syncWait'; waiter: number }
  /** A topic was deleted: its logs take nothing more and are destroyed once the rounds in flight end. */
  | { kind: 'topicDeleted'; topicId: string; logs: readonly L[] }
  /** The 'destroy' effect ended. */
  | { kind: 'destroyed' }
  /** A named cursor of the log moved; offset is at most the log's high watermark (cursors name committed records). */
  | { kind: 'cursorSet'; log: L; name: string; offset: number }
  /** A named cursor is no longer needed (a fan-out link of an older epoch, issue 30); unknown names are ignored. */
  | { kind: 'cursorDrop'; log: L; name: string }
  /** The 'persistCursors' effect for this log ended. */
  | { kind: 'cursorsPersisted'; log: L }
  /** Finish every round, sync, report and deletion, then 'drained'; dispatches held or arriving are dropped. */
  | { kind: 'shutdown' };

export type WriteEffect<L, D extends HeldDispatch> =
  /** Stage these dispatches' records into their logs now (no I/O), then send 'staged'. */
  | { kind: 'stage'; dispatches: D[] }
  /** A flush round: write every staged record of these logs, concurrently; then 'flushDone'. */
  | { kind: 'append'; logs: L[] }
  /** These logs' records up to highWatermark are written: tell their read paths (consumers see them now). */
  | { kind: 'committed'; logs: LogPosition<L>[] }
  /** A sync round: fdatasync these logs; then 'syncDone'. */
  | { kind: 'sync'; logs: L[] }
  /** Post 'durable': every record of the dispatches up to seqUpTo is synced (the ingress log may drop them). */
  | { kind: 'durable'; seqUpTo: number }
  /** These syncWait waiters may go on. */
  | { kind: 'synced'; waiters: number[] }
  /** These hand-offs' records are synced: their origins may drop them. */
  | { kind: 'handedOff'; waiters: number[] }
  /** A retention round (spec §1.12) with nowMs as the time; then 'retentionDone'. */
  | { kind: 'retain'; nowMs: number }
  /** Close and remove these logs (and the topic directory if empty); then 'destroyed'. */
  | { kind: 'destroy'; topicId: string; logs: L[] }
  /** Close this log and set its directory aside (a moved partition); then 'destroyed'. */
  | { kind: 'release'; topicId: string; partition: number; log: L }
  /** Write this log's cursor table durably; every offset in it is synced. Then 'cursorsPersisted'. */
  | { kind: 'persistCursors'; log: L; cursors: CursorEntry[] }
  /** (Re)arm the named timer to fire 'timerFired' at atMs, replacing an earlier arming. */
  | { kind: 'schedule'; timer: WriteTimer; atMs: number }
  | { kind: 'cancel'; timer: WriteTimer }
  /** Shutdown finished: nothing staged, unsynced, unreported or being deleted is left. */
  | { kind: 'drained' };

/** One log as the core tracks it. */
interface LogState {
  highWatermark: number;
  syncedOffset: number;
  /** Flush rounds that left records of this log unsynced, oldest first (checks 'durable' against them). */
  unsyncedRounds: { seqUpTo: number; endOffset: number }[];
  cursors: PartitionCursors;
  /** Holds records other nodes handed over: their interleaving with this node's cannot be replayed from one ingress
   *  log, so its records become visible only once synced. */
  foreign: boolean;
  /** What the read path was last told (committed). */
  committedOffset: number;
}

interface Deletion<L> {
  /** destroy: a deleted topic's logs; release: one partition moved away. */
  kind: 'destroy' | 'release';
  topicId: string;
  /** The released partition; -1 for a destroy. */
  partition: number;
  logs: L[];
  /** The rounds in flight when the deletion arrived: it waits for them to end. */
  afterRoundId: number;
  afterSyncId: number;
}

class WriteCoreError extends Error {}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) fail(message);
}

/** For checks whose message interpolates values: written `if (!cond) fail(...)` so the text is built only on failure
 *  (a command runs per dispatch and per round, and a template literal per check would run each time). */
function fail(message: string): never {
  throw new WriteCoreError(`partition write core: ${message}`);
}

export class PartitionWriteCore<L, D extends HeldDispatch> {
  private readonly states = new Map<L, LogState>();
  private appliedIndex: number | null = null;
  private held: D[] = [];
  /** A 'stage' effect was emitted and its 'staged' has not come back; stagingCount: its dispatches. */
  private stagePending = false;
  private stagingCount = 0;
  /** A dispatch touching a frozen partition came back deferred: everything held waits for 'thaw'. */
  private frozenHold = false;
  /** Logs with staged records no flush round has taken yet, and the lastSeq of the last staged dispatch. */
  private readonly dirty = new Set<L>();
  private uncoveredSeq: number | null = null;
  /** Logs written by a flush round and not yet taken by a sync round, and the seq that round covered. */
  private readonly unsynced = new Set<L>();
  private unsyncedSeq: number | null = null;
  /** Logs whose records are unsynced or being synced: the ones 'durable' is checked against. */
  private readonly unsyncedRoundLogs = new Set<L>();
  private syncWaiters: number[] = [];
  /** Logs whose cursor table waits for a sync before it may be persisted. */
  private readonly cursorsWaitingSync = new Set<L>();
  private readonly cursorsPersisting = new Set<L>();
  private handoffWaiters: HandoffStaged<L>[] = [];
  /** seqUpTo of the last flush round: a round with the same one wrote only handed-over records, which no 'durable'
   *  report covers (their hand-off answers them). */
  private lastFlushedSeq = -Infinity;
  private round: { id: number; kind: 'flush'; logs: L[]; seqUpTo: number } | { id: number; kind: 'retention' } | null = null;
  private syncRound: { id: number; logs: L[]; seqUpTo: number | null; waiters: number[] } | null = null;
  private nextRoundId = 1;
  private readonly deletions: Deletion<L>[] = [];
  private destroying = false;
  private lastRoundStartMs = -Infinity;
  private readonly timers: Record<WriteTimer, number | null> = { flush: null, sync: null, retention: null };
  private syncDue = false;
  private retentionDue = false;
  private shuttingDown = false;
  private drained = false;
  private durableSeq = -Infinity;
  private effects: WriteEffect<L, D>[] = [];
  private nowMs = 0;

  constructor(private readonly config: WriteCoreConfig) {
    check(config.flushIntervalMs >= 0 && config.syncIntervalMs >= 0, 'intervals must not be negative');
    check(config.retentionCheckIntervalMs > 0, 'retentionCheckIntervalMs must be positive');
  }

  handle(cmd: WriteCommand<L, D>, nowMs: number): WriteEffect<L, D>[] {
    if (!Number.isFinite(nowMs)) fail(`nowMs ${nowMs}`);
    if (this.stagePending && cmd.kind !== 'staged') fail(`${cmd.kind} while a stage effect is unanswered`);
    this.nowMs = Math.max(this.nowMs, nowMs);
    this.effects = [];
    this.apply(cmd);
    this.roundStart();
    this.deletionsRelease();
    this.drainedCheck();
    this.checkInvariants();
    return this.effects;
  }

  /** Whether the log has written records no sync has covered (what 'syncWait' would wait for). */
  logUnsynced(log: L): boolean {
    const state = this.states.get(log);
    return state !== undefined && state.syncedOffset < state.highWatermark;
  }

  /** Whether the log was opened or has been staged to, and its topic not deleted since. */
  holdsLog(log: L): boolean {
    return this.states.has(log);
  }

  cursorOffset(log: L, name: string): number | undefined {
    return this.states.get(log)?.cursors.offsetOf(name);
  }

  /** What the log's read path was last told ('committed'): readers see the offsets below it. */
  committedOffset(log: L): number {
    return this.states.get(log)?.committedOffset ?? 0;
  }

  cursorNames(log: L): string[] {
    return this.states.get(log)?.cursors.names() ?? [];
  }

  private apply(cmd: WriteCommand<L, D>): void {
    switch (cmd.kind) {
      case 'start':
        return this.timerSet('retention', this.nowMs + this.config.retentionCheckIntervalMs);
      case 'opened':
        return this.onOpened(cmd.log, cmd.highWatermark, cmd.cursors);
      case 'dispatchArrived':
        // After shutdown nothing more is answered 'durable'; the ingress log hands these over again at start.
        if (!this.shuttingDown) this.held.push(cmd.dispatch);
        return this.heldRelease();
      case 'replicaAdvanced':
        this.appliedIndex = cmd.appliedIndex;
        return this.heldRelease();
      case 'staged':
        this.onStaged(cmd.seqUpTo, cmd.logs, cmd.deferred ?? []);
        return this.onHandoffsStaged(cmd.handoffs ?? []);
      case 'thaw':
        this.frozenHold = false;
        return this.heldRelease();
      case 'partitionReleased':
        this.logsLeave([cmd.log]);
        return this.deletionQueue('release', cmd.topicId, cmd.partition, [cmd.log]);
      case 'flushDone':
        return this.onFlushDone(cmd.logs);
      case 'syncDone':
        return this.onSyncDone(cmd.logs);
      case 'retentionDone':
        check(this.round?.kind === 'retention', 'retentionDone without a retention round');
        this.round = null;
        return;
      case 'timerFired':
        return this.onTimerFired(cmd.timer);
      case 'syncWait':
        this.syncWaiters.push(cmd.waiter);
        this.syncDue = true;
        return;
      case 'topicDeleted':
        return this.onTopicDeleted(cmd.topicId, cmd.logs);
      case 'destroyed':
        check(this.destroying, 'destroyed without a destroy');
        this.destroying = false;
        this.deletions.shift();
        return;
      case 'cursorSet':
        return this.onCursorSet(cmd.log, cmd.name, cmd.offset);
      case 'cursorDrop': {
        const state = this.states.get(cmd.log);
        if (state === undefined) return;
        state.cursors.delete(cmd.name);
        return this.cursorsPersistTry(cmd.log);
      }
      case 'cursorsPersisted':
        return this.onCursorsPersisted(cmd.log);
      case 'shutdown':
        return this.onShutdown();
      default:
        return assertNeverCommand(cmd);
    }
  }

  private onOpened(log: L, highWatermark: number, cursors: readonly CursorEntry[]): void {
    check(!this.states.has(log), 'a log opened twice');
    if (!Number.isSafeInteger(highWatermark) || highWatermark < 0) fail(`opened at ${highWatermark}`);
    const state = this.stateNew(highWatermark, cursors);
    this.states.set(log, state);
  }

  private stateNew(highWatermark: number, cursors: readonly CursorEntry[]): LogState {
    return {
      highWatermark, syncedOffset: highWatermark, unsyncedRounds: [], cursors: new PartitionCursors(cursors), foreign: false,
      committedOffset: highWatermark,
    };
  }

  /** Every held dispatch the replica can judge now goes to staging, in arrival order. */
  private heldRelease(): void {
    if (this.appliedIndex === null || this.frozenHold) return;
    let count = 0;
    while (count < this.held.length && this.held[count]!.metaIndex <= this.appliedIndex) count++;
    if (count === 0) return;
    const dispatches = this.held.splice(0, count);
    this.stagePending = true;
    this.stagingCount = count;
    this.effects.push({ kind: 'stage', dispatches });
  }

  private onStaged(seqUpTo: number, logs: Iterable<L>, deferred: readonly D[]): void {
    check(this.stagePending, 'staged without a stage effect');
    if (this.uncoveredSeq !== null && seqUpTo < this.uncoveredSeq) fail(`staged seq ${seqUpTo} goes back`);
    if (deferred.length > this.stagingCount) fail(`${deferred.length} deferred of ${this.stagingCount} staged`);
    this.stagePending = false;
    if (deferred.length > 0) {
      this.held.unshift(...deferred);
      this.frozenHold = true;
      // Nothing staged: no round is owed (a round would report a seq already reported).
      if (deferred.length === this.stagingCount) return;
    }
    for (const log of logs) {
      if (!this.states.has(log)) this.states.set(log, this.stateNew(0, []));
      this.dirty.add(log);
    }
    this.uncoveredSeq = seqUpTo;
  }

  private onHandoffsStaged(handoffs: readonly HandoffStaged<L>[]): void {
    for (const handoff of handoffs) {
      for (const [log] of handoff.ends) this.states.get(log)!.foreign = true;
      this.handoffWaiters.push(handoff);
    }
    this.handoffsAnswer();
  }

  /** Hand-offs whose every log is synced up to where they staged (or deleted since) are answered. */
  private handoffsAnswer(): void {
    const done: number[] = [];
    this.handoffWaiters = this.handoffWaiters.filter((handoff) => {
      const synced = handoff.ends.every(([log, end]) => (this.states.get(log)?.syncedOffset ?? end) >= end);
      if (synced) done.push(handoff.waiter);
      return !synced;
    });
    if (done.length > 0) this.effects.push({ kind: 'handedOff', waiters: done });
  }

  private onFlushDone(positions: readonly LogPosition<L>[]): void {
    const round = this.round;
    check(round?.kind === 'flush', 'flushDone without a flush round');
    check(positions.length === round.logs.length, 'flushDone must name every log of its round');
    this.round = null;
    const holdsLocal = round.seqUpTo > this.lastFlushedSeq;
    this.lastFlushedSeq = round.seqUpTo;
    const committed: LogPosition<L>[] = [];
    for (const position of positions) {
      const state = this.states.get(position.log);
      // Its topic was deleted while the round wrote it: the deletion destroys it once this round ends.
      if (state === undefined) continue;
      this.positionApply(position, state, true);
      if (state.syncedOffset < state.highWatermark) {
        if (holdsLocal) {
          state.unsyncedRounds.push({ seqUpTo: round.seqUpTo, endOffset: state.highWatermark });
          this.unsyncedRoundLogs.add(position.log);
        }
        this.unsynced.add(position.log);
        // Handed-over records wait for this sync (their origin, and consumers): it comes now, not an interval later.
        if (state.foreign) this.syncDue = true;
      }
      this.committedPush(committed, position.log, state);
    }
    // Consumers see this node's records now, before anything is synced: they never wait for a sync.
    this.effects.push({ kind: 'committed', logs: committed });
    this.unsyncedSeq = round.seqUpTo;
    this.durableReport();
  }

  /** What the read path may see: everything written, or of a log holding handed-over records, what is synced. */
  private committedPush(committed: LogPosition<L>[], log: L, state: LogState): void {
    const visible = state.foreign ? Math.max(state.committedOffset, state.syncedOffset) : state.highWatermark;
    if (visible === state.committedOffset && state.foreign) return;
    state.committedOffset = visible;
    committed.push({ log, highWatermark: visible, syncedOffset: state.syncedOffset });
  }

  /** A flush moves the high watermark (and the synced offset: a roll syncs the sealed segment). A sync moves only the
   *  synced offset, up to the high watermark of the last flushDone: a flush still running may have written more. */
  private positionApply(position: LogPosition<L>, state: LogState, fromFlush: boolean): void {
    if (position.highWatermark < state.highWatermark) fail(`high watermark ${position.highWatermark} went back`);
    if (position.syncedOffset > position.highWatermark) fail(`synced ${position.syncedOffset} above written`);
    if (fromFlush) state.highWatermark = position.highWatermark;
    state.syncedOffset = Math.max(state.syncedOffset, Math.min(position.syncedOffset, state.highWatermark));
    let dropped = 0;
    while (dropped < state.unsyncedRounds.length && state.unsyncedRounds[dropped]!.endOffset <= state.syncedOffset) dropped++;
    if (dropped > 0) state.unsyncedRounds.splice(0, dropped);
    if (state.unsyncedRounds.length === 0) this.unsyncedRoundLogs.delete(position.log);
  }

  private onSyncDone(positions: readonly LogPosition<L>[]): void {
    const round = this.syncRound;
    check(round !== null, 'syncDone without a sync round');
    check(positions.length === round.logs.length, 'syncDone must name every log of its round');
    this.syncRound = null;
    const committed: LogPosition<L>[] = [];
    for (const position of positions) {
      const state = this.states.get(position.log);
      if (state === undefined) continue;
      this.positionApply(position, state, false);
      if (state.foreign) this.committedPush(committed, position.log, state);
    }
    if (committed.length > 0) this.effects.push({ kind: 'committed', logs: committed });
    this.handoffsAnswer();
    if (round.seqUpTo !== null) this.durableEmit(round.seqUpTo);
    if (round.waiters.length > 0) this.effects.push({ kind: 'synced', waiters: round.waiters });
    // A flush round that ended meanwhile waited for this sync before reporting.
    this.durableReport();
    for (const log of [...this.cursorsWaitingSync]) this.cursorsPersistTry(log);
  }

  /** Reports 'durable' for the last flushed dispatch when nothing written waits for a sync (nor is being synced: an
   *  earlier dispatch's records may be), else makes sure a sync round comes. */
  private durableReport(): void {
    if (this.unsynced.size > 0) return this.syncSchedule();
    if (this.syncRound !== null || this.unsyncedSeq === null) return;
    this.durableEmit(this.unsyncedSeq);
    this.unsyncedSeq = null;
  }

  /** The walk over the logs with unsynced records runs once per report (a round), not once per command. */
  private durableEmit(seqUpTo: number): void {
    if (seqUpTo < this.durableSeq) fail(`durable ${seqUpTo} after ${this.durableSeq}`);
    for (const log of this.unsyncedRoundLogs) {
      const state = this.states.get(log)!;
      check(state.syncedOffset < state.highWatermark, 'a log listed unsynced with everything synced');
      const oldest = state.unsyncedRounds[0];
      if (oldest !== undefined && oldest.seqUpTo <= seqUpTo) fail(`durable ${seqUpTo} while records of ${oldest?.seqUpTo} are unsynced`);
    }
    this.durableSeq = seqUpTo;
    this.effects.push({ kind: 'durable', seqUpTo });
  }

  /** A sync round at most syncIntervalMs after records were first written unsynced. */
  private syncSchedule(): void {
    if (this.syncDue || this.timers.sync !== null) return;
    // While shutting down, roundStart syncs as soon as no flush is left.
    if (this.config.syncIntervalMs === 0 || this.shuttingDown) {
      this.syncDue = true;
      return;
    }
    this.timerSet('sync', this.nowMs + this.config.syncIntervalMs);
  }

  private onTimerFired(timer: WriteTimer): void {
    // Cancelled or replaced since: the shell's timer raced the effect that ended it.
    if (this.timers[timer] === null) return;
    this.timers[timer] = null;
    if (timer === 'sync') this.syncDue = true;
    if (timer === 'retention') {
      this.retentionDue = true;
      this.timerSet('retention', this.nowMs + this.config.retentionCheckIntervalMs);
    }
  }

  private timerSet(timer: WriteTimer, atMs: number): void {
    this.timers[timer] = atMs;
    this.effects.push({ kind: 'schedule', timer, atMs });
  }

  private timerCancel(timer: WriteTimer): void {
    if (this.timers[timer] === null) return;
    this.timers[timer] = null;
    this.effects.push({ kind: 'cancel', timer });
  }

  /** Starts what is due: a sync round runs beside the others (consumers never wait for it); a flush round writes
   *  every dirty log; retention is a round of its own, so it never overlaps a flush of the same log. */
  private roundStart(): void {
    if (this.stagePending) return;
    const shutdownSyncDue = this.shuttingDown && this.round === null && this.uncoveredSeq === null &&
      (this.unsynced.size > 0 || this.syncWaiters.length > 0);
    if (this.syncRound === null && (this.syncDue || shutdownSyncDue)) this.syncRoundStart();
    if (this.round !== null) return;
    if (this.retentionDue && !this.shuttingDown) {
      this.retentionDue = false;
      this.round = { id: this.nextRoundId++, kind: 'retention' };
      this.effects.push({ kind: 'retain', nowMs: this.nowMs });
      return;
    }
    if (this.uncoveredSeq === null) return;
    // A flush round costs one write per touched partition: with a flush interval set, rounds start at most once per
    // interval so that each write covers more dispatches. Only consumers wait for it; producers had their 202.
    const dueAtMs = this.lastRoundStartMs + this.config.flushIntervalMs;
    if (dueAtMs > this.nowMs && !this.shuttingDown) {
      if (this.timers.flush === null) this.timerSet('flush', dueAtMs);
      return;
    }
    this.lastRoundStartMs = this.nowMs;
    const logs = [...this.dirty];
    this.round = { id: this.nextRoundId++, kind: 'flush', logs, seqUpTo: this.uncoveredSeq };
    this.uncoveredSeq = null;
    this.dirty.clear();
    this.effects.push({ kind: 'append', logs });
  }

  private syncRoundStart(): void {
    this.syncDue = false;
    this.timerCancel('sync');
    const logs = [...this.unsynced];
    this.syncRound = { id: this.nextRoundId++, logs, seqUpTo: this.unsyncedSeq, waiters: this.syncWaiters };
    this.unsynced.clear();
    this.unsyncedSeq = null;
    this.syncWaiters = [];
    this.effects.push({ kind: 'sync', logs });
  }

  /** The logs leave every set now (nothing stages them again); they are destroyed after the rounds in flight. */
  private onTopicDeleted(topicId: string, logs: readonly L[]): void {
    this.logsLeave(logs);
    this.deletionQueue('destroy', topicId, -1, logs);
  }

  private logsLeave(logs: readonly L[]): void {
    for (const log of logs) {
      this.states.delete(log);
      this.dirty.delete(log);
      this.unsynced.delete(log);
      this.unsyncedRoundLogs.delete(log);
      this.cursorsWaitingSync.delete(log);
    }
  }

  private deletionQueue(kind: Deletion<L>['kind'], topicId: string, partition: number, logs: readonly L[]): void {
    const afterRoundId = this.round?.id ?? 0;
    const afterSyncId = this.syncRound?.id ?? 0;
    this.deletions.push({ kind, topicId, partition, logs: [...logs], afterRoundId, afterSyncId });
  }

  /** Deletions run one after another, each once the rounds in flight at its arrival have ended. */
  private deletionsRelease(): void {
    const next = this.deletions[0];
    if (next === undefined || this.destroying || this.stagePending) return;
    if (this.round !== null && this.round.id <= next.afterRoundId) return;
    if (this.syncRound !== null && this.syncRound.id <= next.afterSyncId) return;
    if (next.logs.some((log) => this.cursorsPersisting.has(log))) return;
    this.destroying = true;
    if (next.kind === 'release') this.effects.push({ kind: 'release', topicId: next.topicId, partition: next.partition, log: next.logs[0]! });
    else this.effects.push({ kind: 'destroy', topicId: next.topicId, logs: next.logs });
  }

  private onCursorSet(log: L, name: string, offset: number): void {
    const state = this.states.get(log);
    if (state === undefined) fail(`cursor ${name} of an unknown log`);
    if (!Number.isSafeInteger(offset) || offset < 0) fail(`cursor ${name} at ${offset}`);
    if (offset > state.highWatermark) fail(`cursor ${name} at ${offset} above the high watermark ${state.highWatermark}`);
    state.cursors.set(name, offset);
    this.cursorsPersistTry(log);
  }

  /** The cursor rule: a persisted cursor never names an offset above the synced offset, or a restart after a power
   *  loss could find a cursor past the partition's recovered end. A table that would is held back and a sync forced. */
  private cursorsPersistTry(log: L): void {
    const state = this.states.get(log);
    if (state === undefined || !state.cursors.persistWanted) return;
    if (state.cursors.offsetMax() > state.syncedOffset) {
      this.cursorsWaitingSync.add(log);
      this.syncDue = true;
      return;
    }
    this.cursorsWaitingSync.delete(log);
    this.cursorsPersisting.add(log);
    this.effects.push({ kind: 'persistCursors', log, cursors: state.cursors.persistBegin() });
  }

  private onCursorsPersisted(log: L): void {
    check(this.cursorsPersisting.delete(log), 'cursorsPersisted without a persist');
    const state = this.states.get(log);
    if (state !== undefined) {
      state.cursors.persistEnd();
      this.cursorsPersistTry(log);
    }
  }

  private onShutdown(): void {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    // Dispatches still waiting for metadata were never answered 'durable'; the ingress log keeps them.
    this.held = [];
    this.timerCancel('flush');
    this.timerCancel('sync');
    this.timerCancel('retention');
    this.retentionDue = false;
  }

  private drainedCheck(): void {
    if (!this.shuttingDown || this.drained || this.stagePending) return;
    if (this.round !== null || this.syncRound !== null || this.deletions.length > 0) return;
    if (this.cursorsPersisting.size > 0 || this.cursorsWaitingSync.size > 0) return;
    check(this.uncoveredSeq === null, 'staged dispatches left without a round');
    check(this.unsynced.size === 0, 'written records left without a sync round');
    check(this.syncWaiters.length === 0, 'sync waiters left without a sync round');
    this.drained = true;
    this.effects.push({ kind: 'drained' });
  }

  /** Checked after every command (TigerBeetle): O(1) but for the cursor persists in flight (a few). */
  private checkInvariants(): void {
    check(!this.shuttingDown || this.held.length === 0, 'held dispatches while shutting down');
    check(this.stagePending || this.frozenHold || this.held.length === 0 || this.appliedIndex === null || this.held[0]!.metaIndex > this.appliedIndex,
      'a held dispatch the replica can judge was not staged');
    check(this.unsyncedSeq === null || this.unsyncedSeq >= this.durableSeq, 'unreported seq at or below a durable one');
    for (const log of this.cursorsPersisting) {
      const state = this.states.get(log);
      check(state === undefined || state.cursors.persistedMax <= state.syncedOffset, 'a cursor persisted above the synced offset');
    }
    check(!this.drained || this.round === null, 'a flush or retention round after the drain');
  }
}

function assertNeverCommand(cmd: never): never {
  throw new WriteCoreError(`partition write core: unknown command ${JSON.stringify(cmd)}`);
}
