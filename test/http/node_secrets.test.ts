// Goal (issue 40 point 4): a node started under umask 022 creates its data dir 0700 and every file in it 0600
// (raft.sqlite-wal included, which sqlite creates with the database file's mode); a failed login writes a warn line
// with the username and the peer address; no password (given, set for a user, or guessed wrong) appears in any log
// line or any data file; --admin-password on the command line logs a warning naming the file and environment forms.
// Method: black box. `sh -c 'umask 022; exec node dist/src/main.js ...'` on a data dir the node creates itself; a
// topic produced to, consumed and acked (so partition workers write their files), a user made and used, wrong
// passwords for a known and an unknown user; the data dir walked while the node runs (sqlite's -wal and -shm exist
// only then), then searched byte by byte after a graceful stop, with the node's whole output.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, pollUntil } from '../helpers/http.js';
import { basicAuth } from '../helpers/node.js';

const mainJs = fileURLToPath(new URL('../../src/main.js', import.meta.url));
const adminPassword = 'admin-secret-4f1c9';
const bobPassword = 'bob-secret-8d2e7';
const wrongPasswords = ['wrong-guess-3a6b1', 'unknown-guess-9c5d2'];

/** Every path under dir, with its mode bits (permissions only). */
async function walk(dir: string): Promise<Array<{ path: string; dir: boolean; mode: number }>> {
  const found: Array<{ path: string; dir: boolean; mode: number }> = [];
  const pending = [dir];
  for (let step = 0; step < 10_000 && pending.length > 0; step++) {
    const at = pending.pop()!;
    const info = await stat(at);
    found.push({ path: at, dir: info.isDirectory(), mode: info.mode & 0o777 });
    if (info.isDirectory()) for (const name of await readdir(at)) pending.push(join(at, name));
  }
  return found;
}

t.test('modes under umask 022, the failed-login line, and no password anywhere', async (t) => {
  const parent = await mkdtemp(join(tmpdir(), 'svc-secrets-'));
  t.teardown(() => rm(parent, { recursive: true, force: true }));
  const dataDir = join(parent, 'data');
  const child = spawn('/bin/sh', ['-c', 'umask 022; exec "$0" "$@"', process.execPath, mainJs, '--port', '0', '--host', '127.0.0.1',
    '--data-dir', dataDir, '--admin-password', adminPassword, '--profile', 'test_min'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const port = await pollUntil(async () => {
    const match = /"port":(\d+)[^\n]*"msg":"listening"|"msg":"listening"[^\n]*"port":(\d+)/.exec(output);
    return match ? Number(match[1] ?? match[2]) : undefined;
  }, 30_000, 20);
  if (port === undefined) return t.fail(`node listens: ${output.slice(0, 2000)}`);
  const url = `http://127.0.0.1:${port}`;
  const admin = new Client(url, basicAuth('admin', adminPassword));
  t.ok(await pollUntil(async () => ((await admin.get('/readyz')).status === 200 ? true : undefined), 15_000), 'ready');

  t.equal((await admin.post('/v1/topics', { name: 'kept', partitions: 3 })).status, 201);
  t.equal((await admin.post('/v1/users', { username: 'bob', password: bobPassword, grants: [{ action: 'consume', patterns: ['kept'] }] })).status, 201);
  t.equal((await admin.post('/v1/topics/kept/produce?partition=0', { n: 1 })).status, 202);
  const bob = new Client(url, basicAuth('bob', bobPassword));
  const consumed = await bob.get('/v1/topics/kept/consume?partition=0&wait=5s');
  t.equal(consumed.status, 200, 'bob consumes with his password');
  const handle = encodeURIComponent(consumed.json().receipt_handle);
  t.equal((await bob.post(`/v1/topics/kept/ack?receipt_handle=${handle}`, undefined, { contentType: 'application/json' })).status, 204);

  t.equal((await admin.get('/v1/topics', { auth: basicAuth('admin', wrongPasswords[0]!) })).status, 401);
  t.equal((await admin.get('/v1/topics', { auth: basicAuth('nobody', wrongPasswords[1]!) })).status, 401);
  const warned = await pollUntil(async () => {
    const lines = output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
    const failed = lines.filter((l) => l.msg === 'login failed');
    return failed.length >= 2 ? failed : undefined;
  }, 5_000);
  t.same(warned?.map((l) => [l.level, l.username, l.peer]), [[40, 'admin', '127.0.0.1'], [40, 'nobody', '127.0.0.1']],
    'one warn line per failed login, with the username and the peer address');
  t.match(output, /"level":40[^\n]*--admin-password shows in ps[^\n]*--admin-password-file FILE or SVC_ADMIN_PASSWORD/,
    'the password flag is warned of, naming the file and environment forms');

  const entries = await walk(dataDir);
  const names = entries.map((e) => e.path.slice(dataDir.length));
  t.ok(names.includes('/metadata/raft.sqlite-wal'), 'the walk sees sqlite\'s WAL');
  t.ok(names.some((n) => n.endsWith('.log')), 'and a partition segment');
  t.ok(names.some((n) => n.endsWith('cursors.log')), 'and a cursor log');
  t.same(entries.filter((e) => e.dir && e.mode !== 0o700).map((e) => `${e.path} ${e.mode.toString(8)}`), [], 'every directory 0700');
  t.same(entries.filter((e) => !e.dir && e.mode !== 0o600).map((e) => `${e.path} ${e.mode.toString(8)}`), [], 'every file 0600');

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'graceful stop');
  // Each password as typed, and each credential as it travelled (the base64 of user:password).
  const secrets = [adminPassword, bobPassword, ...wrongPasswords,
    ...[['admin', adminPassword], ['bob', bobPassword], ['admin', wrongPasswords[0]!], ['nobody', wrongPasswords[1]!]]
      .map(([user, password]) => basicAuth(user!, password!).slice('Basic '.length))];
  const files = (await walk(dataDir)).filter((e) => !e.dir);
  t.ok(files.length >= 5, `${files.length} data files searched`);
  for (const entry of files) {
    const bytes = await readFile(entry.path);
    t.same(secrets.filter((secret) => bytes.includes(secret)), [], `${entry.path.slice(dataDir.length)} holds no password`);
  }
  t.same(secrets.filter((secret) => output.includes(secret)), [], 'no log line holds a password');
});
