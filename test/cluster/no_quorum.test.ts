// Goal: a 3-node cluster with 2 nodes down (issue 6 "Shown by", spec §4 Cluster and Health, spec §7): on the
// survivor every metadata write (create, PATCH, DELETE of a topic; create of a user) answers 503 with the error
// body and a Retry-After header and changes nothing; reads answer 200 from the local replica (GET /v1/topics,
// GET /v1/topics/{name} with its placeholders for partitions owned by the dead nodes, GET /v1/users and one user);
// /readyz answers 503 with the reason within 6 s of the second kill; the survivor lists both others as dead.
// After one node is restarted the two elect a leader and writes succeed again on both.
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts). The survivor is the leader at
// the time of the kills, so check-quorum has to make it step down; the two followers are SIGKILLed.
import t, { type Test } from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { assertError, type HttpResponse } from '../helpers/http.js';

function assert503(t: Test, res: HttpResponse, what: string): void {
  assertError(t, res, 503, undefined, what);
  t.match(String(res.headers['retry-after'] ?? ''), /^[1-9]\d*$/, `${what}: Retry-After in seconds (got ${res.headers['retry-after']})`);
}

t.test('2 of 3 down: writes 503 with Retry-After, reads 200, readyz 503; one back: writes again', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'nq-topic', partitions: 3 })).status, 201, 'a topic before the kills');
  t.equal((await cluster.client(leader).post('/v1/users', { username: 'nq-user', password: 'p' })).status, 201, 'a user before the kills');
  t.ok(await cluster.visibleOnAll('/v1/users/nq-user', 10_000), 'replicated');

  const survivor = leader;
  const killed = cluster.running().filter((id) => id !== survivor);
  await cluster.kill(killed[0]!);
  const killedAtMs = Date.now();
  await cluster.kill(killed[1]!);

  // Spec §4 Health: not ready once no leader was heard from for 5 s; how soon after that is not promised, so the
  // deadline leaves room for a busy machine.
  const notReady = await cluster.readyzBecomes(survivor, 503, 20_000);
  t.ok(notReady !== undefined, `/readyz 503 after the second kill (after ${notReady?.elapsedMs === undefined ? '-' : Date.now() - killedAtMs} ms)`);
  if (notReady !== undefined) {
    assertError(t, notReady.res, 503, undefined, '/readyz');
    t.comment(`readyz reason: ${notReady.body?.error}`);
  }

  // Writes: a 503 with Retry-After, and nothing changes. Answered, not held: the client gives up after 30 s (the
  // node's proposal timeout is 5 s; no latency is promised, so the limit is generous for a busy machine).
  const writes: [string, () => Promise<HttpResponse>][] = [
    ['create topic', () => cluster.client(survivor).post('/v1/topics', { name: 'nq-new' }, { timeoutMs: 30_000 })],
    ['PATCH topic', () => cluster.client(survivor).patch('/v1/topics/nq-topic', { retention_ms: 3_600_000 }, { timeoutMs: 30_000 })],
    ['DELETE topic', () => cluster.client(survivor).delete('/v1/topics/nq-topic', { timeoutMs: 30_000 })],
    ['create user', () => cluster.client(survivor).post('/v1/users', { username: 'nq-new-user', password: 'p' }, { timeoutMs: 30_000 })],
  ];
  for (const [what, write] of writes) {
    const startedMs = Date.now();
    const res = await write();
    assert503(t, res, what);
    t.comment(`${what}: ${res.status} in ${Date.now() - startedMs} ms, Retry-After ${res.headers['retry-after']} ${res.text}`);
  }

  // Spec §5: a change naming a topic this node lacks is looked up again after catching up with the leader; with no
  // leader to ask, that is a 503 (Retry-After: 2), not a 404.
  for (const [what, write] of [
    ['PATCH unknown topic', () => cluster.client(survivor).patch('/v1/topics/nq-unknown', { retention_ms: 3_600_000 }, { timeoutMs: 30_000 })],
    ['DELETE unknown topic', () => cluster.client(survivor).delete('/v1/topics/nq-unknown', { timeoutMs: 30_000 })],
  ] as const) {
    const res = await write();
    assertError(t, res, 503, 'leader could not be reached', what);
    t.equal(res.headers['retry-after'], '2', `${what}: Retry-After: 2`);
  }

  // Reads from the local replica.
  const list = await cluster.client(survivor).get('/v1/topics');
  t.equal(list.status, 200, 'GET /v1/topics: 200');
  t.same(list.json().topics.map((topic: { name: string }) => topic.name), ['nq-topic'], 'lists the topic, not the refused one');
  const topic = await cluster.client(survivor).get('/v1/topics/nq-topic');
  t.equal(topic.status, 200, `GET /v1/topics/nq-topic: 200 (${topic.text.slice(0, 200)})`);
  t.equal(topic.json().retention_ms, 604_800_000, 'the refused PATCH changed nothing');
  const users = await cluster.client(survivor).get('/v1/users');
  t.equal(users.status, 200, 'GET /v1/users: 200');
  t.same(users.json().map((u: { username: string }) => u.username), ['admin', 'nq-user'], 'lists admin and nq-user only');
  t.equal((await cluster.client(survivor).get('/v1/users/nq-user')).status, 200, 'GET /v1/users/nq-user: 200');
  t.equal((await cluster.client(survivor).get('/healthz')).status, 200, '/healthz still 200 (the process runs)');
  const bothDead = await eventually(async () => {
    const members = await cluster.members(survivor);
    return killed.every((id) => members?.find((m) => m.id === String(id))?.liveness === 'dead');
  }, 20_000);
  t.ok(bothDead, 'the survivor lists both killed nodes as dead');
  t.notOk((await cluster.members(survivor))?.some((m) => m.raft_leader === true), 'and no leader');

  // One node back: a quorum of 2 of 3.
  const restartedAtMs = Date.now();
  await cluster.start(killed[0]!);
  const created = await cluster.postUntilCreated(survivor, '/v1/topics', (attempt) => ({ name: `nq-after-${attempt}` }), 30_000);
  t.equal(created?.status, 201, `a write on the survivor succeeds again (${Date.now() - restartedAtMs} ms after the restart; ${created?.text.slice(0, 120)})`);
  const onRestarted = await cluster.client(killed[0]!).post('/v1/topics', { name: 'nq-after-restart' });
  t.equal(onRestarted.status, 201, `a write on the restarted node: 201 (${onRestarted.text.slice(0, 120)})`);
  const createdName = String(created?.json().name);
  t.ok(await cluster.visibleOnAll(`/v1/topics/${createdName}`, 10_000), `${createdName} on both`);
  t.ok(await cluster.visibleOnAll('/v1/topics/nq-after-restart', 10_000), 'nq-after-restart on both');
  t.ok(await cluster.allReady(10_000), 'both running nodes answer /readyz 200');
  t.equal((await cluster.client(survivor).get('/v1/topics/nq-new')).status, 404, 'the write refused with 503 did not happen');
});
