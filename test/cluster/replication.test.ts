// Goal: metadata written on any node of a 3-node cluster is visible on all (issue 6 "Shown by", spec §4 Cluster:
// reads answer from the local replica, writes on a follower are forwarded to the leader): a topic and a user created
// on a follower and on the leader can be read on every node; a user created on node 3 authenticates on node 1 with
// its password (and not with a wrong one); PATCH of a topic and DELETE of a topic and of a user sent to a follower
// take effect everywhere.
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts), as the root admin; every wait
// for replication is a bounded poll of GET on each node.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { Client, assertError } from '../helpers/http.js';
import { basicAuth } from '../helpers/node.js';

let cluster: TestCluster;
let leader: number;
let follower: number;

t.before(async () => {
  cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const agreed = await cluster.agreedLeader(30_000);
  if (agreed === undefined) throw new Error('the 3 nodes did not agree on a leader within 30 s');
  leader = agreed;
  follower = cluster.follower(leader);
  if (!(await cluster.allReady(30_000))) throw new Error('the 3 nodes did not all answer /readyz 200 within 30 s');
});

t.test('a topic created on a follower and one created on the leader are visible on all nodes', async (t) => {
  for (const [what, id, name] of [['follower', follower, 'rep-from-follower'], ['leader', leader, 'rep-from-leader']] as const) {
    const res = await cluster.client(id).post('/v1/topics', { name, partitions: 4 });
    t.equal(res.status, 201, `create on the ${what} (node ${id}): 201 (${res.text.slice(0, 200)})`);
    t.equal(res.json().name, name);
    // Answered once applied on the receiving node's replica: readable there at once.
    t.equal((await cluster.client(id).get(`/v1/topics/${name}`)).status, 200, `readable at once on node ${id}`);
    t.ok(await cluster.visibleOnAll(`/v1/topics/${name}`, 10_000), `${name} readable on nodes ${cluster.running().join(',')}`);
    const ids = new Set<string>();
    for (const node of cluster.running()) {
      const got = await cluster.client(node).get(`/v1/topics/${name}`);
      t.equal(got.json().partitions, 4, `node ${node}: partitions 4`);
      ids.add(got.json().id);
    }
    t.equal(ids.size, 1, 'every node answers the same topic id');
  }
  for (const node of cluster.running()) {
    const list = (await cluster.client(node).get('/v1/topics')).json();
    const names = list.topics.map((topic: { name: string }) => topic.name);
    t.ok(names.includes('rep-from-follower') && names.includes('rep-from-leader'), `node ${node} lists both topics`);
  }
  assertError(t, await cluster.client(leader).post('/v1/topics', { name: 'rep-from-follower' }), 409, undefined, 'the same name on the leader: 409');
});

t.test('users created on a follower and on the leader are visible on all nodes', async (t) => {
  for (const [what, id, username] of [['follower', follower, 'rep-user-f'], ['leader', leader, 'rep-user-l']] as const) {
    const res = await cluster.client(id).post('/v1/users', { username, password: `${username}-pass`, grants: [{ action: 'consume', patterns: ['rep-*'] }] });
    t.equal(res.status, 201, `create on the ${what} (node ${id}): 201 (${res.text.slice(0, 200)})`);
    t.ok(await cluster.visibleOnAll(`/v1/users/${username}`, 10_000), `${username} readable on every node`);
    for (const node of cluster.running()) {
      const got = (await cluster.client(node).get(`/v1/users/${username}`)).json();
      t.same(got.grants, [{ action: 'consume', patterns: ['rep-*'] }], `node ${node}: grants replicated`);
    }
  }
});

t.test('a user created on node 3 authenticates on node 1 with its password', async (t) => {
  const res = await cluster.client(3).post('/v1/users', { username: 'rep-carol', password: 'carol-secret' });
  t.equal(res.status, 201, res.text);
  const carolOn1 = new Client(cluster.nodes.get(1)!.url, basicAuth('rep-carol', 'carol-secret'));
  const seen = await cluster.visibleOnAll('/v1/users/rep-carol', 10_000, [1]);
  t.ok(seen, 'node 1 has the user');
  t.equal((await carolOn1.get('/v1/topics')).status, 200, 'her password works on node 1');
  assertError(t, await carolOn1.get('/v1/topics', { auth: basicAuth('rep-carol', 'not-her-password') }), 401, undefined, 'a wrong password: 401');
  // The password change is a metadata write too: sent to node 2, it takes effect on node 1.
  const put = await cluster.client(2).request('PUT', '/v1/users/rep-carol/password', { body: { new_password: 'carol-new' } });
  t.equal(put.status, 204, put.text);
  const newWorks = new Client(cluster.nodes.get(1)!.url, basicAuth('rep-carol', 'carol-new'));
  t.ok(await eventually(async () => (await newWorks.get('/v1/topics')).status === 200, 10_000), 'the new password works on node 1');
  assertError(t, await carolOn1.get('/v1/topics'), 401, undefined, 'the old password stops working on node 1');
});

t.test('PATCH and DELETE sent to a follower take effect on every node', async (t) => {
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'rep-patch' })).status, 201);
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'rep-delete' })).status, 201);
  t.equal((await cluster.client(leader).post('/v1/users', { username: 'rep-gone', password: 'p' })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/rep-delete', 10_000), 'created topics replicated');
  t.ok(await cluster.visibleOnAll('/v1/users/rep-gone', 10_000), 'created user replicated');

  const patched = await cluster.client(follower).patch('/v1/topics/rep-patch', { retention_ms: 3_600_000 });
  t.equal(patched.status, 200, `PATCH on follower ${follower}: 200 (${patched.text.slice(0, 200)})`);
  t.equal(patched.json().retention_ms, 3_600_000);
  const everywhere = await eventually(async () => {
    const answers = await Promise.all(cluster.running().map((node) => cluster.client(node).get('/v1/topics/rep-patch')));
    return answers.every((res) => res.status === 200 && res.json().retention_ms === 3_600_000);
  }, 10_000);
  t.ok(everywhere, 'the new retention_ms is read on every node');

  const other = cluster.running().find((id) => id !== leader && id !== follower)!;
  const deletedTopic = await cluster.client(follower).delete('/v1/topics/rep-delete');
  t.equal(deletedTopic.status, 204, `DELETE topic on follower ${follower}: 204 (${deletedTopic.text.slice(0, 200)})`);
  const deletedUser = await cluster.client(other).delete('/v1/users/rep-gone');
  t.equal(deletedUser.status, 204, `DELETE user on follower ${other}: 204 (${deletedUser.text.slice(0, 200)})`);
  t.ok(await cluster.statusOnAll('/v1/topics/rep-delete', 404, 10_000), 'the topic is gone on every node (404)');
  t.ok(await cluster.statusOnAll('/v1/users/rep-gone', 404, 10_000), 'the user is gone on every node (404)');
  assertError(t, await cluster.client(leader).delete('/v1/topics/rep-delete'), 404, undefined, 'a second delete on the leader: 404');
  // Spec §5: a follower that lacks a topic catches up with the leader before it answers 404.
  assertError(t, await cluster.client(other).patch('/v1/topics/rep-never', { retention_ms: 3_600_000 }), 404, 'rep-never', 'PATCH of a topic nobody has, on a follower: 404 after catching up');
  // A topic created on the leader and changed at once through a follower: never a false 404.
  for (let i = 0; i < 5; i++) {
    t.equal((await cluster.client(leader).post('/v1/topics', { name: `rep-race-${i}` })).status, 201);
    const res = await cluster.client(other).patch(`/v1/topics/rep-race-${i}`, { retention_ms: 3_600_000 });
    t.equal(res.status, 200, `PATCH rep-race-${i} on a follower right after its create on the leader: 200 (${res.text.slice(0, 120)})`);
  }
});
