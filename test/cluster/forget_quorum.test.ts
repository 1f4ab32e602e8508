// Goal: the quorum rule of POST /v1/cluster/members/{id}/forget (spec §4 Cluster): with 3 voters and 2 of them dead
// while the leader still leads, forgetting one answers 409 (it would leave 2 voters of which 1 is alive); once the
// leader stepped down (check-quorum), forget answers 503 with Retry-After.
// Why a long election timeout: removing a dead voter never lowers the number of alive voters and a smaller
// configuration never needs more of them, so a leader that holds a live quorum never meets the quorum 409; it can
// only while the leader's liveness view (member_dead_after 2 s) already says "dead" and check-quorum has not yet made
// it step down. election_ticks=150 at 50 ms ticks keeps it leading 7.5 s or more after the kills.
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts); every wait is a bounded poll.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { Client, assertError, type HttpResponse } from '../helpers/http.js';

function forget(client: Client, id: string): Promise<HttpResponse> {
  return client.post(`/v1/cluster/members/${id}/forget`, {}, { timeoutMs: 20_000 });
}

t.test('forget that would break quorum: 409 while the leader still leads, 503 once it stepped down', async (t) => {
  // 150 ticks of 50 ms: the lone leader steps down 7.5 s or more after the kills, while the others are dead after
  // 2 s, so the forget below lands between the two with seconds of room on a busy machine.
  const cluster = await TestCluster.create(t, 3, ['--set', 'cluster.election_ticks=150']);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  const others = cluster.running().filter((id) => id !== leader);
  await Promise.all(others.map((id) => cluster.kill(id)));
  const killedAtMs = Date.now();
  const deadWhileLeading = await eventually(async () => {
    const members = await cluster.members(leader);
    return members !== undefined && others.every((id) => members.find((m) => m.id === String(id))?.liveness === 'dead');
  }, 10_000, 50);
  t.ok(deadWhileLeading, `the leader lists both others dead (${Date.now() - killedAtMs} ms after the kills)`);
  const stillLeads = (await cluster.members(leader))?.find((m) => m.id === String(leader))?.raft_leader === true;
  const res = await forget(cluster.client(leader), String(others[0]));
  t.comment(`forget ${Date.now() - killedAtMs} ms after the kills, leader still leading before: ${stillLeads}: ${res.status} ${res.text}`);
  if (stillLeads) assertError(t, res, 409, 'quorum', 'forget of a dead voter leaving 1 alive of 2');
  else t.fail('the leader stepped down before the forget could be sent: no 409 to check (the machine is too slow?)');
  t.ok((await cluster.member(leader, others[0]!)) !== undefined, 'the member is still listed');

  const steppedDown = await eventually(async () => (await cluster.leaderSeenBy(leader)) === undefined, 45_000);
  t.ok(steppedDown, `the lone node stepped down (check-quorum; ${Date.now() - killedAtMs} ms after the kills)`);
  const noLeader = await forget(cluster.client(leader), String(others[0]));
  assertError(t, noLeader, 503, 'no leader to write metadata', 'forget without a leader');
  t.equal(noLeader.headers['retry-after'], '1', 'Retry-After 1 when no leader is known (2 is for a leader that cannot be reached)');
});
