// Goal: the access rules of fan-out (spec §5 permissions by route): a create with parent needs the create grant on
// the name and ownership of the parent (or admin); an attach needs ownership of both topics (or admin); a detach
// ownership of either (or admin); listing children any grant on the parent or its ownership.
// Method: black box. One secured node; two owners (each with a create grant on its own prefix only), a reader holding a consume grant
// on one parent, and an admin. Topics are created by their owners; each refusal is checked to change nothing.
import t from 'tap';
import { startNodeFor, basicAuth, type StartedNode } from '../helpers/node.js';
import { Client, assertError, type HttpResponse } from '../helpers/http.js';

let node: StartedNode;
let root: Client;
let alice: Client;
let bob: Client;
let reader: Client;
let admin: Client;

async function must(res: Promise<HttpResponse>, status: number, what: string): Promise<HttpResponse> {
  const answer = await res;
  if (answer.status !== status) throw new Error(`setup ${what}: ${answer.status} ${answer.text}`);
  return answer;
}

t.before(async () => {
  node = await startNodeFor(t);
  root = new Client(node.url, node.auth);
  const users: [string, unknown[]][] = [
    ['fx-alice', [{ action: 'create', patterns: ['fx-a-*'] }]],
    ['fx-bob', [{ action: 'create', patterns: ['fx-b-*'] }]],
    ['fx-reader', [{ action: 'consume', patterns: ['fx-a-parent'] }]],
    ['fx-admin', [{ action: 'admin' }]],
  ];
  for (const [username, grants] of users) await must(root.post('/v1/users', { username, password: `${username}-pass`, grants }), 201, username);
  const as = (u: string): Client => new Client(node.url, basicAuth(u, `${u}-pass`));
  alice = as('fx-alice');
  bob = as('fx-bob');
  reader = as('fx-reader');
  admin = as('fx-admin');
  for (const name of ['fx-a-parent', 'fx-a-kid', 'fx-a-kid2']) await must(alice.post('/v1/topics', { name }), 201, name);
  for (const name of ['fx-b-parent', 'fx-b-kid']) await must(bob.post('/v1/topics', { name }), 201, name);
});

async function childrenOf(name: string): Promise<string[]> {
  return (await root.get(`/v1/topics/${name}`)).json().children ?? [];
}

t.test('create with parent: ownership of the parent or admin, besides the create grant', async (t) => {
  assertError(t, await bob.post('/v1/topics', { name: 'fx-b-new', parent: 'fx-a-parent' }), 403, 'fx-a-parent', "bob under alice's parent");
  t.equal((await root.get('/v1/topics/fx-b-new')).status, 404, 'nothing created');
  assertError(t, await reader.post('/v1/topics', { name: 'fx-r-new', parent: 'fx-a-parent' }), 403, 'create', 'no create grant');
  const own = await alice.post('/v1/topics', { name: 'fx-a-new', parent: 'fx-a-parent' });
  t.equal(own.status, 201, `alice under her own parent (${own.text.slice(0, 120)})`);
  t.equal(own.json().owner, 'fx-alice');
  t.equal((await admin.post('/v1/topics', { name: 'fx-adm-new', parent: 'fx-b-parent' })).status, 201, 'an admin under anyone');
  t.same(await childrenOf('fx-a-parent'), ['fx-a-new']);
  t.same(await childrenOf('fx-b-parent'), ['fx-adm-new']);
});

t.test('attach: ownership of both topics, or admin', async (t) => {
  assertError(t, await alice.post('/v1/topics/fx-a-parent/children', { child: 'fx-b-kid' }), 403, 'fx-b-kid', 'owner of the parent only');
  assertError(t, await bob.post('/v1/topics/fx-a-parent/children', { child: 'fx-b-kid' }), 403, 'fx-a-parent', 'owner of the child only');
  assertError(t, await reader.post('/v1/topics/fx-a-parent/children', { child: 'fx-a-kid' }), 403, undefined, 'a grant on the parent is not enough');
  t.same(await childrenOf('fx-a-parent'), ['fx-a-new'], 'nothing linked');
  t.equal((await alice.post('/v1/topics/fx-a-parent/children', { child: 'fx-a-kid' })).status, 200, 'owner of both');
  t.equal((await admin.post('/v1/topics/fx-b-parent/children', { child: 'fx-b-kid' })).status, 200, 'an admin');
  t.same(await childrenOf('fx-a-parent'), ['fx-a-new', 'fx-a-kid']);
});

t.test('listing children: any grant on the parent, or ownership', async (t) => {
  const listed = await reader.get('/v1/topics/fx-a-parent/children');
  t.equal(listed.status, 200, 'a consume grant on the parent');
  t.same(listed.json().children.map((c: { name: string }) => c.name), ['fx-a-new', 'fx-a-kid']);
  t.equal((await alice.get('/v1/topics/fx-a-parent/children')).status, 200, 'the owner');
  assertError(t, await bob.get('/v1/topics/fx-a-parent/children'), 403, undefined, 'neither grant nor ownership');
  assertError(t, await reader.get('/v1/topics/fx-b-parent/children'), 403, undefined, 'a grant on another topic');
});

t.test('detach: ownership of either topic, or admin', async (t) => {
  // fx-a-kid2 (alice's) under bob's parent, linked by an admin: each owner may detach it.
  await must(admin.post('/v1/topics/fx-b-parent/children', { child: 'fx-a-kid2' }), 200, 'cross-owner link');
  assertError(t, await reader.delete('/v1/topics/fx-a-parent/children/fx-a-kid'), 403, undefined, 'a grant is not enough');
  t.ok((await childrenOf('fx-a-parent')).includes('fx-a-kid'), 'still linked');
  t.equal((await alice.delete('/v1/topics/fx-b-parent/children/fx-a-kid2')).status, 204, 'owner of the child only');
  await must(admin.post('/v1/topics/fx-b-parent/children', { child: 'fx-a-kid2' }), 200, 'linked again');
  t.equal((await bob.delete('/v1/topics/fx-b-parent/children/fx-a-kid2')).status, 204, 'owner of the parent only');
  assertError(t, await bob.delete('/v1/topics/fx-a-parent/children/fx-a-kid'), 403, undefined, 'owner of neither');
  t.equal((await admin.delete('/v1/topics/fx-a-parent/children/fx-a-kid')).status, 204, 'an admin');
  t.same(await childrenOf('fx-a-parent'), ['fx-a-new']);
  t.same(await childrenOf('fx-b-parent'), ['fx-adm-new', 'fx-b-kid']);
});
