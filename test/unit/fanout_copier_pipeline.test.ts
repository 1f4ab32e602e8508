// Goal: the fan-out copier's pipelining (workers/fanout/fanout_copier.ts, issue 30) keeps its own rules: a batch a host may
// refuse (the front route, one in flight) has nothing sent after it, even when the route allows more by the time the
// next batch is read (a child that grew its partitions now maps this parent partition to one of this worker's); and
// retention deleting the records past the batches in flight does not spin the copier in reads of aged-out offsets.
// Method: drive FanoutCopier over a fake host (records in an array, read calls counted, batches recorded) whose
// route the test switches.
import t from 'tap';
import { FanoutCopier, fanoutCursorName, type CopierHost, type CopyRoute } from '../../workers/fanout/fanout_copier.js';
import type { FanoutLink } from '../../src/protocol/metadata_types.js';
import type { SegmentReadResult } from '../../workers/store/segment_store.js';

/** Reads past this many stop answering: a copier that spins would otherwise never yield to the test. */
const readsMax = 200;

function harness(count: number) {
  const log = 'log';
  const link: FanoutLink = { child: 'c', childId: 'cid', epoch: 'e1', attachOffsets: [0] };
  const state = { oldest: 0, route: 'front' as CopyRoute, reads: 0, cursors: new Map<string, number>(), posts: [] as [number, number][] };
  const host: CopierHost<string> = {
    linksOf: () => [link],
    keyOf: () => ({ topicId: 'parent', partition: 0 }),
    logOf: () => log,
    logsOfTopic: () => [log],
    committedOf: () => 0,
    oldestOffset: () => state.oldest,
    read: async (_log, offsets) => {
      if (++state.reads > readsMax) return new Promise<SegmentReadResult[]>(() => {});
      return offsets.map((o): SegmentReadResult => (o < state.oldest ? 'aged_out' : o >= count ? 'past_end'
        : { offset: o, timestampSec: 1, key: null, payload: new Uint8Array([o & 255]), payloadKind: 0, ingressSeq: o + 1, ingressIndex: 0 }));
    },
    cursorOffset: (_log, name) => state.cursors.get(name),
    cursorNames: () => [...state.cursors.keys()],
    cursorSet: (_log, name, offset) => void state.cursors.set(name, offset),
    cursorDrop: (_log, name) => void state.cursors.delete(name),
    copyRoute: () => state.route,
    copy: (batch) => void state.posts.push([batch.fromOffset, batch.records.length]),
    failStop: (what, err) => { throw new Error(`${what}: ${String(err)}`); },
  };
  const copier = new FanoutCopier(host, () => 0);
  copier.opened(log, 0);
  copier.linksChanged(['parent']);
  const answer = (upToOffset: number | null) => copier.copied({ parentTopicId: 'parent', partition: 0, childId: 'cid', epoch: 'e1', upToOffset });
  return { copier, state, log, answer, cursor: () => state.cursors.get(fanoutCursorName('cid', 'e1')) };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test('nothing goes after a batch the front may refuse, even once the route takes several', async (t) => {
  const { copier, state, log, answer, cursor } = harness(100);
  copier.committed(log, 10);
  await settle();
  t.same(state.posts, [[0, 10]], 'one batch to the front');
  // The child grew its partitions: this parent partition's copies now go to a child partition of this worker.
  state.route = 'direct';
  copier.committed(log, 20);
  await settle();
  t.same(state.posts, [[0, 10]], 'no later batch while the front may still refuse the first');
  // What follows if one went: the front refuses [0, 10), the direct batch [10, 20) is stored and answered.
  answer(null);
  if (state.posts.length > 1) answer(20);
  await settle();
  t.ok((cursor() ?? 0) <= 10 || state.posts.filter(([from]) => from === 0).length > 1,
    `the cursor (${cursor()}) passes [0, 10) only once it was sent again`);
  copier.close();
});

t.test('retention past the batches in flight does not spin reads of aged-out offsets', async (t) => {
  const { copier, state, log, answer } = harness(20_000);
  state.route = 'direct';
  copier.committed(log, 20_000);
  for (let i = 0; i < 10 && state.posts.length < 4; i++) await settle();
  t.same(state.posts.map(([from]) => from), [0, 4000, 8000, 12_000], 'four batches in flight');
  const readsBefore = state.reads;
  // Retention deletes everything the batches in flight do not hold, then the first batch is answered.
  state.oldest = 20_000;
  answer(4000);
  await settle();
  t.ok(state.reads - readsBefore < 10, `reads of aged-out offsets while batches are in flight: ${state.reads - readsBefore}`);
  copier.close();
});
