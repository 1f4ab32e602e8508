// Goal: the audit log of spec §6 (v3.1.0): every user create, delete, password change and grants change writes
// exactly one log line on the node with message audit, component=audit, event, actor, target, status (what the client
// got) and outcome (ok, denied at warning level, rejected); requests refused before the checks (caller not admin,
// malformed body) write none; with security off the actor is empty; no line carries a password.
// Method: black box; the node's stdout (pino JSON lines) is captured by the helper and parsed; each step uses its own
// target name, so its lines are found by event and target.
import t, { type Test } from 'tap';
import { startNodeFor, basicAuth, adminPassword, type StartedNode } from '../helpers/node.js';
import { Client, pollUntil } from '../helpers/http.js';

interface AuditLine {
  level: number;
  msg: string;
  component: string;
  event: string;
  actor: string;
  target: string;
  status: number;
  outcome: string;
}

const infoLevel = 30;
const warnLevel = 40;

let node: StartedNode;
let root: Client;

function auditLines(of: StartedNode): AuditLine[] {
  const lines: AuditLine[] = [];
  for (const text of of.output().split('\n')) {
    if (!text.startsWith('{')) continue;
    try {
      const parsed = JSON.parse(text) as AuditLine;
      if (parsed.msg === 'audit') lines.push(parsed);
    } catch {
      // Not a log line (the root admin banner, for example).
    }
  }
  return lines;
}

let markers = 0;

/**
 * A sync point in the log: an audited request (a delete of a missing user, 404) made after the requests under test
 * were answered, and its line awaited. The node writes audit lines in the order it decides requests, so a line any
 * earlier request wrote is in the output by then: "no line" and "exactly one line" need no sleep.
 */
async function auditMarker(t: Test, of: StartedNode): Promise<void> {
  const target = `au-marker-${++markers}`;
  t.equal((await new Client(of.url, of.auth).delete(`/v1/users/${target}`)).status, 404, `marker ${target}`);
  const seen = await pollUntil(async () => (auditLines(of).some((l) => l.target === target) ? true : undefined), 15_000, 20);
  if (seen !== true) throw new Error(`no audit line for the marker ${target} within 15 s`);
}

/** Waits for the one audit line of (event, target) and checks its fields; fails when there is more than one. */
async function expectAudit(t: Test, of: StartedNode, want: Omit<AuditLine, 'msg' | 'component' | 'level'>, level: number): Promise<void> {
  const match = (l: AuditLine) => l.event === want.event && l.target === want.target;
  const found = await pollUntil(async () => (auditLines(of).some(match) ? true : undefined), 15_000, 20);
  t.ok(found, `an audit line for ${want.event} ${want.target}`);
  await auditMarker(t, of);
  const lines = auditLines(of).filter(match);
  t.equal(lines.length, 1, `exactly one line for ${want.event} ${want.target}`);
  const line = lines[0];
  if (line === undefined) return;
  t.match(line, { ...want, msg: 'audit', component: 'audit', level }, `${want.event} ${want.target}: fields`);
}

async function expectNoAudit(t: Test, of: StartedNode, target: string, what: string): Promise<void> {
  await auditMarker(t, of);
  t.same(auditLines(of).filter((l) => l.target === target), [], `no audit line: ${what}`);
}

t.before(async () => {
  node = await startNodeFor(t);
  root = new Client(node.url, node.auth);
  for (const [username, grants] of [['au-admin', [{ action: 'admin' }]], ['au-user', [{ action: 'produce', patterns: ['x'] }]]] as const) {
    const res = await root.post('/v1/users', { username, password: `${username}-pass`, grants });
    if (res.status !== 201) throw new Error(`setup ${username}: ${res.status} ${res.text}`);
  }
});

const put = (client: Client, path: string, body: unknown) => client.request('PUT', path, { body });

t.test('user.create: ok, rejected (409, 400 rule); nothing for a non-admin or a malformed body', async (t) => {
  t.equal((await root.post('/v1/users', { username: 'au-c1', password: 'secret-c1' })).status, 201);
  await expectAudit(t, node, { event: 'user.create', actor: 'admin', target: 'au-c1', status: 201, outcome: 'ok' }, infoLevel);
  t.equal((await root.post('/v1/users', { username: 'admin', password: 'p' })).status, 409);
  await expectAudit(t, node, { event: 'user.create', actor: 'admin', target: 'admin', status: 409, outcome: 'rejected' }, infoLevel);
  t.equal((await root.post('/v1/users', { username: 'au-c2', password: 'x'.repeat(73) })).status, 400);
  await expectAudit(t, node, { event: 'user.create', actor: 'admin', target: 'au-c2', status: 400, outcome: 'rejected' }, infoLevel);
  const user = new Client(node.url, basicAuth('au-user', 'au-user-pass'));
  t.equal((await user.post('/v1/users', { username: 'au-c3', password: 'p' })).status, 403);
  await expectNoAudit(t, node, 'au-c3', 'caller not admin');
  t.equal((await root.post('/v1/users', { username: 'au-c4', password: 'p', extra: true })).status, 400);
  await expectNoAudit(t, node, 'au-c4', 'unknown field (malformed body)');
  t.equal((await root.post('/v1/users', { username: 'au-c5', password: 5 })).status, 400);
  await expectNoAudit(t, node, 'au-c5', 'password not a string (malformed body)');
});

t.test('user.create denied: a non-root admin giving admin, at warning level', async (t) => {
  const admin = new Client(node.url, basicAuth('au-admin', 'au-admin-pass'));
  t.equal((await admin.post('/v1/users', { username: 'au-d1', password: 'p', grants: [{ action: 'admin' }] })).status, 403);
  await expectAudit(t, node, { event: 'user.create', actor: 'au-admin', target: 'au-d1', status: 403, outcome: 'denied' }, warnLevel);
});

t.test('user.grants: ok, denied, rejected', async (t) => {
  await root.post('/v1/users', { username: 'au-g1', password: 'p' });
  t.equal((await put(root, '/v1/users/au-g1/grants', { grants: [{ action: 'consume', patterns: ['a*'] }] })).status, 200);
  await expectAudit(t, node, { event: 'user.grants', actor: 'admin', target: 'au-g1', status: 200, outcome: 'ok' }, infoLevel);
  const admin = new Client(node.url, basicAuth('au-admin', 'au-admin-pass'));
  t.equal((await put(admin, '/v1/users/au-admin/grants', { grants: [] })).status, 403);
  await expectAudit(t, node, { event: 'user.grants', actor: 'au-admin', target: 'au-admin', status: 403, outcome: 'denied' }, warnLevel);
  t.equal((await put(root, '/v1/users/au-g404/grants', { grants: [] })).status, 404);
  await expectAudit(t, node, { event: 'user.grants', actor: 'admin', target: 'au-g404', status: 404, outcome: 'rejected' }, infoLevel);
  t.equal((await put(root, '/v1/users/au-g2/grants', '{"grants":')).status, 400);
  await expectNoAudit(t, node, 'au-g2', 'invalid JSON');
});

t.test('user.password: ok by an admin, ok by the user, denied for a wrong current_password; no password logged', async (t) => {
  await root.post('/v1/users', { username: 'au-p1', password: 'first-secret' });
  t.equal((await put(root, '/v1/users/au-p1/password', { new_password: 'second-secret' })).status, 204);
  await expectAudit(t, node, { event: 'user.password', actor: 'admin', target: 'au-p1', status: 204, outcome: 'ok' }, infoLevel);
  const self = new Client(node.url, basicAuth('au-user', 'au-user-pass'));
  t.equal((await put(self, '/v1/users/au-user/password', { new_password: 'third-secret', current_password: 'wrong-secret' })).status, 403);
  await expectAudit(t, node, { event: 'user.password', actor: 'au-user', target: 'au-user', status: 403, outcome: 'denied' }, warnLevel);
  t.notMatch(node.output(), /first-secret|second-secret|third-secret|wrong-secret/, 'no password in the log');
});

t.test('user.delete: ok, denied for root, rejected for a missing user; nothing for a non-admin', async (t) => {
  await root.post('/v1/users', { username: 'au-x1', password: 'p' });
  t.equal((await root.delete('/v1/users/au-x1')).status, 204);
  await expectAudit(t, node, { event: 'user.delete', actor: 'admin', target: 'au-x1', status: 204, outcome: 'ok' }, infoLevel);
  const admin = new Client(node.url, basicAuth('au-admin', 'au-admin-pass'));
  t.equal((await admin.delete('/v1/users/admin')).status, 403);
  await expectAudit(t, node, { event: 'user.delete', actor: 'au-admin', target: 'admin', status: 403, outcome: 'denied' }, warnLevel);
  t.equal((await root.delete('/v1/users/au-x404')).status, 404);
  await expectAudit(t, node, { event: 'user.delete', actor: 'admin', target: 'au-x404', status: 404, outcome: 'rejected' }, infoLevel);
  const user = new Client(node.url, basicAuth('au-user', 'au-user-pass'));
  t.equal((await user.delete('/v1/users/au-g1')).status, 403);
  await auditMarker(t, node);
  t.equal(auditLines(node).filter((l) => l.event === 'user.delete' && l.target === 'au-g1').length, 0, 'no line: caller not admin');
});

t.test('security off: the actor is empty', async (t) => {
  const open = await startNodeFor(t, { security: false });
  const anon = new Client(open.url, null);
  t.equal((await anon.post('/v1/users', { username: 'au-open', password: adminPassword })).status, 201);
  await expectAudit(t, open, { event: 'user.create', actor: '', target: 'au-open', status: 201, outcome: 'ok' }, infoLevel);
});
