// Scenario `produce` of `npm run bench` (bench/README.md): in one run, the HTTP floor (bench/hello_world_server.ts),
// single produce and batch produce against a broker node it starts itself (or --url), with the closed-loop load
// generator of bench/load.ts. Bench process main thread.
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import {
  basicAuth, cleanups, createTopic, CpuWindow, errorText, fixed, formatErrors, formatInt, makeBatchBody, makePayload,
  percent, renderTable, reportedOptions, serverCpuText, sleep, startBroker, type BrokerTarget, type ServerThreadCpu,
} from './common.js';
import { runLoad, type ClientKind, type LoadRequest, type LoadResult } from './load.js';
import { startChildServer, type ChildServer } from './node_process.js';
import type { BenchOptions } from './options.js';

const helloWorldScript = fileURLToPath(new URL('./hello_world_server.js', import.meta.url));

/** Options only the consume scenario reads; left out of produce's JSON. */
const consumeOnlyOptions = ['max', 'prefill', 'batchPrefill', 'prefillTimeoutSec', 'pollers', 'wakeRate', 'phases'];

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
  /** The server's threads that used at least 1% of a core in the window, busiest first (common.ts WindowCpu). */
  serverThreads: ServerThreadCpu[];
  /** CPU that neither the bench process nor the server used during the window, % of one core. */
  otherCpuPercent: number | null;
  connectionsOpened: number;
  abandonedInFlight: number;
}

async function measure(options: BenchOptions, spec: RunSpec): Promise<RunFigures> {
  const controller = new AbortController();
  void spec.server?.exited.then(() => controller.abort());
  const cpu = new CpuWindow(spec.serverPid);
  process.stderr.write(`${spec.name}: ${spec.connections} connections, ${options.warmupSec}s warm-up + ` +
    `${options.durationSec}s, ${spec.request.body.length} B bodies, client ${options.client}, ${spec.url}\n`);
  const result = await runLoad({
    label: spec.name, url: spec.url, request: spec.request, connections: spec.connections,
    warmupMs: options.warmupSec * 1000, durationMs: options.durationSec * 1000, client: options.client,
    expectedStatus: 202, signal: controller.signal,
    onWindowStart: () => cpu.start(),
    onWindowEnd: () => cpu.end(),
    onProgress: (line) => process.stderr.write(line + '\n'),
  });
  if (spec.server?.hasExited()) {
    throw new Error(`${spec.server.name} exited during ${spec.name}; its output:\n${spec.server.outputTail()}`);
  }
  return figures(options, spec, result, cpu);
}

function figures(options: BenchOptions, spec: RunSpec, result: LoadResult, cpuWindow: CpuWindow): RunFigures {
  const seconds = result.windowMs / 1000;
  const cpu = cpuWindow.figures(result.windowMs, result.clientCpuPercent);
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
    serverCpuPercent: cpu.serverCpuPercent,
    serverThreads: cpu.serverThreads,
    otherCpuPercent: cpu.otherCpuPercent,
    connectionsOpened: result.connectionsOpened,
    abandonedInFlight: result.abandonedInFlight,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The scenario.

export interface ProduceReport {
  scenario: 'produce';
  startedAt: string;
  topic: string;
  target: string;
  options: Record<string, unknown>;
  runs: RunFigures[];
  ratios: ProduceRatios;
  failures: string[];
}

export async function runProduce(options: BenchOptions): Promise<ProduceReport> {
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
      failures.push(errorText(error));
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
    if (options.compareSecurity && options.url === null) {
      // Alternating windows on the same machine, so a burst of outside load lands on both sides.
      for (let round = 0; round < 2; round++) {
        await sleep(1000);
        runs.push(await measureSecurityOff(options, topic, payload));
        await sleep(1000);
        runs.push(await measure(options, { ...base, name: 'single produce (security on, again)',
          connections: options.connections, request: produceRequest(topic, payload, target.authorization, false),
          messagesPerRequest: 1 }));
      }
    }
  } catch (error) {
    failures.push(errorText(error));
  }
  for (const run of runs) {
    if (run.acceptedRequests === 0) failures.push(`${run.name}: no 202 responses (errors: ${formatErrors(run.errorCounts)})`);
  }
  return { scenario: 'produce', startedAt, topic, target: target === null ? 'none' : target.url,
    options: reportedOptions(options, consumeOnlyOptions), runs, ratios: ratios(runs), failures };
}

/** Single produce exactly as above, on a second node started with security off: the cost of authentication. */
async function measureSecurityOff(options: BenchOptions, topic: string, payload: Buffer): Promise<RunFigures> {
  const open = await startBroker(options, {}, false);
  try {
    await createTopic(open, topic, options.partitions);
    return await measure(options, { url: open.url, serverPid: open.serverPid, server: open.server,
      name: 'single produce (security off)', connections: options.connections,
      request: produceRequest(topic, payload, null, false), messagesPerRequest: 1 });
  } finally {
    await open.server?.stop();
  }
}

async function measureFloor(options: BenchOptions, topic: string, payload: Buffer): Promise<RunFigures> {
  const hello = await startChildServer({ name: 'hello-world', script: helloWorldScript,
    args: ['--port', '0', '--host', '127.0.0.1'] });
  cleanups.push(async () => void (await hello.stop()));
  try {
    // Same path, headers, body and connections as single produce; the credentials are only bytes to it.
    const request = produceRequest(topic, payload, basicAuth('admin', 'x'.repeat(24)), false);
    return await measure(options, { name: 'http floor (hello world)', url: hello.url, request,
      connections: options.connections, messagesPerRequest: 1, serverPid: hello.pid, server: hello });
  } finally {
    await hello.stop();
  }
}

interface ProduceRatios {
  /** Single produce req/s as a fraction of the hello-world floor's req/s (1.0 = the broker costs nothing). */
  singleReqPerSecOfFloor: number | null;
  batchMsgsPerSec: number | null;
  /** Batch produce msgs/s over single produce msgs/s: what batching buys. */
  batchMsgsPerSecOverSingle: number | null;
  /** With --compare-security: mean secured single produce req/s over the mean with security off, over alternating
   *  windows (issue 5: >= 0.9). */
  securedOverSecurityOff: number | null;
}

/** Secured single produce windows (the first and the 'again' ones) against the security-off windows, per window. */
function sumReqPerSec(runs: RunFigures[], name: string): number | undefined {
  const matching = runs.filter((run) => (name === 'single produce' ? run.name.startsWith('single produce') &&
    !run.name.includes('security off') : run.name === name));
  const comparable = name === 'single produce' ? matching.filter((run) => run.name.includes('again')) : matching;
  if (comparable.length === 0) return undefined;
  return comparable.reduce((sum, run) => sum + run.reqPerSec, 0) / comparable.length;
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
    securedOverSecurityOff: ratio(sumReqPerSec(runs, 'single produce'), sumReqPerSec(runs, 'single produce (security off)')),
  };
}

export function printProduceTable(report: ProduceReport): void {
  const header = ['scenario', 'conns', 'req/s', 'msgs/s', 'MB/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms',
    'errors', 'client CPU', 'client µs/req', 'server CPU',
    'other CPU'];
  const rows = report.runs.map((run) => [run.name, String(run.connections), formatInt(run.reqPerSec),
    formatInt(run.msgsPerSec), fixed(run.payloadMBPerSec, 1), fixed(run.latencyMs.p50, 2), fixed(run.latencyMs.p90, 2),
    fixed(run.latencyMs.p99, 2), fixed(run.latencyMs.p999, 2), fixed(run.latencyMs.max, 2),
    formatErrors(run.errorCounts), `${fixed(run.clientCpuPercent, 0)}%`, fixed(run.clientCpuUsPerRequest, 1),
    serverCpuText(run.serverCpuPercent, run.serverThreads), percent(run.otherCpuPercent)]);
  const out = renderTable(header, rows, [0, 10]);
  const r = report.ratios;
  out.push('');
  if (r.singleReqPerSecOfFloor !== null) {
    out.push(`single produce req/s / http floor req/s: ${fixed(r.singleReqPerSecOfFloor, 3)}`);
  }
  if (r.batchMsgsPerSec !== null) out.push(`batch produce msgs/s: ${formatInt(r.batchMsgsPerSec)}`);
  if (r.batchMsgsPerSecOverSingle !== null) {
    out.push(`batch msgs/s / single msgs/s: ${fixed(r.batchMsgsPerSecOverSingle, 1)}`);
  }
  if (r.securedOverSecurityOff !== null) {
    out.push(`single produce req/s, security on / security off: ${fixed(r.securedOverSecurityOff, 3)} (the credential cache keeps it >= 0.9?)`);
  }
  out.push(`MB = 10^6 payload bytes; CPU % is of one core (${os.cpus().length} cores here); ` +
    `latencies from request write to last response byte, completions inside the measured window`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}
