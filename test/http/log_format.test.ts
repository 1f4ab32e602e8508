// Goal: stdout is pure JSON lines (one pino record per line, from every thread), and the root admin's generated
// password banner goes to stderr only, beside the admin-password file it names (spec §5: root admin at first start).
// Method: black box. A secured node started without any admin password on a fresh data dir, a produce and a
// consume so the partition workers run, then SIGTERM; stdout and stderr are collected apart.
import t from 'tap';
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, pollUntil } from '../helpers/http.js';
import { basicAuth, makeDataDir, removeDataDir } from '../helpers/node.js';

const mainJs = fileURLToPath(new URL('../../src/main.js', import.meta.url));

t.test('generated password on stderr, stdout all JSON lines', async (t) => {
  const dataDir = await makeDataDir();
  t.teardown(() => removeDataDir(dataDir));
  const child = spawn(process.execPath, [mainJs, '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--profile', 'test_min'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: envWithout('SVC_ADMIN_PASSWORD'),
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const port = await pollUntil(async () => {
    const match = /"msg":"listening"[^\n]*"port":(\d+)|"port":(\d+)[^\n]*"msg":"listening"/.exec(stdout);
    return match ? Number(match[1] ?? match[2]) : undefined;
  }, 20_000, 20);
  t.ok(port, `node listens (stdout: ${stdout.slice(0, 2000)}; stderr: ${stderr.slice(0, 2000)})`);
  if (port === undefined) return;

  const password = (await readFile(join(dataDir, 'admin-password'), 'utf8')).trim();
  t.ok(password.length >= 16, 'a generated password is saved');
  t.match(stderr, `Log in as user "admin" with password: ${password}`, 'the banner is on stderr');
  t.notMatch(stdout, password, 'stdout never carries the password');

  const admin = new Client(`http://127.0.0.1:${port}`, basicAuth('admin', password));
  t.equal((await admin.post('/v1/topics', { name: 'logs', partitions: 3 })).status, 201, 'the generated password logs in');
  t.equal((await admin.post('/v1/topics/logs/produce', { n: 1 })).status, 202);
  t.equal((await admin.get('/v1/topics/logs/consume?wait=2s')).status, 200);

  child.kill('SIGTERM');
  t.equal(await exited, 0, 'graceful stop');
  const lines = stdout.split('\n').filter((line) => line.length > 0);
  t.ok(lines.length > 0, 'the node logged on stdout');
  for (const line of lines) {
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      record = undefined;
    }
    if (typeof record !== 'object' || record === null || !('msg' in record) || !('level' in record)) {
      t.fail(`stdout line is not a pino JSON record: ${line}`);
      return;
    }
  }
  t.pass(`${lines.length} stdout lines, each a JSON record`);
  const banner = /\nRoot admin created\. Log in as user "admin" with password: \S+\n\(saved to [^\n]*\)\n\n/;
  t.equal(stderr.replace(banner, ''), '', 'stderr holds the banner and nothing else: every thread logs JSON on stdout');
});

function envWithout(name: string): NodeJS.ProcessEnv {
  const env = { ...process.env };
  delete env[name];
  return env;
}
