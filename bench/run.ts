// Entry of `npm run bench -- <scenario>` (node dist/bench/run.js <scenario> [options]); bench/README.md explains
// the figures. Scenario `produce` measures, in one run: the HTTP floor (bench/hello_world_server.ts), single
// produce and batch produce against a broker node it starts itself (or --url). Runs on the bench process's main
// thread with the load generator (bench/load.ts); servers are child processes (bench/node_process.ts), stopped
// and their data dirs removed before it exits, also on error and Ctrl-C.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatInt, runLoad, type ClientKind, type LoadRequest, type LoadResult } from './load.js';
import { readMachineBusyCpuMs, readProcessCpuMs, readThreadCpuMs, startChildServer, type ChildServer } from './node_process.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const helloWorldScript = fileURLToPath(new URL('./hello_world_server.js', import.meta.url));
const brokerScriptDefault = fileURLToPath(new URL('../src/main.js', import.meta.url));

interface BenchOptions {
  scenario: string;
  url: string | null;
  user: string;
  password: string | null;
  topic: string | null;
  partitions: number;
  connections: number;
  batchConnections: number;
  durationSec: number;
  warmupSec: number;
  messageBytes: number;
  batch: number;
  client: ClientKind;
  json: boolean;
  skipFloor: boolean;
  serverPid: number | null;
  nodeScript: string;
  nodeArgs: string[];
}

const usage = `usage: node dist/bench/run.js produce [options]   (npm run bench -- produce [options])
  --url U                 broker to target (default: start one: node dist/src/main.js on a free loopback port)
  --user X --password P   Basic credentials for --url (default user admin)
  --topic T               use this existing topic (default: create bench-<time> with --partitions)
  --partitions N          partitions of the created topic (default 6)
  --connections N         connections for the floor and single produce (default 256)
  --batch-connections N   connections for batch produce (default 16)
  --duration S            measured seconds per run (default 10); --warmup S before each (default 2)
  --message-bytes B       payload bytes per message, a JSON object, >= 8 (default 100)
  --batch N               messages per batch request, 1..1000 (default 1000)
  --client net|undici     load generator client (default net; see bench/README.md)
  --skip-floor            do not measure the hello-world floor
  --server-pid PID        with --url: the server process whose CPU to report
  --node-script PATH      broker entry to start (default dist/src/main.js); --node-arg A adds a flag (repeatable)
  --json                  also write bench/results/<scenario>-<ISO time>.json`;

function parseOptions(argv: string[]): BenchOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      url: { type: 'string' }, user: { type: 'string' }, password: { type: 'string' }, topic: { type: 'string' },
      partitions: { type: 'string' }, connections: { type: 'string' }, 'batch-connections': { type: 'string' },
      duration: { type: 'string' }, warmup: { type: 'string' }, 'message-bytes': { type: 'string' },
      batch: { type: 'string' }, client: { type: 'string' }, json: { type: 'boolean' },
      'skip-floor': { type: 'boolean' }, 'server-pid': { type: 'string' }, 'node-script': { type: 'string' },
      'node-arg': { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length !== 1) throw new UsageError(values.help ? '' : 'give exactly one scenario');
  const client = values.client ?? 'net';
  if (client !== 'net' && client !== 'undici') throw new UsageError(`--client must be net or undici, got ${client}`);
  const url = values.url?.replace(/\/+$/, '') ?? null;
  if (url !== null) checkLoopbackUrl(url);
  return {
    scenario: positionals[0]!,
    url,
    user: values.user ?? 'admin',
    password: values.password ?? null,
    topic: values.topic ?? null,
    partitions: intOption('partitions', values.partitions, 6, 3, 108),
    connections: intOption('connections', values.connections, 256, 1, 10_000),
    batchConnections: intOption('batch-connections', values['batch-connections'], 16, 1, 10_000),
    durationSec: numberOption('duration', values.duration, 10, 0.5, 3600),
    warmupSec: numberOption('warmup', values.warmup, 2, 0, 600),
    messageBytes: intOption('message-bytes', values['message-bytes'], 100, 8, 1024 * 1024),
    batch: intOption('batch', values.batch, 1000, 1, 1000),
    client,
    json: values.json ?? false,
    skipFloor: values['skip-floor'] ?? false,
    serverPid: values['server-pid'] === undefined ? null : intOption('server-pid', values['server-pid'], 0, 1, 2 ** 31),
    nodeScript: values['node-script'] ?? brokerScriptDefault,
    nodeArgs: values['node-arg'] ?? [],
  };
}

class UsageError extends Error {}

/** The load loops are heavy by design, so they only ever target this machine. */
function checkLoopbackUrl(text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--url ${text} is not a URL`);
  }
  if (url.protocol !== 'http:') throw new UsageError(`--url must be http:// (plain HTTP), got ${url.protocol}`);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
    throw new UsageError(`--url must be a loopback address (127.0.0.1, localhost, [::1]), got ${url.hostname}`);
  }
}

function numberOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max) throw new UsageError(`--${name} must be ${min}..${max}`);
  return value;
}

function intOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  const value = numberOption(name, text, fallback, min, max);
  if (!Number.isInteger(value)) throw new UsageError(`--${name} must be an integer`);
  return value;
}

// ---------------------------------------------------------------------------------------------------------------
// Request shapes.

/** A JSON object of exactly `bytes` bytes: {"d":"xxx..."}. */
function makePayload(bytes: number): Buffer {
  const payload = Buffer.from(`{"d":"${'x'.repeat(bytes - 8)}"}`);
  if (payload.length !== bytes) throw new Error(`payload is ${payload.length} bytes, wanted ${bytes}`);
  return payload;
}

/** {"messages":[{"payload":<payload>}, ...]} with `count` copies of payload. */
function makeBatchBody(payload: Buffer, count: number): Buffer {
  const entry = `{"payload":${payload.toString('utf8')}}`;
  return Buffer.from(`{"messages":[${new Array<string>(count).fill(entry).join(',')}]}`);
}

function basicAuth(user: string, password: string): string {
  return 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
}

function produceRequest(topic: string, body: Buffer, authorization: string | null, batch: boolean): LoadRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (authorization !== null) headers['authorization'] = authorization;
  const path = `/v1/topics/${encodeURIComponent(topic)}/produce${batch ? '/batch' : ''}`;
  return { method: 'POST', path, headers, body };
}

// ---------------------------------------------------------------------------------------------------------------
// One measured run.

interface RunSpec {
  name: string;
  url: string;
  request: LoadRequest;
  connections: number;
  messagesPerRequest: number;
  serverPid: number | null;
  server: ChildServer | null;
}

interface RunFigures {
  name: string;
  target: string;
  client: ClientKind;
  connections: number;
  durationSec: number;
  messagesPerRequest: number;
  requestBodyBytes: number;
  /** Requests answered 202 inside the window. */
  acceptedRequests: number;
  reqPerSec: number;
  msgsPerSec: number;
  payloadMBPerSec: number;
  latencyMs: LoadResult['latencyMs'];
  statusCounts: Record<string, number>;
  errorCounts: Record<string, number>;
  clientCpuPercent: number;
  /** Bench process CPU per response (any status), µs: the load generator's own cost. */
  clientCpuUsPerRequest: number;
  serverCpuPercent: number | null;
  /** The server's threads that used at least 1% of a core in the window, busiest first; main = the main thread
   * (the broker's front thread). Threads started or ended inside the window are left out. */
  serverThreads: Array<{ tid: number; main: boolean; cpuPercent: number }>;
  /** CPU that neither the bench process nor the server used during the window (other processes, the kernel's
   * share not billed to either), % of one core. High values mean a noisy machine. */
  otherCpuPercent: number | null;
  connectionsOpened: number;
  abandonedInFlight: number;
}

async function measure(options: BenchOptions, spec: RunSpec): Promise<RunFigures> {
  const controller = new AbortController();
  void spec.server?.exited.then(() => controller.abort());
  const cpu: CpuSamples = { serverStart: null, serverMs: null, machineStart: null, machineMs: null,
    threadsStart: null, threadsMs: null };
  process.stderr.write(`${spec.name}: ${spec.connections} connections, ${options.warmupSec}s warm-up + ` +
    `${options.durationSec}s, ${spec.request.body.length} B bodies, client ${options.client}, ${spec.url}\n`);
  const result = await runLoad({
    label: spec.name, url: spec.url, request: spec.request, connections: spec.connections,
    warmupMs: options.warmupSec * 1000, durationMs: options.durationSec * 1000, client: options.client,
    expectedStatus: 202, signal: controller.signal,
    onWindowStart: () => {
      cpu.serverStart = spec.serverPid === null ? null : readProcessCpuMs(spec.serverPid);
      cpu.machineStart = readMachineBusyCpuMs();
      cpu.threadsStart = spec.serverPid === null ? null : readThreadCpuMs(spec.serverPid);
    },
    onWindowEnd: () => {
      const serverEnd = spec.serverPid === null ? null : readProcessCpuMs(spec.serverPid);
      cpu.serverMs = serverEnd === null || cpu.serverStart === null ? null : serverEnd - cpu.serverStart;
      const machineEnd = readMachineBusyCpuMs();
      cpu.machineMs = machineEnd === null || cpu.machineStart === null ? null : machineEnd - cpu.machineStart;
      cpu.threadsMs = threadDeltas(cpu.threadsStart, spec.serverPid === null ? null : readThreadCpuMs(spec.serverPid));
    },
    onProgress: (line) => process.stderr.write(line + '\n'),
  });
  if (spec.server?.hasExited()) {
    throw new Error(`${spec.server.name} exited during ${spec.name}; its output:\n${spec.server.outputTail()}`);
  }
  return figures(options, spec, result, cpu);
}

/** CPU samples (ms) around the measured window; null where they could not be read. */
interface CpuSamples {
  serverStart: number | null;
  serverMs: number | null;
  machineStart: number | null;
  machineMs: number | null;
  threadsStart: Map<number, number> | null;
  /** CPU ms per thread id over the window. */
  threadsMs: Map<number, number> | null;
}

function threadDeltas(start: Map<number, number> | null, end: Map<number, number> | null): Map<number, number> | null {
  if (start === null || end === null) return null;
  const deltas = new Map<number, number>();
  for (const [tid, ms] of end) {
    const before = start.get(tid);
    if (before !== undefined) deltas.set(tid, ms - before);
  }
  return deltas;
}

function busyThreads(cpu: CpuSamples, serverPid: number | null, windowMs: number): RunFigures['serverThreads'] {
  const threads: RunFigures['serverThreads'] = [];
  for (const [tid, ms] of cpu.threadsMs ?? []) {
    const cpuPercent = (ms / windowMs) * 100;
    if (cpuPercent >= 1) threads.push({ tid, main: tid === serverPid, cpuPercent });
  }
  return threads.sort((a, b) => b.cpuPercent - a.cpuPercent);
}

function figures(options: BenchOptions, spec: RunSpec, result: LoadResult, cpu: CpuSamples): RunFigures {
  const seconds = result.windowMs / 1000;
  const serverCpuPercent = cpu.serverMs === null ? null : (cpu.serverMs / result.windowMs) * 100;
  const machineCpuPercent = cpu.machineMs === null ? null : (cpu.machineMs / result.windowMs) * 100;
  const reqPerSec = result.okResponses / seconds;
  return {
    name: spec.name,
    target: spec.url,
    client: result.client,
    connections: spec.connections,
    durationSec: seconds,
    messagesPerRequest: spec.messagesPerRequest,
    requestBodyBytes: spec.request.body.length,
    acceptedRequests: result.okResponses,
    reqPerSec,
    msgsPerSec: reqPerSec * spec.messagesPerRequest,
    payloadMBPerSec: (reqPerSec * spec.messagesPerRequest * options.messageBytes) / 1e6,
    latencyMs: result.latencyMs,
    statusCounts: result.statusCounts,
    errorCounts: result.errorCounts,
    clientCpuPercent: result.clientCpuPercent,
    clientCpuUsPerRequest: result.clientCpuUsPerResponse,
    serverCpuPercent,
    serverThreads: busyThreads(cpu, spec.serverPid, result.windowMs),
    otherCpuPercent: machineCpuPercent === null || serverCpuPercent === null ? null
      : Math.max(0, machineCpuPercent - serverCpuPercent - result.clientCpuPercent),
    connectionsOpened: result.connectionsOpened,
    abandonedInFlight: result.abandonedInFlight,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Servers.

/** Everything to undo before exit: child servers to stop and temp dirs to remove. */
const cleanups: Array<() => Promise<void>> = [];

async function cleanup(): Promise<void> {
  while (cleanups.length > 0) {
    const step = cleanups.pop()!;
    await step().catch((error: unknown) => process.stderr.write(`cleanup: ${String(error)}\n`));
  }
}

async function startHelloWorld(): Promise<ChildServer> {
  const server = await startChildServer({ name: 'hello-world', script: helloWorldScript,
    args: ['--port', '0', '--host', '127.0.0.1'] });
  cleanups.push(async () => void (await server.stop()));
  return server;
}

interface BrokerTarget {
  url: string;
  authorization: string | null;
  server: ChildServer | null;
  serverPid: number | null;
}

async function startBroker(options: BenchOptions): Promise<BrokerTarget> {
  if (options.url !== null) {
    const authorization = options.password === null ? null : basicAuth(options.user, options.password);
    return { url: options.url, authorization, server: null, serverPid: options.serverPid };
  }
  if (!existsSync(options.nodeScript)) throw new Error(`${options.nodeScript} does not exist: build the broker first`);
  const dataDir = await mkdtemp(join(os.tmpdir(), 'svc-bench-'));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  const password = randomBytes(18).toString('base64url');
  const server = await startChildServer({ name: 'broker', script: options.nodeScript,
    args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--security', 'on',
      '--admin-password', password, ...options.nodeArgs] });
  cleanups.push(async () => void (await server.stop()));
  return { url: server.url, authorization: basicAuth('admin', password), server, serverPid: server.pid };
}

/** POST /v1/topics as the bench user; the spec answers 201 with the Topic. */
async function createTopic(target: BrokerTarget, name: string, partitions: number): Promise<void> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.authorization !== null) headers['authorization'] = target.authorization;
  let response: Response;
  try {
    response = await fetch(`${target.url}/v1/topics`, {
      method: 'POST', headers, body: JSON.stringify({ name, partitions }), signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    throw new Error(`POST ${target.url}/v1/topics failed: ${String(error)}${cause ? ` (${String(cause)})` : ''}`);
  }
  const text = await response.text();
  if (response.status !== 201) {
    const output = target.server === null ? '' : `\nbroker output:\n${target.server.outputTail()}`;
    throw new Error(`POST /v1/topics {"name":"${name}"} answered ${response.status}: ${text.slice(0, 500)}${output}`);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Scenario: produce.

interface ProduceReport {
  scenario: 'produce';
  startedAt: string;
  topic: string;
  target: string;
  options: Record<string, unknown>;
  runs: RunFigures[];
  ratios: ProduceRatios;
  failures: string[];
}

async function runProduce(options: BenchOptions): Promise<ProduceReport> {
  const startedAt = new Date().toISOString();
  const topic = options.topic ?? `bench-${Date.now()}`;
  const payload = makePayload(options.messageBytes);
  const batchBody = makeBatchBody(payload, options.batch);
  const runs: RunFigures[] = [];
  const failures: string[] = [];
  if (!options.skipFloor) {
    try {
      runs.push(await measureFloor(options, topic, payload));
    } catch (error) {
      failures.push(error instanceof Error ? error.message : String(error));
    }
    await sleep(1000);
  }
  let target: BrokerTarget | null = null;
  try {
    target = await startBroker(options);
    if (options.topic === null) await createTopic(target, topic, options.partitions);
    const base = { url: target.url, serverPid: target.serverPid, server: target.server };
    runs.push(await measure(options, { ...base, name: 'single produce', connections: options.connections,
      request: produceRequest(topic, payload, target.authorization, false), messagesPerRequest: 1 }));
    await sleep(1000);
    runs.push(await measure(options, { ...base, name: `batch produce (${options.batch})`,
      connections: options.batchConnections, request: produceRequest(topic, batchBody, target.authorization, true),
      messagesPerRequest: options.batch }));
  } catch (error) {
    failures.push(error instanceof Error ? error.message : String(error));
  }
  for (const run of runs) {
    if (run.acceptedRequests === 0) failures.push(`${run.name}: no 202 responses (errors: ${formatErrors(run.errorCounts)})`);
  }
  return { scenario: 'produce', startedAt, topic, target: target === null ? 'none' : target.url,
    options: reportedOptions(options), runs, ratios: ratios(runs), failures };
}

async function measureFloor(options: BenchOptions, topic: string, payload: Buffer): Promise<RunFigures> {
  const hello = await startHelloWorld();
  try {
    // Same path, headers, body and connections as single produce; the credentials are only bytes to it.
    const request = produceRequest(topic, payload, basicAuth('admin', 'x'.repeat(24)), false);
    return await measure(options, { name: 'http floor (hello world)', url: hello.url, request,
      connections: options.connections, messagesPerRequest: 1, serverPid: hello.pid, server: hello });
  } finally {
    await hello.stop();
  }
}

function reportedOptions(options: BenchOptions): Record<string, unknown> {
  const { password: _password, nodeScript, ...rest } = options;
  return { ...rest, nodeScript: options.url === null ? nodeScript : null };
}

interface ProduceRatios {
  /** Single produce req/s as a fraction of the hello-world floor's req/s (1.0 = the broker costs nothing). */
  singleReqPerSecOfFloor: number | null;
  batchMsgsPerSec: number | null;
  /** Batch produce msgs/s over single produce msgs/s: what batching buys. */
  batchMsgsPerSecOverSingle: number | null;
}

function ratios(runs: RunFigures[]): ProduceRatios {
  const floor = runs.find((run) => run.name.startsWith('http floor'));
  const single = runs.find((run) => run.name === 'single produce');
  const batch = runs.find((run) => run.name.startsWith('batch produce'));
  const ratio = (a: number | undefined, b: number | undefined): number | null =>
    a === undefined || b === undefined || b === 0 ? null : a / b;
  return {
    singleReqPerSecOfFloor: ratio(single?.reqPerSec, floor?.reqPerSec),
    batchMsgsPerSec: batch ? batch.msgsPerSec : null,
    batchMsgsPerSecOverSingle: ratio(batch?.msgsPerSec, single?.msgsPerSec),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Output.

function fixed(value: number, digits: number): string {
  return value.toFixed(digits);
}

function percent(value: number | null): string {
  return value === null ? 'n/a' : `${fixed(value, 0)}%`;
}

/** "182% (main 71%, 60%, 38%)": the process, then its main thread and the next two busiest threads. */
function serverCpu(run: RunFigures): string {
  if (run.serverCpuPercent === null) return 'n/a';
  const main = run.serverThreads.find((thread) => thread.main);
  const others = run.serverThreads.filter((thread) => !thread.main).slice(0, 2);
  const parts = [`main ${fixed(main?.cpuPercent ?? 0, 0)}%`, ...others.map((t) => `${fixed(t.cpuPercent, 0)}%`)];
  return `${percent(run.serverCpuPercent)} (${parts.join(', ')})`;
}

function formatErrors(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? 'none' : entries.map(([key, count]) => `${key}:${count}`).join(' ');
}

function printTable(report: ProduceReport): void {
  const header = ['scenario', 'conns', 'req/s', 'msgs/s', 'MB/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms',
    'errors', 'client CPU', 'client µs/req', 'server CPU',
    'other CPU'];
  const rows = report.runs.map((run) => [run.name, String(run.connections), formatInt(run.reqPerSec),
    formatInt(run.msgsPerSec), fixed(run.payloadMBPerSec, 1), fixed(run.latencyMs.p50, 2), fixed(run.latencyMs.p90, 2),
    fixed(run.latencyMs.p99, 2), fixed(run.latencyMs.p999, 2), fixed(run.latencyMs.max, 2),
    formatErrors(run.errorCounts), `${fixed(run.clientCpuPercent, 0)}%`, fixed(run.clientCpuUsPerRequest, 1),
    serverCpu(run), percent(run.otherCpuPercent)]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]): string =>
    cells.map((cell, i) => (i === 0 || i === 10 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ');
  const out = [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
  const r = report.ratios;
  out.push('');
  if (r.singleReqPerSecOfFloor !== null) {
    out.push(`single produce req/s / http floor req/s: ${fixed(r.singleReqPerSecOfFloor, 3)}`);
  }
  if (r.batchMsgsPerSec !== null) out.push(`batch produce msgs/s: ${formatInt(r.batchMsgsPerSec)}`);
  if (r.batchMsgsPerSecOverSingle !== null) {
    out.push(`batch msgs/s / single msgs/s: ${fixed(r.batchMsgsPerSecOverSingle, 1)}`);
  }
  out.push(`MB = 10^6 payload bytes; CPU % is of one core (${os.cpus().length} cores here); ` +
    `latencies from request write to last response byte, completions inside the measured window`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}

function gitCommit(): { commit: string | null; dirty: boolean | null } {
  const git = (args: string[]): string | null => {
    try {
      return execFileSync('git', ['--no-optional-locks', ...args], { cwd: repoRoot, encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return null;
    }
  };
  const commit = git(['rev-parse', 'HEAD'])?.trim() ?? null;
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  return { commit, dirty: status === null ? null : status.trim().length > 0 };
}

function writeJson(report: ProduceReport): string {
  const cpus = os.cpus();
  const machine = { cpuModel: cpus[0]?.model ?? 'unknown', cpuCount: cpus.length, totalMemoryBytes: os.totalmem(),
    loadAverage1m: os.loadavg()[0] ?? null, node: process.version, platform: `${os.platform()} ${os.release()} ${os.arch()}` };
  const dir = join(repoRoot, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${report.scenario}-${report.startedAt.replace(/:/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ ...report, ...gitCommit(), machine }, null, 2) + '\n');
  return file;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function main(): Promise<number> {
  let options: BenchOptions;
  try {
    options = parseOptions(process.argv.slice(2));
    if (options.scenario !== 'produce') throw new UsageError(`unknown scenario ${options.scenario}; known: produce`);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${message ? message + '\n' : ''}${usage}\n`);
    return 2;
  }
  const report = await runProduce(options);
  printTable(report);
  if (options.json) process.stdout.write(`wrote ${writeJson(report)}\n`);
  return report.failures.length === 0 ? 0 : 1;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping servers\n`);
    void cleanup().then(() => process.exit(130));
  });
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    await cleanup();
    process.exit(1);
  });
