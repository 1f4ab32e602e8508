// Goal: the permissions table of spec §5 on every /v1 route (and /metrics), for every kind of caller: no
// credentials, a wrong password, a user whose only grant is on other topics, a user with the route's grant, the
// topic's owner (holding no grants any more, so ownership alone counts), a non-root admin and the root admin; then
// each no-escalation rule (spec §5, NOTES 9), grants taking effect on the next request, the topic listing filtered
// after the page is cut (next_page_token still set), and security off passing every check (NOTES 8).
// Method: black box. Root sets up users and topics; each table row builds its own path and body, so rows that
// delete or create use their own names. A wrong-password row is followed by a right-password request of the same
// user, so the failed-login throttle (5 in a row) never trips.
import t from 'tap';
import { startNodeFor, basicAuth, type StartedNode } from '../helpers/node.js';
import { Client, assertError, type HttpResponse } from '../helpers/http.js';

const callers = ['none', 'wrong', 'stranger', 'granted', 'owner', 'admin', 'root'] as const;
type Caller = (typeof callers)[number];
type Expected = number | number[];

interface RouteCase {
  method: string;
  path: (row: Caller) => string;
  body?: (row: Caller) => unknown;
  contentType?: string;
  /** One status (or a set) per caller, in the order of `callers`. */
  expect: [Expected, Expected, Expected, Expected, Expected, Expected, Expected];
}

const passwords: Record<string, string> = {
  'ac-stranger': 'stranger-pass', 'ac-granted': 'granted-pass', 'ac-owner': 'owner-pass', 'ac-admin': 'admin-pass',
};
const ok = [200, 204];
const handle = '0:0:000000000000';

const routes: RouteCase[] = [
  { method: 'POST', path: () => '/v1/topics', body: (r) => ({ name: `acc-new-${r}` }), expect: [401, 401, 403, 201, 403, 201, 201] },
  { method: 'GET', path: () => '/v1/topics', expect: [401, 401, 200, 200, 200, 200, 200] },
  { method: 'GET', path: () => '/v1/topics/acc-main', expect: [401, 401, 403, 200, 200, 200, 200] },
  { method: 'PATCH', path: () => '/v1/topics/acc-main', body: () => ({ retention_ms: 0 }), expect: [401, 401, 403, 403, 200, 200, 200] },
  { method: 'DELETE', path: (r) => `/v1/topics/acc-del-${r}`, expect: [401, 401, 403, 403, 204, 204, 204] },
  { method: 'GET', path: () => '/v1/topics/acc-main/schema', expect: [401, 401, 403, 200, 200, 200, 200] },
  { method: 'POST', path: () => '/v1/topics/acc-main/produce', body: () => 'hello', contentType: 'application/octet-stream', expect: [401, 401, 403, 202, 403, 202, 202] },
  { method: 'POST', path: () => '/v1/topics/acc-main/produce/batch', body: () => ({ messages: [{ payload: 1 }] }), expect: [401, 401, 403, 202, 403, 202, 202] },
  { method: 'GET', path: () => '/v1/topics/acc-main/consume?wait=0', expect: [401, 401, 403, ok, 403, ok, ok] },
  { method: 'POST', path: () => `/v1/topics/acc-main/ack?receipt_handle=${handle}`, contentType: 'application/json', expect: [401, 401, 403, 410, 403, 410, 410] },
  // Each caller that may attaches (then detaches) a child of its own; remotes answer 501 (later issues) once the
  // caller passed the route's access check.
  { method: 'POST', path: () => '/v1/topics/acc-main/children', body: (r) => ({ child: `acc-kid-${r}` }), expect: [401, 401, 403, 403, 200, 200, 200] },
  { method: 'GET', path: () => '/v1/topics/acc-main/children', expect: [401, 401, 403, 200, 200, 200, 200] },
  { method: 'DELETE', path: (r) => `/v1/topics/acc-main/children/acc-kid-${r}`, expect: [401, 401, 403, 403, 204, 204, 204] },
  { method: 'POST', path: () => '/v1/topics/acc-main/children/acc-aux/pause', body: () => ({}), expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'POST', path: () => '/v1/topics/acc-main/children/acc-aux/resume', body: () => ({}), expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'POST', path: () => '/v1/topics/acc-main/children/acc-aux/skip', body: () => ({}), expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'POST', path: () => '/v1/users', body: (r) => ({ username: `ac-new-${r}`, password: 'p' }), expect: [401, 401, 403, 403, 403, 201, 201] },
  { method: 'GET', path: () => '/v1/users', expect: [401, 401, 403, 403, 403, 200, 200] },
  { method: 'GET', path: () => '/v1/users/ac-target', expect: [401, 401, 403, 403, 403, 200, 200] },
  { method: 'DELETE', path: (r) => `/v1/users/ac-del-${r}`, expect: [401, 401, 403, 403, 403, 204, 204] },
  { method: 'PUT', path: () => '/v1/users/ac-target/grants', body: () => ({ grants: [{ action: 'consume', patterns: ['acc-x'] }] }), expect: [401, 401, 403, 403, 403, 200, 200] },
  { method: 'PUT', path: () => '/v1/users/ac-target/password', body: () => ({ new_password: 'target-new' }), expect: [401, 401, 403, 403, 403, 204, 204] },
  { method: 'GET', path: () => '/v1/cluster/members', expect: [401, 401, 403, 403, 403, 200, 200] },
  // Node ids are integers: an admin gets past the access check to the 400 for 'n1'.
  { method: 'POST', path: () => '/v1/cluster/members/n1/forget', body: () => ({}), expect: [401, 401, 403, 403, 403, 400, 400] },
  { method: 'POST', path: () => '/v1/cluster/members/1/forget', body: () => ({}), expect: [401, 401, 403, 403, 403, 409, 409] },
  { method: 'POST', path: () => '/v1/cluster/reencrypt-remotes', body: () => ({}), expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'POST', path: () => '/v1/remotes', body: () => ({}), expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'GET', path: () => '/v1/remotes', expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'GET', path: () => '/v1/remotes/r1', expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'PATCH', path: () => '/v1/remotes/r1', body: () => ({}), expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'DELETE', path: () => '/v1/remotes/r1', expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'POST', path: () => '/v1/remotes/r1/test', body: () => ({}), expect: [401, 401, 403, 403, 403, 501, 501] },
  { method: 'GET', path: () => '/metrics', expect: [401, 401, 200, 200, 200, 200, 200] },
];

let node: StartedNode;
let root: Client;

function as(username: string): Client {
  return new Client(node.url, basicAuth(username, passwords[username]!));
}

function clientFor(row: Caller): Client {
  switch (row) {
    case 'none': return new Client(node.url, null);
    case 'wrong': return new Client(node.url, basicAuth('ac-granted', 'not-the-password'));
    case 'stranger': return as('ac-stranger');
    case 'granted': return as('ac-granted');
    case 'owner': return as('ac-owner');
    case 'admin': return as('ac-admin');
    case 'root': return root;
  }
}

async function must(res: Promise<HttpResponse>, status: number, what: string): Promise<HttpResponse> {
  const answer = await res;
  if (answer.status !== status) throw new Error(`setup ${what}: ${answer.status} ${answer.text}`);
  return answer;
}

t.before(async () => {
  node = await startNodeFor(t);
  root = new Client(node.url, node.auth);
  const users: [string, unknown[]][] = [
    ['ac-stranger', [{ action: 'produce', patterns: ['zz-*'] }, { action: 'consume', patterns: ['zz-*'] }]],
    ['ac-granted', [{ action: 'produce', patterns: ['acc-*'] }, { action: 'consume', patterns: ['acc-main'] }, { action: 'create', patterns: ['acc-new-*'] }]],
    ['ac-owner', [{ action: 'create', patterns: ['acc-*'] }]],
    ['ac-admin', [{ action: 'admin' }]],
  ];
  for (const [username, grants] of users) {
    await must(root.post('/v1/users', { username, password: passwords[username], grants }), 201, username);
  }
  await must(root.post('/v1/users', { username: 'ac-target', password: 'target-pass' }), 201, 'ac-target');
  for (const row of callers) await must(root.post('/v1/users', { username: `ac-del-${row}`, password: 'p' }), 201, `ac-del-${row}`);
  const owner = as('ac-owner');
  for (const name of ['acc-main', 'acc-aux', ...callers.map((r) => `acc-del-${r}`), ...callers.map((r) => `acc-kid-${r}`)]) {
    await must(owner.post('/v1/topics', { name }), 201, name);
  }
  // From now on the owner holds no grant: what it may do, it may do as owner.
  await must(root.request('PUT', '/v1/users/ac-owner/grants', { body: { grants: [] } }), 200, 'owner grants');
});

t.test('every route x every kind of caller (spec §5 permissions by route)', async (t) => {
  for (const route of routes) {
    for (let i = 0; i < callers.length; i++) {
      const row = callers[i]!;
      const body = route.body?.(row);
      const path = route.path(row);
      const res = await clientFor(row).request(route.method, path, { body, contentType: route.contentType ?? (body === undefined ? null : 'application/json') });
      const expected = route.expect[i]!;
      const allowed = Array.isArray(expected) ? expected : [expected];
      t.ok(allowed.includes(res.status), `${route.method} ${path} as ${row}: ${allowed.join('|')} (got ${res.status} ${res.text.slice(0, 120)})`);
      if (res.status === 403) t.match(res.json(), { error: String }, `${route.method} ${path} as ${row}: 403 says why`);
      if (row === 'wrong') await must(as('ac-granted').get('/v1/topics'), 200, 'reset the failure count');
    }
  }
});

t.test('no escalation (spec §5, NOTES 9): each violation is 403', async (t) => {
  const admin = as('ac-admin');
  const granted = as('ac-granted');
  await must(root.post('/v1/users', { username: 'ne-victim', password: 'victim-pass', grants: [{ action: 'consume', patterns: ['v'] }] }), 201, 'victim');
  const put = (client: Client, path: string, body: unknown) => client.request('PUT', path, { body });

  assertError(t, await granted.post('/v1/users', { username: 'ne-x', password: 'p' }), 403, undefined, 'only an admin creates users');
  assertError(t, await granted.request('PUT', '/v1/users/ne-victim/grants', { body: { grants: [] } }), 403, undefined, 'only an admin changes grants');
  assertError(t, await admin.post('/v1/users', { username: 'ne-a1', password: 'p', grants: [{ action: 'admin' }] }), 403, 'root', 'a non-root admin gives admin at create');
  assertError(t, await put(admin, '/v1/users/ne-victim/grants', { grants: [{ action: 'admin' }] }), 403, 'root', 'a non-root admin gives admin');
  t.equal((await root.post('/v1/users', { username: 'ne-a2', password: 'p', grants: [{ action: 'admin' }] })).status, 201, 'root gives admin');
  t.equal((await put(root, '/v1/users/ne-victim/grants', { grants: [{ action: 'admin' }] })).status, 200, 'root gives admin by PUT');
  t.equal((await put(root, '/v1/users/ne-victim/grants', { grants: [{ action: 'consume', patterns: ['v'] }] })).status, 200);
  t.equal((await put(admin, '/v1/users/ne-victim/grants', { grants: [{ action: 'produce', patterns: ['*'] }] })).status, 200, 'an admin gives other grants');
  assertError(t, await put(admin, '/v1/users/ac-admin/grants', { grants: [] }), 403, 'own grants', 'no one changes their own grants');
  assertError(t, await put(root, '/v1/users/admin/grants', { grants: [{ action: 'admin' }] }), 403, 'root', "root's grants never change, not even by root");
  assertError(t, await put(admin, '/v1/users/admin/grants', { grants: [] }), 403, 'root', "nor by an admin");
  assertError(t, await admin.delete('/v1/users/admin'), 403, 'root', 'root cannot be deleted');
  assertError(t, await root.delete('/v1/users/admin'), 403, 'root', 'not even by root');
  assertError(t, await admin.delete('/v1/users/ac-admin'), 403, 'own account', 'no one deletes their own account');
  assertError(t, await put(admin, '/v1/users/admin/password', { new_password: 'hijack' }), 403, 'root', "only root changes root's password");
  assertError(t, await put(granted, '/v1/users/ne-victim/password', { new_password: 'hijack' }), 403, 'own password', "a non-admin changes nobody else's password");
  assertError(t, await put(granted, '/v1/users/ne-nobody/password', { new_password: 'x' }), 403, undefined, 'not even a missing user (no 404)');
  assertError(t, await put(granted, '/v1/users/ac-granted/password', { new_password: 'granted-2' }), 403, 'current_password', 'own password without current_password');
  assertError(t, await put(granted, '/v1/users/ac-granted/password', { new_password: 'granted-2', current_password: 'wrong' }), 403, 'current_password', 'own password with a wrong current_password');
  t.equal((await granted.get('/v1/topics')).status, 200, 'the password is unchanged');
  t.equal((await put(granted, '/v1/users/ac-granted/password', { new_password: 'granted-2', current_password: 'granted-pass' })).status, 204, 'own password with current_password');
  assertError(t, await granted.get('/v1/topics'), 401, undefined, 'old password on the next request');
  t.equal((await new Client(node.url, basicAuth('ac-granted', 'granted-2')).get('/v1/topics')).status, 200);
  passwords['ac-granted'] = 'granted-2';
  t.equal((await put(admin, '/v1/users/ne-victim/password', { new_password: 'reset' })).status, 204, 'an admin resets without current_password');
  t.equal((await new Client(node.url, basicAuth('ne-victim', 'reset')).get('/v1/topics')).status, 200);
});

t.test('a grants change takes effect on the next request', async (t) => {
  const stranger = as('ac-stranger');
  assertError(t, await stranger.post('/v1/topics/acc-main/produce', 'x', { contentType: 'application/octet-stream' }), 403, 'produce');
  await must(root.request('PUT', '/v1/users/ac-stranger/grants', { body: { grants: [{ action: 'produce', patterns: ['acc-main'] }, { action: 'consume', patterns: ['zz-*'] }] } }), 200, 'grant');
  t.equal((await stranger.post('/v1/topics/acc-main/produce', 'x', { contentType: 'application/octet-stream' })).status, 202, 'granted at once');
  await must(root.request('PUT', '/v1/users/ac-stranger/grants', { body: { grants: [{ action: 'produce', patterns: ['zz-*'] }, { action: 'consume', patterns: ['zz-*'] }] } }), 200, 'revoke');
  assertError(t, await stranger.post('/v1/topics/acc-main/produce', 'x', { contentType: 'application/octet-stream' }), 403, 'produce', 'revoked at once');
});

t.test('list topics is filtered after the page is cut; next_page_token stays set', async (t) => {
  for (const name of ['zz-1', 'zz-2']) await must(root.post('/v1/topics', { name }), 201, name);
  const walk = async (client: Client) => {
    const names: string[] = [];
    let token = '';
    let shortPages = 0;
    for (let page = 0; page < 100; page++) {
      const res = await client.get(`/v1/topics?limit=2${token ? `&page_token=${token}` : ''}`);
      t.equal(res.status, 200);
      const body = res.json();
      names.push(...body.topics.map((topic: { name: string }) => topic.name));
      token = body.next_page_token;
      if (token === '') break;
      if (body.topics.length < 2) shortPages++;
    }
    return { names, shortPages };
  };
  const stranger = await walk(as('ac-stranger'));
  t.same(stranger.names, ['zz-1', 'zz-2'], 'only topics the stranger has a grant on');
  t.ok(stranger.shortPages > 0, `short pages with a token (${stranger.shortPages})`);
  const owner = await walk(as('ac-owner'));
  t.ok(owner.names.includes('acc-main') && owner.names.includes('acc-aux'), 'the owner sees what it owns without any grant');
  t.notOk(owner.names.includes('zz-1'));
  const all = await walk(root);
  t.ok(all.names.includes('zz-1') && all.names.includes('acc-main'), 'root sees everything');
});

t.test('security off: every check passes; only the remote items answer 403 (NOTES 8)', async (t) => {
  const open = await startNodeFor(t, { security: false });
  const anon = new Client(open.url, null);
  for (const name of ['acc-main', 'acc-aux', 'acc-del-none', 'acc-kid-none']) await must(anon.post('/v1/topics', { name }), 201, name);
  await must(anon.post('/v1/users', { username: 'ac-target', password: 'p' }), 201, 'ac-target');
  await must(anon.post('/v1/users', { username: 'ac-del-none', password: 'p' }), 201, 'ac-del-none');
  const remoteItems = /\/(pause|resume|skip)$|remotes/;
  for (const route of routes) {
    const body = route.body?.('none');
    const path = route.path('none');
    const res = await anon.request(route.method, path, { body, contentType: route.contentType ?? (body === undefined ? null : 'application/json') });
    // The root admin's column says what a caller allowed everything gets.
    const expected = remoteItems.test(path) ? 403 : route.expect[6];
    const allowed = Array.isArray(expected) ? expected : [expected];
    t.ok(allowed.includes(res.status), `${route.method} ${path}: ${allowed.join('|')} (got ${res.status} ${res.text.slice(0, 120)})`);
  }
});
