// Goal: the user routes of spec §4 Users with the rules of spec §2 User and Grant: create (201 User, never a
// hash), list in name order, get, delete (204; the user's topics lose their owner), PUT grants (200 User, grants
// only), PUT password (204; the old password stops working on the very next request, the new one works), and every
// 400 (username, password bytes, grants, unknown field, body over 1 MiB), 404 and 409; security off: the routes
// work without credentials.
// Method: black box on a started node as the root admin; each subtest uses its own user names.
import t from 'tap';
import { startNodeFor, basicAuth, adminPassword, type StartedNode } from '../helpers/node.js';
import { Client, assertError, send } from '../helpers/http.js';

let node: StartedNode;
let root: Client;

t.before(async () => {
  node = await startNodeFor(t);
  root = new Client(node.url, node.auth);
});

function put(client: Client, path: string, body: unknown) {
  return client.request('PUT', path, { body });
}

t.test('create answers 201 with the User and never a hash; get and list agree', async (t) => {
  const before = Date.now();
  const res = await root.post('/v1/users', { username: 'u-alice', password: 'alice-pass', grants: [{ action: 'produce', patterns: ['orders.*'] }, { action: 'consume', patterns: ['orders.eu'] }] });
  t.equal(res.status, 201, res.text);
  const body = res.json();
  t.same(Object.keys(body).sort(), ['created_at_ms', 'grants', 'root', 'updated_at_ms', 'username']);
  t.equal(body.username, 'u-alice');
  t.same(body.grants, [{ action: 'produce', patterns: ['orders.*'] }, { action: 'consume', patterns: ['orders.eu'] }]);
  t.equal(body.root, false);
  t.ok(body.created_at_ms >= before && body.created_at_ms <= Date.now(), 'created_at_ms is Unix milliseconds');
  t.equal(body.updated_at_ms, body.created_at_ms);
  t.notMatch(res.text, /\$2[aby]\$|password|hash/i, 'no hash or password field');

  const got = await root.get('/v1/users/u-alice');
  t.equal(got.status, 200);
  t.same(got.json(), body);

  const none = await root.post('/v1/users', { username: 'u-bob', password: 'bob-pass' });
  t.equal(none.status, 201);
  t.notOk('grants' in none.json(), 'grants absent for a user with none');
  const admin = await root.post('/v1/users', { username: 'u-0admin', password: 'x', grants: [{ action: 'admin' }] });
  t.same(admin.json().grants, [{ action: 'admin' }]);

  const list = await root.get('/v1/users');
  t.equal(list.status, 200);
  const users = list.json();
  t.ok(Array.isArray(users), 'the answer is an array of User');
  const names = users.map((u: { username: string }) => u.username);
  t.same(names, [...names].sort((a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0)), 'name order');
  t.ok(names.includes('admin') && names.includes('u-alice') && names.includes('u-bob'));
  t.equal(users.find((u: { username: string }) => u.username === 'admin').root, true, 'the root admin is marked');
  t.notMatch(list.text, /\$2[aby]\$|password|hash/i, 'no hash anywhere in the list');
});

t.test('create: 400 for every username, password and grant rule; 409 when the user exists', async (t) => {
  const cases: [string, unknown, string][] = [
    ['empty username', { username: '', password: 'p' }, 'username'],
    ['65 characters', { username: 'u'.repeat(65), password: 'p' }, 'username'],
    ['bad character', { username: 'u/x', password: 'p' }, 'username'],
    ['space', { username: 'u x', password: 'p' }, 'username'],
    ['.', { username: '.', password: 'p' }, 'username'],
    ['..', { username: '..', password: 'p' }, 'username'],
    ['username missing', { password: 'p' }, 'username'],
    ['username a number', { username: 5, password: 'p' }, 'username'],
    ['password missing', { username: 'u-p1' }, 'password'],
    ['empty password', { username: 'u-p2', password: '' }, 'password'],
    ['73-byte password', { username: 'u-p3', password: 'x'.repeat(73) }, 'password'],
    ['37 two-byte characters (74 bytes)', { username: 'u-p4', password: 'é'.repeat(37) }, 'password'],
    ['grants not an array', { username: 'u-g1', password: 'p', grants: {} }, 'grants'],
    ['produce without patterns', { username: 'u-g2', password: 'p', grants: [{ action: 'produce' }] }, 'grants[0].patterns'],
    ['admin with patterns', { username: 'u-g3', password: 'p', grants: [{ action: 'admin', patterns: ['*'] }] }, 'grants[0].patterns'],
    ['* not at the end', { username: 'u-g4', password: 'p', grants: [{ action: 'consume', patterns: ['a*b'] }] }, 'grants[0].patterns[0]'],
    ['pattern of 256 characters', { username: 'u-g5', password: 'p', grants: [{ action: 'consume', patterns: ['a'.repeat(256)] }] }, 'grants[0].patterns[0]'],
    ['unknown action', { username: 'u-g6', password: 'p', grants: [{ action: 'read', patterns: ['a'] }] }, 'grants[0].action'],
    ['unknown grant field', { username: 'u-g7', password: 'p', grants: [{ action: 'admin', x: 1 }] }, 'grants[0].x'],
    ['unknown field', { username: 'u-g8', password: 'p', root: true }, 'root'],
  ];
  for (const [what, body, field] of cases) assertError(t, await root.post('/v1/users', body), 400, field, what);
  assertError(t, await root.post('/v1/users', '{"username":'), 400, undefined, 'invalid JSON');
  // Valid, small fields padded with whitespace past 1 MiB: only the body cap can refuse it.
  const padded = JSON.stringify({ username: 'u-p5', password: 'p' }) + ' '.repeat(1024 * 1024);
  assertError(t, await root.post('/v1/users', padded), 400, 'body', 'body over 1 MiB is 400 here');
  t.equal((await root.get('/v1/users/u-p5')).status, 404, 'and nothing was created');
  t.equal((await root.post('/v1/users', { username: 'u-ok72', password: 'é'.repeat(36) })).status, 201, '36 two-byte characters (72 bytes)');
  t.equal((await root.post('/v1/users', { username: 'u'.repeat(64), password: 'x'.repeat(72) })).status, 201, '64 characters, 72 bytes');
  assertError(t, await root.post('/v1/users', { username: 'u-ok72', password: 'other' }), 409, 'exists');
  assertError(t, await root.post('/v1/users', { username: 'admin', password: 'other' }), 409, 'exists', 'the root admin exists');
  assertError(t, await root.post('/v1/users', JSON.stringify({ username: 'u-ct', password: 'p' }), { contentType: null }), 415);
});

t.test('get, delete, grants and password of a missing user: 404', async (t) => {
  assertError(t, await root.get('/v1/users/u-missing'), 404, 'u-missing');
  assertError(t, await root.delete('/v1/users/u-missing'), 404);
  assertError(t, await put(root, '/v1/users/u-missing/grants', { grants: [] }), 404);
  assertError(t, await put(root, '/v1/users/u-missing/password', { new_password: 'x' }), 404);
});

t.test('PUT grants replaces grants only; an empty list removes all', async (t) => {
  const created = (await root.post('/v1/users', { username: 'u-carol', password: 'carol-pass', grants: [{ action: 'create', patterns: ['c.*'] }] })).json();
  await new Promise((r) => setTimeout(r, 5));
  const res = await put(root, '/v1/users/u-carol/grants', { grants: [{ action: 'consume', patterns: ['c.x', 'd*'] }] });
  t.equal(res.status, 200, res.text);
  const body = res.json();
  t.same(body.grants, [{ action: 'consume', patterns: ['c.x', 'd*'] }]);
  t.equal(body.created_at_ms, created.created_at_ms, 'created_at_ms kept');
  t.ok(body.updated_at_ms > created.updated_at_ms, 'updated_at_ms moved');
  t.equal((await new Client(node.url, basicAuth('u-carol', 'carol-pass')).get('/v1/topics')).status, 200, 'the password still works');
  const cleared = await put(root, '/v1/users/u-carol/grants', { grants: [] });
  t.equal(cleared.status, 200);
  t.notOk('grants' in cleared.json(), 'no grants: field absent');
  assertError(t, await put(root, '/v1/users/u-carol/grants', {}), 400, 'grants', 'grants required');
  assertError(t, await put(root, '/v1/users/u-carol/grants', { grants: [], extra: 1 }), 400, 'extra', 'unknown field');
  assertError(t, await put(root, '/v1/users/u-carol/grants', { grants: [{ action: 'produce', patterns: ['*x'] }] }), 400, 'patterns');
  assertError(t, await put(root, '/v1/users/u-carol/grants', JSON.stringify({ grants: [] }) + ' '.repeat(1024 * 1024)), 400, 'body', 'over 1 MiB');
  assertError(t, await root.request('PUT', '/v1/users/u-carol/grants', { body: '{"grants":[]}', contentType: null }), 415, undefined, 'no content type');
});

t.test('PUT password: 204; the old password fails on the next request and the new one works', async (t) => {
  await root.post('/v1/users', { username: 'u-dave', password: 'old-pass', grants: [{ action: 'create', patterns: ['dave.*'] }] });
  const oldAuth = new Client(node.url, basicAuth('u-dave', 'old-pass'));
  t.equal((await oldAuth.get('/v1/topics')).status, 200, 'old password works (and is now cached)');
  t.equal((await oldAuth.get('/v1/topics')).status, 200, 'cached');
  const changed = await put(root, '/v1/users/u-dave/password', { new_password: 'new-pass' });
  t.equal(changed.status, 204, changed.text);
  t.equal(changed.text, '');
  assertError(t, await oldAuth.get('/v1/topics'), 401, undefined, 'old password on the next request');
  const newAuth = new Client(node.url, basicAuth('u-dave', 'new-pass'));
  t.equal((await newAuth.get('/v1/topics')).status, 200, 'new password works');
  t.same((await root.get('/v1/users/u-dave')).json().grants, [{ action: 'create', patterns: ['dave.*'] }], 'grants untouched');

  // The user changes their own, with current_password.
  const self = await newAuth.request('PUT', '/v1/users/u-dave/password', { body: { new_password: 'self-pass', current_password: 'new-pass' } });
  t.equal(self.status, 204, self.text);
  assertError(t, await newAuth.get('/v1/topics'), 401, undefined, 'the replaced password on the next request');
  t.equal((await new Client(node.url, basicAuth('u-dave', 'self-pass')).get('/v1/topics')).status, 200);

  assertError(t, await put(root, '/v1/users/u-dave/password', { new_password: '' }), 400, 'new_password');
  assertError(t, await put(root, '/v1/users/u-dave/password', { new_password: 'é'.repeat(37) }), 400, 'new_password');
  assertError(t, await put(root, '/v1/users/u-dave/password', {}), 400, 'new_password');
  assertError(t, await put(root, '/v1/users/u-dave/password', { new_password: 'x', password: 'y' }), 400, 'password', 'unknown field');
  assertError(t, await put(root, '/v1/users/u-dave/password', JSON.stringify({ new_password: 'p2' }) + ' '.repeat(1024 * 1024)), 400, 'body', 'over 1 MiB');
  assertError(t, await root.request('PUT', '/v1/users/u-dave/password', { body: '{"new_password":"p2"}', contentType: null }), 415, undefined, 'no content type');
});

t.test('root changes its own password; the old one stops working at once', async (t) => {
  const rootNew = new Client(node.url, basicAuth('admin', 'root-second-password'));
  t.equal((await put(root, '/v1/users/admin/password', { new_password: 'root-second-password' })).status, 204);
  assertError(t, await root.get('/v1/users'), 401, undefined, 'old root password');
  t.equal((await rootNew.get('/v1/users')).status, 200);
  t.equal((await put(rootNew, '/v1/users/admin/password', { new_password: adminPassword })).status, 204, 'set back');
  t.equal((await root.get('/v1/users')).status, 200);
});

t.test('delete answers 204, removes the user and clears the owner of its topics', async (t) => {
  await root.post('/v1/users', { username: 'u-erin', password: 'erin-pass', grants: [{ action: 'create', patterns: ['erin.*'] }] });
  const erin = new Client(node.url, basicAuth('u-erin', 'erin-pass'));
  const topic = await erin.post('/v1/topics', { name: 'erin.t1' });
  t.equal(topic.status, 201, topic.text);
  t.equal(topic.json().owner, 'u-erin');
  const deleted = await root.delete('/v1/users/u-erin');
  t.equal(deleted.status, 204);
  assertError(t, await root.get('/v1/users/u-erin'), 404);
  assertError(t, await erin.get('/v1/topics'), 401, undefined, 'the deleted user cannot log in');
  const after = await root.get('/v1/topics/erin.t1');
  t.equal(after.status, 200);
  t.notOk('owner' in after.json(), 'the topic has no owner any more');
  // A new user under the same name owns nothing (spec §5, v3.1.0) and the old password does not work for it.
  await root.post('/v1/users', { username: 'u-erin', password: 'erin-new', grants: [{ action: 'create', patterns: ['zzz'] }] });
  assertError(t, await erin.get('/v1/topics'), 401, undefined, 'old account password on the new account');
  const reborn = new Client(node.url, basicAuth('u-erin', 'erin-new'));
  assertError(t, await reborn.delete('/v1/topics/erin.t1'), 403, undefined, 'the new user is not the owner');
});

t.test('security off: user routes work without credentials', async (t) => {
  const open = await startNodeFor(t, { security: false });
  const anon = new Client(open.url, null);
  const created = await anon.post('/v1/users', { username: 'u-open', password: 'open-pass', grants: [{ action: 'admin' }] });
  t.equal(created.status, 201, created.text);
  const list = await anon.get('/v1/users');
  t.equal(list.status, 200);
  t.same(list.json().map((u: { username: string }) => u.username), ['u-open'], 'no root admin with security off');
  t.equal((await anon.request('PUT', '/v1/users/u-open/grants', { body: { grants: [] } })).status, 200);
  t.equal((await anon.request('PUT', '/v1/users/u-open/password', { body: { new_password: 'x' } })).status, 204);
  t.equal((await anon.delete('/v1/users/u-open')).status, 204);
  const direct = await send(open.url, 'GET', '/v1/users/u-open');
  t.equal(direct.status, 404);
});
