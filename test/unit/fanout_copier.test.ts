// Goal: the fan-out copier (workers/fanout/fanout_copier.ts, issue 30) starts a cursor at the attach offset, hands committed
// records past it and moves the cursor only on the front's answer; skips records retention deleted and counts them
// dropped; holds a delay child's copies until commit + delay (never early); drops the cursor of a detached link; and
// its coarsened commit times are never earlier than the real ones.
// Method: drive FanoutCopier over a fake host (records in an array, batches and cursor calls recorded) with a
// hand-moved clock; the delay case waits for the copier's own timer (100 ms).
import t from 'tap';
import { commitsCoarsened, FanoutCopier, fanoutCursorName, type CopierHost } from '../../workers/fanout/fanout_copier.js';
import type { FanoutLink } from '../../src/protocol/metadata_types.js';
import type { SegmentReadResult } from '../../workers/store/segment_store.js';

interface Copy { fromOffset: number; count: number }

function harness(links: FanoutLink[], count: number, clock: { ms: number }) {
  const log = 'log';
  const state = { oldest: 0, links, cursors: new Map<string, number>(), posts: [] as Copy[], drops: [] as string[], reads: [] as number[][] };
  const host: CopierHost<string> = {
    linksOf: () => state.links,
    keyOf: () => ({ topicId: 'parent', partition: 0 }),
    logOf: () => log,
    logsOfTopic: () => [log],
    committedOf: () => 0,
    oldestOffset: () => state.oldest,
    read: async (_log, offsets) => (state.reads.push(offsets), offsets).map((o): SegmentReadResult => (o < state.oldest ? 'aged_out' : o >= count ? 'past_end'
      : { offset: o, timestampSec: 1, key: null, payload: new Uint8Array([o]), payloadKind: 0, ingressSeq: o + 1, ingressIndex: 0 })),
    cursorOffset: (_log, name) => state.cursors.get(name),
    cursorNames: () => [...state.cursors.keys()],
    cursorSet: (_log, name, offset) => void state.cursors.set(name, offset),
    cursorDrop: (_log, name) => {
      state.cursors.delete(name);
      state.drops.push(name);
    },
    copyRoute: () => 'front',
    copy: (batch) => void state.posts.push({ fromOffset: batch.fromOffset, count: batch.records.length }),
    failStop: (what, err) => { throw new Error(`${what}: ${String(err)}`); },
  };
  const copier = new FanoutCopier(host, () => clock.ms);
  return { copier, state, log };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));
const waitMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Waits until probe() holds, up to 10 s: the copier's timers run on real time, which a busy machine stretches, so
 *  what must happen is awaited, not given a fixed while. (What must not happen is still looked at after a while.) */
async function until(probe: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; !probe() && Date.now() < deadline;) await waitMs(10);
}

/** A copier with one 100 ms delay child attached at offset 0 over count records, its clock at 1,000 ms; the copier's
 *  own timers run on real time. */
function delayHarness(count: number) {
  const clock = { ms: 1_000 };
  const link: FanoutLink = { child: 'd', childId: 'did', epoch: 'e1', attachOffsets: [0], delayMs: 100 };
  const h = harness([link], count, clock);
  h.copier.opened(h.log, 0);
  h.copier.linksChanged(['parent']);
  return { ...h, clock };
}

t.test('copies from the attach offset; the cursor moves on the answer only', async (t) => {
  const link: FanoutLink = { child: 'c', childId: 'cid', epoch: 'e1', attachOffsets: [2] };
  const { copier, state, log } = harness([link], 10, { ms: 0 });
  copier.opened(log, 0);
  copier.linksChanged(['parent']);
  copier.committed(log, 10);
  await settle();
  t.equal(state.posts.length, 1, 'one batch in flight');
  t.same([state.posts[0]!.fromOffset, state.posts[0]!.count], [2, 8]);
  t.equal(state.cursors.get(fanoutCursorName('cid', 'e1')), undefined, 'no cursor move before the answer');
  copier.copied({ parentTopicId: 'parent', partition: 0, childId: 'cid', epoch: 'e1', upToOffset: 10 });
  t.equal(state.cursors.get(fanoutCursorName('cid', 'e1')), 10);
  t.same(copier.counters(), [{ parentTopicId: 'parent', partition: 0, childId: 'cid', lag: 0, dropped: 0, copied: 8 }]);
  state.links = [];
  copier.linksChanged(['parent']);
  t.same(state.drops, [fanoutCursorName('cid', 'e1')], 'detach drops the cursor');
  t.equal(copier.cursorsOf(log), undefined);
});

t.test('records retention deleted before they were copied are skipped and counted', async (t) => {
  const link: FanoutLink = { child: 'c', childId: 'cid', epoch: 'e1', attachOffsets: [0] };
  const { copier, state, log } = harness([link], 8, { ms: 0 });
  state.oldest = 5;
  copier.opened(log, 0);
  copier.linksChanged(['parent']);
  copier.committed(log, 8);
  await settle();
  t.same([state.posts[0]!.fromOffset, state.posts[0]!.count], [5, 3]);
  t.same(copier.counters()[0]!.dropped, 5);
});

t.test('a delay child gets nothing before commit + delay', async (t) => {
  const { copier, state, log, clock } = delayHarness(3);
  copier.committed(log, 3);
  await settle();
  t.equal(state.posts.length, 0, 'not due at commit');
  clock.ms = 1_099;
  await waitMs(150);
  t.equal(state.posts.length, 0, 'not due 1 ms before');
  clock.ms = 1_100;
  await until(() => state.posts.length > 0);
  t.same(state.posts.map((p) => [p.fromOffset, p.count]), [[0, 3]], 'due at commit + delay');
  copier.close();
});

t.test('a delay child reads only the records already due', async (t) => {
  const { copier, state, log, clock } = delayHarness(6);
  copier.committed(log, 3);
  clock.ms = 1_050;
  copier.committed(log, 6);
  await settle();
  t.same(state.reads, [], 'nothing read before the head is due');
  clock.ms = 1_100;
  await until(() => state.posts.length > 0);
  t.same(state.reads, [[0, 1, 2]], 'the first commit only');
  t.same(state.posts.map((p) => [p.fromOffset, p.count]), [[0, 3]]);
  copier.copied({ parentTopicId: 'parent', partition: 0, childId: 'did', epoch: 'e1', upToOffset: 3 });
  clock.ms = 1_150;
  await until(() => state.posts.length > 1);
  t.same(state.reads, [[0, 1, 2], [3, 4, 5]], 'then the second');
  t.same(state.posts.map((p) => [p.fromOffset, p.count]), [[0, 3], [3, 3]]);
  copier.close();
});

t.test('commit times never go back with the clock, so a copy is late rather than early', async (t) => {
  const { copier, state, log, clock } = delayHarness(6);
  copier.committed(log, 3);
  clock.ms = 950;
  copier.committed(log, 6);
  clock.ms = 1_060;
  await waitMs(100);
  t.same(state.posts, [], 'not due 100 ms after the stepped-back time');
  clock.ms = 1_100;
  await until(() => state.posts.length > 0);
  t.same(state.posts.map((p) => [p.fromOffset, p.count]), [[0, 6]], 'both due from the later time');
  copier.close();
});

t.test('under a steady load a commit range closes after its span, so its records come due', async (t) => {
  const { copier, state, log, clock } = delayHarness(11);
  for (let offset = 1; offset <= 11; offset++) {
    copier.committed(log, offset);
    clock.ms += 5;
  }
  clock.ms = 1_106;
  await until(() => state.posts.length > 0);
  t.same(state.posts.map((p) => [p.fromOffset, p.count]), [[0, 2]], 'the first range: commits at 1,000 and 1,005 ms');
  copier.close();
});

t.test('coarsened commit times are never earlier than the real ones', async (t) => {
  let end = 0;
  let at = 0;
  const commits = Array.from({ length: 101 }, () => ({ end: (end += 1 + (end % 3)), atMs: (at += 1 + (at % 7)) }));
  const merged = commitsCoarsened(commits);
  t.ok(merged.length <= Math.ceil(commits.length / 2));
  const timeOf = (list: { end: number; atMs: number }[], offset: number) => list.find((c) => c.end > offset)?.atMs;
  const early = Array.from({ length: end }, (_, o) => o).filter((o) => timeOf(merged, o)! < timeOf(commits, o)!);
  t.same(early, [], 'no offset due earlier');
  t.equal(merged[merged.length - 1]!.end, end, 'the last range still ends at the last commit');
});
