// Goal: requests for a partition another node owns are forwarded to its owner (issue 29 points 4, 5): through any
// node, a replay of every partition answers its record, get-topic answers every partition's real statistics with no
// placeholder and no `partial`, a consume pinned to a partition owned elsewhere leases its message, an ack of that
// lease through a third node answers 204 (and the message is not delivered again), a batch ack of handles of several
// owners answers each 204 in request order and settles them on their owners (each owner's consumer lag reads 0),
// and a long poll pinned to a partition owned elsewhere wakes when the owner commits a message, not at its
// deadline; with the owner killed, the forwarded requests answer 503 with Retry-After, and get-topic answers 200
// with the owner's partitions as placeholders and `partial: true`; an owner stopped (holding its connections,
// answering nothing) makes a forwarded request answer 502 in plain text.
// Method: black box on 3 real node processes on loopback; produce goes to each partition's owner (produce
// forwarding is the next step of issue 29), everything else through the other nodes. The long poll waits 30 s
// (http.max_consume_wait raised) and must answer within half of that, a margin no loaded machine eats.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { consumerLag } from '../helpers/metric_sample.js';

interface Stats { index: number; owner_node: string; status: string; next_offset: number }

const consumer = { 'x-svc-client': 'fwd-tests' };
const waitMs = 30_000;

t.test('forwarded replay, stats, consume, ack, batch ack and long poll; 503 with the owner dead', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3, ['--set', `http.max_consume_wait=${waitMs / 1000}s`]);
  t.ok(await cluster.membersAlive(leader));
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'fwd', partitions: 6 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/fwd', 10_000));
  const owners = await cluster.ownersOf(leader, 'fwd');
  const other = (p: number, skip: number[] = []): number => [1, 2, 3].find((id) => id !== owners[p] && !skip.includes(id))!;

  for (let p = 0; p < 6; p++) {
    const res = await cluster.client(owners[p]!).post(`/v1/topics/fwd/produce?partition=${p}`, { p });
    t.equal(res.status, 202, `produce to partition ${p} at its owner ${owners[p]}`);
  }
  for (let p = 0; p < 6; p++) {
    const via = other(p);
    const replay = await eventually(async () => (await cluster.client(via).get(`/v1/topics/fwd/consume?partition=${p}&offset=0`)).status === 200, 5_000);
    t.ok(replay, `replay of partition ${p} through node ${via}`);
  }
  for (const id of [1, 2, 3]) {
    const body = (await cluster.client(id).get('/v1/topics/fwd')).json() as { partition_stats: Stats[]; partial?: boolean };
    t.notOk(body.partial, `node ${id}: not partial`);
    t.same(body.partition_stats.map((s) => [s.status, s.next_offset]), Array(6).fill(['ok', 1]), `node ${id}: every partition's own statistics`);
  }

  const p0 = 0;
  const consumeVia = other(p0);
  const ackVia = other(p0, [consumeVia]) ?? consumeVia;
  const consumed = await cluster.client(consumeVia).get(`/v1/topics/fwd/consume?partition=${p0}`, { headers: consumer });
  t.equal(consumed.status, 200, consumed.text);
  const message = consumed.json() as { payload: unknown; receipt_handle: string };
  t.same(message.payload, { p: 0 });
  const ackPath = `/v1/topics/fwd/ack?receipt_handle=${encodeURIComponent(message.receipt_handle)}`;
  const acked = await cluster.client(ackVia).post(ackPath, undefined, { headers: consumer });
  t.equal(acked.status, 204, `ack through node ${ackVia}`);
  t.equal((await cluster.client(consumeVia).post(ackPath, undefined, { headers: consumer })).status, 410, 'acked on the owner: the lease is gone');

  const handles: string[] = [];
  for (const p of [1, 2, 3, 4]) {
    const res = await cluster.client(other(p)).get(`/v1/topics/fwd/consume?partition=${p}`, { headers: consumer });
    handles.push((res.json() as { receipt_handle: string }).receipt_handle);
  }
  const batch = await cluster.client(leader).post('/v1/topics/fwd/ack', { receipt_handles: handles }, { headers: consumer });
  t.equal(batch.status, 200, batch.text);
  t.same(batch.json(), { results: [{ status: 204 }, { status: 204 }, { status: 204 }, { status: 204 }] });
  // Answered is not settled: the owners of partitions 0 to 4 hold every message of theirs acked.
  const settled = await eventually(async () => {
    const lag = consumerLag(await Promise.all([1, 2, 3].map(async (id) => (await cluster.client(id).get('/metrics')).text)), 'fwd');
    return [0, 1, 2, 3, 4].every((p) => lag.get(p) === 0);
  }, 10_000);
  t.ok(settled, 'the owners of partitions 0 to 4 count their messages acked (svc_consumer_lag_messages 0)');

  const p5 = 5;
  const waiting = cluster.client(other(p5)).get(`/v1/topics/fwd/consume?partition=${p5}&offset=1`);
  t.equal((await waiting).status, 204, 'replay past the end: 204');
  const polled = cluster.client(other(p5)).get(`/v1/topics/fwd/consume?partition=${p5}&wait=8s`, { headers: consumer });
  const first = (await polled).json() as { payload: unknown };
  t.same(first.payload, { p: 5 }, 'the stored message first');
  const pollStartMs = Date.now();
  const longPoll = cluster.client(other(p5)).get(`/v1/topics/fwd/consume?partition=${p5}&wait=30s`, { headers: consumer, timeoutMs: waitMs + 15_000 });
  // A moment to park on the owner; a poll not parked yet finds the message at once (shows less, still passes).
  await new Promise((resolve) => setTimeout(resolve, 500));
  t.equal((await cluster.client(owners[p5]!).post(`/v1/topics/fwd/produce?partition=${p5}`, { late: true })).status, 202);
  const woke = await longPoll;
  const wokeMs = Date.now() - pollStartMs;
  t.equal(woke.status, 200, 'the long poll on a non-owner woke with the owner\'s commit');
  t.ok(wokeMs < waitMs / 2, `it answered when the message came (${wokeMs} ms), not at its ${waitMs / 1000} s deadline`);
  t.same((woke.json() as { payload: unknown }).payload, { late: true });

  const victim = owners[p0]!;
  const survivor = [1, 2, 3].find((id) => id !== victim)!;
  // An owner that holds its connections but answers nothing (stopped, not dead): 502 in plain text after the
  // forwarding timeout, since the request may have been applied.
  const owner = cluster.nodes.get(victim)!.process;
  owner.kill('SIGSTOP');
  try {
    const silent = await cluster.client(survivor).get(`/v1/topics/fwd/consume?partition=${p0}&offset=0`);
    t.equal(silent.status, 502, 'a replay forwarded to a silent owner: 502');
    t.match(String(silent.headers['content-type']), /^text\/plain/, 'in plain text');
  } finally {
    owner.kill('SIGCONT');
  }
  await cluster.kill(victim);
  const down = await cluster.client(survivor).get(`/v1/topics/fwd/consume?partition=${p0}&offset=0`);
  t.equal(down.status, 503, 'a replay of a dead owner\'s partition: 503');
  t.ok(down.headers['retry-after'] !== undefined, 'with Retry-After');
  const partial = (await cluster.client(survivor).get('/v1/topics/fwd')).json() as { partition_stats: Stats[]; partial?: boolean };
  t.equal(partial.partial, true, 'get-topic: partial');
  t.same(partial.partition_stats.filter((s) => s.status === 'owner_unavailable').map((s) => s.index),
    owners.flatMap((o, p) => (o === victim ? [p] : [])), 'placeholders exactly for the dead owner\'s partitions');
});
