// Goal: issue 40 point 3 on real nodes: the cluster secret admits a connection, membership admits a request. A peer
// that completes the handshake as node 77 (no member) has its propose (a user with the admin grant), forget, join
// under another id and data-channel read refused, each with a warn line, and the user never exists; a user change
// made through a follower writes exactly one spec §6 audit line (on the follower, the node called) and one line on
// the leader naming the proposing node; made through the leader, one audit line and no leader line.
// Method: black box on real node processes on loopback (test/helpers/cluster.ts) and a raw socket that performs a
// real handshake with the cluster's secret (test/unit/transport_helpers.ts); every wait is bounded.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { rawDial } from '../unit/transport_helpers.js';

interface LogLine {
  msg?: string;
  [field: string]: unknown;
}

function logLines(output: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const text of output.split('\n')) {
    if (!text.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(text) as LogLine);
    } catch {
      // A line cut by a kill: not ours to judge.
    }
  }
  return lines;
}

const notMember = 'node 77 is not a member of this cluster';

t.test('a non-member peer holding the secret: propose, forget, join for another id and a data read refused', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  const secret = new Uint8Array(await readFile(cluster.secretFile));
  const port = cluster.specs.get(leader)!.internalPort;
  const { reader, verdict } = await rawDial({ port, nodeId: 77, secret });
  t.match(verdict, { t: 'welcome' }, 'the secret alone still opens a connection');
  const nowMs = Date.now();
  const user = { username: 'intruder', passwordHash: 'x', credentialVersion: 0, grants: [{ action: 'admin', patterns: ['*'] }], root: false, createdAtMs: nowMs, updatedAtMs: nowMs };
  reader.write([1, 1, { kind: 'propose', command: { type: 'user.create', user } }]);
  t.same(await reader.next('the propose answer'), [3, 1, notMember], 'propose refused');
  reader.write([1, 2, { kind: 'forget', id: cluster.follower(leader) }]);
  t.same(await reader.next('the forget answer'), [3, 2, notMember], 'forget refused');
  reader.write([1, 3, { kind: 'join', id: 78, apiAddress: '127.0.0.1:1', internalAddress: '127.0.0.1:2' }]);
  t.same(await reader.next('the join answer'), [3, 3, notMember], 'a join for another node refused');
  reader.write([5, 2, 4, { kind: 'read', topicId: 'x', partition: 0, offset: 0 }]);
  t.same(await reader.next('the read answer'), [3, 4, notMember], 'a data-channel read refused');
  reader.socket.destroy();

  t.equal((await cluster.client(leader).get('/v1/users/intruder')).status, 404, 'no such user on the leader');
  const lines = logLines(cluster.output(leader));
  const refused = lines.filter((l) => l.msg === 'metadata: request from a node that is not a member refused' && l['from'] === 77);
  t.same(refused.map((l) => l['request']).sort(), ['forget', 'join', 'propose'], 'each metadata refusal logged');
  t.ok(refused.every((l) => l['level'] === 40), 'at warn level');
  t.ok(lines.some((l) => l.msg === 'node-to-node frame from a node that is not a member refused' && l['peer'] === 77 && l['channel'] === 'data'), 'the data refusal logged');
  t.equal((await cluster.client(cluster.follower(leader)).get('/v1/users/intruder')).status, 404, 'nor on a follower');
});

t.test('a user change writes one audit line on the node called; the leader names a proposing peer', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  const follower = cluster.follower(leader);
  const audits = (username: string): { node: number; line: LogLine }[] =>
    cluster.running().flatMap((id) => logLines(cluster.output(id)).filter((l) => l.msg === 'audit' && l['target'] === username).map((line) => ({ node: id, line })));
  const leaderLines = (username: string): LogLine[] =>
    logLines(cluster.output(leader)).filter((l) => l.msg === 'metadata: user change proposed by another node' && l['target'] === username);

  const viaFollower = await cluster.client(follower).post('/v1/users', { username: 'via-follower', password: 'p', grants: [] });
  t.equal(viaFollower.status, 201);
  // Lines reach the test through each node's stdout pipe: wait for both before counting.
  t.ok(await eventually(async () => leaderLines('via-follower').length > 0 && audits('via-follower').length > 0, 5_000), 'both lines written');
  t.same(audits('via-follower').map((a) => a.node), [follower], 'one audit line, on the follower called');
  t.match(leaderLines('via-follower'), [{ event: 'user.create', proposer: follower, outcome: 'committed' }], 'one leader line naming the follower');

  const grants = await cluster.client(follower).request('PUT', '/v1/users/via-follower/grants', { body: { grants: [{ action: 'consume', patterns: ['*'] }] } });
  t.equal(grants.status, 200);
  t.ok(await eventually(async () => leaderLines('via-follower').length > 1 && audits('via-follower').length > 1, 5_000), 'the grants change too');
  t.match(leaderLines('via-follower')[1], { event: 'user.grants', proposer: follower, outcome: 'committed' });
  t.equal(audits('via-follower').length, 2, 'one audit line per change');

  const viaLeader = await cluster.client(leader).post('/v1/users', { username: 'via-leader', password: 'p', grants: [] });
  t.equal(viaLeader.status, 201);
  t.ok(await cluster.visibleOnAll('/v1/users/via-leader', 10_000));
  t.ok(await eventually(async () => audits('via-leader').length > 0, 5_000), 'the audit line written');
  t.same(audits('via-leader').map((a) => a.node), [leader], 'one audit line, on the leader called');
  t.same(leaderLines('via-leader'), [], 'and no peer line: no peer proposed it');
});
