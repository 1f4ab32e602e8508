// Goal: the cluster routes and /readyz on a one-node cluster (spec §4 Cluster, Health; issue 6): the members list
// shows this node as an alive voter and leader with its bound API address and the partitions it owns; detail must
// be true or false; forget answers 400 for a non-id, 404 for an unknown member, 409 for an alive one (this node),
// each with one audit line; partition_stats name this node as owner_node; with security off the routes answer
// without credentials (NOTES 8).
// Method: black box on a started node as the root admin.
import t from 'tap';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, assertError, pollUntil } from '../helpers/http.js';

let node: StartedNode;
let root: Client;

t.before(async () => {
  node = await startNodeFor(t);
  root = new Client(node.url, node.auth);
});

t.test('members: this node alone, alive, voter and leader, with its address and owned partitions', async (t) => {
  t.equal((await root.post('/v1/topics', { name: 'cr-owned', partitions: 5 })).status, 201);
  // The record is written before the listener binds port 0, and again with the bound port right after.
  const addressed = await pollUntil(async () => {
    const members = ((await root.get('/v1/cluster/members')).json() as { members: { api_address: string }[] }).members;
    return members[0]?.api_address === `127.0.0.1:${node.port}` ? true : undefined;
  }, 5_000);
  t.ok(addressed, 'the member record gets the bound API port');
  const res = await root.get('/v1/cluster/members');
  t.equal(res.status, 200, res.text);
  t.match(String(res.headers['content-type']), /^application\/json/);
  const { members } = res.json() as { members: Record<string, unknown>[] };
  t.equal(members.length, 1);
  const self = members[0]!;
  t.equal(self.id, '1', 'a first start without --node-id is node 1');
  t.equal(self.api_address, `127.0.0.1:${node.port}`, 'the bound API port, not the configured 0');
  t.equal(self.liveness, 'alive');
  t.equal(self.raft_voter, true);
  t.equal(self.raft_learner, false);
  t.equal(self.raft_leader, true);
  t.equal(self.decommissioning, false);
  t.equal(self.seconds_since_heartbeat, 0, 'the leader hears itself');
  t.ok(Number(self.partitions_owned) >= 5, `owns every partition (${String(self.partitions_owned)})`);
  t.same(self.decommission_blocked_reasons, []);

  const topic = (await root.get('/v1/topics/cr-owned')).json() as { partition_stats: { owner_node: string; status: string }[]; partial?: boolean };
  t.same(topic.partition_stats.map((p) => [p.owner_node, p.status]), Array.from({ length: 5 }, () => ['1', 'ok']), 'every partition is owned here');
  t.equal(topic.partial, undefined, 'a complete answer has no partial field');

  t.equal((await root.get('/v1/cluster/members?detail=false')).status, 200);
  t.equal((await root.get('/v1/cluster/members?detail=true')).status, 200);
  assertError(t, await root.get('/v1/cluster/members?detail=yes'), 400, 'detail');
});

t.test('forget: 400 for a non-id, 404 unknown, 409 for an alive member; each audited', async (t) => {
  const post = (id: string) => root.post(`/v1/cluster/members/${id}/forget`, {});
  assertError(t, await post('abc'), 400, 'id');
  assertError(t, await post('0'), 400, 'id');
  assertError(t, await post('7'), 404, 'member 7 not found');
  assertError(t, await post('1'), 409, 'alive');
  const audited = await pollUntil(async () => {
    const lines = node.output().split('\n').filter((line) => line.includes('"event":"cluster.forget"'));
    return lines.length >= 2 ? lines : undefined;
  }, 5_000);
  t.ok(audited, 'forget writes audit lines');
  const parsed = (audited ?? []).map((line) => JSON.parse(line) as Record<string, unknown>);
  t.same(parsed.map((line) => [line.target, line.status, line.outcome]), [['7', 404, 'rejected'], ['1', 409, 'rejected']],
    'one line per forget that passed the request checks (a malformed id writes none)');
  t.ok(parsed.every((line) => line.actor === 'admin' && line.component === 'audit'));
});

t.test('readyz: ready once the node leads and caught up', async (t) => {
  const res = await new Client(node.url, null).get('/readyz');
  t.equal(res.status, 200);
  t.same(res.json(), { status: 'ready' });
});

t.test('security off: cluster routes answer without credentials', async (t) => {
  const open = await startNodeFor(t, { security: false });
  const anon = new Client(open.url, null);
  const members = await anon.get('/v1/cluster/members');
  t.equal(members.status, 200, members.text);
  t.equal((members.json() as { members: unknown[] }).members.length, 1);
  t.equal((await anon.post('/v1/topics', { name: 'cr-open' })).status, 201, 'a topic create right after start finds this node as a member');
  assertError(t, await anon.post('/v1/cluster/members/9/forget', {}), 404);
});
