// Goal: POST /v1/cluster/members/{id}/forget and its rules (issue 6 "Shown by": forget of a dead member; spec §4
// Cluster): a joined node that is SIGKILLed is listed dead, then forgetting it (sent to a follower, run on the
// leader) answers 204 and no node lists it any more; forgetting an alive member answers 409, an unknown id 404, a
// malformed id 400, a non-admin 403, no credentials 401, no Content-Type 415; a dead member that owns partitions
// answers 409. The quorum rule is in forget_quorum.test.ts.
// Method: black box on real node processes on loopback (test/helpers/cluster.ts); every wait is a bounded poll.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { Client, assertError, type HttpResponse } from '../helpers/http.js';
import { basicAuth } from '../helpers/node.js';

function forget(client: Client, id: string, auth?: string | null): Promise<HttpResponse> {
  return client.post(`/v1/cluster/members/${id}/forget`, {}, { timeoutMs: 20_000, ...(auth === undefined ? {} : { auth }) });
}

/** Waits until member `memberId` is a registered voter (its own record proposed) and alive on node `id`. */
async function registeredVoter(cluster: TestCluster, id: number, memberId: number): Promise<boolean> {
  return eventually(async () => {
    const m = await cluster.member(id, memberId);
    return m?.raft_voter === true && m.liveness === 'alive' && m.api_address !== '';
  }, 20_000);
}

t.test('forget: 204 for a dead member, 409 alive or owning partitions, 404, 400, 403, 401', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  const follower = cluster.follower(leader);
  t.equal((await cluster.client(leader).post('/v1/users', { username: 'fg-plain', password: 'p', grants: [{ action: 'consume', patterns: ['*'] }] })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/users/fg-plain', 10_000), 'the non-admin user is everywhere');

  await cluster.join(4, follower);
  t.ok(await registeredVoter(cluster, leader, 4), 'node 4 joined: an alive, registered voter');
  assertError(t, await forget(cluster.client(follower), '4'), 409, 'alive', 'forget of an alive member');
  assertError(t, await forget(cluster.client(leader), String(follower)), 409, 'alive', 'forget of an alive founding member');

  await cluster.kill(4);
  const dead = await eventually(async () => (await cluster.member(leader, 4))?.liveness === 'dead', 10_000);
  t.ok(dead, 'the leader lists node 4 dead');
  const deadOnFollower = await eventually(async () => (await cluster.member(follower, 4))?.liveness === 'dead', 10_000);
  t.ok(deadOnFollower, 'so does the follower');
  const res = await forget(cluster.client(follower), '4');
  t.equal(res.status, 204, `forget of the dead node 4 sent to follower ${follower}: 204 (${res.text})`);
  t.equal(res.text, '', 'no body');
  const gone = await eventually(async () => {
    const views = await Promise.all(cluster.running().map((id) => cluster.members(id)));
    return views.every((members) => members !== undefined && members.length === 3 && !members.some((m) => m.id === '4'));
  }, 10_000);
  t.ok(gone, 'no node lists member 4 any more; 3 members remain');
  const voters = (await cluster.members(leader))?.filter((m) => m.raft_voter === true).map((m) => m.id);
  t.same(voters, ['1', '2', '3'], 'the voters are 1, 2, 3');
  assertError(t, await forget(cluster.client(leader), '4'), 404, undefined, 'forget of node 4 again');

  assertError(t, await forget(cluster.client(follower), '99'), 404, undefined, 'an unknown id');
  for (const bad of ['abc', '0', '65536', '-1', '1.5']) assertError(t, await forget(cluster.client(leader), bad), 400, 'id', `id ${bad}`);
  assertError(t, await forget(cluster.client(leader), '2', basicAuth('fg-plain', 'p')), 403, undefined, 'a user without the admin grant');
  assertError(t, await forget(cluster.client(leader), '2', null), 401, undefined, 'no credentials');
  const noType = await cluster.client(leader).post('/v1/cluster/members/99/forget', '{}', { contentType: null });
  t.equal(noType.status, 415, `no Content-Type: 415 (${noType.text})`);

  // A dead member that owns partitions cannot be forgotten.
  await cluster.join(5, leader);
  t.ok(await registeredVoter(cluster, leader, 5), 'node 5 joined: an alive, registered voter');
  const topic = await cluster.client(leader).post('/v1/topics', { name: 'fg-spread', partitions: 8 });
  t.equal(topic.status, 201, `a topic of 8 partitions (${topic.text.slice(0, 120)})`);
  const owned = Number((await cluster.member(leader, 5))?.partitions_owned);
  t.ok(owned > 0, `node 5 owns ${owned} of its partitions`);
  await cluster.kill(5);
  t.ok(await eventually(async () => (await cluster.member(leader, 5))?.liveness === 'dead', 10_000), 'node 5 is listed dead');
  assertError(t, await forget(cluster.client(follower), '5'), 409, 'partitions', 'forget of a dead member that owns partitions');
  t.ok((await cluster.member(leader, 5)) !== undefined, 'node 5 is still a member');
  const write = await cluster.client(follower).post('/v1/topics', { name: 'fg-after' });
  t.equal(write.status, 201, 'writes still work (3 of 4 voters alive)');
});
