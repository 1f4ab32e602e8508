// Goal: a node joins a running 3-node cluster (issue 6 "Shown by", spec §4 Cluster): started with --join on a
// follower's internal port, it appears in the members list of every node with its API address, is added as a
// learner and promoted to voter once caught up, has the topics and users created before it joined, answers /readyz
// 200, and a topic created on it is visible on the founding nodes; a restart of the joined node (same data dir, still
// with --join) keeps it a voter and it catches up on what was written while it was down.
// Method: black box on real node processes on loopback (test/helpers/cluster.ts); every wait is a bounded poll.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';

t.test('a node joins through a follower, becomes a voter, sees everything and takes writes', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'join-before' })).status, 201, 'a topic before the join');
  t.equal((await cluster.client(leader).post('/v1/users', { username: 'join-user', password: 'p' })).status, 201, 'a user before the join');

  const via = cluster.follower(leader);
  const joinedAtMs = Date.now();
  await cluster.join(4, via);
  const listed = await eventually(async () => (await Promise.all([1, 2, 3].map((id) => cluster.member(id, 4)))).every((m) => m !== undefined), 30_000);
  t.ok(listed, 'nodes 1, 2 and 3 list member 4');
  const voter = await eventually(async () => (await cluster.member(leader, 4))?.raft_voter === true, 40_000);
  t.ok(voter, `member 4 becomes a raft voter (${Date.now() - joinedAtMs} ms after its start)`);
  const record = await cluster.member(leader, 4);
  t.equal(record?.raft_learner, false, 'no longer a learner');
  t.equal(record?.liveness, 'alive', 'alive');
  t.equal(record?.raft_leader, false, 'not the leader');
  // The member record (API address) is proposed by the node itself once it caught up: it may follow the promotion.
  const addressed = await eventually(async () => /^127\.0\.0\.1:\d+$/.test(String((await cluster.member(leader, 4))?.api_address)), 10_000);
  t.ok(addressed, `its member record carries an API address (${(await cluster.member(leader, 4))?.api_address})`);
  t.match(cluster.output(4), /joined the cluster/, 'its log says it joined');

  t.ok(await cluster.visibleOnAll('/v1/topics/join-before', 10_000, [4]), 'node 4 has the topic created before it joined');
  t.ok(await cluster.visibleOnAll('/v1/users/join-user', 10_000, [4]), 'and the user');
  const ready = await cluster.readyzBecomes(4, 200, 30_000);
  t.ok(ready !== undefined, 'node 4 answers /readyz 200');
  const fromAll = await eventually(async () => {
    const views = await Promise.all(cluster.running().map((id) => cluster.members(id)));
    return views.every((members) => members?.length === 4 && members.every((m) => m.raft_voter === true));
  }, 10_000);
  t.ok(fromAll, 'every node (4 included) lists 4 voters');

  const created = await cluster.client(4).post('/v1/topics', { name: 'join-on-4' });
  t.equal(created.status, 201, `a topic created on node 4: 201 (${created.text.slice(0, 160)})`);
  t.ok(await cluster.visibleOnAll('/v1/topics/join-on-4', 10_000), 'visible on every node');

  // Restart of the joined node: its data dir says it is a member; it catches up on what it missed.
  await cluster.kill(4);
  const whileDown = await cluster.client(leader).post('/v1/topics', { name: 'join-while-down' });
  t.equal(whileDown.status, 201, 'a write while node 4 is down (3 of 4 voters alive)');
  await cluster.join(4, via);
  t.ok(await cluster.readyzBecomes(4, 200, 15_000), 'the restarted node 4 answers /readyz 200');
  t.ok(await cluster.visibleOnAll('/v1/topics/join-while-down', 10_000, [4]), 'it has the topic written while it was down');
  const stillVoter = await eventually(async () => {
    const m = await cluster.member(leader, 4);
    return m?.raft_voter === true && m.liveness === 'alive';
  }, 10_000);
  t.ok(stillVoter, 'it is an alive voter again');
  t.equal((await cluster.members(leader))?.length, 4, 'still 4 members (no duplicate record)');
});

t.test('every member record carries the API address its node listens on (port 0 reported once bound)', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const node4 = await cluster.join(4, 1);
  const ok = await eventually(async () => {
    const members = await cluster.members(1);
    return members?.length === 4 && members.every((m) => m.api_address === `127.0.0.1:${(m.id === '4' ? node4 : cluster.nodes.get(Number(m.id))!).port}`);
  }, 20_000);
  t.ok(ok, `api_address is 127.0.0.1:<bound port> for every member (got ${JSON.stringify((await cluster.members(1))?.map((m) => m.api_address))})`);
});

// A joined node's address lives only in the metadata (not in anyone's --bootstrap), and after compaction only in the
// snapshot: a restart of every node must still reach it. (With port 0 every restarted node re-registers a new API
// address, which also refreshes peers; the start-up refresh is what covers fixed ports.)
t.test('after compaction, every node killed and restarted: the joined node is reached again and ready', async (t) => {
  const cluster = await TestCluster.create(t, 3, ['--set', 'cluster.snapshot_entries=5']);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(15_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 15 s');
  await cluster.join(4, leader);
  t.ok(await eventually(async () => (await cluster.member(leader, 4))?.raft_voter === true, 20_000), 'node 4 becomes a voter');
  for (let i = 0; i < 12; i++) {
    t.ok(await cluster.postUntilCreated(leader, '/v1/topics', (attempt) => ({ name: `compact-${i}-${attempt}` }), 10_000), `topic ${i} created`);
  }
  t.ok(await cluster.readyzBecomes(4, 200, 15_000), 'node 4 ready before the restart');
  for (const id of [1, 2, 3, 4]) await cluster.kill(id);
  await Promise.all([1, 2, 3].map((id) => cluster.start(id)));
  await cluster.join(4, 1);
  t.ok(await cluster.readyzBecomes(4, 200, 20_000), 'the joined node answers /readyz 200 after the restart');
  const listed = await eventually(async () => ((await cluster.client(4).get('/v1/topics?limit=100')).json() as { topics: unknown[] }).topics.length >= 12, 10_000);
  t.ok(listed, 'it holds every topic');
  t.ok(await eventually(async () => (await cluster.member(1, 4))?.liveness === 'alive', 10_000), 'node 1 sees it alive');
});
