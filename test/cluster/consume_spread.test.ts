// Goal: consume without a partition through any node leases from every owner (issue 29 point 4): every message
// produced round-robin over a 3-node topic is consumed exactly once through one node and acked through another (and
// the acks reach the owners: every partition's consumer lag reads 0 there); a long poll on a node wakes when a
// partition neither it nor the producing node owns commits a message, and when a nack on another node makes a
// message deliverable again.
// Method: black box on 3 real node processes on loopback. The long polls wait 30 s (http.max_consume_wait raised)
// and must answer with the message within half of that: a poll that wakes only at its deadline fails, with a
// margin no loaded machine eats. Each poll gets a moment to park before the message arrives; a poll that has not
// parked yet only finds the message at once (the test then shows less, and still passes).
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { consumerLag } from '../helpers/metric_sample.js';

const consumer = { 'x-svc-client': 'spread-tests' };
const waitMs = 30_000;
/** A long poll's request options: the client waits past the poll's deadline, so a late answer is seen as late. */
const longPoll = { headers: consumer, timeoutMs: waitMs + 15_000 };

interface Message { payload: { i?: number; late?: boolean }; receipt_handle: string; partition: number }

/** A long poll's answer and how long it took from the request. */
async function timed<T>(request: Promise<T>): Promise<{ answer: T; tookMs: number }> {
  const startMs = Date.now();
  const answer = await request;
  return { answer, tookMs: Date.now() - startMs };
}

t.test('consume without partition leases from every owner; long polls wake on any owner', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3, ['--set', `http.max_consume_wait=${waitMs / 1000}s`]);
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
  // The acks through node 3 settled the messages on their owners, not only answered 204 there.
  const settled = await eventually(async () => {
    const lag = consumerLag(await Promise.all([1, 2, 3].map(async (id) => (await cluster.client(id).get('/metrics')).text)), 'cs');
    return lag.size === 6 && [...lag.values()].every((n) => n === 0);
  }, 10_000);
  t.ok(settled, 'every partition\'s owner counts its messages acked (svc_consumer_lag_messages 0)');

  const far = owners.findIndex((owner) => owner === 2);
  const polled = timed(cluster.client(1).get('/v1/topics/cs/consume?wait=30s', longPoll));
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.equal((await cluster.client(3).post(`/v1/topics/cs/produce?partition=${far}`, { late: true })).status, 202);
  const { answer: woke, tookMs: wokeMs } = await polled;
  t.equal(woke.status, 200, 'the long poll on node 1 woke with a commit on node 2, produced through node 3');
  t.ok(wokeMs < waitMs / 2, `it answered when the message came (${wokeMs} ms), not at its ${waitMs / 1000} s deadline`);
  const late = woke.json() as Message;
  t.same(late.payload, { late: true });

  const waiting = timed(cluster.client(3).get('/v1/topics/cs/consume?wait=30s', longPoll));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const nacked = await cluster.client(2).post(`/v1/topics/cs/ack?extend=0&receipt_handle=${encodeURIComponent(late.receipt_handle)}`, undefined, { headers: consumer });
  t.equal(nacked.status, 204, 'nack through node 2');
  const { answer: again, tookMs: againMs } = await waiting;
  t.equal(again.status, 200, 'the long poll on node 3 woke with the nacked message');
  t.ok(againMs < waitMs / 2, `it answered when the nack came (${againMs} ms), not at its ${waitMs / 1000} s deadline`);
  t.same((again.json() as Message).payload, { late: true });
});
