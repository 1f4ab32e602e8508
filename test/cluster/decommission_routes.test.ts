// Goal: the decommission routes of NOTES 16 and their rules (issue 41 point 1; spec §2 Cluster member, §3 Node
// liveness and decommission, §6 audit, §7): a dry run answers the member, the planned moves and the reasons and
// changes nothing; a 2-node cluster answers 409 with reason below_min_voters; a decommission answers 202, every node
// lists the member decommissioning with partitions moving off, the member refuses produce with 503 and Retry-After: 1
// while the others take it, a new topic's partitions keep off it; cancel answers 200 and gives the partitions back
// to it (moves aborted), a second cancel 409; each decommission and cancel writes its audit line; bad ids and bodies
// answer 400, unknown members 404. A lost node (kill -9, data dir removed): decommission blocks with owner_dead, with
// accept_data_loss its partitions go to live members and forget answers 204; svc_decommission_blocked names the block.
// Method: black box on real node processes on loopback (test/helpers/cluster.ts); every wait is a bounded poll.
import { rm } from 'node:fs/promises';
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { assertError, type HttpResponse } from '../helpers/http.js';

type Member = Record<string, unknown> & { decommission_blocked_reasons?: { code: string }[] };

function post(cluster: TestCluster, via: number, path: string, body: unknown = {}): Promise<HttpResponse> {
  return cluster.client(via).post(path, body, { timeoutMs: 20_000 });
}

t.test('dry run, decommission, drain, cancel and the audit lines', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  const target = cluster.follower(leader);
  const other = cluster.running().find((id) => id !== leader && id !== target)!;
  t.equal((await post(cluster, leader, '/v1/topics', { name: 'dc-orders', partitions: 6 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/dc-orders'), 'the topic is everywhere');
  const owned = (await cluster.ownersOf(leader, 'dc-orders')).filter((owner) => owner === target).length;
  t.ok(owned > 0, `node ${target} owns ${owned} partitions`);

  const dry = await post(cluster, other, `/v1/cluster/members/${target}/decommission?dry_run=true`);
  t.equal(dry.status, 200, dry.text);
  const plan = dry.json() as { member: Member; moves: { source: string; destination: string }[]; reasons: unknown[] };
  t.equal(plan.member.decommissioning, false, 'a dry run changes nothing');
  t.equal(plan.moves.length, owned, 'one planned move per partition it owns');
  t.ok(plan.moves.every((m) => m.source === String(target) && m.destination !== String(target)), 'moves go off the member');
  t.same(plan.reasons, [], 'nothing blocks it');
  t.equal((await cluster.member(leader, target))?.decommissioning, false, 'still not decommissioning after the dry run');

  const started = await post(cluster, other, `/v1/cluster/members/${target}/decommission`);
  t.equal(started.status, 202, started.text);
  t.equal((started.json() as { member: Member }).member.decommissioning, true);
  t.ok(await eventually(async () => {
    const views = await Promise.all(cluster.running().map((id) => cluster.member(id, target)));
    return views.every((m) => m?.decommissioning === true);
  }, 10_000), 'every node lists it decommissioning');
  const refused = await cluster.client(target).post('/v1/topics/dc-orders/produce', { n: 1 });
  assertError(t, refused, 503, 'decommission', 'produce on the draining member');
  t.equal(refused.headers['retry-after'], '1', 'Retry-After: 1');
  t.equal((await cluster.client(other).post('/v1/topics/dc-orders/produce', { n: 2 })).status, 202, 'another node takes produce');
  // Moves may end before a poll sees them: started, or already done.
  t.ok(await eventually(async () => {
    const member = await cluster.member(other, target);
    return Number(member?.partitions_moving_off) > 0 || member?.partitions_owned === 0;
  }, 30_000), 'the leader started moves off it');
  t.equal((await post(cluster, leader, '/v1/topics', { name: 'dc-new', partitions: 6 })).status, 201);
  t.notOk((await cluster.ownersOf(leader, 'dc-new')).includes(target), 'a new topic keeps off the draining member');
  assertError(t, await post(cluster, leader, `/v1/cluster/members/${target}/decommission`), 409, 'already', 'a second decommission');

  const cancelled = await post(cluster, other, `/v1/cluster/members/${target}/decommission/cancel`);
  t.equal(cancelled.status, 200, cancelled.text);
  t.equal((cancelled.json() as { member: Member }).member.decommissioning, false);
  t.ok(await eventually(async () => (await cluster.member(leader, target))?.partitions_moving_off === 0, 10_000), 'its moves are aborted');
  t.equal((await cluster.client(target).post('/v1/topics/dc-orders/produce', { n: 3 })).status, 202, 'it takes produce again');
  assertError(t, await post(cluster, other, `/v1/cluster/members/${target}/decommission/cancel`), 409, 'not being decommissioned', 'cancel with none running');
  const audit = cluster.output(other);
  t.match(audit, new RegExp(`"event":"cluster.decommission".*"target":"${target}".*"status":202`), 'the decommission was audited');
  t.match(audit, new RegExp(`"event":"cluster.decommission.cancel".*"target":"${target}".*"status":200`), 'the cancel was audited');
  t.notMatch(audit, /"event":"cluster.decommission".*"status":200/, 'the dry run was not');

  assertError(t, await post(cluster, leader, '/v1/cluster/members/99/decommission'), 404, 'member 99', 'an unknown member');
  for (const bad of ['abc', '0', '65536']) assertError(t, await post(cluster, leader, `/v1/cluster/members/${bad}/decommission`), 400, 'id', `id ${bad}`);
  assertError(t, await post(cluster, leader, `/v1/cluster/members/${target}/decommission`, { dry_run: 'yes' }), 400, 'dry_run', 'a dry_run that is not a boolean');
  assertError(t, await post(cluster, leader, `/v1/cluster/members/${target}/decommission`, { force: true }), 400, 'force', 'an unknown field');
});

t.test('a 2-node cluster answers 409 with below_min_voters and changes nothing', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 2);
  const res = await post(cluster, leader, `/v1/cluster/members/${cluster.follower(leader)}/decommission`);
  t.equal(res.status, 409, res.text);
  const body = res.json() as { error: string; reasons: { code: string; message: string }[] };
  t.match(body.error, /could never complete safely/);
  t.ok(body.reasons.some((r) => r.code === 'below_min_voters' && r.message.length > 0), 'reason below_min_voters with a message');
  t.equal((await cluster.member(leader, cluster.follower(leader)))?.decommissioning, false, 'nothing changed');
});

t.test('a lost node: owner_dead, then accept_data_loss gives its partitions away and forget answers 204', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  const lost = cluster.follower(leader);
  t.equal((await post(cluster, leader, '/v1/topics', { name: 'dc-lost', partitions: 6 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/dc-lost'));
  await cluster.kill(lost);
  await rm(cluster.specs.get(lost)!.dataDir, { recursive: true, force: true });
  t.ok(await eventually(async () => (await cluster.member(leader, lost))?.liveness === 'dead', 15_000), 'the lost node is dead');
  t.equal((await post(cluster, leader, `/v1/cluster/members/${lost}/decommission`)).status, 202);
  t.ok(await eventually(async () => {
    const reasons = ((await cluster.member(leader, lost)) as Member | undefined)?.decommission_blocked_reasons ?? [];
    return reasons.some((r) => r.code === 'owner_dead');
  }, 10_000), 'the decommission blocks with owner_dead');
  const scrape = (await cluster.client(leader).get('/metrics')).text.split('\n');
  t.ok(scrape.includes(`svc_decommission_blocked{member="${lost}",reason="owner_dead"} 1`), 'svc_decommission_blocked shows it');
  assertError(t, await post(cluster, leader, `/v1/cluster/members/${lost}/forget`), 409, 'partitions', 'forget while it owns partitions');
  const accepted = await post(cluster, leader, `/v1/cluster/members/${lost}/decommission`, { accept_data_loss: true });
  t.equal(accepted.status, 202, accepted.text);
  t.equal(typeof (accepted.json() as { records_only_on_member?: unknown }).records_only_on_member, 'number', 'the answer says how many records were lost');
  t.ok(await eventually(async () => !(await cluster.ownersOf(leader, 'dc-lost')).includes(lost), 15_000), 'its partitions went to live members');
  const audited = cluster.output(leader).split('\n').filter((line) => /"component":"audit","event":"cluster.decommission".*"target":"\d+","status":202,"outcome":"ok"/.test(line));
  t.equal(audited.length, 2, 'both decommissions, the second with accept_data_loss, were audited with outcome ok');
  const forgotten = await post(cluster, leader, `/v1/cluster/members/${lost}/forget`);
  t.equal(forgotten.status, 204, forgotten.text);
  t.equal((await cluster.client(leader).post('/v1/topics/dc-lost/produce', { n: 1 })).status, 202, 'the topic takes produce on its new owners');
});

t.test('forget waits for a drained member: 409 dispatch_backlog while it holds accepted records', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 4);
  t.equal((await post(cluster, leader, '/v1/topics', { name: 'dc-drain', partitions: 8 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/dc-drain'));
  const owners = await cluster.ownersOf(leader, 'dc-drain');
  const [target, victim] = cluster.running().filter((id) => id !== leader) as [number, number];
  const pinned = owners.indexOf(victim);
  const stopped = cluster.nodes.get(victim)!.process;
  stopped.kill('SIGSTOP');
  t.teardown(() => void stopped.kill('SIGCONT'));
  // Accepted by the target for the stopped owner's partition: pinned, so it waits in the target's ingress log.
  const accepted = await cluster.client(target).post(`/v1/topics/dc-drain/produce?partition=${pinned}`, { held: 1 });
  t.equal(accepted.status, 202, accepted.text);
  t.ok(await eventually(async () => (await cluster.member(leader, victim))?.liveness === 'dead', 15_000), 'the stopped owner is dead');
  t.equal((await post(cluster, leader, `/v1/cluster/members/${target}/decommission`)).status, 202);
  t.ok(await eventually(async () => (await cluster.member(leader, target))?.partitions_owned === 0, 60_000), 'its partitions moved off');
  const early = await post(cluster, leader, `/v1/cluster/members/${target}/forget`);
  t.equal(early.status, 409, early.text);
  t.same((early.json() as { reasons: { code: string }[] }).reasons.map((r) => r.code), ['dispatch_backlog'], 'the reason is its backlog');
  stopped.kill('SIGCONT');
  t.ok(await eventually(async () => (await post(cluster, leader, `/v1/cluster/members/${target}/forget`)).status === 204, 60_000, 500),
    'once the owner holds the record, forget answers 204');
});
