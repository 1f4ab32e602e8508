// Goal: a partition moves to another node under load and nothing acknowledged is lost (issue 41 point 2, NOTES 16):
// POST /v1/cluster/moves answers 202 with the move; while every node produces (keyed, round-robin, pinned to the
// moving partition) and consumes, the move runs to its end: GET /v1/cluster/moves becomes empty and the partition's
// owner is the destination; then every payload answered 202 is consumed at least once, replays of the offsets stored
// before the move answer the same key, timestamp and payload at the new owner, and no client request is answered 421
// (a forwarded request that reached the old owner is retried by the forwarding node). A kill -9 of the destination
// while it copies: the move resumes after its restart and completes, every record readable.
// Method: black box on 3 real node processes on loopback; conditions polled with bounds, never fixed sleeps.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import type { Client, HttpResponse } from '../helpers/http.js';
import { replayPartition } from '../helpers/partition_replay.js';

interface Stats { index: number; owner_node: string; next_offset: number }
interface Stored { key?: string; timestamp: unknown; payload: unknown }

async function ownerOf(client: Client, topic: string, partition: number): Promise<number> {
  const body = (await client.get(`/v1/topics/${topic}`)).json() as { partition_stats: Stats[] };
  return Number(body.partition_stats[partition]!.owner_node);
}

/** Every record of the partition from offset 0, read by replay through client (key, timestamp, payload). */
async function replayAll(client: Client, topic: string, partition: number, limit: number): Promise<Stored[]> {
  return (await replayPartition(client, topic, partition, limit)).map(({ key, timestamp, payload }) => ({ key, timestamp, payload }) as Stored);
}

/** Consumes and acks through every node in turn until each comes back empty twice in a row (bounded). */
async function consumeAll(clients: Client[], topic: string, seen: Set<number>, statuses: number[]): Promise<void> {
  let quiet = 0;
  for (let round = 0; round < 20_000 && quiet < 2 * clients.length; round++) {
    const client = clients[round % clients.length]!;
    const res = await client.get(`/v1/topics/${topic}/consume?max=50&wait=200ms`, { headers: { 'x-svc-client': 'move-test' } });
    statuses.push(res.status);
    if (res.status !== 200) {
      quiet += 1;
      continue;
    }
    quiet = 0;
    const messages = (res.json() as { messages: { payload: { n: number }; receipt_handle: string }[] }).messages;
    for (const message of messages) seen.add(message.payload.n);
    const acked = await client.post(`/v1/topics/${topic}/ack`, { receipt_handles: messages.map((m) => m.receipt_handle) });
    statuses.push(acked.status);
    if (acked.status === 200) for (const result of (acked.json() as { results: { status: number }[] }).results) statuses.push(result.status);
  }
}

/** Replays and pinned consumes of the partition through every node in turn until stop() (each answer's status). */
function readWhile(clients: Client[], topic: string, partition: number): { stop: () => Promise<number[]> } {
  const statuses: number[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running && i < 100_000; i++) {
      const client = clients[i % clients.length]!;
      const query = i % 2 === 0 ? `partition=${partition}&offset=${i % 40}` : `partition=${partition}`;
      const res = await client.get(`/v1/topics/${topic}/consume?${query}`);
      statuses.push(res.status);
      // A lease taken here is given back at once (nack): the drain afterwards consumes it.
      const handle = res.status === 200 ? (res.json() as { receipt_handle?: string }).receipt_handle : undefined;
      if (handle !== undefined) statuses.push((await client.post(`/v1/topics/${topic}/ack?receipt_handle=${encodeURIComponent(handle)}&extend=0`, undefined, { headers: { 'x-svc-client': 'move-test' } })).status);
    }
  })();
  return { stop: async () => {
    running = false;
    await loop;
    return statuses;
  } };
}

/** Produces n messages through the nodes in turn, keyed, round-robin and pinned to partition in turn; returns the
 *  payload numbers answered 202 and every status. */
async function produceSome(clients: Client[], topic: string, partition: number, from: number, n: number): Promise<{ accepted: number[]; statuses: number[] }> {
  const accepted: number[] = [];
  const statuses: number[] = [];
  for (let i = from; i < from + n; i++) {
    const client = clients[i % clients.length]!;
    const mode = i % 3;
    const query = mode === 0 ? `?partition=${partition}` : mode === 1 ? `?key=k-${i % 17}` : '';
    const res: HttpResponse = await client.post(`/v1/topics/${topic}/produce${query}`, { n: i, pad: 'x'.repeat(200) });
    statuses.push(res.status);
    if (res.status === 202) accepted.push(i);
  }
  return { accepted, statuses };
}

async function moveSettled(cluster: TestCluster, via: number, topic: string, partition: number, destination: number, timeoutMs: number): Promise<boolean> {
  return eventually(async () => {
    const moves = (await cluster.client(via).get('/v1/cluster/moves')).json() as { moves: unknown[] };
    return moves.moves.length === 0 && (await ownerOf(cluster.client(via), topic, partition)) === destination;
  }, timeoutMs, 200);
}

t.test('a partition moves under produce and consume through every node; nothing acknowledged is lost', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  const clients = [1, 2, 3].map((id) => cluster.client(id));
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'mv', partitions: 3 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/mv', 10_000));
  const partition = 0;
  const source = await ownerOf(clients[0]!, 'mv', partition);
  const destination = [1, 2, 3].find((id) => id !== source)!;
  const before = await produceSome(clients, 'mv', partition, 0, 150);
  t.same(before.statuses.filter((s) => s !== 202), [], 'every produce before the move answered 202');
  t.ok(await eventually(async () => (await replayAll(clients[0]!, 'mv', partition, 1000)).length >= 50, 10_000), 'the pinned records are stored');
  const storedBefore = await replayAll(clients[0]!, 'mv', partition, 1000);

  const started = await clients[1]!.post('/v1/cluster/moves', { topic: 'mv', partition, destination: String(destination) });
  t.equal(started.status, 202, started.text);
  t.match(started.json(), { topic: 'mv', partition, source: String(source), destination: String(destination), worker_state: 'copying', attempts: 0 });
  t.equal((await clients[2]!.post('/v1/cluster/moves', { topic: 'mv', partition, destination: String(destination) })).status, 409, 'moving already');

  // Load while the move runs: produce through every node, consume through every node.
  const seen = new Set<number>();
  const consumeStatuses: number[] = [];
  const during = produceSome(clients, 'mv', partition, 150, 300);
  const consuming = consumeAll(clients, 'mv', seen, consumeStatuses);
  const reading = readWhile(clients, 'mv', partition);
  t.ok(await moveSettled(cluster, 1, 'mv', partition, destination, 60_000), 'the move ended with the destination owning the partition');
  const produced = await during;
  await consuming;
  const readStatuses = await reading.stop();
  // A nack of a lease the flip dropped may answer 410 (lease gone); nothing may answer 421.
  t.same(readStatuses.filter((s) => s !== 200 && s !== 204 && s !== 410), [], `${readStatuses.length} replays, pinned consumes and nacks of the moving partition answered 200, 204 or 410 (none 421)`);
  t.same(produced.statuses.filter((s) => s !== 202), [], 'every produce during the move answered 202');
  for (const via of [1, 2, 3]) t.equal(await ownerOf(cluster.client(via), 'mv', partition), destination, `node ${via} names the new owner`);

  const accepted = [...before.accepted, ...produced.accepted];
  // Records re-sent to the new owner and leases the flip dropped may come a moment later: drain until all came, bounded.
  await eventually(async () => {
    await consumeAll(clients, 'mv', seen, consumeStatuses);
    return accepted.every((n) => seen.has(n));
  }, 30_000, 100);
  const missing = accepted.filter((n) => !seen.has(n));
  t.same(missing, [], `every one of the ${accepted.length} payloads answered 202 was consumed at least once`);
  t.equal(consumeStatuses.filter((s) => s === 421).length, 0, 'no consume, ack or acked handle was answered 421');
  for (const via of [1, 2, 3]) {
    const after = await replayAll(cluster.client(via), 'mv', partition, storedBefore.length);
    t.same(after, storedBefore, `node ${via}: the offsets stored before the move replay the same at the new owner`);
  }
});

t.test('kill -9 of the destination while it copies: the move resumes after its restart and completes', async (t) => {
  // A slow copy, so the kill lands while it runs.
  const { cluster, leader } = await TestCluster.started(t, 3, ['--set', 'cluster.move_bytes_per_second=64KiB']);
  const clients = [1, 2, 3].map((id) => cluster.client(id));
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'mk', partitions: 3 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/mk', 10_000));
  const partition = 1;
  const source = await ownerOf(clients[0]!, 'mk', partition);
  const destination = [1, 2, 3].find((id) => id !== source)!;
  const via = [1, 2, 3].find((id) => id !== destination)!;
  // About 1 MiB in the moving partition: some 16 s at 64 KiB/s.
  for (let b = 0; b < 16; b++) {
    const messages = Array.from({ length: 16 }, (_, i) => ({ partition, payload: { n: b * 16 + i, pad: 'y'.repeat(4000) } }));
    const res = await cluster.client(source).post('/v1/topics/mk/produce/batch', { messages });
    t.equal(res.status, 202, res.text);
  }
  t.ok(await eventually(async () => (await replayAll(clients[0]!, 'mk', partition, 1000)).length === 256, 15_000), '256 records stored');
  const storedBefore = await replayAll(cluster.client(source), 'mk', partition, 1000);
  t.equal((await cluster.client(via).post('/v1/cluster/moves', { topic: 'mk', partition, destination })).status, 202);
  const copying = await eventually(async () => {
    const moves = (await cluster.client(via).get('/v1/cluster/moves')).json() as { moves: { worker_state: string; bytes_fetched: number }[] };
    return moves.moves.some((m) => m.worker_state === 'copying' && m.bytes_fetched > 0);
  }, 20_000, 50);
  t.ok(copying, 'the destination reports copying with bytes fetched');
  await cluster.kill(destination);
  t.equal(await ownerOf(cluster.client(via), 'mk', partition), source, 'the source still owns the partition');
  await cluster.start(destination);
  t.ok(await moveSettled(cluster, via, 'mk', partition, destination, 90_000), 'the move completed after the restart');
  for (const id of [1, 2, 3]) {
    const after = await replayAll(cluster.client(id), 'mk', partition, 1000);
    t.same(after, storedBefore, `node ${id}: every record replays the same at the new owner`);
  }
});

t.test('a node whose metadata lags asks the old owner after the flip, and retries at the new one', async (t) => {
  const cluster = await TestCluster.create(t, 3, [], { linkProxy: true });
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  t.ok(leader !== undefined && (await cluster.allReady(30_000)), 'the cluster is up');
  await cluster.settled();
  t.equal((await cluster.client(leader!).post('/v1/topics', { name: 'ml', partitions: 3 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/ml', 10_000));
  const partition = 2;
  const source = await ownerOf(cluster.client(1), 'ml', partition);
  const destination = [1, 2, 3].find((id) => id !== source)!;
  const lagging = [1, 2, 3].find((id) => id !== source && id !== destination)!;
  for (let i = 0; i < 20; i++) t.equal((await cluster.client(source).post(`/v1/topics/ml/produce?partition=${partition}`, { n: i })).status, 202);
  t.ok(await eventually(async () => (await replayAll(cluster.client(lagging), 'ml', partition, 100)).length === 20, 10_000));
  // Every byte to and from the lagging node waits: it learns of the flip well after the old owner gave the partition up.
  cluster.links!.delay(lagging, 400);
  const reading = readWhile([cluster.client(lagging)], 'ml', partition);
  t.equal((await cluster.client(source).post('/v1/cluster/moves', { topic: 'ml', partition, destination })).status, 202);
  t.ok(await moveSettled(cluster, source, 'ml', partition, destination, 60_000), 'the move ended');
  t.ok(await eventually(async () => (await ownerOf(cluster.client(lagging), 'ml', partition)) === destination, 10_000));
  const statuses = await reading.stop();
  cluster.links!.heal(lagging);
  t.ok(statuses.length > 0);
  t.same(statuses.filter((s) => s !== 200 && s !== 204 && s !== 410), [], `${statuses.length} reads through the lagging node: none answered 421`);
});
