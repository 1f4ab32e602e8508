// Goal: the file store (PartitionLog) passes the shared segment store suite (segment_store.suite.ts).
// Method: each store in a partition directory under a fresh temp dir; a restart closes and opens the directory, a
// crash copies the directory while the store is open (what a killed process leaves: the page cache holds every
// written record) and opens the copy.
import t, { type Test } from 'tap';
import { cp } from 'node:fs/promises';
import { PartitionLog } from '../../workers/store/segment_log.js';
import type { SegmentStore } from '../../workers/store/segment_store.js';
import { partitionTempDir } from '../helpers/segment_log_fixtures.js';
import { segmentStoreSuite } from './segment_store.suite.js';

async function opened(t: Test, dir: string, segmentBytesMax: number): Promise<PartitionLog> {
  const store = await PartitionLog.open({ dir, segmentBytesMax });
  t.teardown(() => store.close());
  return store;
}

segmentStoreSuite(t, {
  create: async (t: Test, segmentBytesMax: number) => opened(t, await partitionTempDir(t, 'segment-store-file'), segmentBytesMax),
  createAt: async (t: Test, segmentBytesMax: number, startOffset: number) => {
    const store = PartitionLog.createEmpty({ dir: await partitionTempDir(t, 'segment-store-file'), segmentBytesMax, startOffset });
    t.teardown(() => store.close());
    await store.startMarkWrite();
    return store;
  },
  restart: async (t: Test, store: SegmentStore) => {
    await store.close();
    return opened(t, store.dir, store.segmentBytesMax);
  },
  crash: async (t: Test, store: SegmentStore) => {
    const copy = `${store.dir}.crashed`;
    await cp(store.dir, copy, { recursive: true });
    return opened(t, copy, store.segmentBytesMax);
  },
});
