// Goal: what a node already answered 202 for, for a partition whose owner is then down, is committed to a live
// partition of the same topic instead unless it was pinned (spec §1.6, issue 41 point 5): records produced without a
// partition (round-robin, by key, and the unpinned ones of a batch) become consumable through the live nodes while
// the owner is stopped, svc_ingress_rerouted_records_total counts them, pinned ones answer 503 meanwhile and those
// accepted before that are stored in their own partition once the owner runs again; and a kill -9 of the origin while
// it reroutes loses nothing (at least once: every 202'd payload is read back).
// Method: black box on 3 real node processes on loopback; the owner is stopped with SIGSTOP (it keeps its
// connections, so only the liveness view and failing hand-offs tell), the origin killed with SIGKILL; messages are
// read back by replay (consume with partition and offset) until 204.
import t, { type Test } from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import type { Client } from '../helpers/http.js';
import { partitionPayloads } from '../helpers/partition_replay.js';

/** Every payload of the partition, in offset order, read by replay through client. */
function payloadsOf(client: Client, topic: string, partition: number, limit = 5000): Promise<unknown[]> {
  return partitionPayloads(client, topic, partition, limit);
}

/** The payloads (as JSON text) of the given partitions, read through client. */
async function seenIn(client: Client, topic: string, partitions: readonly number[]): Promise<Set<string>> {
  const seen = new Set<string>();
  for (const p of partitions) for (const payload of await payloadsOf(client, topic, p)) seen.add(JSON.stringify(payload));
  return seen;
}

function missing(expected: readonly unknown[], seen: Set<string>): unknown[] {
  return expected.filter((payload) => !seen.has(JSON.stringify(payload)));
}

/** The message of the origin's info line per reroute batch. */
const rerouteLine = 'rerouted to live partitions';

interface BatchLine { owner: number; records: number; upToSeq: number }

function batchesIn(output: string): BatchLine[] {
  return output.split('\n').filter((line) => line.includes(rerouteLine)).map((line) => JSON.parse(line) as BatchLine);
}

function reroutedOf(metrics: { text: string }): number {
  return Number(/^svc_ingress_rerouted_records_total (\d+)/m.exec(metrics.text)?.[1]);
}

/** A 3-node cluster, the topic, and the two followers: the owner to stop and the origin that takes the produces. */
async function setUp(t: Test, topic: string, partitions: number) {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.equal((await cluster.client(leader).post('/v1/topics', { name: topic, partitions })).status, 201);
  t.ok(await cluster.visibleOnAll(`/v1/topics/${topic}`, 10_000));
  const owners = await cluster.ownersOf(leader, topic);
  const [victim, origin] = [1, 2, 3].filter((id) => id !== leader) as [number, number];
  const victimParts = owners.flatMap((owner, p) => (owner === victim ? [p] : []));
  const liveParts = owners.flatMap((owner, p) => (owner === victim ? [] : [p]));
  t.ok(victimParts.length > 0 && liveParts.length > 0, `node ${victim} owns partitions ${victimParts.join(',')}`);
  const stopped = cluster.nodes.get(victim)!.process;
  let running = true;
  const resume = () => {
    if (!running) stopped.kill('SIGCONT');
    running = true;
  };
  t.teardown(resume);
  const stop = () => {
    stopped.kill('SIGSTOP');
    running = false;
  };
  return { cluster, leader, victim, origin, victimParts, liveParts, all: owners.map((_, p) => p), stop, resume };
}

t.test('records accepted for a stopped owner are committed to live partitions; pinned ones wait for it', async (t) => {
  const { cluster, leader, origin, victimParts, liveParts, all, stop, resume } = await setUp(t, 'rr', 6);
  const client = cluster.client(origin);
  stop();
  // Accepted right after the stop, before anything marks the owner down: a third of them are for its partitions.
  const unpinned: unknown[] = [];
  for (let i = 0; i < 24; i++) {
    t.equal((await client.post('/v1/topics/rr/produce', { u: i })).status, 202, `round-robin ${i}`);
    unpinned.push({ u: i });
  }
  for (let k = 0; k < 12; k++) {
    t.equal((await client.post(`/v1/topics/rr/produce?key=k${k}`, { k })).status, 202, `key k${k}`);
    unpinned.push({ k });
  }
  const pinned: unknown[] = [];
  const messages = [
    ...Array.from({ length: 6 }, (_, b) => ({ payload: { b } })),
    { partition: victimParts[0], payload: { bp: 0 } },
  ];
  const batch = await client.post('/v1/topics/rr/produce/batch', { messages });
  t.equal(batch.status, 202, batch.text);
  unpinned.push(...messages.slice(0, 6).map((m) => m.payload));
  pinned.push({ bp: 0 });
  // Pinned produces of its partition are accepted until the owner is known down, then refused.
  let n = 0;
  const refused = await eventually(async () => {
    const res = await client.post(`/v1/topics/rr/produce?partition=${victimParts[0]}`, { p: n });
    if (res.status === 202) pinned.push({ p: n++ });
    return res.status === 503 && res.headers['retry-after'] !== undefined;
  }, 30_000, 200);
  t.ok(refused, 'a pinned produce of the stopped owner\'s partition: 503 with Retry-After');
  t.ok(pinned.length >= 2, `pinned messages accepted before that (${pinned.length})`);
  const reader = cluster.client(leader);
  const arrived = await eventually(async () => missing(unpinned, await seenIn(reader, 'rr', liveParts)).length === 0, 60_000, 500);
  t.ok(arrived, 'every unpinned 202 is consumable from the live partitions while the owner is stopped');
  if (!arrived) t.comment(`missing: ${JSON.stringify(missing(unpinned, await seenIn(reader, 'rr', liveParts)))}`);
  t.ok(reroutedOf(await client.get('/metrics')) > 0, 'svc_ingress_rerouted_records_total counts them at the origin');
  t.equal((await client.post(`/v1/topics/rr/produce?partition=${victimParts[0]}`, { late: true })).status, 503, 'still 503');
  resume();
  const inOwn = await eventually(async () => missing(pinned, await seenIn(reader, 'rr', [victimParts[0]!])).length === 0, 60_000, 500);
  t.ok(inOwn, `the ${pinned.length} pinned messages are stored in their partition once its owner runs`);
  t.same(missing([...unpinned, ...pinned], await seenIn(reader, 'rr', all)), [], 'every 202 read back at least once');
});

t.test('the origin killed (kill -9) while it reroutes: every accepted record still arrives', async (t) => {
  const { cluster, victim, origin, liveParts, all, stop, resume } = await setUp(t, 'rk', 6);
  const client = cluster.client(origin);
  stop();
  // About 12 MiB accepted before the owner is known down, so the reroute takes several bounded batches.
  const pad = 'x'.repeat(10_000);
  const expected: unknown[] = [];
  for (let b = 0; b < 12; b++) {
    const messages = Array.from({ length: 100 }, (_, i) => ({ payload: { b, i, pad } }));
    const res = await client.post('/v1/topics/rk/produce/batch', { messages });
    t.equal(res.status, 202, `batch ${b}`);
    expected.push(...messages.map((m) => m.payload));
  }
  // The running process's reroute lines (a restart starts a new output).
  const batches = () => batchesIn(cluster.nodes.get(origin)!.output());
  t.ok(await eventually(async () => batches().length > 0, 60_000, 5), 'the origin logs a reroute batch');
  await cluster.kill(origin);
  const before = batchesIn(cluster.output(origin));
  await cluster.start(origin);
  const reader = cluster.client(origin);
  const arrived = await eventually(async () => missing(expected, await seenIn(reader, 'rk', liveParts)).length === 0, 90_000, 1000);
  t.ok(arrived, `all ${expected.length} 202'd records consumable from live partitions after the restart`);
  const after = batches();
  const upTo = (list: BatchLine[]) => Math.max(0, ...list.map((b) => b.upToSeq));
  t.comment(`rerouted ${before.reduce((n, b) => n + b.records, 0)} records in ${before.length} batch(es) before the kill, ` +
    `${after.reduce((n, b) => n + b.records, 0)} in ${after.length} after the restart`);
  t.ok(upTo(before) < upTo(after), 'the kill landed mid-reroute: the restart rerouted records past the last batch before it');
  // Just restarted, the node's own liveness view calls every other member dead until the leader's arrives.
  t.same([...before, ...after].filter((b) => b.owner !== victim), [], 'only records owed to the stopped owner moved');
  resume();
  t.ok(await eventually(async () => missing(expected, await seenIn(reader, 'rk', all)).length === 0, 60_000, 1000),
    'and with the owner back, every one at least once');
});
