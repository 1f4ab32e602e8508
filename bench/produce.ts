// Scenarios produce-single and produce-batch of `npm run bench` (bench/README.md; `produce` runs both): single or
// batch produce against a broker node it starts itself (or --url) with bench/load.ts's load generator (closed loop,
// or open loop with --rate), and in the same run the baselines: the HTTP floor (bench/hello_world_server.ts, same
// request and connections), the fsync floor beside single produce (bench/fsync_floor_server.ts, driven by wrk), wrk
// against the same node (produce-single, when installed) and, with --compare, Redis XADD with appendfsync always
// (bench/peers.ts). Beside single produce, wrk's runs and Redis XADD take turns over --rounds rounds. Bench process
// main thread.
import { rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  basicAuth, cleanups, createTopic, CpuWindow, errorText, fixed, formatErrors, formatInt, makeBatchBody, makePayload,
  maxKnown, median, percent, renderTable, reportedOptions, serverCpuText, settle, sleep, startBroker, type BrokerTarget, type Headline, type ThroughputFigures,
} from './common.js';
import { verdictText, type TargetCheck } from './targets.js';
import { runProduceSchema } from './produce_schema.js';
import { runLoad, type LoadRequest, type LoadResult } from './load.js';
import { startChildServer, type ChildServer } from './node_process.js';
import type { BenchOptions } from './options.js';
import { installHint, onPath, redisBaselineMissing, runRedisBenchmark, runWrk, startRedis, type RedisPeer } from './peers.js';

const helloWorldScript = fileURLToPath(new URL('./hello_world_server.js', import.meta.url));
const fsyncFloorScript = fileURLToPath(new URL('./fsync_floor_server.js', import.meta.url));

/** Options only the consume scenario reads; left out of produce's JSON. */
const consumeOnlyOptions = ['max', 'prefill', 'batchPrefill', 'prefillTimeoutSec', 'pollers', 'wakeRate', 'phases',
  'consumers', 'peakSec', 'intervalSec', 'soakDurationSec', 'topics', 'polls', 'redisConsumers', 'argv'];
/** Issue 4's targets for produce (single: also p99 <= 10 ms, >= 0.6 of the floor, >= 0.8 of Redis XADD). */
export const produceTargets = { singleOfFloor: 0.6, singleOfRedis: 0.8, singleP99Ms: 10, batchMsgsPerSec: 1_000_000 };

function produceRequest(topic: string, body: Buffer, authorization: string | null, batch: boolean): LoadRequest {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (authorization !== null) headers['authorization'] = authorization;
  const path = `/v1/topics/${encodeURIComponent(topic)}/produce${batch ? '/batch' : ''}`;
  return { method: 'POST', path, headers, body };
}

// ---------------------------------------------------------------------------------------------------------------
// One measured run.

export interface RunSpec {
  name: string;
  url: string;
  request: LoadRequest;
  connections: number;
  messagesPerRequest: number;
  serverPid: number | null;
  server: ChildServer | null;
}

type RunFigures = ThroughputFigures;

export async function measure(options: BenchOptions, spec: RunSpec): Promise<RunFigures> {
  const controller = new AbortController();
  void spec.server?.exited.then(() => controller.abort());
  const cpu = new CpuWindow(spec.serverPid);
  const loop = options.rate === null ? 'closed loop' : `open loop at ${formatInt(options.rate)} req/s`;
  process.stderr.write(`${spec.name}: ${spec.connections} connections, ${loop}, ${options.warmupSec}s warm-up + ` +
    `${options.durationSec}s, ${spec.request.body.length} B bodies, client ${options.client}, ${spec.url}\n`);
  const result = await runLoad({
    label: spec.name, url: spec.url, request: spec.request, connections: spec.connections,
    warmupMs: options.warmupSec * 1000, durationMs: options.durationSec * 1000, client: options.client,
    expectedStatus: 202, signal: controller.signal, ...(options.rate === null ? {} : { ratePerSec: options.rate }),
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
    openLoop: result.openLoop,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The scenario.

export interface ProduceReport {
  scenario: string;
  startedAt: string;
  topic: string;
  target: string;
  options: Record<string, unknown>;
  runs: RunFigures[];
  ratios: ProduceRatios;
  /** Peers that were asked for (wrk beside closed-loop single and batch produce and the floor, Redis with --compare)
   *  but are not installed. */
  missingPeers: string[];
  redisVersion: string | null;
  failures: string[];
  /** With --schema: msgs/s to the topic with a schema over msgs/s to the one without (issue 28: >= 0.9, >= 0.7). */
  schemaRatios?: { single: number | null; batch: number | null };
}

/** The runs of a produce scenario, in order. */
function produceKinds(options: BenchOptions): { single: boolean; batch: boolean } {
  return { single: options.scenario !== 'produce-batch', batch: options.scenario !== 'produce-single' };
}

/** One produce scenario as its parts share it: what it sends, which baselines stand beside the node, and what it has
 *  so far. */
interface ProduceRun {
  options: BenchOptions;
  topic: string;
  payload: Buffer;
  batchBody: Buffer;
  kinds: { single: boolean; batch: boolean };
  /** The floor: the legacy `produce` measures it unless --skip-floor; the named scenarios with --compare. */
  floor: boolean;
  /** wrk runs closed loop only: beside an open-loop (--rate) run its figures would compare unlike loads. */
  withWrk: boolean;
  withRedis: boolean;
  runs: RunFigures[];
  failures: string[];
  redisVersion: string | null;
}

/** One measurement whose failure is noted while the scenario's other runs go on. */
async function attempt(p: ProduceRun, run: () => Promise<RunFigures | RunFigures[]>): Promise<void> {
  try {
    const figures = await run();
    p.runs.push(...(Array.isArray(figures) ? figures : [figures]));
  } catch (error) {
    p.failures.push(errorText(error));
  }
}

export async function runProduce(options: BenchOptions): Promise<ProduceReport> {
  if (options.schema) return runProduceSchema(options);
  const startedAt = new Date().toISOString();
  const topic = options.topic ?? `bench-${Date.now()}`;
  const payload = makePayload(options.messageBytes);
  const batchBody = makeBatchBody(payload, options.batch);
  const kinds = produceKinds(options);
  const missingPeers: string[] = [];
  const wrkInstalled = onPath('wrk') !== null;
  if (!wrkInstalled) missingPeers.push(`wrk not installed (${installHint})`);
  const redisMissing = options.compare ? redisBaselineMissing() : null;
  if (redisMissing !== null) missingPeers.push(redisMissing);
  const p: ProduceRun = { options, topic, payload, batchBody, kinds,
    floor: !options.skipFloor && (options.scenario === 'produce' || options.compare),
    withWrk: wrkInstalled && options.rate === null, withRedis: options.compare && redisMissing === null,
    runs: [], failures: [], redisVersion: null };
  const { runs, failures } = p;
  if (p.floor && kinds.single) {
    await attempt(p, () => measureFloor(options, topic, payload, options.connections, floorName));
    await sleep(1000);
  }
  if (p.floor && kinds.batch && options.scenario !== 'produce') {
    await attempt(p, () => measureFloor(options, topic, batchBody, options.batchConnections, 'http floor, batch body (hello world)'));
    await sleep(1000);
  }
  let target: BrokerTarget | null = null;
  try {
    target = await startBroker(options);
    await measureOnNode(p, target);
  } catch (error) {
    failures.push(errorText(error));
  }
  // Redis XADD that the rounds did not measure (single produce without wrk or when the rounds could not run, and
  // pipelined beside batch produce): after the broker's runs and with the broker stopped, so the two never share the
  // cores.
  const singleRedisLeft = kinds.single && !runs.some((run) => run.name === redisXaddName);
  if (p.withRedis && (singleRedisLeft || kinds.batch)) {
    await target?.server?.stop();
    try {
      const redis = await startRedis();
      p.redisVersion = redis.version;
      if (singleRedisLeft) await attempt(p, () => redisXadd(options, redis, payload, 1));
      if (kinds.batch) await attempt(p, () => redisXadd(options, redis, payload, 100));
      await redis.stop();
    } catch (error) {
      failures.push(`redis: ${errorText(error)}`);
    }
  }
  for (const run of runs) {
    if (run.acceptedRequests === 0) failures.push(`${run.name}: no 202 responses (errors: ${formatErrors(run.errorCounts)})`);
  }
  return { scenario: options.scenario, startedAt, topic, target: target === null ? 'none' : target.url,
    options: reportedOptions(options, consumeOnlyOptions), runs, ratios: produceRatios(runs), missingPeers,
    redisVersion: p.redisVersion, failures };
}

/** The runs against the started node: single produce (and, with wrk, the rounds in which it and its baselines take
 *  turns), batch produce beside wrk, and with --compare-security single produce with security off and on in turn. */
async function measureOnNode(p: ProduceRun, target: BrokerTarget): Promise<void> {
  const { options, topic, payload, runs, failures } = p;
  if (options.topic === null) await createTopic(target, topic, options.partitions);
  const base = { url: target.url, serverPid: target.serverPid, server: target.server };
  if (p.kinds.single) {
    const request = produceRequest(topic, payload, target.authorization, false);
    runs.push(await measure(options, { ...base, name: 'single produce', connections: options.connections,
      request, messagesPerRequest: 1 }));
    await sleep(1000);
    if (p.withWrk) {
      try {
        const spec = { topic, payload, target, request, floor: p.floor, redis: p.withRedis };
        const rounds = await measureSingleRounds(options, spec, failures);
        runs.push(...rounds.rows);
        p.redisVersion = rounds.redisVersion;
      } catch (error) {
        failures.push(`single produce rounds: ${errorText(error)}`);
      }
      await sleep(1000);
    }
  }
  if (p.kinds.batch) {
    const request = produceRequest(topic, p.batchBody, target.authorization, true);
    runs.push(await measure(options, { ...base, name: `batch produce (${options.batch})`,
      connections: options.batchConnections, request, messagesPerRequest: options.batch }));
    // Beside it, wrk on the same route (issue 4 item 2); the bench's client stays the headline here, since at a few
    // percent of a core it is not what limits batch produce (the ratio of the two rows says so).
    if (p.withWrk) {
      await sleep(1000);
      await attempt(p, () => wrkRow(options, batchWrkName, target.url, target.serverPid, request, options.batchConnections,
        options.batch));
    }
  }
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
}

/** XADD of one payload-sized field per command with redis-benchmark: pipeline 1 beside single produce (same
 *  connections), pipeline 100 beside batch produce (batch connections), sized to last about --duration. */
function redisXadd(options: BenchOptions, redis: RedisPeer, payload: Buffer, pipeline: number): Promise<RunFigures> {
  const single = pipeline === 1;
  return runRedisBenchmark({ name: single ? redisXaddName : `redis XADD, pipeline ${pipeline}`, redis,
    connections: single ? options.connections : options.batchConnections, pipeline, durationSec: options.durationSec,
    stream: `xadd-${pipeline}-${Date.now()}`, payload });
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

/** The hello-world server fed the broker's requests by the bench's client (same path, headers, body and connections as
 *  the produce it stands beside). */
async function measureFloor(options: BenchOptions, topic: string, body: Buffer, connections: number,
  name: string): Promise<RunFigures> {
  const hello = await startHelloWorld();
  try {
    const batch = connections !== options.connections || body.length > options.messageBytes;
    return await measure(options, { name, url: hello.url, request: floorRequest(topic, body, batch), connections,
      messagesPerRequest: batch ? options.batch : 1, serverPid: hello.pid, server: hello });
  } finally {
    await hello.stop();
  }
}

/** The produce request as the floors get it: the credentials are only bytes to them. */
function floorRequest(topic: string, body: Buffer, batch: boolean): LoadRequest {
  return produceRequest(topic, body, basicAuth('admin', 'x'.repeat(24)), batch);
}

async function startHelloWorld(): Promise<ChildServer> {
  const hello = await startChildServer({ name: 'hello-world', script: helloWorldScript, args: ['--port', '0', '--host', '127.0.0.1'] });
  cleanups.push(async () => void (await hello.stop()));
  return hello;
}

/** The fsync floor (fsync_floor_server.ts): what HTTP plus a group-commit fdatasync before each 202 allow on this
 *  machine, with none of the broker's own work. Its ring file goes to a temp dir, as the broker's data does: both sync
 *  on the same disk. Stopping it removes the dir. */
async function startFsyncFloor(): Promise<ChildServer> {
  const dir = await mkdtemp(join(os.tmpdir(), 'svc-bench-fsync-floor-'));
  // Pushed first, so it runs after the server's stop (cleanups run last in, first out), as startBroker's data dir does.
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const server = await startChildServer({ name: 'fsync-floor', script: fsyncFloorScript,
    args: ['--port', '0', '--host', '127.0.0.1', '--dir', dir] });
  cleanups.push(async () => void (await server.stop()));
  return server;
}

interface SingleRoundsSpec {
  topic: string;
  payload: Buffer;
  target: BrokerTarget;
  /** Single produce as the node gets it (its credentials). */
  request: LoadRequest;
  /** Whether the two floors take part. */
  floor: boolean;
  /** Whether Redis XADD takes part. */
  redis: boolean;
}

/** The window of each side in a round: --duration shared out over --rounds, in whole seconds (wrk's unit), at least 1. */
export function roundWindowSec(durationSec: number, rounds: number): number {
  return Math.max(1, Math.round(durationSec / rounds));
}

interface Side {
  name: string;
  run: () => Promise<RunFigures>;
}

/**
 * Single produce and its baselines taking turns: in each of --rounds rounds wrk drives the hello-world floor and the
 * fsync floor (when the floor is measured) and then the node, and redis-benchmark drives Redis XADD (--compare, Redis
 * installed), each for --duration / --rounds. Back-to-back runs of the whole duration put a minute of a shared machine
 * between the node and its baselines, and their ratio moved by a third from run to run (docs/decisions.md,
 * "Baselines that take turns"). Every server is up, and idle, while another is measured, and each window starts once
 * the machine is quiet. Rows carry their round. A baseline that fails to start, or a run that fails, leaves its
 * failure and the other sides go on.
 */
async function measureSingleRounds(options: BenchOptions, spec: SingleRoundsSpec,
  failures: string[]): Promise<{ rows: RunFigures[]; redisVersion: string | null }> {
  const windowSec = roundWindowSec(options.durationSec, options.rounds);
  const sides: Side[] = [];
  const stops: (() => Promise<unknown>)[] = [];
  let redisVersion: string | null = null;
  /** Starts one side's server; a failure to start drops that side only. */
  const addSide = async (name: string, start: () => Promise<Side['run']>): Promise<void> => {
    try {
      sides.push({ name, run: await start() });
    } catch (error) {
      failures.push(`${name}: ${errorText(error)}`);
    }
  };
  try {
    const request = floorRequest(spec.topic, spec.payload, false);
    const wrkOn = (name: string, server: ChildServer) => () =>
      wrkRow(options, name, server.url, server.pid, request, options.connections, 1, windowSec);
    if (spec.floor) {
      await addSide(floorWrkName, async () => {
        const hello = await startHelloWorld();
        stops.push(() => hello.stop());
        return wrkOn(floorWrkName, hello);
      });
      await addSide(fsyncFloorWrkName, async () => {
        const fsyncFloor = await startFsyncFloor();
        stops.push(() => fsyncFloor.stop());
        return wrkOn(fsyncFloorWrkName, fsyncFloor);
      });
    }
    const { target } = spec;
    sides.push({ name: singleWrkName,
      run: () => wrkRow(options, singleWrkName, target.url, target.serverPid, spec.request, options.connections, 1, windowSec) });
    if (spec.redis) {
      await addSide(redisXaddName, async () => {
        const redis = await startRedis();
        stops.push(() => redis.stop());
        redisVersion = redis.version;
        // The first round calibrates how many XADDs fill a window; the later ones send as many.
        let requests: number | undefined;
        const stream = `xadd-1-${Date.now()}`;
        return async () => {
          const row = await runRedisBenchmark({ name: redisXaddName, redis, connections: options.connections, pipeline: 1,
            stream, payload: spec.payload, ...(requests === undefined ? { durationSec: windowSec } : { requests }) });
          requests = row.acceptedRequests;
          return row;
        };
      });
    }
    // A machine that stays busy cannot be waited out: the wait is bounded by the window it protects.
    const settleMsMax = Math.max(1000, windowSec * 1000);
    const rows: RunFigures[] = [];
    for (let round = 1; round <= options.rounds; round++) {
      for (const side of sides) {
        const settled = await settle(500, settleMsMax);
        if (!settled.quiet) {
          process.stderr.write(`the machine is still ${fixed(settled.busyPercent!, 0)}% busy after ${fixed(settleMsMax / 1000, 0)} s; measuring on\n`);
        }
        process.stderr.write(`round ${round}/${options.rounds}: `);
        try {
          rows.push({ ...(await side.run()), round });
        } catch (error) {
          failures.push(`${side.name}, round ${round}: ${errorText(error)}`);
        }
      }
    }
    return { rows, redisVersion };
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}

/** wrk sending request (path, headers, body) to url on `connections` connections for durationSec (the scenario's
 *  window unless given). */
function wrkRow(options: BenchOptions, name: string, url: string, serverPid: number | null, request: LoadRequest,
  connections: number, messagesPerRequest = 1, durationSec = options.durationSec): Promise<RunFigures> {
  return runWrk({ name, url, path: request.path, headers: request.headers, body: request.body, connections,
    durationSec, messageBytes: options.messageBytes, messagesPerRequest, serverPid });
}

const floorName = 'http floor (hello world)';
const floorWrkName = 'http floor (hello world, wrk)';
const fsyncFloorWrkName = 'fsync floor (group-commit fdatasync, wrk)';
const singleWrkName = 'single produce (wrk)';
const batchWrkName = 'batch produce (wrk)';
const redisXaddName = 'redis XADD';
/** The batch produce row of the bench's own client (its name carries the batch size). */
const isBatchByBenchClient = (run: RunFigures): boolean => run.name.startsWith('batch produce') && run.client !== 'wrk';

interface ProduceRatios {
  /** Single produce req/s as a fraction of the hello-world floor's req/s (1.0 = the broker costs nothing). */
  singleReqPerSecOfFloor: number | null;
  /** Single produce msgs/s over Redis XADD (redis-benchmark, same connections, appendfsync always). */
  singleOverRedis: number | null;
  /** The bench's client over wrk, both against the same node: near 1 means the client is not what limits. */
  singleOverWrk: number | null;
  /** The same for batch produce. */
  batchOverWrk: number | null;
  /** Single produce req/s over the floor's, both driven by wrk (when installed): the median of the rounds'. */
  singleWrkOfFloorWrk: number | null;
  /** Single produce msgs/s driven by wrk over Redis XADD driven by redis-benchmark, two C clients: the median of the
   *  rounds'. */
  singleWrkOverRedis: number | null;
  /** Single produce req/s over the fsync floor's, both driven by wrk: the share of what HTTP and a synced write allow;
   *  the median of the rounds'. */
  singleWrkOfFsyncFloorWrk: number | null;
  /** Single produce driven by wrk over its rounds: msgs/s of them all, the median of their p99s, and each round's
   *  ratios in round order (a round missing a side has none). */
  singleWrkRounds: SingleRounds | null;
  batchMsgsPerSec: number | null;
  /** Batch produce req/s over the floor fed the same batch bodies on the same connections. */
  batchReqPerSecOfFloor: number | null;
  /** Batch produce msgs/s over Redis XADD pipelined 100 deep. */
  batchOverRedis: number | null;
  /** Batch produce msgs/s over single produce msgs/s: what batching buys. */
  batchMsgsPerSecOverSingle: number | null;
  /** With --compare-security: mean secured single produce req/s over the mean with security off, over alternating
   *  windows (issue 5: >= 0.9). */
  securedOverSecurityOff: number | null;
}

interface SingleRounds {
  rounds: number;
  msgsPerSec: number;
  p99Ms: number;
  p99sMs: number[];
  ofFloor: number[];
  overRedis: number[];
  ofFsyncFloor: number[];
}

/** Secured single produce windows (the first and the 'again' ones) against the security-off windows, per window. */
function sumReqPerSec(runs: RunFigures[], name: string): number | undefined {
  const matching = runs.filter((run) => (name === 'single produce' ? run.name.startsWith('single produce') &&
    !run.name.includes('security off') && run.client !== 'wrk' : run.name === name));
  const comparable = name === 'single produce' ? matching.filter((run) => run.name.includes('again')) : matching;
  if (comparable.length === 0) return undefined;
  return comparable.reduce((sum, run) => sum + run.reqPerSec, 0) / comparable.length;
}

/** The rows named `name`: merged over their rounds (requests and window summed), or the one row. */
function merged(runs: RunFigures[], name: string): { reqPerSec: number; msgsPerSec: number } | undefined {
  const rows = runs.filter((run) => run.name === name);
  if (rows.length === 0) return undefined;
  const seconds = rows.reduce((sum, run) => sum + run.durationSec, 0);
  const requests = rows.reduce((sum, run) => sum + run.acceptedRequests, 0);
  const messages = rows.reduce((sum, run) => sum + run.acceptedRequests * run.messagesPerRequest, 0);
  return { reqPerSec: requests / seconds, msgsPerSec: messages / seconds };
}

/** Per round, `pick` of the row named `a` over that of the row named `b` in the same round, in round order. */
function roundRatios(runs: RunFigures[], a: string, b: string, pick: (run: RunFigures) => number): number[] {
  const ratios: number[] = [];
  for (const ours of runs) {
    if (ours.name !== a || ours.round === undefined) continue;
    const theirs = runs.find((run) => run.name === b && run.round === ours.round);
    if (theirs !== undefined && pick(theirs) > 0) ratios.push(pick(ours) / pick(theirs));
  }
  return ratios;
}

function singleRounds(runs: RunFigures[]): SingleRounds | null {
  const wrkRows = runs.filter((run) => run.name === singleWrkName);
  const whole = merged(runs, singleWrkName);
  if (whole === undefined) return null;
  const p99sMs = wrkRows.map((run) => run.latencyMs.p99);
  const reqPerSec = (run: RunFigures): number => run.reqPerSec;
  const msgsPerSec = (run: RunFigures): number => run.msgsPerSec;
  return { rounds: wrkRows.length, msgsPerSec: whole.msgsPerSec, p99Ms: median(p99sMs)!, p99sMs,
    ofFloor: roundRatios(runs, singleWrkName, floorWrkName, reqPerSec),
    overRedis: roundRatios(runs, singleWrkName, redisXaddName, msgsPerSec),
    ofFsyncFloor: roundRatios(runs, singleWrkName, fsyncFloorWrkName, reqPerSec) };
}

/** The HTTP floor's req/s on this machine, as wrk drove it beside single produce (the median of its rounds), else as
 *  the bench's client drove it; null when no floor ran. The summary of `all` sets the absolute targets beside
 *  it. */
export function httpFloorReqPerSec(runs: RunFigures[]): number | null {
  const wrkRounds = runs.filter((run) => run.name === floorWrkName).map((run) => run.reqPerSec);
  if (wrkRounds.length > 0) return median(wrkRounds);
  return runs.find((run) => run.name === floorName)?.reqPerSec ?? null;
}

/** Every ratio of a produce report, from its runs (the rounds' ones medians over the rounds that have both sides). */
export function produceRatios(runs: RunFigures[]): ProduceRatios {
  const find = (name: string): RunFigures | undefined => runs.find((run) => run.name === name);
  const floor = find(floorName);
  const floorBatch = find('http floor, batch body (hello world)');
  const single = find('single produce');
  const wrk = merged(runs, singleWrkName);
  const batch = runs.find((run) => isBatchByBenchClient(run));
  const batchWrk = find(batchWrkName);
  const redis = merged(runs, redisXaddName);
  const redisBatch = runs.find((run) => run.name.startsWith('redis XADD, pipeline'));
  const ratio = (a: number | undefined, b: number | undefined): number | null =>
    a === undefined || b === undefined || b === 0 ? null : a / b;
  const rounds = singleRounds(runs);
  return {
    singleReqPerSecOfFloor: ratio(single?.reqPerSec, floor?.reqPerSec),
    singleOverRedis: ratio(single?.msgsPerSec, redis?.msgsPerSec),
    singleOverWrk: ratio(single?.reqPerSec, wrk?.reqPerSec),
    batchOverWrk: ratio(batch?.msgsPerSec, batchWrk?.msgsPerSec),
    singleWrkOfFloorWrk: median(rounds?.ofFloor ?? []),
    singleWrkOverRedis: median(rounds?.overRedis ?? []),
    singleWrkOfFsyncFloorWrk: median(rounds?.ofFsyncFloor ?? []),
    singleWrkRounds: rounds,
    batchMsgsPerSec: batch ? batch.msgsPerSec : null,
    batchReqPerSecOfFloor: ratio(batch?.reqPerSec, floorBatch?.reqPerSec),
    batchOverRedis: ratio(batch?.msgsPerSec, redisBatch?.msgsPerSec),
    batchMsgsPerSecOverSingle: ratio(batch?.msgsPerSec, single?.msgsPerSec),
    securedOverSecurityOff: ratio(sumReqPerSec(runs, 'single produce'), sumReqPerSec(runs, 'single produce (security off)')),
  };
}

/** The summary rows of `all` (and the target lines under the table). */
export function produceHeadlines(report: ProduceReport): Headline[] {
  const r = report.ratios;
  const headlines: Headline[] = [];
  // Issue 4 item 2: wrk drives the single-route scenarios when installed. Its figures (against the broker, against
  // the floor, beside redis-benchmark) are the headline; the bench's own client is the fallback, and the headline
  // of an open-loop run (--rate), beside which wrk does not run.
  const rounds = r.singleWrkRounds;
  const benchClient = report.runs.find((run) => run.name === 'single produce');
  const single = rounds !== null ? { msgsPerSec: rounds.msgsPerSec, p99Ms: rounds.p99Ms, client: 'wrk' }
    : benchClient === undefined ? undefined : { msgsPerSec: benchClient.msgsPerSec, p99Ms: benchClient.latencyMs.p99, client: benchClient.client };
  if (single !== undefined) {
    const t = produceTargets;
    const floorRatio = rounds === null ? r.singleReqPerSecOfFloor : r.singleWrkOfFloorWrk;
    const redisRatio = rounds === null ? r.singleOverRedis : r.singleWrkOverRedis;
    const checks: TargetCheck[] = [
      ...(floorRatio === null ? [] : [{ label: 'x floor', value: floorRatio, atLeast: t.singleOfFloor, decimals: 3 }]),
      ...(redisRatio === null ? [] : [{ label: 'x Redis', value: redisRatio, atLeast: t.singleOfRedis, decimals: 3 }]),
      { label: 'p99 ms', value: single.p99Ms, atMost: t.singleP99Ms, decimals: 1 },
    ];
    const unmeasured = [floorRatio === null ? 'floor' : '', redisRatio === null ? 'Redis' : ''].filter((name) => name !== '');
    headlines.push({ scenario: 'produce-single', value: single.msgsPerSec,
      figure: `${formatInt(single.msgsPerSec)} msg/s (${single.client}), p99 ${fixed(single.p99Ms, 1)} ms` +
        (r.singleWrkOfFsyncFloorWrk !== null ? `, x${fixed(r.singleWrkOfFsyncFloorWrk, 2)} fsync floor` : '') +
        (rounds !== null && rounds.rounds > 1 ? ` (${rounds.rounds} rounds: ratios and p99 their medians)` : ''),
      target: `>= ${t.singleOfFloor}x floor, >= ${t.singleOfRedis}x Redis, p99 <= ${t.singleP99Ms} ms` +
        (unmeasured.length > 0 ? ` (${unmeasured.join(', ')} not measured)` : ''),
      floorRatio, redisRatio, checks,
      otherCpuPercentMax: maxKnown(report.runs.filter((run) => !run.name.includes('batch') && !run.name.includes('pipeline')).map((run) => run.otherCpuPercent)) });
  }
  const batch = report.runs.find((run) => isBatchByBenchClient(run));
  if (batch !== undefined) {
    const checks: TargetCheck[] = [{ label: 'msg/s', value: batch.msgsPerSec, atLeast: produceTargets.batchMsgsPerSec, decimals: 0 }];
    headlines.push({ scenario: 'produce-batch', value: batch.msgsPerSec,
      figure: `${formatInt(batch.msgsPerSec)} msg/s, p99 ${fixed(batch.latencyMs.p99, 1)} ms`,
      target: `>= ${formatInt(produceTargets.batchMsgsPerSec)} msg/s`, floorRatio: r.batchReqPerSecOfFloor,
      redisRatio: r.batchOverRedis, checks,
      otherCpuPercentMax: maxKnown(report.runs.filter((run) => run.name.includes('batch') || run.name.includes('pipeline'))
        .map((run) => run.otherCpuPercent)) });
  }
  return headlines;
}

export function printProduceTable(report: ProduceReport): void {
  const header = ['run', 'client', 'conns', 'req/s', 'msgs/s', 'MB/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms',
    'errors', 'client CPU', 'client µs/req', 'server CPU', 'other CPU'];
  const rows = report.runs.map((run) => [run.round === undefined ? run.name : `${run.name} #${run.round}`, run.client, String(run.connections), formatInt(run.reqPerSec),
    formatInt(run.msgsPerSec), fixed(run.payloadMBPerSec, 1), fixed(run.latencyMs.p50, 2), fixed(run.latencyMs.p90, 2),
    fixed(run.latencyMs.p99, 2), fixed(run.latencyMs.p999, 2), fixed(run.latencyMs.max, 2),
    formatErrors(run.errorCounts), percent(run.clientCpuPercent), fixed(run.clientCpuUsPerRequest, 1),
    serverCpuText(run.serverCpuPercent, run.serverThreads), percent(run.otherCpuPercent)]);
  const out = renderTable(header, rows, [0, 1, 11]);
  const r = report.ratios;
  out.push('');
  for (const run of report.runs) {
    const o = run.openLoop;
    if (o === null) continue;
    out.push(`${run.name}: open loop at ${formatInt(o.ratePerSec)} req/s: ${formatInt(o.due)} due in the window, ` +
      `${formatInt(o.sentLate)} sent more than ${o.lateThresholdMs} ms late, ${formatInt(o.notSent)} not sent; send lateness ` +
      `p99 ${fixed(o.sendLatenessMs.p99, 2)} ms, max ${fixed(o.sendLatenessMs.max, 2)} ms (latencies count from the scheduled time)`);
  }
  /** A ratio line; with a round's values beside a median, those as well. */
  const line = (label: string, value: number | null, digits = 3, perRound?: number[]): void => {
    if (value === null) return;
    const ofRounds = perRound === undefined || perRound.length < 2 ? ''
      : ` (median of the rounds' ${perRound.map((one) => fixed(one, digits)).join(', ')})`;
    out.push(`${label}: ${fixed(value, digits)}${ofRounds}`);
  };
  line('single produce req/s / http floor req/s', r.singleReqPerSecOfFloor);
  line('single produce msgs/s / Redis XADD msgs/s (appendfsync always)', r.singleOverRedis);
  line('single produce req/s, bench client / wrk (same node)', r.singleOverWrk);
  const rounds = r.singleWrkRounds;
  line('single produce req/s / http floor req/s, both driven by wrk', r.singleWrkOfFloorWrk, 3, rounds?.ofFloor);
  line('single produce msgs/s driven by wrk / Redis XADD driven by redis-benchmark', r.singleWrkOverRedis, 3, rounds?.overRedis);
  line('single produce req/s / fsync floor req/s (group-commit fdatasync), both driven by wrk', r.singleWrkOfFsyncFloorWrk, 3,
    rounds?.ofFsyncFloor);
  if (rounds !== null && rounds.rounds > 1) {
    out.push(`single produce driven by wrk, ${rounds.rounds} rounds: ${formatInt(rounds.msgsPerSec)} msgs/s in all, p99 ` +
      `${fixed(rounds.p99Ms, 2)} ms (median of the rounds' ${rounds.p99sMs.map((p99) => fixed(p99, 2)).join(', ')})`);
  }
  if (r.batchMsgsPerSec !== null) out.push(`batch produce msgs/s: ${formatInt(r.batchMsgsPerSec)}`);
  line('batch produce req/s / http floor req/s (same batch bodies)', r.batchReqPerSecOfFloor);
  line('batch produce msgs/s / Redis XADD pipelined 100 msgs/s', r.batchOverRedis);
  line('batch produce msgs/s, bench client / wrk (same node)', r.batchOverWrk);
  line('batch msgs/s / single msgs/s', r.batchMsgsPerSecOverSingle, 1);
  if (report.schemaRatios !== undefined) {
    line('single produce msgs/s, 10-property schema / no schema (target >= 0.9)', report.schemaRatios.single);
    line('batch produce msgs/s, 10-property schema / no schema (target >= 0.7)', report.schemaRatios.batch);
  }
  if (r.securedOverSecurityOff !== null) {
    out.push(`single produce req/s, security on / security off: ${fixed(r.securedOverSecurityOff, 3)} (the credential cache keeps it >= 0.9?)`);
  }
  const headlines = produceHeadlines(report);
  if (headlines.length > 0) out.push('issue 4 targets:');
  for (const h of headlines) out.push(`  ${h.scenario} ${h.target}: ${h.figure}: ${verdictText(h.checks)}`);
  for (const missing of report.missingPeers) out.push(missing);
  if (report.redisVersion !== null) out.push(`Redis ${report.redisVersion}: appendonly yes, appendfsync always, started on a free loopback port`);
  out.push(`MB = 10^6 payload bytes; CPU % is of one core (${os.cpus().length} cores here); ` +
    `latencies from request write (open loop: its scheduled time) to last response byte, completions inside the ` +
    `measured window; redis-benchmark reports p50/p99/max only, wrk p50/p90/p99/max`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}
