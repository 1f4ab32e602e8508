// Goal: each named fault point (append, sync, roll, truncate) makes its segment store operation fail as the fs call
// would (an Error with an errno code), only while a test arms it, and leaves the store where the failed call leaves
// the real one: nothing becomes visible or synced that was not written or synced.
// Method: a file store in a temp dir (and the memory store for the points it shares), a point armed around one
// operation; every test disarms all points at its end.
import t, { type Test } from 'tap';
import { appendFile, cp, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { faultPointArm, faultPointsArmed, faultPointsDisarm } from '../../workers/store/fault_points.js';
import { MemorySegmentStore } from '../../workers/store/memory_segment_store.js';
import { PartitionLog } from '../../workers/store/segment_log.js';
import type { SegmentStore } from '../../workers/store/segment_store.js';
import { partitionRecord, partitionTempDir, segmentBytesSmall } from '../helpers/segment_log_fixtures.js';

t.afterEach(() => faultPointsDisarm());

async function fileStore(t: Test): Promise<PartitionLog> {
  const store = await PartitionLog.open({ dir: await partitionTempDir(t, 'fault-points'), segmentBytesMax: segmentBytesSmall });
  t.teardown(() => store.close().catch(() => {}));
  return store;
}

function memoryStore(): MemorySegmentStore {
  return MemorySegmentStore.createEmpty({ dir: 'memory/fault-points/0', segmentBytesMax: segmentBytesSmall });
}

const eio = { code: 'EIO', errno: -5 };

t.test('disarmed, the points cost one flag and fail nothing', async (t) => {
  t.equal(faultPointsArmed, false);
  faultPointArm('sync');
  t.equal(faultPointsArmed, true, 'the live binding follows arming');
  faultPointsDisarm('sync');
  t.equal(faultPointsArmed, false);
  const store = await fileStore(t);
  store.stage(partitionRecord(0));
  await store.flush();
  await store.sync();
  t.equal(store.offsets.syncedHighWatermark, 1);
});

for (const [name, make] of [['file', fileStore], ['memory', async () => memoryStore()]] as const) {
  t.test(`${name}: an armed append fails the flush and nothing becomes visible`, async (t) => {
    const store: SegmentStore = await make(t);
    store.stage(partitionRecord(0));
    faultPointArm('append');
    await t.rejects(store.flush(), eio);
    t.equal(store.offsets.highWatermark, 0, 'the failed write moved no high watermark');
    t.equal(await store.read(0), 'past_end');
  });

  t.test(`${name}: an armed sync fails and syncs nothing; the next sync covers it`, async (t) => {
    const store: SegmentStore = await make(t);
    store.stage(partitionRecord(0));
    await store.flush();
    faultPointArm('sync', { times: 1 });
    await t.rejects(store.sync(), eio);
    t.equal(store.offsets.syncedHighWatermark, 0);
    t.ok(store.offsets.unsynced);
    t.equal(faultPointsArmed, false, 'times: 1 disarms itself after its failure');
    await store.sync();
    t.equal(store.offsets.syncedHighWatermark, 1);
  });

  t.test(`${name}: an armed roll fails the flush that needs one, after the records that fit`, async (t) => {
    const store: SegmentStore = await make(t);
    for (let i = 0; i < 3; i++) store.stage(partitionRecord(i));
    faultPointArm('roll');
    await t.rejects(store.flush(), eio);
    t.equal(store.stats().segments, 1, 'no second segment');
    t.ok(store.offsets.highWatermark <= 2, 'the third record, which needed the roll, is not visible');
  });
}

t.test('skip lets hits pass before the point fails', async (t) => {
  const store = await fileStore(t);
  faultPointArm('sync', { skip: 1, times: 1, code: 'ENOSPC' });
  store.stage(partitionRecord(0));
  await store.flush();
  await store.sync();
  store.stage(partitionRecord(1));
  await store.flush();
  await t.rejects(store.sync(), { code: 'ENOSPC', errno: -28 });
  t.equal(store.offsets.syncedHighWatermark, 1);
});

t.test('a failed append leaves the directory a restart recovers, and the replay stores the records again', async (t) => {
  const store = await fileStore(t);
  store.stage(partitionRecord(0));
  await store.flush();
  store.stage(partitionRecord(1));
  faultPointArm('append');
  await t.rejects(store.flush(), eio);
  faultPointsDisarm();
  // The worker fail-stops here: its directory is what a restart finds.
  const copy = `${store.dir}.restarted`;
  await cp(store.dir, copy, { recursive: true });
  const reopened = await PartitionLog.open({ dir: copy, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => reopened.close());
  t.equal(reopened.offsets.highWatermark, 1);
  t.equal(reopened.stage(partitionRecord(1)), 1);
  await reopened.flush();
  const got = await reopened.read(1);
  t.equal(typeof got === 'object' ? got.ingressSeq : got, 101);
});

t.test('an armed truncate fails the recovery of a torn tail; disarmed, the same directory opens', async (t) => {
  const store = await fileStore(t);
  store.stage(partitionRecord(0));
  await store.flush();
  await store.close();
  const active = (await readdir(store.dir)).find((name) => name.endsWith('.log'))!;
  await appendFile(join(store.dir, active), new Uint8Array([9, 0, 0, 0, 1, 2]));
  faultPointArm('truncate');
  await t.rejects(PartitionLog.open({ dir: store.dir, segmentBytesMax: segmentBytesSmall }), eio);
  faultPointsDisarm();
  const reopened = await PartitionLog.open({ dir: store.dir, segmentBytesMax: segmentBytesSmall });
  t.teardown(() => reopened.close());
  t.equal(reopened.offsets.highWatermark, 1, 'the torn frame is cut, the whole one kept');
});
