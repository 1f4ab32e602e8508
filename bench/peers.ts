// The peers `npm run bench` measures beside the broker (bench/README.md "Baselines"): wrk (a C HTTP load generator)
// against the same node and request as produce-single, and Redis Streams with appendfsync always doing the same
// work: XADD with redis-benchmark (Redis's C client), pipelined XADD, and XREADGROUP COUNT max + XACK with a few
// ioredis consumers. Each is found on PATH (scripts/install-peers.sh installs them from Debian); when one is
// missing the scenario says so and goes on. Redis is started here on a free loopback port in a temp dir and
// stopped by run.ts's cleanup. Bench process main thread; the tools are child processes, each bounded in time.
import { execFileSync, spawn } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import { cleanups, CpuWindow, errorText, newHistogram, recordUs, latencySummaryMs, sleep, type ThroughputFigures } from './common.js';
import { readExitedChildrenCpuMs } from './node_process.js';

export const installHint = 'scripts/install-peers.sh';

/** The absolute path of command on PATH, or null. */
export function onPath(command: string): string | null {
  try {
    return execFileSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || null;
  } catch {
    return null;
  }
}

/**
 * Null when redis-server and redis-benchmark are both on PATH; otherwise the line a report lists under missing
 * peers (the Redis baseline is skipped).
 */
export function redisBaselineMissing(): string | null {
  if (onPath('redis-server') !== null && onPath('redis-benchmark') !== null) return null;
  return `redis-server not installed: no Redis baseline (${installHint}, or apt-get install redis-server redis-tools)`;
}

/** Runs a tool to its end (or kills it after timeoutMs); its stdout, stderr, exit code and CPU. */
async function runTool(command: string, args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string;
  code: string; cpuMs: number | null; wallMs: number }> {
  const cpuBefore = readExitedChildrenCpuMs();
  const startMs = performance.now();
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout = (stdout + chunk).slice(0, 1_000_000)));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-20_000)));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<string>((resolve) => {
    child.once('exit', (exitCode, signal) => resolve(signal ?? String(exitCode)));
    child.once('error', (error) => resolve(`spawn error: ${error.message}`));
  });
  clearTimeout(timer);
  const cpuAfter = readExitedChildrenCpuMs();
  return { stdout, stderr, code, cpuMs: cpuBefore === null || cpuAfter === null ? null : cpuAfter - cpuBefore,
    wallMs: performance.now() - startMs };
}

// ---------------------------------------------------------------------------------------------------------------
// wrk.

export interface WrkSpec {
  name: string;
  url: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  connections: number;
  durationSec: number;
  messageBytes: number;
  /** Messages each request carries (a batch produce's batch size); 1 when absent. */
  messagesPerRequest?: number;
  serverPid: number | null;
}

/** Lua long-bracket string: no escaping needed as long as the text holds no "]==]". */
function luaString(text: string): string {
  if (text.includes(']==]')) throw new Error('wrk: request text holds ]==]');
  return `[==[${text}]==]`;
}

/** Writes dir/post.lua, which makes wrk POST body with headers on every request; returns its path. */
export function writeWrkScript(dir: string, body: Buffer, headers: Record<string, string>): string {
  const script = join(dir, 'post.lua');
  const lines = ['wrk.method = "POST"', `wrk.body = ${luaString(body.toString('latin1'))}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`wrk.headers[ ${luaString(name)} ] = ${luaString(value)}`);
  writeFileSync(script, lines.join('\n') + '\n');
  return script;
}

/** wrk -t1 -c<connections> with a Lua script for the POST, against the same node; its figures as a table row. */
export async function runWrk(spec: WrkSpec): Promise<ThroughputFigures> {
  const wrk = onPath('wrk');
  if (wrk === null) throw new Error(`wrk not installed (${installHint})`);
  const dir = await mkdtemp(join(os.tmpdir(), 'svc-bench-wrk-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const script = writeWrkScript(dir, spec.body, spec.headers);
  const seconds = Math.max(1, Math.round(spec.durationSec));
  const cpu = new CpuWindow(spec.serverPid);
  process.stderr.write(`${spec.name}: wrk -t1 -c${spec.connections} -d${seconds}s --latency, ${spec.url}${spec.path}\n`);
  cpu.start();
  const run = await runTool(wrk, ['-t1', `-c${spec.connections}`, `-d${seconds}s`, '--latency', '--timeout', '10s',
    '-s', script, `${spec.url}${spec.path}`], (seconds + 30) * 1000);
  cpu.end();
  if (run.code !== '0') throw new Error(`wrk exited ${run.code}: ${run.stderr.slice(-500)}${run.stdout.slice(-500)}`);
  return wrkFigures(spec, run.stdout, run.cpuMs, cpu.figures(run.wallMs, run.cpuMs === null ? undefined
    : (run.cpuMs / run.wallMs) * 100), seconds);
}

function wrkMs(text: string | undefined): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text ?? '');
  if (match === null) return NaN;
  const scale = { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm'];
  return Number(match[1]) * scale;
}

function wrkFigures(spec: WrkSpec, out: string, cpuMs: number | null, cpu: ReturnType<CpuWindow['figures']>,
  seconds: number): ThroughputFigures {
  const requests = Number(/(\d+) requests in ([\d.]+)(\w+)/.exec(out)?.[1] ?? NaN);
  const window = /\d+ requests in ([\d.]+\w+)/.exec(out)?.[1];
  const windowSec = Number.isNaN(wrkMs(window)) ? seconds : wrkMs(window) / 1000;
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0);
  const errorCounts: Record<string, number> = {};
  if (non2xx > 0) errorCounts['non-2xx'] = non2xx;
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  if (socket !== null) {
    ['connect', 'read', 'write', 'timeout'].forEach((kind, i) => {
      const count = Number(socket[i + 1]);
      if (count > 0) errorCounts[`socket-${kind}`] = count;
    });
  }
  const pct = (p: string): number => wrkMs(new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out)?.[1]);
  const max = wrkMs(/Latency\s+\S+\s+\S+\s+(\S+)/.exec(out)?.[1]);
  const ok = requests - non2xx;
  const reqPerSec = ok / windowSec;
  if (!Number.isFinite(reqPerSec)) throw new Error(`wrk: could not read its output:\n${out.slice(0, 2000)}`);
  const messagesPerRequest = spec.messagesPerRequest ?? 1;
  const msgsPerSec = reqPerSec * messagesPerRequest;
  return {
    name: spec.name, target: spec.url, client: 'wrk', connections: spec.connections, durationSec: windowSec,
    messagesPerRequest, requestBodyBytes: spec.body.length, acceptedRequests: ok, reqPerSec, msgsPerSec,
    payloadMBPerSec: (msgsPerSec * spec.messageBytes) / 1e6,
    latencyMs: { p50: pct('50'), p90: pct('90'), p99: pct('99'), p999: NaN, max, mean: NaN },
    statusCounts: {}, errorCounts, clientCpuPercent: cpu.clientCpuPercent,
    clientCpuUsPerRequest: cpuMs === null || requests === 0 ? NaN : (cpuMs * 1000) / requests,
    serverCpuPercent: cpu.serverCpuPercent, serverThreads: cpu.serverThreads, otherCpuPercent: cpu.otherCpuPercent,
    connectionsOpened: spec.connections, abandonedInFlight: 0, openLoop: null,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Redis.

export interface RedisPeer {
  port: number;
  pid: number;
  version: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(port));
    });
  });
}

/** redis-server on a free loopback port, data in a temp dir, AOF on with fsync before every reply, no RDB saves. */
export async function startRedis(): Promise<RedisPeer> {
  const binary = onPath('redis-server');
  if (binary === null) throw new Error(`redis-server not installed (${installHint}, or apt-get install redis-server redis-tools)`);
  const dir = await mkdtemp(join(os.tmpdir(), 'svc-bench-redis-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const port = await freePort();
  const child = spawn(binary, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes',
    '--appendfsync', 'always', '--save', '', '--daemonize', 'no', '--protected-mode', 'yes', '--logfile', ''],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output = (output + chunk).slice(-20_000)));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output = (output + chunk).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  cleanups.push(stop);
  const deadline = performance.now() + 10_000;
  while (!output.includes('Ready to accept connections')) {
    if (child.exitCode !== null || performance.now() > deadline) {
      await stop();
      throw new Error(`redis-server did not start: ${output.slice(-1000)}`);
    }
    await sleep(20);
  }
  const version = /Redis version=([\d.]+)|v=([\d.]+)/.exec(output);
  return { port, pid: child.pid!, version: version?.[1] ?? version?.[2] ?? 'unknown', stop };
}

export interface RedisBenchmarkSpec {
  name: string;
  redis: RedisPeer;
  connections: number;
  /** Commands per pipeline (-P); 1 = one XADD per round trip. */
  pipeline: number;
  /** Commands to send (-n); or, with durationSec instead, as many as a short calibration run says fill it. */
  requests?: number;
  durationSec?: number;
  stream: string;
  payload: Buffer;
}

/** redis-benchmark -c C -n N [-P P] --csv XADD <stream> * f <payload>: one stream entry of payload per command. */
export async function runRedisBenchmark(spec: RedisBenchmarkSpec): Promise<ThroughputFigures> {
  if (spec.requests !== undefined) return redisBenchmarkOnce(spec, spec.requests);
  // redis-benchmark runs a count, not a time: a short run first tells how many commands fill durationSec here.
  const calibration = await redisBenchmarkOnce({ ...spec, name: `${spec.name} (calibration)` },
    Math.max(1000, spec.connections * spec.pipeline * 20));
  const requests = Math.round(Math.min(50_000_000, Math.max(1000, calibration.msgsPerSec * (spec.durationSec ?? 5))));
  return redisBenchmarkOnce(spec, requests);
}

async function redisBenchmarkOnce(spec: RedisBenchmarkSpec, requests: number): Promise<ThroughputFigures> {
  const binary = onPath('redis-benchmark');
  if (binary === null) throw new Error(`redis-benchmark not installed (${installHint}, apt-get install redis-tools)`);
  const args = ['-h', '127.0.0.1', '-p', String(spec.redis.port), '-c', String(spec.connections), '-n',
    String(requests), '-P', String(spec.pipeline), '--csv', 'XADD', spec.stream, '*', 'f', spec.payload.toString('latin1')];
  process.stderr.write(`${spec.name}: redis-benchmark -c ${spec.connections} -n ${requests} -P ${spec.pipeline} ` +
    `XADD ${spec.stream} * f <${spec.payload.length} B>, appendfsync always\n`);
  const cpu = new CpuWindow(spec.redis.pid);
  cpu.start();
  const run = await runTool(binary, args, 300_000);
  cpu.end();
  // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
  // The test name holds the payload unescaped, so read the seven figures from the end of the line.
  const row = /^"XADD.*"([\d.]+)","([\d.]+)","([\d.]+)","([\d.]+)","([\d.]+)","([\d.]+)","([\d.]+)"\s*$/m.exec(run.stdout);
  if (run.code !== '0' || row === null) {
    throw new Error(`redis-benchmark exited ${run.code}: ${run.stderr.slice(-500)} ${run.stdout.slice(-500)}`);
  }
  const rps = Number(row[1]);
  const windowSec = requests / rps;
  const figures = cpu.figures(run.wallMs, run.cpuMs === null ? undefined : (run.cpuMs / run.wallMs) * 100);
  const errors: Record<string, number> = /error/i.test(run.stderr) ? { 'stderr-errors': 1 } : {};
  return {
    name: spec.name, target: `redis://127.0.0.1:${spec.redis.port}`, client: 'redis-benchmark',
    connections: spec.connections, durationSec: windowSec, messagesPerRequest: spec.pipeline,
    requestBodyBytes: spec.payload.length, acceptedRequests: requests, reqPerSec: rps / spec.pipeline,
    msgsPerSec: rps, payloadMBPerSec: (rps * spec.payload.length) / 1e6,
    latencyMs: { p50: Number(row[4]), p90: NaN, p99: Number(row[6]), p999: NaN, max: Number(row[7]), mean: Number(row[2]) },
    statusCounts: {}, errorCounts: errors, clientCpuPercent: figures.clientCpuPercent,
    clientCpuUsPerRequest: run.cpuMs === null ? NaN : (run.cpuMs * 1000) / (requests / spec.pipeline),
    serverCpuPercent: figures.serverCpuPercent, serverThreads: figures.serverThreads, otherCpuPercent: figures.otherCpuPercent,
    connectionsOpened: spec.connections, abandonedInFlight: 0, openLoop: null,
  };
}

export interface RedisConsumeFigures {
  name: string;
  consumers: number;
  count: number;
  prefilled: number;
  prefillSec: number;
  windowSec: number;
  drained: boolean;
  ackedMessages: number;
  msgsPerSec: number;
  payloadMBPerSec: number;
  /** One XREADGROUP + XACK round trip pair per sample. */
  latencyMs: ReturnType<typeof latencySummaryMs>;
  errorCounts: Record<string, number>;
  clientCpuPercent: number;
  serverCpuPercent: number | null;
  otherCpuPercent: number | null;
}

/** A rewrite of the append-only file that the prefill set off (its forked child takes most of a core) ends before the
 *  window, so the window measures Redis reading and acking, and the child does not count as another process's load. */
const aofRewriteWaitMsMax = 60_000;
/** Any one command of the consume baseline (INFO, XREADGROUP, XACK) fails after this, so a stalled Redis ends the run. */
const redisCommandTimeoutMs = 10_000;

async function aofRewriteSettled(client: Redis): Promise<void> {
  const deadline = performance.now() + aofRewriteWaitMsMax;
  let said = false;
  // Redis starts an automatic rewrite from its cron (every 100 ms): quiet means two looks 250 ms apart.
  for (let quietLooks = 0; quietLooks < 2; ) {
    const info = await client.info('persistence');
    if (!/aof_rewrite_in_progress:1|aof_rewrite_scheduled:1/.test(info)) {
      quietLooks += 1;
    } else {
      quietLooks = 0;
      if (performance.now() > deadline) throw new Error(`redis: the append-only file rewrite after the prefill still runs after ${aofRewriteWaitMsMax / 1000} s`);
      if (!said) process.stderr.write('redis: waiting for the append-only file rewrite the prefill started\n');
      said = true;
    }
    if (quietLooks < 2) await sleep(quietLooks === 0 ? 100 : 250);
  }
}

/**
 * Prefill a stream with `prefill` entries (redis-benchmark, pipelined), create a group, then `consumers` ioredis
 * connections loop XREADGROUP GROUP g c COUNT count STREAMS s > then XACK the ids, for up to durationSec or until
 * the stream is drained. The work of consume-batch: lease (pending entry) and ack, fsync'd by appendfsync always.
 */
export async function runRedisConsume(redis: RedisPeer, options: { consumers: number; count: number; prefill: number;
  durationSec: number; payload: Buffer; prefillConnections: number }): Promise<RedisConsumeFigures> {
  const stream = `consume-${Date.now()}`;
  const name = `redis XREADGROUP COUNT ${options.count} + XACK`;
  const prefillStart = performance.now();
  await runRedisBenchmark({ name: 'redis prefill', redis, connections: options.prefillConnections, pipeline: 100,
    requests: options.prefill, stream, payload: options.payload });
  const prefillSec = (performance.now() - prefillStart) / 1000;
  const clients = Array.from({ length: options.consumers }, () => new Redis({ host: '127.0.0.1', port: redis.port,
    maxRetriesPerRequest: 1, enableOfflineQueue: true, lazyConnect: false, commandTimeout: redisCommandTimeoutMs }));
  const errors = new Map<string, number>();
  const histogram = newHistogram();
  try {
    await aofRewriteSettled(clients[0]!);
    await clients[0]!.xgroup('CREATE', stream, 'g', '0');
    process.stderr.write(`${name}: ${options.consumers} consumers, ${options.prefill} entries, up to ${options.durationSec} s\n`);
    let acked = 0;
    let drained = false;
    let sending = true;
    const cpu = new CpuWindow(redis.pid);
    const startMs = performance.now();
    let endMs = startMs;
    cpu.start();
    const stopTimer = setTimeout(() => (sending = false), options.durationSec * 1000);
    const loop = async (client: Redis, consumer: string): Promise<void> => {
      while (sending) {
        const t0 = performance.now();
        try {
          const reply = await client.xreadgroup('GROUP', 'g', consumer, 'COUNT', options.count, 'STREAMS', stream, '>') as
            Array<[string, Array<[string, string[]]>]> | null;
          const ids = reply?.[0]?.[1].map((entry) => entry[0]) ?? [];
          if (ids.length === 0) {
            if (!drained) [drained, endMs] = [true, performance.now()];
            sending = false;
            return;
          }
          const count = await client.xack(stream, 'g', ...ids);
          if (sending) {
            acked += count;
            recordUs(histogram, performance.now() - t0);
          }
          if (count !== ids.length) errors.set('xack-short', (errors.get('xack-short') ?? 0) + ids.length - count);
        } catch (error) {
          const key = errorText(error).slice(0, 60);
          errors.set(key, (errors.get(key) ?? 0) + 1);
          await sleep(10);
        }
      }
    };
    const progress = setInterval(() => process.stderr.write(`  [${name}] ${acked} acked\n`), 1000);
    await Promise.all(clients.map((client, i) => loop(client, `c${i}`)));
    clearInterval(progress);
    clearTimeout(stopTimer);
    if (!drained) endMs = performance.now();
    cpu.end();
    const windowMs = endMs - startMs;
    const figures = cpu.figures(windowMs);
    return { name, consumers: options.consumers, count: options.count, prefilled: options.prefill, prefillSec,
      windowSec: windowMs / 1000, drained, ackedMessages: acked, msgsPerSec: acked / (windowMs / 1000),
      payloadMBPerSec: (acked * options.payload.length) / (windowMs / 1000) / 1e6, latencyMs: latencySummaryMs(histogram),
      errorCounts: Object.fromEntries(errors), clientCpuPercent: figures.clientCpuPercent,
      serverCpuPercent: figures.serverCpuPercent, otherCpuPercent: figures.otherCpuPercent };
  } finally {
    for (const client of clients) client.disconnect();
  }
}
