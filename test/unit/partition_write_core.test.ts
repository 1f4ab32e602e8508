// Goal: the partition write core keeps the write path's ordering rules: a dispatch waits for the replica, records are
// visible after their flush round and reported durable only after their sync, flush and sync intervals batch rounds,
// retention never overlaps a flush, deletions wait for the rounds in flight, shutdown drains, and a cursor table is
// persisted only when every cursor names a synced offset. Method: drive PartitionWriteCore command by command with
// string log handles and a hand-moved clock, and compare the effects it returns.
import t from 'tap';
import { PartitionWriteCore, type WriteCoreConfig, type WriteEffect } from '../../workers/core/partition_write_core.js';

interface D {
  metaIndex: number;
  lastSeq: number;
}
type Effect = WriteEffect<string, D>;

function core(config: Partial<WriteCoreConfig> = {}): PartitionWriteCore<string, D> {
  return new PartitionWriteCore<string, D>({ flushIntervalMs: 0, syncIntervalMs: 0, retentionCheckIntervalMs: 60_000, ...config });
}

function kinds(effects: Effect[]): string[] {
  return effects.map((e) => (e.kind === 'schedule' || e.kind === 'cancel' ? `${e.kind}:${e.timer}` : e.kind));
}

function find<K extends Effect['kind']>(effects: Effect[], kind: K): Extract<Effect, { kind: K }> {
  const effect = effects.find((e) => e.kind === kind);
  if (effect === undefined) throw new Error(`no ${kind} in ${kinds(effects).join(',')}`);
  return effect as Extract<Effect, { kind: K }>;
}

/** A dispatch of seq lastSeq staged into logs, up to the append it starts (or what it returns instead). */
function produce(c: PartitionWriteCore<string, D>, lastSeq: number, logs: string[], nowMs: number): Effect[] {
  const arrived = c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 0, lastSeq } }, nowMs);
  t.same(kinds(arrived), ['stage']);
  return c.handle({ kind: 'staged', seqUpTo: lastSeq, logs }, nowMs);
}

function written(logs: string[], highWatermark: number, syncedOffset = 0): { log: string; highWatermark: number; syncedOffset: number }[] {
  return logs.map((log) => ({ log, highWatermark, syncedOffset }));
}

t.test('a dispatch waits for the replica; records are visible after the flush and durable after the sync', async (t) => {
  const c = core();
  t.same(c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 3, lastSeq: 10 } }, 0), [], 'held: no replica yet');
  t.same(c.handle({ kind: 'replicaAdvanced', appliedIndex: 2 }, 0), [], 'held: replica behind its metaIndex');
  const released = c.handle({ kind: 'replicaAdvanced', appliedIndex: 3 }, 0);
  t.same(released, [{ kind: 'stage', dispatches: [{ metaIndex: 3, lastSeq: 10 }] }]);
  t.throws(() => c.handle({ kind: 'shutdown' }, 0), /while a stage effect is unanswered/, 'staged must come first');
  t.same(c.handle({ kind: 'staged', seqUpTo: 10, logs: ['a', 'b'] }, 0), [{ kind: 'append', logs: ['a', 'b'] }]);
  const flushed = c.handle({ kind: 'flushDone', logs: written(['a', 'b'], 5) }, 1);
  t.same(kinds(flushed), ['committed', 'sync'], 'visible first, then a sync at once (interval 0); no durable yet');
  t.same(find(flushed, 'committed').logs.map((p) => [p.log, p.highWatermark]), [['a', 5], ['b', 5]]);
  t.same(find(flushed, 'sync').logs, ['a', 'b']);
  t.same(c.handle({ kind: 'syncDone', logs: written(['a', 'b'], 5, 5) }, 2), [{ kind: 'durable', seqUpTo: 10 }]);
});

t.test('a dispatch holding no records of this worker is reported durable after an empty round', async (t) => {
  const c = core();
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  t.same(produce(c, 4, [], 0), [{ kind: 'append', logs: [] }]);
  t.same(c.handle({ kind: 'flushDone', logs: [] }, 0), [{ kind: 'committed', logs: [] }, { kind: 'durable', seqUpTo: 4 }]);
});

t.test('the flush interval batches rounds and the sync interval delays the sync', async (t) => {
  const c = core({ flushIntervalMs: 10, syncIntervalMs: 50 });
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 100);
  t.same(kinds(produce(c, 1, ['a'], 100)), ['append'], 'the first round starts at once');
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a'], 1) }, 101)), ['committed', 'schedule:sync']);
  t.same(produce(c, 2, ['a'], 103), [{ kind: 'schedule', timer: 'flush', atMs: 110 }], 'within the interval: a timer');
  t.same(produce(c, 3, ['b'], 105), [], 'one timer covers later dispatches');
  t.same(c.handle({ kind: 'timerFired', timer: 'flush' }, 110), [{ kind: 'append', logs: ['a', 'b'] }]);
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a', 'b'], 2) }, 111)), ['committed'], 'the sync timer is already set');
  const synced = c.handle({ kind: 'timerFired', timer: 'sync' }, 151);
  t.same(kinds(synced), ['sync']);
  t.same(find(synced, 'sync').logs, ['a', 'b']);
  t.same(c.handle({ kind: 'syncDone', logs: written(['a', 'b'], 2, 2) }, 152), [{ kind: 'durable', seqUpTo: 3 }]);
});

t.test('a flush that ends while a sync runs waits for that sync before reporting', async (t) => {
  const c = core({ syncIntervalMs: 0 });
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 1, ['a'], 0);
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a'], 1) }, 0)), ['committed', 'sync']);
  t.same(kinds(produce(c, 2, ['b'], 0)), ['append'], 'a flush round runs beside the sync');
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['b'], 1) }, 0)), ['committed'], 'b waits for the next sync round');
  const ended = c.handle({ kind: 'syncDone', logs: written(['a'], 1, 1) }, 0);
  t.same(kinds(ended), ['durable', 'sync'], 'seq 1 is durable; b is synced next');
  t.equal(find(ended, 'durable').seqUpTo, 1);
  t.same(c.handle({ kind: 'syncDone', logs: written(['b'], 1, 1) }, 0), [{ kind: 'durable', seqUpTo: 2 }]);
});

t.test('a round of handed-over records alone, written while a sync runs, does not hold back durable', async (t) => {
  // Found by the cluster crash loop (test/helpers/cluster_crash_scenario.ts): such a round repeats the last seqUpTo,
  // and the durable check took its unsynced records for the local dispatch's, which stopped the worker.
  const c = core({ syncIntervalMs: 0 });
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 12, ['a'], 0);
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a'], 5) }, 0)), ['committed', 'sync']);
  t.same(kinds(c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 0, lastSeq: 12 } }, 0)), ['stage'], 'a hand-off arrives');
  t.same(kinds(c.handle({ kind: 'staged', seqUpTo: 12, logs: ['a'], handoffs: [{ waiter: 7, ends: [['a', 8]] }] }, 0)), ['append']);
  const flushed = c.handle({ kind: 'flushDone', logs: written(['a'], 8) }, 0);
  t.same(find(flushed, 'committed').logs, [], 'handed-over records are not visible before their sync');
  const first = c.handle({ kind: 'syncDone', logs: written(['a'], 8, 5) }, 0);
  t.same(kinds(first), ['durable', 'sync'], 'seq 12 is durable; the hand-off\'s records are synced next');
  t.equal(find(first, 'durable').seqUpTo, 12);
  const second = c.handle({ kind: 'syncDone', logs: written(['a'], 8, 8) }, 0);
  t.same(find(second, 'handedOff').waiters, [7], 'the hand-off is answered once its records are synced');
});

t.test('a flush that left a log synced (a roll) needs no sync round', async (t) => {
  const c = core();
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 1, ['a'], 0);
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a'], 3, 3) }, 0)), ['committed', 'durable']);
});

t.test('retention never overlaps a flush round', async (t) => {
  const c = core({ retentionCheckIntervalMs: 1000 });
  t.same(c.handle({ kind: 'start' }, 0), [{ kind: 'schedule', timer: 'retention', atMs: 1000 }]);
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 1, ['a'], 999);
  t.same(c.handle({ kind: 'timerFired', timer: 'retention' }, 1000), [{ kind: 'schedule', timer: 'retention', atMs: 2000 }], 'waits');
  const flushed = c.handle({ kind: 'flushDone', logs: written(['a'], 1) }, 1001);
  t.same(kinds(flushed), ['committed', 'sync', 'retain'], 'the retention round starts as the flush ends');
  t.same(find(flushed, 'retain').nowMs, 1001);
  t.same(produce(c, 2, ['a'], 1002), [], 'a flush waits for the retention round');
  t.same(kinds(c.handle({ kind: 'retentionDone' }, 1003)), ['append']);
});

t.test('a deletion waits for the rounds in flight and drops the deleted logs from their reports', async (t) => {
  const c = core();
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 1, ['a', 'x'], 0);
  t.same(c.handle({ kind: 'topicDeleted', topicId: 'X', logs: ['x'] }, 0), [], 'the flush round writing x is in flight');
  const flushed = c.handle({ kind: 'flushDone', logs: [...written(['a'], 1), ...written(['x'], 1)] }, 0);
  t.same(kinds(flushed), ['committed', 'sync', 'destroy']);
  t.same(find(flushed, 'committed').logs.map((p) => p.log), ['a'], 'nothing is committed to a deleted log');
  t.same(find(flushed, 'sync').logs, ['a']);
  t.same(find(flushed, 'destroy'), { kind: 'destroy', topicId: 'X', logs: ['x'] });
  t.same(c.handle({ kind: 'topicDeleted', topicId: 'Y', logs: [] }, 0), [], 'deletions run one after another');
  t.same(kinds(c.handle({ kind: 'destroyed' }, 0)), [], 'Y waits for the sync round in flight at its arrival');
  t.same(kinds(c.handle({ kind: 'syncDone', logs: written(['a'], 1, 1) }, 0)), ['durable', 'destroy']);
});

t.test('shutdown drops held dispatches, flushes at once, syncs, then drains', async (t) => {
  const c = core({ flushIntervalMs: 1000, syncIntervalMs: 1000 });
  c.handle({ kind: 'start' }, 0);
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 1, ['a'], 0);
  c.handle({ kind: 'flushDone', logs: written(['a'], 1) }, 0);
  t.same(kinds(produce(c, 2, ['a'], 1)), ['schedule:flush']);
  c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 9, lastSeq: 3 } }, 1);
  const down = c.handle({ kind: 'shutdown' }, 2);
  t.same(kinds(down), ['cancel:flush', 'cancel:sync', 'cancel:retention', 'append'], 'no interval waits now');
  t.same(c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 0, lastSeq: 4 } }, 2), [], 'dropped: the ingress log keeps it');
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a'], 2) }, 3)), ['committed', 'sync']);
  t.same(c.handle({ kind: 'syncDone', logs: written(['a'], 2, 2) }, 4), [{ kind: 'durable', seqUpTo: 2 }, { kind: 'drained' }]);
});

t.test('a sync waiter is answered after the next sync round', async (t) => {
  const c = core({ syncIntervalMs: 1000 });
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 1, ['a'], 0);
  c.handle({ kind: 'flushDone', logs: written(['a'], 1) }, 0);
  t.ok(c.logUnsynced('a'));
  t.same(kinds(c.handle({ kind: 'syncWait', waiter: 7 }, 1)), ['cancel:sync', 'sync'], 'an ack write does not wait for the interval');
  t.same(c.handle({ kind: 'syncDone', logs: written(['a'], 1, 1) }, 2), [{ kind: 'durable', seqUpTo: 1 }, { kind: 'synced', waiters: [7] }]);
  t.notOk(c.logUnsynced('a'));
});

t.test('a cursor table is persisted only when every cursor names a synced offset', async (t) => {
  const c = core({ syncIntervalMs: 1000 });
  c.handle({ kind: 'opened', log: 'a', highWatermark: 4, cursors: [{ name: 'copy', offset: 2 }] }, 0);
  t.equal(c.cursorOffset('a', 'copy'), 2, 'restored');
  t.same(c.handle({ kind: 'cursorSet', log: 'a', name: 'copy', offset: 4 }, 0), [{ kind: 'persistCursors', log: 'a', cursors: [{ name: 'copy', offset: 4 }] }]);
  t.same(c.handle({ kind: 'cursorSet', log: 'a', name: 'link', offset: 3 }, 0), [], 'one persist at a time');
  t.same(c.handle({ kind: 'cursorsPersisted', log: 'a' }, 0), [{ kind: 'persistCursors', log: 'a', cursors: [{ name: 'copy', offset: 4 }, { name: 'link', offset: 3 }] }]);
  c.handle({ kind: 'cursorsPersisted', log: 'a' }, 0);
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  produce(c, 1, ['a'], 0);
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a'], 9, 4) }, 0)), ['committed', 'schedule:sync']);
  t.throws(() => c.handle({ kind: 'cursorSet', log: 'a', name: 'copy', offset: 10 }, 0), /above the high watermark/);
  t.same(kinds(c.handle({ kind: 'cursorSet', log: 'a', name: 'copy', offset: 9 }, 1)), ['cancel:sync', 'sync'], 'written, not synced: a sync is forced');
  const synced = c.handle({ kind: 'syncDone', logs: written(['a'], 9, 9) }, 2);
  t.same(kinds(synced), ['durable', 'persistCursors']);
  t.same(find(synced, 'persistCursors').cursors, [{ name: 'copy', offset: 9 }, { name: 'link', offset: 3 }]);
});

t.test('a shutdown waits for cursor persists; a deletion waits for its logs\' persists', async (t) => {
  const c = core();
  c.handle({ kind: 'opened', log: 'a', highWatermark: 4, cursors: [] }, 0);
  c.handle({ kind: 'cursorSet', log: 'a', name: 'copy', offset: 1 }, 0);
  t.same(c.handle({ kind: 'topicDeleted', topicId: 'A', logs: ['a'] }, 0), [], 'its cursor persist is in flight');
  t.same(kinds(c.handle({ kind: 'cursorsPersisted', log: 'a' }, 0)), ['destroy']);
  t.same(kinds(c.handle({ kind: 'shutdown' }, 0)), [], 'the deletion is in flight');
  t.same(kinds(c.handle({ kind: 'destroyed' }, 0)), ['drained']);
});

t.test('hand-offs: their logs commit only what is synced, each is answered once synced, and foreign-only rounds '
  + 'never hold up a durable report', async (t) => {
  const c = core({ syncIntervalMs: 200 });
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 0, lastSeq: 0 } }, 0);
  t.same(c.handle({ kind: 'staged', seqUpTo: 0, logs: ['f'], handoffs: [{ waiter: 7, ends: [['f', 3]] }] }, 0), [{ kind: 'append', logs: ['f'] }]);
  const first = c.handle({ kind: 'flushDone', logs: written(['f'], 3) }, 1);
  t.same(kinds(first), ['committed', 'sync'], 'a log holding handed-over records syncs at once, not an interval later');
  t.same(find(first, 'committed').logs, [], 'and shows consumers nothing unsynced');
  // A second hand-off is written while the first sync runs: the same local seq (no local dispatch in between).
  c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 0, lastSeq: 0 } }, 1);
  t.same(kinds(c.handle({ kind: 'staged', seqUpTo: 0, logs: ['f'], handoffs: [{ waiter: 8, ends: [['f', 5]] }] }, 1)), ['append']);
  c.handle({ kind: 'flushDone', logs: written(['f'], 5, 0) }, 2);
  const synced = c.handle({ kind: 'syncDone', logs: written(['f'], 5, 3) }, 3);
  t.same(find(synced, 'committed').logs.map((p) => [p.log, p.highWatermark]), [['f', 3]], 'visible up to the synced offset');
  t.same(find(synced, 'handedOff').waiters, [7], 'the first hand-off is answered; the second waits for its sync');
  t.same(find(synced, 'durable').seqUpTo, 0, 'and no local record is unsynced');
  const last = c.handle({ kind: 'syncDone', logs: written(['f'], 5, 5) }, 4);
  t.same(find(last, 'handedOff').waiters, [8]);
  t.same(find(last, 'committed').logs.map((p) => [p.log, p.highWatermark]), [['f', 5]]);
});

t.test('a hand-off written while a sync of local records runs does not hold back their durable report', async (t) => {
  const c = core({ syncIntervalMs: 0 });
  c.handle({ kind: 'replicaAdvanced', appliedIndex: 0 }, 0);
  t.same(kinds(produce(c, 12, ['a'], 0)), ['append']);
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['a'], 3) }, 1)), ['committed', 'sync'], 'the local records sync');
  // Records another node handed over (or fan-out copies that came that way) stage no new local seq.
  t.same(kinds(c.handle({ kind: 'dispatchArrived', dispatch: { metaIndex: 0, lastSeq: 0 } }, 2)), ['stage']);
  t.same(kinds(c.handle({ kind: 'staged', seqUpTo: 12, logs: ['x'], handoffs: [{ waiter: 7, ends: [['x', 2]] }] }, 2)), ['append']);
  t.same(kinds(c.handle({ kind: 'flushDone', logs: written(['x'], 2) }, 3)), ['committed'], 'the hand-off waits for its own sync');
  const synced = c.handle({ kind: 'syncDone', logs: written(['a'], 3, 3) }, 4);
  t.same(kinds(synced), ['durable', 'sync'], 'seq 12 is durable: the hand-off holds no local record');
  t.same(find(synced, 'durable').seqUpTo, 12);
  t.same(find(synced, 'sync').logs, ['x']);
  t.same(kinds(c.handle({ kind: 'syncDone', logs: written(['x'], 2, 2) }, 5)), ['committed', 'handedOff', 'durable']);
});
