// Goal: authentication (spec §5 items 1, 2, 5 and the root admin's creation; NOTES 11 throttle): 401 with
// WWW-Authenticate for missing, wrong and malformed credentials (a wrong one twice in a row too); the right password
// works (twice, past the cache); security off needs no credentials; a first secured start without --admin-password generates, prints once
// and saves a password (mode 0600) that works and survives a restart; a second process on a held data dir fails.
// Method: black box. One secured node from the helper; a security-off node; for the generated password, node
// processes spawned here directly (the helper always passes --admin-password). Wrong passwords for admin stay under
// 5 in a row until the last subtest, which checks the throttle.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startNodeFor, removeDataDir, makeDataDir, basicAuth, adminPassword, type StartedNode } from '../helpers/node.js';
import { Client, assertError } from '../helpers/http.js';

const mainJs = fileURLToPath(new URL('../../src/main.js', import.meta.url));
const REALM = 'Basic realm="svc"';

let node: StartedNode;
let anon: Client;

t.before(async () => {
  node = await startNodeFor(t);
  anon = new Client(node.url, null);
});

function assert401(t: Test, res: Awaited<ReturnType<Client['get']>>, what: string): void {
  assertError(t, res, 401, undefined, what);
  t.equal(res.headers['www-authenticate'], REALM, `${what}: WWW-Authenticate`);
}

t.test('no credentials: 401 with WWW-Authenticate Basic realm svc', async (t) => {
  assert401(t, await anon.get('/v1/topics'), 'GET /v1/topics');
  assert401(t, await anon.get('/v1/topics/whatever'), 'GET /v1/topics/whatever');
  assert401(t, await anon.post('/v1/topics', { name: 'au-anon' }), 'POST /v1/topics');
  assert401(t, await anon.delete('/v1/topics/whatever'), 'DELETE /v1/topics/whatever');
});

t.test('wrong password: 401; right password: 200, twice; wrong after a cached right one: 401', async (t) => {
  assert401(t, await anon.get('/v1/topics', { auth: basicAuth('admin', 'wrong-password') }), 'wrong password');
  const first = await anon.get('/v1/topics', { auth: node.auth });
  t.equal(first.status, 200, 'right password');
  t.ok(Array.isArray(first.json().topics));
  t.equal((await anon.get('/v1/topics', { auth: node.auth })).status, 200, 'right password again (cached)');
  assert401(t, await anon.get('/v1/topics', { auth: basicAuth('admin', adminPassword + 'x') }), 'wrong password after a cached right one');
  // The authenticator keeps the last value it hashed: the same wrong value again must not find the right one's entry.
  assert401(t, await anon.get('/v1/topics', { auth: basicAuth('admin', adminPassword + 'x') }), 'the same wrong password again');
  assert401(t, await anon.get('/v1/topics', { auth: basicAuth('admin', adminPassword.slice(0, -1)) }), 'password prefix');
  t.equal((await anon.get('/v1/topics', { auth: node.auth })).status, 200, 'right password still works');
  const created = await anon.post('/v1/topics', { name: 'au-created' }, { auth: node.auth });
  t.equal(created.status, 201);
  t.equal(created.json().owner, 'admin');
});

t.test('unknown user and malformed Authorization: 401', async (t) => {
  const malformed: Array<[string, string]> = [
    ['unknown user', basicAuth('ghost', 'whatever')],
    ['empty username', basicAuth('', adminPassword)],
    ['scheme only', 'Basic'],
    ['scheme and space', 'Basic '],
    ['not base64', 'Basic !!!not*base64!!!'],
    ['no colon', 'Basic ' + Buffer.from('ghostpassword').toString('base64')],
    ['Bearer scheme', 'Bearer abc.def.ghi'],
    ['no scheme', Buffer.from(`admin:${adminPassword}`).toString('base64')],
    ['garbage', '%%%'],
  ];
  for (const [what, value] of malformed) assert401(t, await anon.get('/v1/topics', { auth: value }), what);
  t.equal((await anon.get('/v1/topics', { auth: node.auth })).status, 200, 'right password still works');
});

t.test('security off: no credentials needed', async (t) => {
  const open = await startNodeFor(t, { security: false });
  const client = new Client(open.url, null);
  const created = await client.post('/v1/topics', { name: 'au-open' });
  t.equal(created.status, 201, `create without credentials (got ${created.text.slice(0, 200)})`);
  t.notOk('owner' in created.json(), 'owner absent when security was off (spec §2 Topic)');
  const list = await client.get('/v1/topics');
  t.equal(list.status, 200);
  t.same(list.json().topics.map((topic: { name: string }) => topic.name), ['au-open']);
  const got = await client.get('/v1/topics/au-open');
  t.equal(got.status, 200);
  t.notOk('owner' in got.json(), 'owner absent on get');
  t.notOk('www-authenticate' in got.headers, 'no challenge');
  // Spec §5.5: with security off every request passes, whatever credentials it carries.
  const withWrong = await client.get('/v1/topics', { auth: basicAuth('ghost', 'nope') });
  t.equal(withWrong.status, 200, 'credentials are not checked');
  // The content-type rule still applies (§5.6).
  assertError(t, await client.post('/v1/topics', JSON.stringify({ name: 'au-open2' }), { contentType: null }), 415);
});

interface Spawned {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function spawnMain(args: string[]): Spawned {
  const child = spawn(process.execPath, [mainJs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

/** Resolves to the port once the process logs "listening"; rejects when it exits first or after 60 s (a node loads
 *  native modules first, which takes many seconds on a busy machine). */
async function listeningPort(spawned: Spawned): Promise<number> {
  const deadline = Date.now() + 60_000;
  let exited = false;
  void spawned.exited.then(() => (exited = true));
  for (let i = 0; i < 6000 && Date.now() < deadline; i++) {
    const match = /"msg":"listening"[^\n]*"port":(\d+)|"port":(\d+)[^\n]*"msg":"listening"/.exec(spawned.output());
    if (match) return Number(match[1] ?? match[2]);
    if (exited) throw new Error(`node exited before listening:\n${spawned.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`node did not listen within 60 s:\n${spawned.output()}`);
}

async function stopSpawned(spawned: Spawned, signal: NodeJS.Signals): Promise<number | null> {
  if (spawned.child.exitCode === null && spawned.child.signalCode === null) spawned.child.kill(signal);
  return spawned.exited;
}

function count(haystack: string, needle: string): number {
  let n = 0;
  for (let at = haystack.indexOf(needle); at >= 0 && n < 1000; at = haystack.indexOf(needle, at + 1)) n++;
  return n;
}

t.test('first secured start without --admin-password generates, prints once and saves the password', async (t) => {
  const dataDir = await makeDataDir();
  const baseArgs = ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--profile', 'test_min'];
  const spawned: Spawned[] = [];
  t.teardown(async () => {
    for (const s of spawned) await stopSpawned(s, 'SIGKILL');
    await removeDataDir(dataDir);
  });

  const first = spawnMain(baseArgs);
  spawned.push(first);
  const port = await listeningPort(first);
  const url = `http://127.0.0.1:${port}`;

  const file = join(dataDir, 'admin-password');
  const info = await stat(file);
  t.equal(info.mode & 0o777, 0o600, 'admin-password has mode 0600');
  const password = (await readFile(file, 'utf8')).trim();
  t.ok(password.length >= 16, `a generated password of ${password.length} characters`);
  t.ok(Buffer.byteLength(password) <= 72, 'at most 72 bytes (spec §2 User)');
  t.equal(count(first.output(), password), 1, 'printed exactly once');

  const ok = await new Client(url, basicAuth('admin', password)).get('/v1/topics');
  t.equal(ok.status, 200, 'the generated password works');
  const wrong = await new Client(url, basicAuth('admin', adminPassword)).get('/v1/topics');
  t.equal(wrong.status, 401, 'another password does not');

  // A second process on the same data dir must refuse to start while the first holds it.
  const second = spawnMain(baseArgs);
  spawned.push(second);
  const code = await Promise.race([second.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 60_000).unref())]);
  t.not(code, 'running', 'the second process exits (waited up to 60 s)');
  t.not(code, 0, `the second process exits non-zero (got ${code})`);
  t.match(second.output(), /lock|data.?dir/i, 'its message mentions the lock or data dir');
  t.notMatch(second.output(), /"msg":"listening"/, 'it never listened');
  t.equal((await new Client(url, basicAuth('admin', password)).get('/v1/topics')).status, 200, 'the first still serves');

  t.equal(await stopSpawned(first, 'SIGTERM'), 0, 'the first exits 0 on SIGTERM');

  // A restart keeps the saved password and does not print it again.
  const again = spawnMain(baseArgs);
  spawned.push(again);
  const port2 = await listeningPort(again);
  t.equal(count(again.output(), password), 0, 'not printed on a later start');
  const afterRestart = await new Client(`http://127.0.0.1:${port2}`, basicAuth('admin', password)).get('/v1/topics');
  t.equal(afterRestart.status, 200, 'the saved password works after a restart');
  t.equal(await stopSpawned(again, 'SIGTERM'), 0);
});

t.test('failed-login throttle (NOTES 11): 5 wrong passwords, then 429 with Retry-After even for the right one', async (t) => {
  // Last on purpose: it locks admin on this node for 12 s.
  for (let i = 1; i <= 5; i++) {
    const res = await anon.get('/v1/topics', { auth: basicAuth('admin', `wrong-${i}`) });
    t.equal(res.status, 401, `wrong password ${i}: 401`);
  }
  const locked = await anon.get('/v1/topics', { auth: node.auth });
  assertError(t, locked, 429, undefined, 'right password right after the fifth failure');
  const retryAfter = Number(locked.headers['retry-after']);
  t.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 12, `Retry-After ${locked.headers['retry-after']} in 1..12`);
  const stillLocked = await anon.get('/v1/topics', { auth: basicAuth('admin', 'wrong-6') });
  t.equal(stillLocked.status, 429, 'a wrong password is also 429');
  // Another user is not throttled by admin's failures.
  assert401(t, await anon.get('/v1/topics', { auth: basicAuth('ghost', 'x') }), 'other user still 401');
});
