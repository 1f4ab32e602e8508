// Goal: the memory store (MemorySegmentStore) passes the shared segment store suite (segment_store.suite.ts), and
// its crash model loses exactly what the file store may lose: staged and written-but-unsynced records of the active
// segment, never a sealed segment.
// Method: stores in memory only; a restart is close then reopen(), a crash is crash().
import t, { type Test } from 'tap';
import { MemorySegmentStore } from '../../workers/store/memory_segment_store.js';
import type { SegmentStore } from '../../workers/store/segment_store.js';
import { partitionRecord, segmentBytesSmall } from '../helpers/segment_log_fixtures.js';
import { segmentStoreSuite } from './segment_store.suite.js';

function created(t: Test, segmentBytesMax: number, startOffset = 0): MemorySegmentStore {
  const store = MemorySegmentStore.createEmpty({ dir: 'memory/topics/0123456789abcdef/0', segmentBytesMax, startOffset });
  t.teardown(() => store.close());
  return store;
}

function asMemory(store: SegmentStore): MemorySegmentStore {
  if (!(store instanceof MemorySegmentStore)) throw new Error('not a memory store');
  return store;
}

t.test('the shared suite', async (t) => {
  segmentStoreSuite(t, {
    create: async (t: Test, segmentBytesMax: number) => created(t, segmentBytesMax),
    createAt: async (t: Test, segmentBytesMax: number, startOffset: number) => created(t, segmentBytesMax, startOffset),
    restart: async (_t: Test, store: SegmentStore) => {
      await store.close();
      return asMemory(store).reopen();
    },
    crash: async (_t: Test, store: SegmentStore) => asMemory(store).crash(),
  });
});

t.test('a crash drops staged and unsynced records of the active segment and keeps sealed segments', async (t) => {
  const store = created(t, segmentBytesSmall);
  for (let i = 0; i < 3; i++) store.stage(partitionRecord(i));
  await store.flush();
  t.equal(store.offsets.syncedHighWatermark, 0, 'the roll synced segment 0, but no sync ran');
  const first = store.crash();
  t.equal(first.offsets.highWatermark, 2, 'sealed segment 0 kept whole, active segment 2 lost its unsynced record');
  t.same(first.stats().segments, 2, 'the active segment is kept, empty, as its file would be');
  t.same(first.offsets.lastIngress, { seq: 101, index: 0 });
  t.equal(first.stage(partitionRecord(2)), 2);
  await first.flush();
  await first.sync();
  first.stage(partitionRecord(3));
  const second = first.crash();
  t.equal(second.offsets.highWatermark, 3, 'a synced record survives, a staged one does not');
  t.throws(() => first.stage(partitionRecord(4)), /closed/, 'the crashed instance takes nothing more');
});

t.test('operations in flight at a crash never complete', async (t) => {
  const store = created(t, segmentBytesSmall);
  store.stage(partitionRecord(0));
  let settled = false;
  void store.flush().finally(() => (settled = true));
  const after = store.crash();
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(settled, 'the flush of the dead process never settles');
  t.equal(after.offsets.highWatermark, 0);
  t.equal(after.read(0) instanceof Promise, true);
  t.equal(await after.read(0), 'past_end');
});
