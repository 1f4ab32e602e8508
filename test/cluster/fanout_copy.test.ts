// Goal: issue 30 point 4 as far as copying reaches it (spec §1.9): on a 3-node cluster a child whose partitions other
// nodes own gets every parent message exactly once, copies going through the data plane's hand-off, and copying goes
// on after the owner of a parent partition restarts (its cursors resume from cursors.log; the child skips what it
// holds).
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts). Messages are produced pinned,
// through each partition's owner; the parent and the children are read back whole by replay through node 1 (replays
// of other owners' partitions are forwarded) and compared by the ids the payloads carry. Every wait is a bounded poll.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { readAll, waitCaughtUp, waitTotal } from '../helpers/fanout.js';

interface Stats { index: number; owner_node: string; high_watermark: number }

t.test('children on other nodes get every copy once, also across a restart of a parent owner', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  t.ok(await cluster.membersAlive(leader), '3 alive members');
  const api = cluster.client(1);
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'fk-p', partitions: 3 })).status, 201);
  // Placement takes the member owning the fewest, lowest id first: fk-a's four partitions leave node 1 one ahead, so
  // fk-b's start on node 2 and its partition p lies on another node than the parent's partition p.
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'fk-a', parent: 'fk-p', partitions: 4 })).status, 201);
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'fk-b', parent: 'fk-p', partitions: 3 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/fk-b', 10_000), 'on every node');
  const ownersOf = async (topic: string): Promise<number[]> =>
    ((await api.get(`/v1/topics/${topic}`)).json().partition_stats as Stats[]).map((s) => Number(s.owner_node));
  const parentOwners = await ownersOf('fk-p');
  const aOwners = await ownersOf('fk-a');
  const bOwners = await ownersOf('fk-b');
  t.comment(`owners: parent ${parentOwners.join(',')}; fk-a ${aOwners.join(',')}; fk-b ${bOwners.join(',')}`);
  const remoteCopies = parentOwners.filter((owner, p) => aOwners[p % 4] !== owner || bOwners[p % 3] !== owner).length;
  t.ok(remoteCopies > 0, `copies of ${remoteCopies} parent partitions go to a partition another node owns`);

  let id = 0;
  const produceRound = async (count: number): Promise<void> => {
    for (let i = 0; i < count; i++) {
      const p = id % 3;
      const owner = parentOwners[p]!;
      const res = await cluster.client(owner).post(`/v1/topics/fk-p/produce?partition=${p}&key=k${id % 5}`, { id: id++ });
      t.equal(res.status, 202, `produce ${id - 1} through node ${owner}`);
    }
  };
  const check = async (what: string): Promise<void> => {
    t.equal(await waitTotal(api, 'fk-p', id, 20_000), id, `${what}: the parent committed ${id}`);
    t.ok(await waitCaughtUp(api, 'fk-p', 30_000), `${what}: every child caught up`);
    const parent = (await readAll(api, 'fk-p')).map((m) => (m.payload as { id: number }).id).sort((a, b) => a - b);
    t.same(parent, Array.from({ length: id }, (_, i) => i), `${what}: the parent holds each id once`);
    for (const child of ['fk-a', 'fk-b']) {
      t.equal(await waitTotal(api, child, id, 20_000), id, `${what}: ${child} holds ${id}`);
      const ids = (await readAll(api, child)).map((m) => (m.payload as { id: number }).id).sort((a, b) => a - b);
      t.same(ids, parent, `${what}: ${child} holds every parent message once`);
    }
  };

  await produceRound(30);
  await check('before the restart');

  const victim = parentOwners.find((o) => o !== leader && o !== 1) ?? parentOwners.find((o) => o !== 1)!;
  await cluster.kill(victim);
  await cluster.start(victim);
  t.ok(await eventually(async () => (await cluster.readyz(victim)).status === 200, 20_000), `node ${victim} ready again`);
  await produceRound(30);
  await check(`after node ${victim} restarted`);
});
