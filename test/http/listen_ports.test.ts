// Goal: a node refuses to start when its API, metrics or internal port is taken, naming the port, and the node
// that holds the port keeps serving alone (issue 27 point 2: uWS's default SO_REUSEPORT let a second broker share
// the port, and the kernel split connections between two brokers with different data).
// Method: black box. One node holds a port; a second node process is started on that port as its API port, its
// metrics address and its internal (node-to-node) port in turn; each must exit non-zero naming the port, and the
// first node must still answer every request with its own data.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '../helpers/http.js';
import { adminPassword, startNodeFor } from '../helpers/node.js';

const mainJs = fileURLToPath(new URL('../../src/main.js', import.meta.url));
const holder = await startNodeFor(t);
const client = new Client(holder.url, holder.auth);
t.equal((await client.post('/v1/topics', { name: 'held' })).status, 201);

/** Starts a second node with these flags; resolves with its exit code and output once it ends (bounded: 20 s). */
async function secondNode(args: string[]): Promise<{ code: number | null; output: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-listen-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const secretFile = join(dir, 'secret');
  await writeFile(secretFile, 'a-cluster-secret-of-at-least-thirty-two-characters', { mode: 0o600 });
  const child = spawn(process.execPath, [mainJs, '--host', '127.0.0.1', '--data-dir', join(dir, 'data'), '--profile', 'test_min',
    '--admin-password', adminPassword, ...args.map((a) => a.replace('SECRET_FILE', secretFile))], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output };
}

async function holderStillAlone(t: Test): Promise<void> {
  for (let i = 0; i < 20; i++) {
    // Fresh connections each time: with a shared port the kernel would hand some to the second node.
    const res = await new Client(holder.url, holder.auth).get('/v1/topics/held', { headers: { connection: 'close' } });
    if (res.status !== 200) return void t.fail(`request ${i} answered ${res.status}`);
  }
  t.pass('20 fresh connections all reached the node holding the port');
}

t.test('the API port', async (t) => {
  const { code, output } = await secondNode(['--port', String(holder.port)]);
  t.equal(code, 1, 'the second node exits with status 1');
  t.match(output, `cannot listen on 127.0.0.1:${holder.port}: the port is in use`);
  t.notMatch(output, /"msg":"listening"/, 'it never listened');
  await holderStillAlone(t);
});

t.test('the metrics port', async (t) => {
  const { code, output } = await secondNode(['--port', '0', '--set', `http.metrics_addr=127.0.0.1:${holder.port}`]);
  t.equal(code, 1);
  t.match(output, `cannot listen on 127.0.0.1:${holder.port}: the port is in use`);
  await holderStillAlone(t);
});

t.test('the internal port', async (t) => {
  const { code, output } = await secondNode(['--port', '0', '--node-id', '1', '--internal-port', String(holder.port),
    '--bootstrap', `1=127.0.0.1:${holder.port},2=127.0.0.1:1`, '--cluster-secret-file', 'SECRET_FILE']);
  t.equal(code, 1);
  t.match(output, `EADDRINUSE: address already in use 127.0.0.1:${holder.port}`);
  await holderStillAlone(t);
});
