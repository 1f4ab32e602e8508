// Goal: issue 30 point 4, "a dead child owner delays only that child" (spec §1.9 copies, §1.6 a dead owner's
// partition, §2 children listing): on 3 nodes, with the node owning one of child A's partitions killed, produce into
// the parent keeps answering 202, child B (all on live nodes) gets every message once and reaches lag 0, A's partition
// on a live node gets its copies too, A's partition on the dead node answers 503; after the restart A holds every
// parent message exactly once, each in the partition of its parent partition's index. On the way: a replica child
// (created under the parent) is placed off the parent's nodes.
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts). Plain topics placed by creation
// order (placement: the member owning the fewest partitions, lowest id first), then A and B attached through the
// children route, so the parent owner's ingress log holds copies for the dead node and for live ones side by side.
// Messages are produced pinned through each parent partition's owner; children are read by replay through live
// nodes and compared by the ids the payloads carry. Every wait is a bounded poll.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { childrenOf, readAll, waitTotal } from '../helpers/fanout.js';
import { pollUntil, type Client, type HttpResponse } from '../helpers/http.js';

/** The ids (payload field id) a topic's partition holds, by replay of every offset below its high watermark. */
async function idsOf(api: Client, topic: string, partition: number): Promise<number[]> {
  const stats = (await api.get(`/v1/topics/${topic}?partition=${partition}`)).json().partition_stats[0];
  const ids: number[] = [];
  for (let offset = stats.oldest_offset as number; offset < (stats.high_watermark as number); offset++) {
    const res = await api.get(`/v1/topics/${topic}/consume?partition=${partition}&offset=${offset}`);
    if (res.status !== 200) throw new Error(`replay ${topic}/${partition}/${offset}: ${res.status} ${res.text}`);
    ids.push((res.json().payload as { id: number }).id);
  }
  return ids.sort((a, b) => a - b);
}

/** Waits until partition `partition` of topic shows a high watermark of at least n through api; the last seen. */
async function waitPartition(api: Client, topic: string, partition: number, n: number, timeoutMs: number): Promise<number> {
  let seen = -1;
  await pollUntil(async () => {
    const res = await api.get(`/v1/topics/${topic}?partition=${partition}`);
    seen = res.status === 200 ? (res.json().partition_stats[0].high_watermark ?? -1) : -1;
    return seen >= n ? true : undefined;
  }, timeoutMs, 100);
  return seen;
}

const sorted = (ids: number[]): number[] => [...ids].sort((a, b) => a - b);

t.test('a dead child owner delays only that child, which gets every copy once after its restart', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.ok(await cluster.membersAlive(leader), '3 alive members');
  const admin = cluster.client(leader);
  const expect = async (res: Promise<HttpResponse>, status: number, what: string): Promise<void> => {
    const answer = await res;
    t.equal(answer.status, status, answer.status === status ? `${what} answers ${status}` : `${what}: ${answer.text.slice(0, 200)}`);
  };
  // Placement puts each partition on the member owning the fewest, lowest id first, so from equal counts a topic of
  // 3 or more partitions spreads over every node. Deleting dt leaves du's [3,1,2,3] behind: node 3 one ahead, so dp
  // lands on [1,2,1]; da on [2,3,1]; dz, created as dp's child (placed off dp's nodes: [3,3,3]) and detached at once,
  // loads node 3 so that db lands on [2,1,2]. Node 3 then owns da's partition 1 and nothing of dp or db.
  await expect(admin.post('/v1/topics', { name: 'dt', partitions: 5 }), 201, 'create dt');
  await expect(admin.post('/v1/topics', { name: 'du', partitions: 4 }), 201, 'create du');
  await expect(admin.delete('/v1/topics/dt'), 204, 'delete dt');
  for (const name of ['dp', 'da']) await expect(admin.post('/v1/topics', { name, partitions: 3 }), 201, `create ${name}`);
  await expect(admin.post('/v1/topics', { name: 'dz', partitions: 3, parent: 'dp' }), 201, 'create dz under dp');
  await expect(admin.delete('/v1/topics/dp/children/dz'), 204, 'detach dz');
  await expect(admin.post('/v1/topics', { name: 'db', partitions: 3 }), 201, 'create db');
  for (const child of ['da', 'db']) await expect(admin.post('/v1/topics/dp/children', { child }), 200, `attach ${child}`);
  t.ok(await cluster.visibleOnAll('/v1/topics/db', 10_000), 'on every node');
  const parentOwners = await cluster.ownersOf(leader, 'dp');
  // Spec §1.9 replica child: dz, created under dp, holds no partition on a node of dp's while node 3 holds none of dp.
  const zOwners = await cluster.ownersOf(leader, 'dz');
  if (!parentOwners.includes(3)) t.ok(zOwners.every((o) => !parentOwners.includes(o)), `replica child dz on ${zOwners.join(',')}, off dp's nodes`);
  else t.fail(`dp was placed on node 3 (${parentOwners.join(',')}): the steering above no longer holds`);
  const aOwners = await cluster.ownersOf(leader, 'da');
  const bOwners = await cluster.ownersOf(leader, 'db');
  t.comment(`owners: dp ${parentOwners.join(',')}; da ${aOwners.join(',')}; db ${bOwners.join(',')}`);
  const victim = aOwners.find((o) => !parentOwners.includes(o) && !bOwners.includes(o));
  if (victim === undefined) return t.fail('placement gave a node that owns part of da and nothing of dp or db');
  const api = cluster.client(parentOwners[0]!);
  t.ok(aOwners.some((o) => o !== victim), 'da also has a partition on a live node');

  // Parent partition p copies into partition p of each child (3 partitions each). sent[p]: the ids produced into p.
  const sent: number[][] = [[], [], []];
  let id = 0;
  const produce = async (count: number, what: string): Promise<void> => {
    let accepted = 0;
    for (let i = 0; i < count; i++, id++) {
      const p = id % 3;
      const res = await cluster.client(parentOwners[p]!).post(`/v1/topics/dp/produce?partition=${p}&key=k${id % 5}`, { id });
      if (res.status === 202) accepted++;
      else t.fail(`${what}: produce ${id} answered ${res.status} ${res.text}`);
      sent[p]!.push(id);
    }
    t.equal(accepted, count, `${what}: ${count} produces answered 202`);
  };
  const all = (): number[] => sorted(sent.flat());

  await produce(12, 'all up');
  t.equal(await waitTotal(api, 'da', id, 20_000), id, 'all up: da holds the first copies');

  await cluster.kill(victim);
  t.comment(`killed node ${victim}`);
  // Copies made before the members list marks the node dead and after: both wait for it.
  await produce(15, `node ${victim} just killed`);
  const live = parentOwners[0]!;
  t.ok(await eventually(async () => (await cluster.member(live, victim))?.liveness === 'dead', 15_000), `node ${live} lists node ${victim} dead`);
  await produce(30, `node ${victim} marked dead`);
  t.equal(await waitTotal(api, 'db', id, 20_000), id, `node ${victim} down: db holds ${id}`);
  t.same(sorted((await readAll(api, 'db')).map((m) => (m.payload as { id: number }).id)), all(), 'db holds every parent message once');
  const listed = await pollUntil(async () => {
    const children = await childrenOf(api, 'dp');
    return children.find((c) => c.name === 'db' && c.lag_messages === 0) === undefined ? undefined : children;
  }, 20_000, 100);
  t.ok(listed !== undefined, `node ${victim} down: db lists lag_messages 0`);
  // Spec §2: lag_complete is false only when a parent partition's owner did not report its cursor; every owner of dp
  // is alive.
  t.ok(listed?.every((c) => c.lag_complete), 'every child lists lag_complete true (the owners of dp all answer)');
  // da's lag is not asserted: a copy counts as copied once synced into the parent owner's ingress log (hcopy's
  // decision), so da lists 0 too while its copies for the dead node wait there; the 503 below shows they wait.
  t.comment(`children while node ${victim} is down: ${JSON.stringify(listed)}`);

  for (let p = 0; p < 3; p++) {
    if (aOwners[p] === victim) {
      const res = await api.get(`/v1/topics/da/consume?partition=${p}&offset=0`);
      t.equal(res.status, 503, `da partition ${p} on the dead node ${victim} answers 503 (spec §1.6)`);
      continue;
    }
    t.equal(await waitPartition(api, 'da', p, sent[p]!.length, 20_000), sent[p]!.length, `da partition ${p} (node ${aOwners[p]}) holds its copies`);
    t.same(await idsOf(api, 'da', p), sorted(sent[p]!), `da partition ${p} holds each message of dp partition ${p} once`);
  }

  await cluster.start(victim);
  t.ok(await cluster.readyzBecomes(victim, 200, 20_000), `node ${victim} ready again`);
  t.equal(await waitTotal(api, 'da', id, 30_000), id, `after the restart: da holds ${id}`);
  for (let p = 0; p < 3; p++) {
    t.same(await idsOf(api, 'da', p), sorted(sent[p]!), `after the restart: da partition ${p} holds each message of dp partition ${p} once`);
  }
  t.same(sorted((await readAll(api, 'dp')).map((m) => (m.payload as { id: number }).id)), all(), 'dp holds each id once');
  t.same(sorted((await readAll(api, 'db')).map((m) => (m.payload as { id: number }).id)), all(), 'db still holds each id once');
});
