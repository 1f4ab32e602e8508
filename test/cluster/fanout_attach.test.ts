// Goal: on a 3-node cluster an attach reads the parent's high watermark of every partition from its owner, wherever
// it lives (spec §2 Topic attach_offsets, issue 30 point 1): a child created with parent through one node carries the
// counts committed on all three; the children listing's lag sums partitions of other owners too; with one owner
// dead the listing says lag_complete false and an attach answers 503 with nothing linked (spec §4 POST .../children).
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts); each partition's messages are
// produced pinned, through the partition's owner, so each count is known; every wait is a bounded poll.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { assertError } from '../helpers/http.js';

interface Stats { index: number; owner_node: string; high_watermark: number }

t.test('attach offsets and lag come from every owner; a dead owner blocks the attach', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  t.ok(await cluster.membersAlive(leader), '3 alive members');
  const created = await cluster.client(leader).post('/v1/topics', { name: 'fo-p', partitions: 6 });
  t.equal(created.status, 201, created.text.slice(0, 200));
  t.ok(await cluster.visibleOnAll('/v1/topics/fo-p', 10_000), 'on every node');
  const stats = async (): Promise<Stats[]> => (await cluster.client(1).get('/v1/topics/fo-p')).json().partition_stats;
  const owners = (await stats()).map((s) => Number(s.owner_node));
  t.equal(new Set(owners).size, 3, `partitions on all three nodes (${owners.join(',')})`);

  // Partition p gets p + 1 messages, each produced through its owner.
  for (let p = 0; p < 6; p++) {
    for (let i = 0; i <= p; i++) {
      const res = await cluster.client(owners[p]!).post(`/v1/topics/fo-p/produce?partition=${p}`, { p, i });
      t.equal(res.status, 202, `produce to ${p} on node ${owners[p]}`);
    }
  }
  const expected = [1, 2, 3, 4, 5, 6];
  t.ok(await eventually(async () => JSON.stringify((await stats()).map((s) => s.high_watermark)) === JSON.stringify(expected), 10_000),
    'every partition committed');

  const remoteOwnerNode = owners.find((o) => o !== 1)!;
  // A delay child of ten minutes: its copy cursors stay at the attach point for the whole test (copying would take an
  // ordinary child's lag to 0 at once), so the listing's lag shows the owners' cursors.
  const child = await cluster.client(1).post('/v1/topics', { name: 'fo-c', parent: 'fo-p', fanout_delay_ms: 600_000 });
  t.equal(child.status, 201, child.text.slice(0, 200));
  t.same(child.json().attach_offsets, expected, 'attach offsets from local and remote owners alike');

  const remotePartition = owners.indexOf(remoteOwnerNode);
  for (let i = 0; i < 2; i++) {
    t.equal((await cluster.client(remoteOwnerNode).post(`/v1/topics/fo-p/produce?partition=${remotePartition}`, { more: i })).status, 202);
  }
  const lagOf = async (id: number) => (await cluster.client(id).get('/v1/topics/fo-p/children')).json().children[0];
  t.ok(await eventually(async () => (await lagOf(1))?.lag_messages === 2, 10_000), 'lag counts a partition another node owns');
  t.same(await lagOf(1), { name: 'fo-c', delay_ms: 600_000, lag_messages: 2, lag_complete: true });

  // One owner dead: its partitions cannot answer.
  const victim = owners.find((o) => o !== leader)!;
  await cluster.kill(victim);
  const live = cluster.running()[0]!;
  t.ok(await eventually(async () => (await lagOf(live))?.lag_complete === false, 15_000), 'lag_complete false while an owner is down');
  t.ok(await eventually(async () => (await cluster.client(live).post('/v1/topics', { name: 'fo-other' })).status === 201, 10_000), 'a topic to attach');
  const refused = await cluster.client(live).post('/v1/topics/fo-p/children', { child: 'fo-other' });
  assertError(t, refused, 503, 'nothing was linked', 'attach with an owner down');
  t.match(String(refused.headers['retry-after'] ?? ''), /^\d+$/, 'with Retry-After');
  t.same((await cluster.client(live).get('/v1/topics/fo-p')).json().children, ['fo-c'], 'nothing linked');
  const createRefused = await cluster.client(live).post('/v1/topics', { name: 'fo-c2', parent: 'fo-p' });
  t.equal(createRefused.status, 503, 'a create with parent is refused the same way');
  t.equal((await cluster.client(live).get('/v1/topics/fo-c2')).status, 404, 'and creates nothing');
});
