// Goal: a partition's one cursor log serves both writers, the read path's ack state (cursor "ack") and the write
// core's named cursors: a restart hands each writer its own part, both writers' updates survive a reopen, and a
// deleted topic's logs are closed (no later write lands).
// Method: real partition directories under a temp dir; PartitionCursorLogs over stand-in stores that carry only the
// directory (all it reads of a SegmentStore).
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ackCursorName } from '../../workers/store/cursor_log.js';
import { PartitionCursorLogs } from '../../workers/store/partition_cursor_logs.js';
import type { SegmentStore } from '../../workers/store/segment_store.js';

async function partitionAt(t: Test): Promise<SegmentStore> {
  const root = await mkdtemp(join(tmpdir(), 'cursor-logs-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  return { dir: join(root, 'topics', '0123456789abcdef', '0') } as unknown as SegmentStore;
}

t.test('ack state and named cursors share the log and come back apart', async (t) => {
  const log = await partitionAt(t);
  const first = new PartitionCursorLogs<SegmentStore>();
  const acks = (await first.restore(log)).acks;
  t.equal(acks.state, null, 'a new partition has no ack state');
  // Both writers at the same moment, as a read path's background ack flush and a core persist can be.
  await Promise.all([
    acks.log.write({ frontier: 7, acked: [9] }),
    first.persist(log, [{ name: 'fanout:child-a', offset: 5 }, { name: 'remote:eu', offset: 3 }]),
  ]);
  await first.persist(log, [{ name: 'fanout:child-a', offset: 6 }, { name: 'remote:eu', offset: 3 }]);
  await first.closeAll();

  const second = new PartitionCursorLogs<SegmentStore>();
  const restored = await second.restore(log);
  t.same(restored.acks.state, { frontier: 7, acked: [9] }, 'the read path gets the ack state');
  t.same(restored.cursors, [{ name: 'fanout:child-a', offset: 6 }, { name: 'remote:eu', offset: 3 }], 'the core gets its cursors, last write winning');
  t.notOk(restored.cursors.some((c) => c.name === ackCursorName), 'the ack state is not one of the core cursors');
  t.equal(await second.of(log), await second.of(log), 'one log per partition');
  await second.closeAll();
});

t.test('a partition first used after start opens its log on demand; a closed one takes no write', async (t) => {
  const log = await partitionAt(t);
  const logs = new PartitionCursorLogs<SegmentStore>();
  await logs.persist(log, [{ name: 'move', offset: 2 }]);
  const opened = await logs.of(log);
  await logs.close([log]);
  await t.rejects(opened.write([['move', { offset: 3, state: null }]]), /closed/);
  const again = new PartitionCursorLogs<SegmentStore>();
  t.same((await again.restore(log)).cursors, [{ name: 'move', offset: 2 }]);
  await again.closeAll();
});
