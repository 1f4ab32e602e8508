// Goal: a request a browser marks as sent by another origin (Sec-Fetch-Site other than same-origin or none, or an
// Origin other than the request's own scheme and Host, `null` included) is answered 403 {"error"} naming the rule
// before credentials or any work, on every /v1 route and /metrics: nothing is leased, nothing stored (issue 40
// point 1, docs/decisions.md "Cross-origin requests"). Requests marked same-origin or none, with the node's own
// Origin, or with no mark at all (clients that are not browsers) work as before; the public routes (health, console
// files) answer whatever the mark, so a link to the console from elsewhere still opens it. Every answer carries
// X-Content-Type-Options: nosniff (issue 40 point 4).
// Method: black box against one secured node; one message pinned to partition 0 of a fresh topic is the witness:
// after the refused consumes an ordinary consume still gets it, and a refused produce leaves partition 1 empty.
import t, { type Test } from 'tap';
import { assertError, assertPlainText, Client, pollUntil, type HttpResponse } from '../helpers/http.js';
import { startNodeFor, type StartedNode } from '../helpers/node.js';

let node: StartedNode;
let admin: Client;
let ownOrigin: string;

t.before(async () => {
  node = await startNodeFor(t);
  admin = new Client(node.url, node.auth);
  ownOrigin = `http://127.0.0.1:${node.port}`;
  const ready = await pollUntil(async () => ((await admin.get('/readyz')).status === 200 ? true : undefined), 30_000, 100);
  if (!ready) throw new Error(`node not ready:\n${node.output()}`);
  t.equal((await admin.post('/v1/topics', { name: 'witness', partitions: 3 })).status, 201);
  t.equal((await admin.post('/v1/topics/witness/produce?partition=0', { n: 1 })).status, 202);
  // A replay takes no lease: once it finds the message, a consume would lease it at once.
  const stored = await pollUntil(async () => ((await admin.get('/v1/topics/witness/consume?partition=0&offset=0')).status === 200 ? true : undefined), 10_000);
  if (!stored) throw new Error('the witness message never became readable');
});

/** The marks a browser adds to a request made by a page of another origin (or of no origin at all: `null`). */
const foreignMarks: Array<[string, Record<string, string>, RegExp]> = [
  ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }, /Sec-Fetch-Site/],
  ['Sec-Fetch-Site: same-site (another port of this host)', { 'sec-fetch-site': 'same-site' }, /Sec-Fetch-Site/],
  ['a foreign Origin', { origin: 'http://127.0.0.1:1' }, /Origin/],
  ['Origin: null', { origin: 'null' }, /Origin/],
  ['a foreign Origin beside Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin', origin: 'http://evil.example' }, /Origin/],
];

function assertRefused(t: Test, res: HttpResponse, rule: RegExp, what: string): void {
  assertError(t, res, 403, /^cross-origin request refused: /, what);
  t.match(res.status === 403 ? res.json().error : res.text, rule, `${what}: the error names the rule`);
  t.notOk('www-authenticate' in res.headers, `${what}: no credentials asked of a refused request`);
}

t.test('foreign marks: 403 before credentials, and nothing leased or stored', async (t) => {
  for (const [what, headers, rule] of foreignMarks) {
    assertRefused(t, await admin.get('/v1/topics/witness/consume', { headers }), rule, `consume, ${what}`);
    assertRefused(t, await admin.get('/v1/topics/witness/consume', { headers, auth: null }), rule, `consume without credentials, ${what}`);
    assertRefused(t, await admin.post('/v1/topics/witness/produce?partition=1', { n: 2 }, { headers }), rule, `produce, ${what}`);
    assertRefused(t, await admin.post('/v1/users', { username: 'mallory', password: 'mallory-password' }, { headers }), rule, `create user, ${what}`);
    assertRefused(t, await admin.get('/metrics', { headers }), rule, `metrics, ${what}`);
  }
  const consumed = await admin.get('/v1/topics/witness/consume?partition=0&wait=2s');
  t.equal(consumed.status, 200, 'the message was not leased by any refused consume');
  t.same(consumed.json().payload, { n: 1 });
  t.equal((await admin.get('/v1/topics/witness/consume?partition=1&offset=0')).status, 204, 'no refused produce stored a message');
  t.equal((await admin.get('/v1/users/mallory')).status, 404, 'no refused create made a user');
});

t.test('own marks and no marks: served as before', async (t) => {
  const cases: Array<[string, Record<string, string>]> = [
    ['no mark (a client that is not a browser)', {}],
    ['Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin' }],
    ['Sec-Fetch-Site: none (typed in the address bar)', { 'sec-fetch-site': 'none' }],
    ['the own Origin', { origin: ownOrigin }],
    ['the own Origin with https (TLS ended in a proxy)', { origin: `https://127.0.0.1:${node.port}` }],
    ['the own Origin beside same-origin', { origin: ownOrigin, 'sec-fetch-site': 'same-origin' }],
  ];
  let produced = 0;
  for (const [what, headers] of cases) {
    t.equal((await admin.get('/v1/topics/witness', { headers })).status, 200, `get topic, ${what}`);
    t.equal((await admin.post('/v1/topics/witness/produce?partition=2', { n: produced }, { headers })).status, 202, `produce, ${what}`);
    produced += 1;
    t.equal((await admin.get('/v1/topics/witness/consume', { headers, auth: null })).status, 401, `no credentials is still 401, ${what}`);
  }
  const replay = await admin.get(`/v1/topics/witness/consume?partition=2&offset=${produced - 1}`);
  t.equal(replay.status, 200, 'every accepted produce stored its message');
});

t.test('public routes answer whatever the mark: a link from elsewhere opens the console', async (t) => {
  for (const [what, headers] of foreignMarks) {
    t.equal((await admin.get('/healthz', { headers, auth: null })).status, 200, `/healthz, ${what}`);
    t.equal((await admin.get('/console', { headers, auth: null })).status, 200, `/console, ${what}`);
  }
});

t.test('X-Content-Type-Options: nosniff on every answer', async (t) => {
  const answers: Array<[string, HttpResponse, number]> = [
    ['200 JSON', await admin.get('/v1/topics'), 200],
    ['202 empty', await admin.post('/v1/topics/witness/produce', { n: 9 }), 202],
    ['204 replay past the end', await admin.get('/v1/topics/witness/consume?partition=0&offset=1000'), 204],
    ['400', await admin.get('/v1/topics?limit=x'), 400],
    ['401', await admin.get('/v1/topics', { auth: null }), 401],
    ['403 cross-origin', await admin.get('/v1/topics', { headers: { 'sec-fetch-site': 'cross-site' } }), 403],
    ['404 plain text', await admin.get('/nowhere'), 404],
    ['405 plain text', await admin.request('PUT', '/healthz'), 405],
    ['/healthz', await admin.get('/healthz', { auth: null }), 200],
    ['/console', await admin.get('/console', { auth: null }), 200],
    ['/metrics', await admin.get('/metrics'), 200],
  ];
  for (const [what, res, status] of answers) {
    t.equal(res.status, status, `${what}: status`);
    t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`);
  }
  assertPlainText(t, answers[6]![1], 404, 'unknown route');
});
