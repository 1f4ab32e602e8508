// Goal: consume without a partition through any node leases from every owner (issue 29 point 4): every message
// produced round-robin over a 3-node topic is consumed exactly once through one node and acked through another;
// a long poll on a node wakes when a partition neither it nor the producing node owns commits a message, and when a
// nack on another node makes a message deliverable again.
// Method: black box on 3 real node processes on loopback; no timed assertions (the long polls have 10 s waits that
// must end with a message, not by their deadline).
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';

const consumer = { 'x-svc-client': 'spread-tests' };

interface Message { payload: { i?: number; late?: boolean }; receipt_handle: string; partition: number }

t.test('consume without partition leases from every owner; long polls wake on any owner', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'cs', partitions: 6 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/cs', 10_000));
  const owners = await cluster.ownersOf(leader, 'cs');
  for (let i = 0; i < 30; i++) t.equal((await cluster.client(1).post('/v1/topics/cs/produce', { i })).status, 202);
  t.ok(await eventually(async () => {
    const body = (await cluster.client(2).get('/v1/topics/cs')).json() as { partition_stats: { next_offset: number }[] };
    return body.partition_stats.reduce((sum, p) => sum + p.next_offset, 0) === 30;
  }, 10_000), 'all 30 stored at their owners');

  const seen: number[] = [];
  const partitionsSeen = new Set<number>();
  for (let round = 0; round < 20 && seen.length < 30; round++) {
    const res = await cluster.client(2).get('/v1/topics/cs/consume?max=10', { headers: consumer });
    if (res.status === 204) continue;
    t.equal(res.status, 200, res.text);
    const { messages } = res.json() as { messages: Message[] };
    for (const m of messages) {
      seen.push(m.payload.i!);
      partitionsSeen.add(m.partition);
    }
    const acked = await cluster.client(3).post('/v1/topics/cs/ack', { receipt_handles: messages.map((m) => m.receipt_handle) }, { headers: consumer });
    t.same((acked.json() as { results: { status: number }[] }).results.map((r) => r.status), messages.map(() => 204), 'acked through node 3');
  }
  t.same([...seen].sort((a, b) => a - b), Array.from({ length: 30 }, (_, i) => i), 'each of the 30 consumed once through node 2');
  t.same([...partitionsSeen].sort(), [0, 1, 2, 3, 4, 5], 'from every partition, local and remote');
  t.equal((await cluster.client(2).get('/v1/topics/cs/consume', { headers: consumer })).status, 204, 'nothing left');

  const far = owners.findIndex((owner) => owner === 2);
  const polled = cluster.client(1).get('/v1/topics/cs/consume?wait=10s', { headers: consumer });
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.equal((await cluster.client(3).post(`/v1/topics/cs/produce?partition=${far}`, { late: true })).status, 202);
  const woke = await polled;
  t.equal(woke.status, 200, 'the long poll on node 1 woke with a commit on node 2, produced through node 3');
  const late = woke.json() as Message;
  t.same(late.payload, { late: true });

  const waiting = cluster.client(3).get('/v1/topics/cs/consume?wait=10s', { headers: consumer });
  await new Promise((resolve) => setTimeout(resolve, 500));
  const nacked = await cluster.client(2).post(`/v1/topics/cs/ack?extend=0&receipt_handle=${encodeURIComponent(late.receipt_handle)}`, undefined, { headers: consumer });
  t.equal(nacked.status, 204, 'nack through node 2');
  const again = await waiting;
  t.equal(again.status, 200, 'the long poll on node 3 woke with the nacked message');
  t.same((again.json() as Message).payload, { late: true });
});
