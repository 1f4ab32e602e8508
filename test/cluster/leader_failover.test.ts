// Goal: SIGKILL of the metadata leader of a 3-node cluster (issue 6 "Shown by"): the two survivors elect a new
// leader and agree on it, metadata writes succeed again (issue 6 asks within 5 s of the kill: the time from the
// SIGKILL to the first 201 is reported, not asserted, since the contract promises no latency and a busy machine
// stretches it), every failed attempt in between is a 503 with an error body and Retry-After, the survivors' /readyz
// answers 200 again, the survivors see the killed node dead; the killed node restarted on its data dir catches up
// (sees the topics created while it was down), reports ready and takes writes again.
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts). Writes after the kill are
// retried every 50 ms with a fresh topic name each time (a 503 "committed but unconfirmed" may still have created
// the topic, so a retry with the same name could answer 409), alternating between the two survivors.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { assertError, type HttpResponse } from '../helpers/http.js';

t.test('SIGKILL of the leader: new leader, writes resume, the restarted node catches up', async (t) => {
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const oldLeader = await cluster.agreedLeader(30_000);
  if (oldLeader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready before the kill');
  t.equal((await cluster.client(cluster.follower(oldLeader)).post('/v1/topics', { name: 'fo-before' })).status, 201, 'a write before the kill');
  t.ok(await cluster.visibleOnAll('/v1/topics/fo-before', 10_000), 'replicated before the kill');

  const killedAtMs = Date.now();
  await cluster.kill(oldLeader);
  const survivors = cluster.running();
  t.equal(survivors.length, 2, `survivors ${survivors.join(',')}`);

  // Writes alternate between the survivors with fresh names until one answers 201.
  const failures: HttpResponse[] = [];
  let created: { res: HttpResponse; elapsedMs: number; node: number; name: string } | undefined;
  for (let attempt = 0; created === undefined && Date.now() - killedAtMs < 30_000; attempt++) {
    const node = survivors[attempt % 2]!;
    const name = `fo-during-${attempt}`;
    const res = await cluster.client(node).post('/v1/topics', { name }, { timeoutMs: 10_000 }).catch(() => undefined);
    if (res?.status === 201) created = { res, elapsedMs: Date.now() - killedAtMs, node, name };
    else if (res !== undefined) failures.push(res);
    if (created === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (created === undefined) return t.fail('no write succeeded within 30 s of the kill');
  t.comment(`failover: first 201 after ${created.elapsedMs} ms (issue 6 asks under 5000 ms) on node ${created.node}, ` +
    `${failures.length} failed attempts before it`);
  const statuses = [...new Set(failures.map((res) => res.status))];
  t.same(statuses.filter((status) => status !== 503), [], `every failed attempt answered 503 (got ${statuses.join(',') || 'none'})`);
  for (const res of failures.slice(0, 3)) {
    assertError(t, res, 503, undefined, 'a write during the election');
    t.match(String(res.headers['retry-after'] ?? ''), /^[12]$/, `Retry-After 1 or 2 (got ${res.headers['retry-after']}; ${res.text})`);
  }

  const newLeader = await cluster.agreedLeader(20_000);
  t.ok(newLeader !== undefined && newLeader !== oldLeader, `the survivors agree on a new leader (${newLeader}, was ${oldLeader})`);
  for (const id of survivors) {
    const ready = await cluster.readyzBecomes(id, 200, 20_000);
    t.ok(ready !== undefined, `node ${id}: /readyz 200 again (${Date.now() - killedAtMs} ms after the kill)`);
    if (ready !== undefined) t.same(ready.body, { status: 'ready' });
  }
  t.ok(await cluster.visibleOnAll(`/v1/topics/${created.name}`, 10_000), 'the first write after the kill is on both survivors');
  const deadSeen = await eventually(async () => (await cluster.member(survivors[0]!, oldLeader))?.liveness === 'dead', 20_000);
  t.ok(deadSeen, `node ${survivors[0]} lists the killed node ${oldLeader} as dead`);
  const oldView = await cluster.member(survivors[0]!, oldLeader);
  t.equal(oldView?.raft_voter, true, 'the killed node is still a voter (nobody forgot it)');
  t.equal(oldView?.raft_leader, false, 'and no longer the leader');

  // More writes while it is down, on both survivors.
  for (const [i, node] of survivors.entries()) {
    const res = await cluster.client(node).post('/v1/topics', { name: `fo-down-${i}` });
    t.equal(res.status, 201, `fo-down-${i} on node ${node} (${res.text.slice(0, 120)})`);
  }
  const user = await cluster.client(survivors[1]!).post('/v1/users', { username: 'fo-user', password: 'p' });
  t.equal(user.status, 201, 'a user created while it is down');

  // The killed node comes back on its data dir and catches up.
  await cluster.start(oldLeader);
  const readyAgain = await cluster.readyzBecomes(oldLeader, 200, 30_000);
  t.ok(readyAgain !== undefined, `the restarted node ${oldLeader} answers /readyz 200 (after ${readyAgain?.elapsedMs} ms)`);
  for (const path of ['/v1/topics/fo-before', `/v1/topics/${created.name}`, '/v1/topics/fo-down-0', '/v1/topics/fo-down-1', '/v1/users/fo-user']) {
    t.ok(await cluster.visibleOnAll(path, 10_000, [oldLeader]), `the restarted node sees ${path}`);
  }
  const agreed = await cluster.agreedLeader(10_000);
  t.ok(agreed !== undefined, `all 3 agree on the leader again (${agreed})`);
  const aliveAgain = await eventually(async () => {
    const members = await cluster.members(agreed ?? survivors[0]!);
    return members !== undefined && members.length === 3 && members.every((m) => m.liveness === 'alive' && m.raft_voter === true);
  }, 10_000);
  t.ok(aliveAgain, 'the members list shows 3 alive voters again');
  const after = await cluster.client(oldLeader).post('/v1/topics', { name: 'fo-after' });
  t.equal(after.status, 201, `a write on the restarted node: 201 (${after.text.slice(0, 120)})`);
  t.ok(await cluster.visibleOnAll('/v1/topics/fo-after', 10_000), 'and it is visible on all 3');
});
