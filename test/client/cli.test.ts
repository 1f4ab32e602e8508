// Goal: the svc CLI (issue 32 point 3) drives every command against a real node: topics, produce (argument and stdin
// in batches), consume (--max, --wait, --no-ack, --follow acking after printing, --partition --offset replay), ack,
// children, schema, users, cluster members and decommission, cancel, forget, rebalance and moves (issue 41 point 7);
// tables by default, JSON with --json; the password only from
// SVC_PASSWORD or --password-file (its closing LF or CRLF dropped, as the node does); a failure prints the API's
// error text and exits non-zero.
// Method: black box. The built CLI runs as a child process (node dist/src/client/cli.js) against one secured node.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { adminPassword, startNodeFor, type StartedNode } from '../helpers/node.js';
import { pollUntil } from '../helpers/http.js';

const cliJs = fileURLToPath(new URL('../../src/client/cli.js', import.meta.url));
let node: StartedNode;
let dir: string;

interface Run { code: number | null; stdout: string; stderr: string }

function svc(args: string[], options: { input?: string; env?: Record<string, string>; user?: string | null } = {}): Promise<Run> {
  const user = options.user === undefined ? ['--user', 'admin'] : options.user === null ? [] : ['--user', options.user];
  const child = spawn(process.execPath, [cliJs, '--url', node.url, ...user, ...args],
    { env: { ...process.env, SVC_PASSWORD: adminPassword, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  child.stdin.end(options.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) => child.once('close', (code) => {
    clearTimeout(timer);
    resolve({ code, stdout, stderr });
  }));
}

const jsonLines = (text: string): any[] => text.trim().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));

t.before(async () => {
  node = await startNodeFor(t);
  dir = await mkdtemp(join(tmpdir(), 'svc-cli-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await pollUntil(async () => ((await fetch(`${node.url}/readyz`)).status === 200 ? true : undefined), 15_000, 100);
});

t.test('topics create, list, get, patch, delete; tables and --json', async (t) => {
  const created = await svc(['topics', 'create', 'orders', '--partitions', '3', '--visibility-timeout-ms', '60000']);
  t.equal(created.code, 0, created.stderr);
  t.match(created.stdout, /^NAME\s+PARTITIONS/, 'a table with a header');
  t.match(created.stdout, /orders\s+3/);
  await svc(['topics', 'create', 'scratch']);
  const listed = await svc(['--json', 'topics', 'list']);
  t.same(JSON.parse(listed.stdout).map((x: { name: string }) => x.name), ['orders', 'scratch']);
  const got = await svc(['--json', 'topics', 'get', 'orders', '--partition', '2']);
  t.same(JSON.parse(got.stdout).partition_stats.map((s: { index: number }) => s.index), [2]);
  t.match((await svc(['topics', 'get', 'orders'])).stdout, /^PARTITION\s+STATUS/);
  t.equal(JSON.parse((await svc(['--json', 'topics', 'patch', 'orders', '--retention-ms', '0'])).stdout).retention_ms, 0);
  t.equal((await svc(['topics', 'delete', 'scratch'])).code, 0);
  const gone = await svc(['topics', 'get', 'scratch']);
  t.not(gone.code, 0, 'non-zero exit');
  t.match(gone.stderr, /404: topic scratch not found/, "the API's error text");
  const bad = await svc(['topics', 'create', 'ORDERS']);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /409/);
});

t.test('produce from an argument and from stdin in batches; consume, ack, replay', async (t) => {
  t.equal((await svc(['produce', 'orders', '{"n":0}', '--partition', '0'])).code, 0);
  const lines = Array.from({ length: 250 }, (_, i) => JSON.stringify({ n: i + 1 })).join('\n') + '\nplain text\n';
  const batch = await svc(['--json', 'produce', 'orders', '--batch-size', '100', '--partition', '1'], { input: lines });
  t.equal(batch.code, 0, batch.stderr);
  t.same(JSON.parse(batch.stdout), { stored: 251, requests: 3 }, '251 lines in 3 batch requests');
  const replay = await svc(['--json', 'consume', 'orders', '--partition', '1', '--offset', '249', '--max', '5']);
  t.same(jsonLines(replay.stdout).map((m) => m.payload), [{ n: 250 }, 'plain text'], 'replay to the end; text line kept as text');
  t.notOk(jsonLines(replay.stdout)[0].receipt_handle, 'no lease on replay');
  const first = await svc(['--json', 'consume', 'orders', '--partition', '0', '--wait', '10s']);
  t.same(jsonLines(first.stdout).map((m) => m.payload), [{ n: 0 }]);
  t.equal((await svc(['--json', 'consume', 'orders', '--partition', '0'])).stdout, '', 'acked after printing: nothing left');
  const leased = await svc(['--json', 'consume', 'orders', '--partition', '1', '--max', '2', '--no-ack']);
  const handles = jsonLines(leased.stdout).map((m) => m.receipt_handle as string);
  t.equal(handles.length, 2);
  const acked = await svc(['--json', 'ack', 'orders', ...handles]);
  t.same(JSON.parse(acked.stdout).map((r: { status: number }) => r.status), [204, 204]);
  const again = await svc(['ack', 'orders', handles[0]!]);
  t.equal(again.code, 1, 'an ack of a settled lease fails');
  t.match(again.stdout, /410/);
});

t.test('consume --no-ack lets the lease run out; --follow acks after printing until interrupted', async (t) => {
  await svc(['topics', 'create', 'jobs', '--visibility-timeout-ms', '1000']);
  await svc(['produce', 'jobs', '{"job":1}']);
  // Long polls: the commit follows the 202 in the background, and a busy machine can take seconds over it.
  const peek = await svc(['--json', 'consume', 'jobs', '--no-ack', '--wait', '10s']);
  t.same(jsonLines(peek.stdout).map((m) => m.payload), [{ job: 1 }]);
  const back = await svc(['--json', 'consume', 'jobs', '--wait', '10s']);
  t.same(jsonLines(back.stdout).map((m) => m.payload), [{ job: 1 }], 'not acked: delivered again after the lease');
  await svc(['produce', 'jobs'], { input: '{"job":2}\n{"job":3}\n{"job":4}\n' });
  const child = spawn(process.execPath, [cliJs, '--url', node.url, '--user', 'admin', '--json', 'consume', 'jobs', '--follow', '--max', '10'],
    { env: { ...process.env, SVC_PASSWORD: adminPassword }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  t.ok(await pollUntil(async () => (jsonLines(out).length >= 3 ? true : undefined), 60_000, 50), 'three printed');
  child.kill('SIGINT');
  t.equal(await exited, 0, 'SIGINT ends the 10 s long poll at once and exits cleanly');
  t.same(jsonLines(out).map((m) => m.payload.job).sort(), [2, 3, 4]);
  t.equal((await svc(['--json', 'consume', 'jobs', '--wait', '1500ms'])).stdout, '', 'all acked: none comes back after the lease');
});

t.test('children and schema', async (t) => {
  await svc(['topics', 'create', 'copy']);
  const attached = await svc(['--json', 'children', 'attach', 'orders', 'copy']);
  t.same(JSON.parse(attached.stdout).children, ['copy']);
  t.match((await svc(['children', 'list', 'orders'])).stdout, /copy/);
  t.equal((await svc(['children', 'detach', 'orders', 'copy'])).code, 0);
  t.equal((await svc(['children', 'detach', 'orders', 'copy'])).code, 1);
  const file = join(dir, 'schema.json');
  await writeFile(file, JSON.stringify({ type: 'object' }));
  const set = await svc(['--json', 'schema', 'set', 'copy', file]);
  t.equal(JSON.parse(set.stdout).schema_version, 1);
  const got = await svc(['--json', 'schema', 'get', 'copy']);
  t.same(JSON.parse(got.stdout).versions, [{ version: 1, schema: { type: 'object' } }]);
  const refused = await svc(['produce', 'copy', '[1]']);
  t.equal(refused.code, 1);
  t.match(refused.stderr, /400: /);
});

t.test('users and cluster members; the password comes from the environment or a file only', async (t) => {
  const made = await svc(['--json', 'users', 'create', 'bob', '--grant', 'consume:orders', '--grant', 'produce:orders*'], { env: { SVC_NEW_PASSWORD: 'bob-password' } });
  t.equal(made.code, 0, made.stderr);
  t.same(JSON.parse(made.stdout).grants, [{ action: 'consume', patterns: ['orders'] }, { action: 'produce', patterns: ['orders*'] }]);
  t.match((await svc(['users', 'list'])).stdout, /bob\s+false\s+consume:orders produce:orders\*/);
  t.equal(JSON.parse((await svc(['--json', 'users', 'get', 'bob'])).stdout).username, 'bob');
  t.same(JSON.parse((await svc(['--json', 'users', 'grants', 'bob', '--grant', 'consume:orders'])).stdout).grants, [{ action: 'consume', patterns: ['orders'] }]);
  const passwordFile = join(dir, 'bob');
  await writeFile(passwordFile, 'bob-password\n');
  t.equal((await svc(['--password-file', passwordFile, 'topics', 'get', 'orders'], { user: 'bob', env: { SVC_PASSWORD: 'wrong' } })).code, 0, 'the file wins');
  // Issue 40 point 4: a file a Windows editor saved (CRLF) works as it does for the node's --admin-password-file.
  await writeFile(passwordFile, 'bob-password\r\n');
  const crlf = await svc(['--password-file', passwordFile, 'topics', 'get', 'orders'], { user: 'bob', env: { SVC_PASSWORD: 'wrong' } });
  t.equal(crlf.code, 0, `a password file ending in CRLF logs in (${crlf.stderr.trim()})`);
  const denied = await svc(['users', 'list'], { user: 'bob', env: { SVC_PASSWORD: 'bob-password' } });
  t.equal(denied.code, 1);
  t.match(denied.stderr, /403/);
  t.equal((await svc(['users', 'password', 'bob'], { env: { SVC_NEW_PASSWORD: 'bob-new-password' } })).code, 0);
  t.equal((await svc(['topics', 'list'], { user: 'bob', env: { SVC_PASSWORD: 'bob-new-password' } })).code, 0);
  t.equal((await svc(['users', 'delete', 'bob'])).code, 0);
  const flag = await svc(['--password', 'x', 'topics', 'list']);
  t.not(flag.code, 0, 'no --password flag');
  t.match(flag.stderr, /unknown option/);
  const none = await svc(['topics', 'list'], { env: { SVC_PASSWORD: '' }, user: null });
  t.match(none.stderr, /401/, 'without --user no credentials are sent');
  const members = await svc(['cluster', 'members']);
  t.match(members.stdout, /^ID\s+ADDRESS\s+LIVENESS\s+LEADER/);
  t.match(members.stdout, /alive\s+true/);
  t.equal(JSON.parse((await svc(['--json', 'cluster', 'members', '--detail'])).stdout).length, 1);
});

t.test('cluster decommission (dry run, refused with reasons, data loss named), cancel, forget, rebalance, moves', async (t) => {
  const dry = await svc(['cluster', 'decommission', '1', '--dry-run']);
  t.equal(dry.code, 0, dry.stderr);
  t.match(dry.stdout, /^planned moves: none\nblocked by:\n/, 'the plan, then what blocks it');
  t.match(dry.stdout, /^ {2}below_min_voters: \S.*$/m, 'each reason: code and message');
  t.match(dry.stdout, /^ {2}no_receivers: \S.*$/m);
  const dryJson = JSON.parse((await svc(['--json', 'cluster', 'decommission', '1', '--dry-run'])).stdout);
  t.same(dryJson.moves, []);
  t.equal(dryJson.member.decommissioning, false);
  const never = await svc(['cluster', 'decommission', '1']);
  t.equal(never.code, 1);
  t.match(never.stderr, /^svc: 409: decommission of member 1 could never complete safely/, "the API's error text");
  t.match(never.stderr, /^svc: {3}below_min_voters: \S.*$/m, 'then each reason of the 409');
  t.match(never.stderr, /^svc: {3}no_receivers: \S.*$/m);
  const loss = await svc(['cluster', 'decommission', '1', '--dry-run', '--accept-data-loss']);
  t.match(loss.stderr, /^svc: warning: data loss accepted: \d+ records only member 1 held would be lost$/m, 'a warning with the count');
  t.match((await svc(['cluster', 'decommission', '--help'])).stdout, /--accept-data-loss\s+DATA LOSS: /, 'the help names it data loss');
  const cancel = await svc(['cluster', 'cancel', '1']);
  t.equal(cancel.code, 1);
  t.match(cancel.stderr, /^svc: 409: member 1 is not being decommissioned$/m);
  const forget = await svc(['cluster', 'forget', '9']);
  t.equal(forget.code, 1);
  t.match(forget.stderr, /^svc: 404: member 9 not found$/m);
  t.equal((await svc(['cluster', 'rebalance', '--dry-run'])).stdout, 'balanced: no moves planned\n');
  t.equal((await svc(['cluster', 'rebalance'])).stdout, 'balanced: no moves started\n');
  t.same(JSON.parse((await svc(['--json', 'cluster', 'rebalance'])).stdout), { moves: [] });
  t.match((await svc(['cluster', 'members'])).stdout, /^ID\s+.*\s+DECOMMISSIONING\s+MOVING_OFF\s+BLOCKED_BY\n1\s.*\sfalse\s+0$/m, 'moving off and blocked columns');
  // GET /v1/cluster/moves came with partition moves (NOTES 16); an older node answers 404.
  const moves = await svc(['cluster', 'moves']);
  if (moves.code === 1) {
    t.match(moves.stderr, /^svc: 404: /);
    return;
  }
  t.equal(moves.stdout, 'no partition moves\n');
  const abort = await svc(['cluster', 'abort-move', 'orders', '0']);
  t.equal(abort.code, 1);
  t.match(abort.stderr, /^svc: 409: /);
  const move = await svc(['cluster', 'move', 'orders', '0', '9']);
  t.equal(move.code, 1);
  t.match(move.stderr, /^svc: 400: .*destination/);
});
