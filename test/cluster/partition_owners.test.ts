// Goal: partition owners (issue 6 item 7): a topic of 6 partitions created in a 3-node cluster gets owners spread
// 2/2/2 over nodes "1", "2", "3", the same on every node; GET /v1/topics/{name} on any node answers every
// partition with status ok (the owners answer for theirs, issue 29), not partial; ?partition= of an own partition is
// not partial; members'
// partitions_owned add up to 6 (2 each); a produce pinned to a partition is accepted whoever owns it; with one node dead, new partitions go to the live nodes
// only and the dead owner's partitions are placeholders (zero statistics, status owner_unavailable, owner_liveness
// dead, owner_node).
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts); every wait is a bounded poll.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';

interface PartitionStats {
  index: number;
  owner_node: string;
  status: string;
  [field: string]: unknown;
}

const placeholderFields = ['high_watermark', 'index', 'next_offset', 'oldest_offset', 'owner_liveness', 'owner_node', 'segments', 'size_bytes', 'status'];

t.test('owners spread evenly, every owner answers its partitions, partitions_owned adds up', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  // Placement uses live members with a registered record: wait until the leader lists all 3 alive.
  t.ok(await cluster.membersAlive(leader), '3 alive members, each with its member record');
  // Node 1 produces to other owners' partitions below: its copy of the leader's liveness view must list them alive.
  await cluster.settled();

  const created = await cluster.client(cluster.follower(leader)).post('/v1/topics', { name: 'po-six', partitions: 6 });
  t.equal(created.status, 201, created.text.slice(0, 200));
  t.ok(await cluster.visibleOnAll('/v1/topics/po-six', 10_000), 'on every node');

  let owners: string[] | undefined;
  for (const id of cluster.running()) {
    const res = await cluster.client(id).get('/v1/topics/po-six');
    t.equal(res.status, 200, `node ${id}: 200`);
    const body = res.json() as { partition_stats: PartitionStats[]; partial?: boolean };
    t.equal(body.partition_stats.length, 6, `node ${id}: 6 partition_stats`);
    t.same(body.partition_stats.map((p) => p.index), [0, 1, 2, 3, 4, 5], 'in index order');
    const seen = body.partition_stats.map((p) => p.owner_node);
    if (owners === undefined) owners = seen;
    t.same(seen, owners, `node ${id} answers the same owners (${seen.join(',')})`);
    // Owners answer for their partitions (forwarded, issue 29): every partition is ok, nothing is partial.
    t.notOk(body.partial, `node ${id}: not partial (every owner answered)`);
    for (const p of body.partition_stats) t.equal(p.status, 'ok', `node ${id}, partition ${p.index} of node ${p.owner_node}: status ok`);
    const own = body.partition_stats.find((p) => p.owner_node === String(id))!;
    const single = (await cluster.client(id).get(`/v1/topics/po-six?partition=${own.index}`)).json();
    t.equal(single.partition_stats.length, 1, `node ${id}: ?partition=${own.index} answers one partition`);
    t.notOk('partial' in single, 'an own partition alone: not partial');
  }
  const counts = new Map<string, number>();
  for (const owner of owners ?? []) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  t.same([...counts.entries()].sort(), [['1', 2], ['2', 2], ['3', 2]], `owners spread 2/2/2 (${owners?.join(',')})`);

  for (const id of cluster.running()) {
    const members = (await cluster.members(id)) ?? [];
    t.same(members.map((m) => [m.id, m.partitions_owned]), [['1', 2], ['2', 2], ['3', 2]], `node ${id}: partitions_owned 2 each, 6 in all`);
  }

  // Produce pinned to a partition: accepted on any node (issue 29 hands it to the owner).
  const mine = owners!.indexOf('1');
  const theirs = owners!.findIndex((owner) => owner !== '1');
  const ok = await cluster.client(1).post(`/v1/topics/po-six/produce?partition=${mine}`, { hello: 1 });
  t.equal(ok.status, 202, `produce to own partition ${mine} on node 1`);
  const elsewhere = await cluster.client(1).post(`/v1/topics/po-six/produce?partition=${theirs}`, { hello: 1 });
  t.equal(elsewhere.status, 202, `produce to partition ${theirs} of node ${owners![theirs]} on node 1`);

  // One node dead: new partitions go to the live ones; its partitions' placeholders say dead.
  const victim = cluster.follower(leader);
  await cluster.kill(victim);
  t.ok(await eventually(async () => (await cluster.member(leader, victim))?.liveness === 'dead', 10_000), `node ${victim} listed dead`);
  const four = await cluster.client(leader).post('/v1/topics', { name: 'po-live', partitions: 4 });
  t.equal(four.status, 201, four.text.slice(0, 200));
  const liveOwners = ((await cluster.client(leader).get('/v1/topics/po-live')).json().partition_stats as PartitionStats[]).map((p) => p.owner_node);
  t.notOk(liveOwners.includes(String(victim)), `no partition placed on the dead node ${victim} (${liveOwners.join(',')})`);
  const liveCounts = new Map<string, number>();
  for (const owner of liveOwners) liveCounts.set(owner, (liveCounts.get(owner) ?? 0) + 1);
  t.same([...liveCounts.values()], [2, 2], 'spread 2/2 over the two live nodes');
  const sixOnLeader = (await cluster.client(leader).get('/v1/topics/po-six')).json().partition_stats as PartitionStats[];
  for (const p of sixOnLeader.filter((s) => s.owner_node === String(victim))) {
    t.same(Object.keys(p).sort(), placeholderFields, `partition ${p.index} of the dead node: placeholder fields`);
    t.match(p, { status: 'owner_unavailable', segments: 0, oldest_offset: 0, next_offset: 0, high_watermark: 0, size_bytes: 0 }, 'zero statistics, owner_unavailable');
    t.equal(p.owner_liveness, 'dead', `partition ${p.index} of the dead node: owner_liveness dead`);
  }
  const sum = ((await cluster.members(leader)) ?? []).reduce((acc, m) => acc + Number(m.partitions_owned), 0);
  t.equal(sum, 10, 'partitions_owned adds up to 10 over both topics');
});
