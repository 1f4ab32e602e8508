// Parts every bench scenario shares (bench/produce.ts, bench/consume.ts): the broker node under test (started
// here or given by --url), topics, request bodies, CPU samples around a measured window, latency histograms and
// their summaries, table and JSON output, and the cleanup list run.ts works through before exiting. Bench process
// main thread.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, type Histogram } from 'hdr-histogram-js';
import { readMachineBusyCpuMs, readProcessCpuMs, readThreadCpuMs, startChildServer, type ChildServer } from './node_process.js';
import type { OpenLoopFigures } from './load.js';
import type { BenchOptions } from './options.js';
import type { TargetCheck } from './targets.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

// ---------------------------------------------------------------------------------------------------------------
// Cleanup.

/** Everything to undo before exit: child servers to stop, temp dirs and topics to remove. Last in, first out. */
export const cleanups: Array<() => Promise<void>> = [];

export async function cleanup(): Promise<void> {
  while (cleanups.length > 0) {
    const step = cleanups.pop()!;
    await step().catch((error: unknown) => process.stderr.write(`cleanup: ${String(error)}\n`));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Busy CPU of the whole machine under which it counts as quiet, % of one core. */
const quietCpuPercentMax = 15;
const quietSampleMs = 250;

export interface Settled {
  /** False when the wait ran out with the machine still busy. */
  quiet: boolean;
  /** The last sample's busy CPU, % of one core; null when /proc cannot tell. */
  busyPercent: number | null;
}

/**
 * Waits at least minMs, then until the machine is quiet (all cores together busy under 15% of one core over a 250 ms
 * sample), for about maxMs in all (the last sample may end up to 250 ms later): a server's work after its window
 * (partition flushes and syncs, a Redis fsync) would otherwise land in the next window, on another server's figures.
 * Without /proc it only sleeps minMs.
 */
export async function settle(minMs = 500, maxMs = 5000): Promise<Settled> {
  await sleep(minMs);
  const deadline = performance.now() + maxMs - minMs;
  for (;;) {
    const before = readMachineBusyCpuMs();
    const startedAt = performance.now();
    await sleep(quietSampleMs);
    const after = readMachineBusyCpuMs();
    if (before === null || after === null) return { quiet: true, busyPercent: null };
    const busyPercent = ((after - before) / (performance.now() - startedAt)) * 100;
    const quiet = busyPercent < quietCpuPercentMax;
    if (quiet || performance.now() >= deadline) return { quiet, busyPercent };
  }
}

export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---------------------------------------------------------------------------------------------------------------
// Request shapes.

/** A JSON object of exactly `bytes` bytes: {"d":"xxx..."}. */
export function makePayload(bytes: number): Buffer {
  const payload = Buffer.from(`{"d":"${'x'.repeat(bytes - 8)}"}`);
  if (payload.length !== bytes) throw new Error(`payload is ${payload.length} bytes, wanted ${bytes}`);
  return payload;
}

/** {"messages":[{"payload":<payload>}, ...]} with `count` copies of payload (each pinned to partition when given). */
export function makeBatchBody(payload: Buffer, count: number, partition?: number): Buffer {
  const entry = `{${partition === undefined ? '' : `"partition":${partition},`}"payload":${payload.toString('utf8')}}`;
  return Buffer.from(`{"messages":[${new Array<string>(count).fill(entry).join(',')}]}`);
}

export function basicAuth(user: string, password: string): string {
  return 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
}

// ---------------------------------------------------------------------------------------------------------------
// The broker node.

export interface BrokerTarget {
  url: string;
  authorization: string | null;
  server: ChildServer | null;
  serverPid: number | null;
}

/** The node of --url, or a node started here (security on unless `security` says off, fresh data dir) with `env`
 *  added to its environment. */
export async function startBroker(options: BenchOptions, env: Record<string, string> = {}, security = true): Promise<BrokerTarget> {
  if (options.url !== null) {
    const authorization = options.password === null ? null : basicAuth(options.user, options.password);
    return { url: options.url, authorization, server: null, serverPid: options.serverPid };
  }
  if (!existsSync(options.nodeScript)) throw new Error(`${options.nodeScript} does not exist: build the broker first`);
  const dataDir = await mkdtemp(join(os.tmpdir(), 'svc-bench-'));
  cleanups.push(async () => rmSync(dataDir, { recursive: true, force: true }));
  const password = randomBytes(18).toString('base64url');
  const profDir = options.serverCpuProfDir;
  const nodeFlags = profDir === null ? [] : ['--cpu-prof', '--cpu-prof-dir', profDir];
  if (profDir !== null) process.stderr.write(`broker: node --cpu-prof; its threads' profiles go to ${profDir} when it stops\n`);
  const server = await startChildServer({ name: 'broker', script: options.nodeScript, env, nodeFlags,
    args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--security', security ? 'on' : 'off',
      '--admin-password', password, ...options.nodeArgs] });
  cleanups.push(async () => void (await server.stop()));
  return { url: server.url, authorization: security ? basicAuth('admin', password) : null, server, serverPid: server.pid };
}

/** A small admin request with fetch (not on a measured path); throws with the broker's output on a network error. */
async function adminRequest(target: BrokerTarget, method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.authorization !== null) headers['authorization'] = target.authorization;
  try {
    return await fetch(`${target.url}${path}`, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(30_000),
    });
  } catch (error) {
    const cause = (error as { cause?: unknown }).cause;
    throw new Error(`${method} ${target.url}${path} failed: ${String(error)}${cause ? ` (${String(cause)})` : ''}`);
  }
}

/** POST /v1/topics as the bench user; the spec answers 201 with the Topic. */
export async function createTopic(target: BrokerTarget, name: string, partitions: number, fields: Record<string, unknown> = {}): Promise<void> {
  const response = await adminRequest(target, 'POST', '/v1/topics', { name, partitions, ...fields });
  const text = await response.text();
  if (response.status !== 201) {
    const output = target.server === null ? '' : `\nbroker output:\n${target.server.outputTail()}`;
    throw new Error(`POST /v1/topics {"name":"${name}"} answered ${response.status}: ${text.slice(0, 500)}${output}`);
  }
}

/** DELETE /v1/topics/<name>; 204 expected. Used to leave a --url node as it was found. */
export async function deleteTopic(target: BrokerTarget, name: string): Promise<void> {
  const response = await adminRequest(target, 'DELETE', `/v1/topics/${encodeURIComponent(name)}`);
  const text = await response.text();
  if (response.status !== 204) throw new Error(`DELETE /v1/topics/${name} answered ${response.status}: ${text.slice(0, 300)}`);
}

// ---------------------------------------------------------------------------------------------------------------
// CPU around a measured window.

export interface ServerThreadCpu {
  tid: number;
  main: boolean;
  cpuPercent: number;
}

export interface WindowCpu {
  /** The bench process (the load generator) during the window, % of one core, and in ms. */
  clientCpuPercent: number;
  clientCpuMs: number;
  serverCpuPercent: number | null;
  /** The server's threads that used at least 1% of a core in the window, busiest first; main = the main thread
   * (the broker's front thread). Threads started or ended inside the window are left out. */
  serverThreads: ServerThreadCpu[];
  /** Busy CPU of the machine that neither the bench process nor the server used during the window (other
   * processes, the kernel's share not billed to either), % of one core. High values mean a noisy machine. */
  otherCpuPercent: number | null;
}

/** Samples client, server, per-thread and machine CPU at start() and end(); figures() turns them into WindowCpu. */
export class CpuWindow {
  private clientStart = process.cpuUsage();
  private clientUs = 0;
  private serverStart: number | null = null;
  private serverMs: number | null = null;
  private machineStart: number | null = null;
  private machineMs: number | null = null;
  private threadsStart: Map<number, number> | null = null;
  private threadsMs: Map<number, number> | null = null;

  constructor(private readonly serverPid: number | null) {}

  start(): void {
    this.clientStart = process.cpuUsage();
    this.serverStart = this.serverPid === null ? null : readProcessCpuMs(this.serverPid);
    this.machineStart = readMachineBusyCpuMs();
    this.threadsStart = this.serverPid === null ? null : readThreadCpuMs(this.serverPid);
  }

  end(): void {
    const client = process.cpuUsage(this.clientStart);
    this.clientUs = client.user + client.system;
    const serverEnd = this.serverPid === null ? null : readProcessCpuMs(this.serverPid);
    this.serverMs = serverEnd === null || this.serverStart === null ? null : serverEnd - this.serverStart;
    const machineEnd = readMachineBusyCpuMs();
    this.machineMs = machineEnd === null || this.machineStart === null ? null : machineEnd - this.machineStart;
    this.threadsMs = threadDeltas(this.threadsStart, this.serverPid === null ? null : readThreadCpuMs(this.serverPid));
  }

  /** Percentages over windowMs; clientCpuPercent overrides the client figure (produce's load.ts measures its own). */
  figures(windowMs: number, clientCpuPercent?: number): WindowCpu {
    const pct = (ms: number | null): number | null => (ms === null || windowMs <= 0 ? null : (ms / windowMs) * 100);
    const client = clientCpuPercent ?? pct(this.clientUs / 1000) ?? 0;
    const server = pct(this.serverMs);
    const machine = pct(this.machineMs);
    const threads: ServerThreadCpu[] = [];
    for (const [tid, ms] of this.threadsMs ?? []) {
      const cpuPercent = pct(ms) ?? 0;
      if (cpuPercent >= 1) threads.push({ tid, main: tid === this.serverPid, cpuPercent });
    }
    threads.sort((a, b) => b.cpuPercent - a.cpuPercent);
    return {
      clientCpuPercent: client,
      clientCpuMs: this.clientUs / 1000,
      serverCpuPercent: server,
      serverThreads: threads,
      otherCpuPercent: machine === null || server === null ? null : Math.max(0, machine - server - client),
    };
  }
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

// ---------------------------------------------------------------------------------------------------------------
// Latency.

export interface LatencySummaryMs {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

/** A histogram of microseconds (values of 1 µs and up), resized as values grow. */
export function newHistogram(): Histogram {
  return build({ bitBucketSize: 32, numberOfSignificantValueDigits: 3, autoResize: true });
}

/** Records a latency given in ms, rounded to whole µs, at least 1. */
export function recordUs(histogram: Histogram, ms: number): void {
  histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
}

/** The percentiles, max and mean of a histogram of µs, in ms. */
export function latencySummaryMs(histogram: Histogram): LatencySummaryMs {
  const ms = (us: number): number => us / 1000;
  return { p50: ms(histogram.getValueAtPercentile(50)), p90: ms(histogram.getValueAtPercentile(90)),
    p99: ms(histogram.getValueAtPercentile(99)), p999: ms(histogram.getValueAtPercentile(99.9)),
    max: ms(histogram.maxValue), mean: ms(histogram.mean) };
}

/** One load run's figures as the produce table shows them: the bench's own client, wrk or redis-benchmark. Latency
 * percentiles a tool does not report are NaN (null in JSON, n/a in tables). */
export interface ThroughputFigures {
  name: string;
  target: string;
  /** 'net' or 'undici' (the bench's clients), 'wrk', 'redis-benchmark'. */
  client: string;
  connections: number;
  durationSec: number;
  messagesPerRequest: number;
  requestBodyBytes: number;
  /** Requests answered 202 inside the window. */
  acceptedRequests: number;
  reqPerSec: number;
  msgsPerSec: number;
  payloadMBPerSec: number;
  latencyMs: LatencySummaryMs;
  statusCounts: Record<string, number>;
  errorCounts: Record<string, number>;
  clientCpuPercent: number;
  /** Bench process CPU per response (any status), µs: the load generator's own cost. */
  clientCpuUsPerRequest: number;
  serverCpuPercent: number | null;
  /** The server's threads that used at least 1% of a core in the window, busiest first (common.ts WindowCpu). */
  serverThreads: ServerThreadCpu[];
  /** CPU that neither the bench process nor the server used during the window, % of one core. */
  otherCpuPercent: number | null;
  connectionsOpened: number;
  abandonedInFlight: number;
  /** Open loop only (--rate): what could not be sent on time; latency then counts from the scheduled time. */
  openLoop: OpenLoopFigures | null;
  /** The round, from 1, of a comparison whose sides take turns (produce-single's wrk and Redis rows); absent elsewhere. */
  round?: number;
}

/** One row of `all`'s summary: a scenario's headline figure beside its issue 4 target and the baselines. */
export interface Headline {
  scenario: string;
  /** The figure as printed, e.g. "33,822 msg/s, p99 14.2 ms". */
  figure: string;
  /** The headline number (msgs/s, ms or MiB as the scenario measures it), for JSON readers. */
  value: number | null;
  target: string;
  /** Our figure over the hello-world floor's and over Redis's, measured in the same run; null when not measured. */
  floorRatio: number | null;
  redisRatio: number | null;
  /** The target's bounds with this run's figures (met when every one passes, bench/targets.ts); empty without a
   *  target. */
  checks: TargetCheck[];
  /** The most CPU other processes took during any run behind this row (ours or a baseline's), % of one core: above
   *  about 50% on 2 cores the figure and its ratios are noise. */
  otherCpuPercentMax: number | null;
}

/** The middle value (the mean of the middle two for an even count), or null for none. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The largest of the known values, or null. */
export function maxKnown(values: Array<number | null | undefined>): number | null {
  const known = values.filter((value): value is number => typeof value === 'number' && Number.isFinite(value));
  return known.length === 0 ? null : Math.max(...known);
}

// ---------------------------------------------------------------------------------------------------------------
// Output.

export function formatInt(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}

export function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : 'n/a';
}

export function percent(value: number | null): string {
  return value === null ? 'n/a' : `${fixed(value, 0)}%`;
}

/** "182% (main 71%, 60%, 38%)": the process, then its main thread and the next two busiest threads. */
export function serverCpuText(serverCpuPercent: number | null, threads: ServerThreadCpu[]): string {
  if (serverCpuPercent === null) return 'n/a';
  const main = threads.find((thread) => thread.main);
  const others = threads.filter((thread) => !thread.main).slice(0, 2);
  const parts = [`main ${fixed(main?.cpuPercent ?? 0, 0)}%`, ...others.map((t) => `${fixed(t.cpuPercent, 0)}%`)];
  return `${percent(serverCpuPercent)} (${parts.join(', ')})`;
}

export function formatErrors(counts: Record<string, number>): string {
  const entries = Object.entries(counts);
  return entries.length === 0 ? 'none' : entries.map(([key, count]) => `${key}:${count}`).join(' ');
}

/** Column-aligned text: columns listed in leftAligned are padded right, the others (numbers) padded left. */
export function renderTable(header: string[], rows: string[][], leftAligned: number[]): string[] {
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells.map((cell, i) => (leftAligned.includes(i) ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!))).join('  ').trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)];
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

/** Writes bench/results/<scenario>-<startedAt with : as ->.json with the commit and the machine; returns its path. */
export function writeJson(report: { scenario: string; startedAt: string }): string {
  const cpus = os.cpus();
  const machine = { cpuModel: cpus[0]?.model ?? 'unknown', cpuCount: cpus.length, totalMemoryBytes: os.totalmem(),
    loadAverage1m: os.loadavg()[0] ?? null, node: process.version, platform: `${os.platform()} ${os.release()} ${os.arch()}` };
  const dir = join(repoRoot, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${report.scenario}-${report.startedAt.replace(/:/g, '-')}.json`);
  writeFileSync(file, JSON.stringify({ ...report, ...gitCommit(), machine }, null, 2) + '\n');
  return file;
}

/** The options for the JSON file: without the password, and without the keys in `omit` (other scenarios'). */
export function reportedOptions(options: BenchOptions, omit: readonly string[]): Record<string, unknown> {
  const { password: _password, nodeScript, ...rest } = options;
  const kept = Object.entries(rest).filter(([key]) => !omit.includes(key));
  return { ...Object.fromEntries(kept), nodeScript: options.url === null ? nodeScript : null };
}
