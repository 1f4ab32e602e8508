// Goal: a partition's records are visible before their own fdatasync (docs/decisions.md "Partition logs: written,
// then synced in the background"), so a power loss may take an unsynced tail of a partition log: after the restart
// every offset a consumer could read must name the same message as before (spec 1.2, 1.4), with nothing lost or stored
// twice, because the node hands the ingress log's frames over again. Method: a real node with
// storage.partition_sync_interval 1m, its bound (no partition sync during the test, which takes seconds), batch produces enough to roll the ingress
// log (test_min: 256 KiB segments) so that a 'durable' report sent too early would let it delete frames the
// partitions have not synced, every offset read back by replay, SIGKILL, then each partition's .log cut to the first half of its frames with zeros after (what a power loss
// that kept only that prefix leaves; sealed segments were synced by their roll), a restart on the same data dir and the same reads again.
import t from 'tap';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { NodeWithClient, createTopic, nextOffsets, readAllUntil, topicNamer, topicPath } from '../helpers/replay.js';
import { produceBatch, waitReady } from '../helpers/consume.js';

const nextTopic = topicNamer('losttail');
const partitions = 3;
const batches = 2;
const batchSize = 1000;
const total = batches * batchSize;
const pad = 'x'.repeat(100);

/** Frame ends of a .log: [u32 length][u32 crc][body] frames until the data ends or a length of 0 (zero tail). */
function frameEnds(bytes: Buffer): number[] {
  const ends: number[] = [];
  let at = 0;
  while (at + 8 <= bytes.length && bytes.readUInt32LE(at) > 0) {
    at += 8 + bytes.readUInt32LE(at);
    ends.push(at);
  }
  return ends;
}

t.test('an unsynced partition tail lost at a crash is stored again at the same offsets', async (t) => {
  const started = await NodeWithClient.start(t, { env: { SVC_STORAGE_PARTITION_SYNC_INTERVAL: '1m' } });
  let { client } = started;
  const topic = nextTopic();
  await createTopic(client, topic, partitions);
  for (let b = 0; b < batches; b++) {
    await produceBatch(client, topic, Array.from({ length: batchSize }, (_, i) => ({ payload: { id: `m${b * batchSize + i}`, pad } })));
  }
  // Another topic's produces roll the ingress log past every frame of this one: those frames now lie in sealed
  // segments, which the node deletes once every partition reports them durable.
  const other = nextTopic();
  await createTopic(client, other, partitions);
  for (let b = 0; b < 3; b++) {
    await produceBatch(client, other, Array.from({ length: batchSize }, (_, i) => ({ payload: { other: i, pad } })));
  }
  const before = await readAllUntil(client, topic, partitions, total, 10_000);
  const idsBefore = before.map((records) => records.map((r) => (r.payload as { id: string }).id));
  t.equal(idsBefore.flat().length, total, 'every message readable before the crash');
  const offsetsBefore = await nextOffsets(client, topic);
  const topicId = (JSON.parse((await client.req(topicPath(topic))).text) as { id: string }).id;

  await started.node.kill();
  const walSegments = (await readdir(join(started.node.dataDir, 'ingress'))).filter((name) => name.endsWith('.wal'));
  t.ok(walSegments.length > 1, `the ingress log rolled (${walSegments.length} segments) and kept every one`);
  const topicsDir = join(started.node.dataDir, 'topics');
  let cutFrames = 0;
  for (let partition = 0; partition < partitions; partition++) {
    // Only the active (last) segment can hold unsynced records: a roll syncs the segment it seals.
    const dir = join(topicsDir, topicId, String(partition));
    const active = (await readdir(dir)).filter((name) => name.endsWith('.log')).sort().at(-1)!;
    const segment = join(dir, active);
    const bytes = await readFile(segment);
    const ends = frameEnds(bytes);
    const kept = Math.floor(ends.length / 2);
    cutFrames += ends.length - kept;
    bytes.fill(0, kept === 0 ? 0 : ends[kept - 1]);
    await writeFile(segment, bytes);
  }
  t.ok(cutFrames > 0, `the loss took ${cutFrames} of ${total} records`);

  ({ client } = await started.restart());
  t.ok(await waitReady(client), 'ready after the restart');
  const after = await readAllUntil(client, topic, partitions, total, 10_000);
  const idsAfter = after.map((records) => records.map((r) => (r.payload as { id: string }).id));
  t.same(idsAfter, idsBefore, 'every offset names the message it named before the crash');
  t.same(await nextOffsets(client, topic), offsetsBefore, 'nothing stored twice');
});
