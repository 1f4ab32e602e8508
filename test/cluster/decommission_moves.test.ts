// Goal: a decommission moves a member's partitions off it while the cluster serves (issue 41 "Shown by"; spec §3 Node
// liveness and decommission): under produce (pinned, keyed and round-robin) and consume load through every node, the
// member drains, owns nothing, the moves list empties and forget answers 204; every payload answered 202 is consumed
// at least once. The same for the Raft leader, which also hands its leadership away. A fourth node that joins gets
// existing partitions only through a rebalance, which ends with 3 of 12 partitions per node.
// Method: black box on real node processes on loopback (test/helpers/cluster.ts); every wait is a bounded poll.
import t, { type Test } from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import type { Client } from '../helpers/http.js';
import { partitionPayloads } from '../helpers/partition_replay.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Load {
  stopping: boolean;
  acked: Set<string>;
  consumed: Set<string>;
  statuses: Record<string, number>;
}

async function produceLoop(client: Client, topic: string, via: number, load: Load): Promise<void> {
  for (let i = 0; i < 100_000 && !load.stopping; i++) {
    const id = `${via}-${i}`;
    const query = i % 3 === 0 ? `?partition=${i % 6}` : i % 3 === 1 ? `?key=k${i % 17}` : '';
    const res = await client.post(`/v1/topics/${topic}/produce${query}`, { id }, { timeoutMs: 10_000 }).catch(() => undefined);
    const status = res?.status ?? 0;
    if (status === 202) load.acked.add(id);
    else load.statuses[`produce@${via}:${status}`] = (load.statuses[`produce@${via}:${status}`] ?? 0) + 1;
    await sleep(status === 202 ? 5 : 50);
  }
}

/** Consumes without a partition and acks until stopping; then until nothing is left, or for 20 s more at most (the
 *  final drain reads the rest). */
async function consumeLoop(client: Client, topic: string, load: Load): Promise<void> {
  let stoppedAt = 0;
  for (let round = 0; round < 100_000; round++) {
    if (load.stopping && stoppedAt === 0) stoppedAt = Date.now();
    if (stoppedAt !== 0 && Date.now() - stoppedAt > 20_000) return;
    const res = await client.get(`/v1/topics/${topic}/consume?max=50&wait=1s`, { headers: { 'x-svc-client': 'decommission-test' }, timeoutMs: 15_000 }).catch(() => undefined);
    if (res?.status === 204 && load.stopping) return;
    if (res?.status !== 200) {
      if (res?.status !== 204) load.statuses[`consume:${res?.status ?? 0}`] = (load.statuses[`consume:${res?.status ?? 0}`] ?? 0) + 1;
      await sleep(50);
      continue;
    }
    const messages = (res.json() as { messages: { payload: { id: string }; receipt_handle: string }[] }).messages;
    for (const message of messages) load.consumed.add(message.payload.id);
    await client.post(`/v1/topics/${topic}/ack`, { receipt_handles: messages.map((m) => m.receipt_handle) }, { timeoutMs: 15_000 }).catch(() => undefined);
  }
}

async function drained(cluster: TestCluster, via: number, id: number, timeoutMs: number): Promise<boolean> {
  return eventually(async () => {
    const member = await cluster.member(via, id);
    const moves = await cluster.client(via).get('/v1/cluster/moves');
    return member?.partitions_owned === 0 && moves.status === 200 && (moves.json() as { moves: unknown[] }).moves.length === 0;
  }, timeoutMs, 250);
}

async function decommissionUnderLoad(t: Test, leaderToo: boolean): Promise<void> {
  const { cluster, leader } = await TestCluster.started(t, 4);
  const target = leaderToo ? leader : cluster.follower(leader);
  const topic = leaderToo ? 'dm-leader' : 'dm-member';
  t.equal((await cluster.client(leader).post('/v1/topics', { name: topic, partitions: 6 })).status, 201);
  t.ok(await cluster.visibleOnAll(`/v1/topics/${topic}`));
  const load: Load = { stopping: false, acked: new Set(), consumed: new Set(), statuses: {} };
  const loops = cluster.running().flatMap((via) => [produceLoop(cluster.client(via), topic, via, load), consumeLoop(cluster.client(via), topic, load)]);
  await eventually(async () => load.acked.size >= 200, 20_000);
  const observer = cluster.running().find((id) => id !== target)!;
  const started = await cluster.client(observer).post(`/v1/cluster/members/${target}/decommission`, {}, { timeoutMs: 20_000 });
  t.equal(started.status, 202, started.text);
  t.ok(await drained(cluster, observer, target, 120_000), `node ${target} owns nothing and no move runs`);
  if (leaderToo) {
    t.ok(await eventually(async () => {
      const leaderNow = await cluster.leaderSeenBy(observer);
      return leaderNow !== undefined && leaderNow !== target;
    }, 30_000), 'the leadership went to another node');
  }
  load.stopping = true;
  await Promise.all(loops);
  t.ok(await eventually(async () => (await cluster.client(observer).post(`/v1/cluster/members/${target}/forget`, {}, { timeoutMs: 20_000 })).status === 204, 30_000),
    'forget answers 204');
  const drainer = cluster.client(observer);
  await eventually(async () => {
    await consumeLoop(drainer, topic, { ...load, stopping: true });
    return [...load.acked].every((id) => load.consumed.has(id));
  }, 60_000, 500);
  const missing = [...load.acked].filter((id) => !load.consumed.has(id));
  t.same(missing.slice(0, 20), [], `every 202 consumed at least once (${load.acked.size} acked, ${missing.length} missing)`);
  const unexpected = Object.keys(load.statuses).filter((key) => !key.endsWith(':503'));
  t.same(unexpected, [], `produce refused only with 503 (draining), consume never ${JSON.stringify(load.statuses)}`);
}

t.test('decommission of a member under load', async (t) => decommissionUnderLoad(t, false));
t.test('decommission of the leader under load', async (t) => decommissionUnderLoad(t, true));

t.test('a joining node gets partitions only through a rebalance: 12 partitions end 3 per node', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'dm-rebalance', partitions: 12 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/dm-rebalance'));
  for (let i = 0; i < 120; i++) t.equal((await cluster.client(leader).post('/v1/topics/dm-rebalance/produce', { i })).status, 202);
  await cluster.join(4, leader);
  t.ok(await eventually(async () => (await cluster.member(leader, 4))?.liveness === 'alive' && (await cluster.member(leader, 4))?.raft_voter === true, 30_000), 'node 4 joined');
  t.notOk((await cluster.ownersOf(leader, 'dm-rebalance')).includes(4), 'joining moves nothing');
  const dry = await cluster.client(leader).post('/v1/cluster/rebalance', { dry_run: true });
  t.equal(dry.status, 200, dry.text);
  t.equal((dry.json() as { moves: unknown[] }).moves.length, 3, 'the plan moves 3 partitions');
  t.notOk((await cluster.ownersOf(leader, 'dm-rebalance')).includes(4), 'a dry run moves nothing');
  const res = await cluster.client(leader).post('/v1/cluster/rebalance', {});
  t.equal(res.status, 202, res.text);
  t.ok(await eventually(async () => {
    const owners = await cluster.ownersOf(leader, 'dm-rebalance');
    return [1, 2, 3, 4].every((id) => owners.filter((o) => o === id).length === 3);
  }, 120_000, 250), 'every node owns 3 of the 12 partitions');
  const seen = new Set<number>();
  for (let p = 0; p < 12; p++) {
    for (const payload of await partitionPayloads(cluster.client(4), 'dm-rebalance', p, 100)) seen.add((payload as { i: number }).i);
  }
  t.equal(seen.size, 120, 'every record is still there, at its offset, after the moves');
});
