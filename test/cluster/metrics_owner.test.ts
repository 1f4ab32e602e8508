// Goal: on a cluster the message counters count each message once, at its partition's owner (issue 29 point 8):
// svc_messages_produced_total on the owner, svc_messages_consumed_total
// on the owner also when the consume came through another node, never on the forwarding node; and svc_topic_bytes
// (spec §4 metrics; bytes per topic on each node) adds up over the nodes to what get-topic reports as size_bytes.
// Method: black box on 3 real node processes on loopback, scraping each node's /metrics.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';

interface Topic { partition_stats: { owner_node: string; size_bytes: number; high_watermark: number }[] }

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

t.test('produced and consumed count once, at the owner; svc_topic_bytes adds up over the nodes', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.ok(await cluster.membersAlive(leader));
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'mo', partitions: 3 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/mo', 10_000));
  const owners = ((await cluster.client(leader).get('/v1/topics/mo')).json() as Topic).partition_stats.map((p) => Number(p.owner_node));
  t.same([...new Set(owners)].sort(), [1, 2, 3], 'one partition per node');
  for (let p = 0; p < 3; p++) {
    for (let i = 0; i <= p; i++) {
      t.equal((await cluster.client(owners[p]!).post(`/v1/topics/mo/produce?partition=${p}`, { p, i })).status, 202);
    }
  }
  const committed = await eventually(async () => {
    const topic = (await cluster.client(leader).get('/v1/topics/mo')).json() as Topic;
    return topic.partition_stats.map((p) => p.high_watermark).join() === '1,2,3';
  }, 20_000);
  t.ok(committed, 'every message committed at its owner');

  // Partition 2's messages leased through a node that does not own it.
  const via = [1, 2, 3].find((id) => id !== owners[2])!;
  for (let i = 0; i < 3; i++) {
    const res = await cluster.client(via).get('/v1/topics/mo/consume?partition=2', { headers: { 'x-svc-client': 'mo' } });
    t.equal(res.status, 200, `consume ${i} of partition 2 through node ${via}`);
  }

  const scrapes = new Map<number, string>();
  for (const id of [1, 2, 3]) scrapes.set(id, (await cluster.client(id).get('/metrics')).text);
  for (let p = 0; p < 3; p++) {
    for (const id of [1, 2, 3]) {
      const produced = sample(scrapes.get(id)!, 'svc_messages_produced_total', `topic="mo",partition="${p}"`);
      t.equal(produced, id === owners[p] ? p + 1 : undefined, `node ${id}: produced of partition ${p} ${id === owners[p] ? 'counted' : 'not counted'}`);
    }
  }
  for (const id of [1, 2, 3]) {
    const consumed = sample(scrapes.get(id)!, 'svc_messages_consumed_total', 'topic="mo",partition="2"');
    t.equal(consumed, id === owners[2] ? 3 : undefined, `node ${id}: consumed of partition 2 ${id === owners[2] ? 'counted at the owner' : 'not counted'}`);
  }

  const total = ((await cluster.client(leader).get('/v1/topics/mo')).json() as Topic).partition_stats.reduce((sum, p) => sum + p.size_bytes, 0);
  const perNode = [1, 2, 3].map((id) => sample(scrapes.get(id)!, 'svc_topic_bytes', 'topic="mo"') ?? NaN);
  t.ok(perNode.every((bytes) => bytes > 0), `every node holds bytes of the topic (${perNode.join(', ')})`);
  t.equal(perNode.reduce((a, b) => a + b, 0), total, 'svc_topic_bytes over the nodes adds up to the size_bytes get-topic reports');
});
