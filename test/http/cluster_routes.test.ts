// Goal: the cluster routes and /readyz on a one-node cluster (spec §4 Cluster, Health; issue 6): the members list
// shows this node as an alive voter and leader with its bound API address and the partitions it owns; detail must
// be true or false; forget answers 400 for a non-id, 404 for an unknown member, 409 for an alive one (this node),
// each with one audit line; partition_stats name this node as owner_node; with security off the routes answer
// without credentials (NOTES 8); with security on both routes answer 401/403 to a non-admin (no audit line), and a
// wrong method 405 before credentials.
// Method: black box on a started node as the root admin.
import t, { type Test } from 'tap';
import { basicAuth, startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, assertError, pollUntil } from '../helpers/http.js';

let node: StartedNode;
let root: Client;

/** The forget audit lines in the node's output so far. */
const forgetLines = (): string[] => node.output().split('\n').filter((line) => line.includes('"event":"cluster.forget"'));
let markers = 0;

/**
 * The forget audit lines written before a marker: a forget of a missing member (404, audited) sent after the
 * requests under test were answered, its line awaited. The node writes an audit line before its answer, from one
 * logger, so a line any earlier request wrote is before the marker's: "no late line" needs no sleep.
 */
async function forgetLinesBeforeMarker(t: Test): Promise<string[]> {
  const target = String(900 + ++markers);
  assertError(t, await root.post(`/v1/cluster/members/${target}/forget`, {}), 404, `member ${target} not found`, 'the marker forget');
  const before = await pollUntil(async () => {
    const lines = forgetLines();
    const at = lines.findIndex((line) => line.includes(`"target":"${target}"`));
    return at >= 0 ? lines.slice(0, at) : undefined;
  }, 15_000);
  if (before === undefined) throw new Error(`no audit line for the marker forget of ${target} within 15 s`);
  return before;
}

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
  }, 15_000);
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
  t.equal(self.partitions_owned, 5, 'owns every partition of the one topic');
  t.equal(self.partitions_moving_off, 0);
  t.equal(self.status_error, undefined, 'no detail asked: no status report field');
  t.same(self.decommission_blocked_reasons, []);

  const topic = (await root.get('/v1/topics/cr-owned')).json() as { partition_stats: { owner_node: string; status: string }[]; partial?: boolean };
  t.same(topic.partition_stats.map((p) => [p.owner_node, p.status]), Array.from({ length: 5 }, () => ['1', 'ok']), 'every partition is owned here');
  t.equal(topic.partial, undefined, 'a complete answer has no partial field');

  t.equal((await root.get('/v1/cluster/members?detail=false')).status, 200);
  const detailed = await root.get('/v1/cluster/members?detail=true');
  t.equal(detailed.status, 200, detailed.text);
  const detailedMembers = (detailed.json() as { members: Record<string, unknown>[] }).members;
  t.same(detailedMembers.map((m) => [m.id, m.liveness]), [['1', 'alive']], 'detail=true lists the same member');
  t.equal(detailedMembers[0]?.status_error, undefined, 'the answering node reports on itself: no status_error');
  t.equal(detailedMembers[0]?.draining, false, 'its own report: not draining');
  t.equal(detailedMembers[0]?.produce_requests_in_flight, 0, 'no produce in flight');
  t.equal(detailedMembers[0]?.ingress_messages_not_handed_off, 0, 'nothing produced: nothing waits for an owner');
  t.same(detailedMembers[0]?.set_aside_copies, { count: 0, total_size_bytes: 0, copies: [] }, 'nothing set aside');
  t.same(detailedMembers[0]?.moves_as_destination, [], 'no moves');
  t.equal(self.draining, undefined, 'without detail: no report fields');
  assertError(t, await root.get('/v1/cluster/members?detail=true&detail=yes'), 400, 'detail', 'detail given twice');
  assertError(t, await root.get('/v1/cluster/members?detail=true&detail=true'), 400, 'detail', 'detail given twice, same value');
  for (const bad of ['yes', '', 'TRUE', '1', 'true%20']) {
    assertError(t, await root.get(`/v1/cluster/members?detail=${bad}`), 400, 'detail', `detail=${bad}`);
  }
});

t.test('forget: 400 for a non-id, 404 unknown, 409 for an alive member; each audited', async (t) => {
  const post = (id: string) => root.post(`/v1/cluster/members/${id}/forget`, {});
  assertError(t, await post('abc'), 400, 'id');
  assertError(t, await post('0'), 400, 'id');
  for (const bad of ['65536', '99999', '123456', '-1', '1.5', '1e3', '%20']) assertError(t, await post(bad), 400, 'id', `forget ${bad}`);
  assertError(t, await post('7'), 404, 'member 7 not found');
  assertError(t, await post('1'), 409, 'alive');
  const audited = await forgetLinesBeforeMarker(t);
  const parsed = audited.map((line) => JSON.parse(line) as Record<string, unknown>);
  t.same(parsed.map((line) => [line.target, line.status, line.outcome]), [['7', 404, 'rejected'], ['1', 409, 'rejected']],
    'one line per forget that passed the request checks (a malformed id writes none, early or late)');
  t.ok(parsed.every((line) => line.actor === 'admin' && line.component === 'audit'));
});

t.test('forget takes no fields: empty or {} only; a leading-zero id is audited as the id it names', async (t) => {
  const url = '/v1/cluster/members/7/forget';
  const before = forgetLines().length;
  assertError(t, await root.post(url, { x: 1 }), 400, 'x', 'an unknown field');
  assertError(t, await root.post(url, 'not json', { contentType: 'application/json' }), 400, 'body: invalid JSON', 'a body that is not JSON');
  assertError(t, await root.post(url, [], {}), 400, 'body: must be a JSON object', 'a JSON array');
  assertError(t, await root.post(url, undefined, { contentType: 'application/json' }), 404, 'member 7 not found', 'an empty body');
  assertError(t, await root.post('/v1/cluster/members/0007/forget', {}), 404, 'member 7 not found');
  const lines = await forgetLinesBeforeMarker(t);
  t.equal(lines.length, before + 2, 'the empty body and the 0007 forget are audited; the refused bodies are not');
  t.equal((JSON.parse(lines[lines.length - 1]!) as { target: string }).target, '7', 'the audit target is the node id, not the path text');
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
  assertError(t, await anon.post('/v1/cluster/members/9/forget', {}), 404, 'member 9 not found');
  const line = await pollUntil(async () => open.output().split('\n').find((l) => l.includes('"event":"cluster.forget"')), 15_000);
  t.ok(line, 'the forget is audited with security off too');
  const record = JSON.parse(line ?? '{}') as Record<string, unknown>;
  t.same([record.actor, record.target, record.status, record.outcome], ['', '9', 404, 'rejected'], 'actor empty with security off');
});

t.test('cluster routes are admin only: 401 without credentials, 403 for a non-admin, no audit line for either', async (t) => {
  t.equal((await root.post('/v1/users', { username: 'cr-plain', password: 'plain-pass', grants: [{ action: 'produce', patterns: ['*'] }] })).status, 201);
  const anon = new Client(node.url, null);
  const plain = new Client(node.url, basicAuth('cr-plain', 'plain-pass'));
  const before = forgetLines().length;
  assertError(t, await anon.get('/v1/cluster/members'), 401, 'missing or wrong credentials', 'members without credentials');
  assertError(t, await anon.post('/v1/cluster/members/7/forget', {}), 401, 'missing or wrong credentials', 'forget without credentials');
  assertError(t, await new Client(node.url, basicAuth('admin', 'wrong-password')).get('/v1/cluster/members'), 401, 'missing or wrong credentials', 'members, wrong password');
  assertError(t, await plain.get('/v1/cluster/members'), 403, 'needs the admin grant', 'members as a non-admin');
  assertError(t, await plain.get('/v1/cluster/members?detail=true'), 403, 'needs the admin grant', 'members detail as a non-admin');
  assertError(t, await plain.post('/v1/cluster/members/7/forget', {}), 403, 'needs the admin grant', 'forget as a non-admin');
  assertError(t, await plain.post('/v1/cluster/members/abc/forget', {}), 403, 'needs the admin grant', 'forget as a non-admin, malformed id: access first');
  t.equal((await forgetLinesBeforeMarker(t)).length, before,
    'a caller who is not admin writes no audit line (spec §6: checks before the audited part)');
});

t.test('wrong methods on the cluster routes: 405 plain text with Allow, before credentials; no forget runs', async (t) => {
  const before = forgetLines().length;
  const anon = new Client(node.url, null);
  for (const [method, path, allowed] of [
    ['GET', '/v1/cluster/members/1/forget', 'POST'],
    ['DELETE', '/v1/cluster/members/1/forget', 'POST'],
    ['POST', '/v1/cluster/members', 'GET'],
    ['DELETE', '/v1/cluster/members', 'GET'],
  ] as const) {
    for (const [who, client] of [['admin', root], ['no credentials', anon]] as const) {
      const res = await client.request(method, path, method === 'POST' ? { body: {} } : {});
      t.equal(res.status, 405, `${method} ${path} (${who}): 405 (${res.text.slice(0, 80)})`);
      t.equal(res.text.trim(), 'method not allowed', `${method} ${path} (${who}): plain-text body`);
      const listed = String(res.headers['allow'] ?? '').split(',').map((m) => m.trim()).filter((m) => m !== '' && m !== 'HEAD' && m !== 'OPTIONS');
      t.same(listed, [allowed], `${method} ${path} (${who}): Allow ${allowed}`);
    }
  }
  const empty = await root.post('/v1/cluster/members//forget', {});
  t.equal(empty.status, 404, 'forget with an empty id: no such route');
  t.equal(empty.text.trim(), 'not found');
  t.equal((await forgetLinesBeforeMarker(t)).length, before, 'no audit line');
  const members = (await root.get('/v1/cluster/members')).json() as { members: { id: string; liveness: string }[] };
  t.same(members.members.map((m) => [m.id, m.liveness]), [['1', 'alive']], 'this node is still the one alive member');
});
