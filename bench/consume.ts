// Scenarios consume-single, consume-batch and wake-up of `npm run bench` (bench/README.md; `consume` runs all three)
// against a broker node it starts itself (or --url); with --compare, consume-batch also runs Redis XREADGROUP + XACK
// (bench/peers.ts) in the same run:
//   consume-single  prefill a topic, then N connections loop GET consume -> POST ack?receipt_handle -> 204;
//   consume-batch   prefill another topic, then connections loop GET consume?max -> POST ack {"receipt_handles"};
//   wake-up         K consumers long-poll an empty topic while a producer sends one message at a time; latency
//                   from the producer's 202 to a consumer holding that message.
// The drain runs stop their window when the prefill runs out (no background top-up), so their figures cover only
// time while messages were available. Clients are raw keep-alive connections (bench/http_conn.ts) on the bench
// process's main thread; every loop ends by itself (phase flags, deadlines) and closes its sockets.
import os from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import type { Histogram } from 'hdr-histogram-js';
import {
  cleanups, CpuWindow, createTopic, deleteTopic, errorText, fixed, formatErrors, formatInt, latencySummaryMs,
  makeBatchBody, makePayload, maxKnown, newHistogram, percent, recordUs, renderTable, reportedOptions, serverCpuText, sleep,
  startBroker, type BrokerTarget, type Headline, type LatencySummaryMs, type ServerThreadCpu,
} from './common.js';
import type { TargetCheck } from './targets.js';
import { redisBaselineMissing, runRedisConsume, startRedis, type RedisConsumeFigures } from './peers.js';
import { HttpConnection, HttpFailure, requestBuffer, type HttpReply } from './http_conn.js';
import type { BenchOptions, ConsumePhase } from './options.js';
import { epochUsNow, scanTracedMessages, TracedRequestTemplate } from './traced_message.js';

/** Issue 3's targets, printed beside the figures. */
const targetBatchMsgsPerSec = 300_000;
const targetWakeP99Ms = 2;
/** The node's default consume cap per identity (config http.max_consume_in_flight_per_identity). */
const consumeCapDefault = 1024;
const prefillConnections = 8;
const prefillMessagesPerRequest = 1000;
/** A prefill gives up after this many failed requests. */
const prefillErrorsMax = 200;
/** After the window, how long requests in flight may take before their sockets are closed. */
const drainTimeoutMs = 10_000;
/** After the wake-up window, how long to wait for messages sent in it to reach a consumer. */
const wakeDeliveryGraceMs = 5_000;
const wakeProducerConnections = 8;
/** One consume answer in this many is parsed in full and checked against the handles scanned from it. */
const bodyCheckEvery = 64;
const clientHeader = 'bench';
/** A drain run whose prefill ran out sooner than this into the window counts as failed. */
const windowSecMin = 1;
/** Resolution of the client event-loop delay monitor in the wake-up run, ms. */
const loopDelayResolutionMs = 1;

/** Options only the produce scenario reads; left out of consume's JSON. */
const produceOnlyOptions = ['topic', 'batch', 'client', 'skipFloor', 'compareSecurity', 'rounds', 'rate', 'consumers', 'peakSec',
  'intervalSec', 'soakDurationSec', 'topics', 'polls', 'argv'];
/** Redis prefill: pipelined XADD on this many connections. */
const redisPrefillConnections = 16;

type Phase = 'warmup' | 'measure' | 'drain';

/** What every run needs: the node, its credentials and this invocation's options. */
interface Context {
  options: BenchOptions;
  target: BrokerTarget;
  address: { host: string; port: number };
  /** Resolves when the node the bench started exits; never for --url. */
  serverExited: Promise<void>;
  /** Prefill and consume this partition only (the forwarded bench); else every partition. */
  partition?: number;
}

function summary(histogram: Histogram): LatencySummaryMs & { count: number } {
  return { count: histogram.totalCount, ...latencySummaryMs(histogram) };
}

function bump(counts: Map<string, number>, key: string, by = 1): void {
  counts.set(key, (counts.get(key) ?? 0) + by);
}

function failureCode(error: unknown): string {
  return error instanceof HttpFailure ? error.code : errorText(error);
}

// ---------------------------------------------------------------------------------------------------------------
// Requests and answers.

export function topicPath(topic: string, rest: string): string {
  return `/v1/topics/${encodeURIComponent(topic)}/${rest}`;
}

function authHeaders(ctx: Context): Record<string, string> {
  return ctx.target.authorization === null ? {} : { authorization: ctx.target.authorization };
}

/** Builds ack requests: a single ack as one string, a batch ack by copying the handles' bytes from the consume answer
 *  (handles are ASCII: partition:offset:nonce). */
export class AckRequests {
  private readonly singleHead: string;
  private readonly singleTail: string;
  private readonly batchHead: string;

  constructor(target: BrokerTarget, topic: string) {
    const host = `host: ${target.url.replace(/^http:\/\//, '')}\r\n`;
    const auth = target.authorization === null ? '' : `authorization: ${target.authorization}\r\n`;
    this.singleHead = `POST ${topicPath(topic, 'ack')}?receipt_handle=`;
    this.singleTail = ` HTTP/1.1\r\n${host}${auth}x-svc-client: ${clientHeader}\r\ncontent-length: 0\r\n\r\n`;
    this.batchHead = `POST ${topicPath(topic, 'ack')} HTTP/1.1\r\n${host}${auth}content-type: application/json\r\n`;
  }

  single(handle: string): Buffer {
    return Buffer.from(this.singleHead + handle + this.singleTail, 'latin1');
  }

  /** A batch ack of the handles scanHandleSpans found in body, copied byte for byte: no string per handle. */
  batchFromSpans(body: Buffer, spans: readonly number[]): Buffer {
    if (spans.length === 0) throw new Error('batch ack: no receipt handles');
    const count = spans.length / 2;
    let handleBytes = 0;
    for (let i = 0; i < spans.length; i += 2) handleBytes += spans[i + 1]! - spans[i]!;
    // {"receipt_handles":["a","b"]}: the braces and name, a quote pair per handle, commas between them.
    const bodyBytes = batchBodyOpen.length + handleBytes + count * 2 + (count - 1) + batchBodyClose.length;
    const head = `${this.batchHead}content-length: ${bodyBytes}\r\n\r\n`;
    const out = Buffer.allocUnsafe(head.length + bodyBytes);
    let at = out.write(head, 0, 'latin1');
    at += batchBodyOpen.copy(out, at);
    for (let i = 0; i < spans.length; i += 2) {
      if (i > 0) out[at++] = 0x2c;
      out[at++] = 0x22;
      at += body.copy(out, at, spans[i]!, spans[i + 1]!);
      out[at++] = 0x22;
    }
    at += batchBodyClose.copy(out, at);
    return out;
  }
}

const batchBodyOpen = Buffer.from('{"receipt_handles":[');
const batchBodyClose = Buffer.from(']}');

const handleKey = Buffer.from('"receipt_handle":"');
const statusKey = Buffer.from('"status":');

/** The receipt handles of a consume answer, in order, found by scanning (our payloads never hold the key). */
export function scanHandles(body: Buffer): string[] {
  return handlesFromSpans(body, scanHandleSpans(body));
}

function handlesFromSpans(body: Buffer, spans: readonly number[]): string[] {
  return Array.from({ length: spans.length / 2 }, (_, i) => body.toString('latin1', spans[2 * i]!, spans[2 * i + 1]!));
}

/** Where each receipt handle of a consume answer lies in body: start, end, start, end, ... */
export function scanHandleSpans(body: Buffer): number[] {
  const spans: number[] = [];
  let at = body.indexOf(handleKey);
  while (at >= 0) {
    const start = at + handleKey.length;
    const end = body.indexOf(0x22, start);
    if (end < 0) break;
    spans.push(start, end);
    at = body.indexOf(handleKey, end);
  }
  return spans;
}

/** The batch ack answer whose count items are all {"status":204}, byte for byte as the node writes it (nearly every
 *  answer is this one: comparing with it spares scanning each status). Built once per count. */
const allSettledAnswers = new Map<number, Buffer>();

/** The statuses of a batch ack answer for count handles, in order: found by one comparison when all are 204. */
export function ackStatuses(body: Buffer, count: number): number[] {
  return body.equals(allSettledAnswer(count)) ? new Array<number>(count).fill(204) : scanStatuses(body);
}

export function allSettledAnswer(count: number): Buffer {
  let answer = allSettledAnswers.get(count);
  if (answer === undefined) {
    answer = Buffer.from(JSON.stringify({ results: Array.from({ length: count }, () => ({ status: 204 })) }));
    if (allSettledAnswers.size < 1000) allSettledAnswers.set(count, answer);
  }
  return answer;
}

/** The statuses of a batch ack answer {"results":[{"status":204},...]}, in order. */
function scanStatuses(body: Buffer): number[] {
  const statuses: number[] = [];
  let at = body.indexOf(statusKey);
  while (at >= 0) {
    const start = at + statusKey.length;
    statuses.push(Number(body.toString('latin1', start, start + 3)));
    at = body.indexOf(statusKey, start);
  }
  return statuses;
}

/** Parses a consume answer in full; null when it matches the scanned handles, else what is wrong. */
function checkConsumeBody(body: Buffer, topic: string, batch: boolean, max: number, handles: string[]): string | null {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    return 'not JSON';
  }
  const messages = batch ? (value as { messages?: unknown } | null)?.messages : [value];
  if (!Array.isArray(messages)) return 'no messages array';
  if (messages.length !== handles.length) return `${messages.length} messages but ${handles.length} handles scanned`;
  if (messages.length === 0 || messages.length > max) return `${messages.length} messages for max ${max}`;
  for (const [i, message] of messages.entries()) {
    const m = message as { topic?: unknown; receipt_handle?: unknown; payload?: unknown } | null;
    if (m?.topic !== topic) return `message of topic ${String(m?.topic)}`;
    if (m.receipt_handle !== handles[i]) return 'receipt_handle differs from the scanned one';
    if (typeof m.payload !== 'object' || m.payload === null) return 'payload is not the JSON object produced';
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------------
// Prefill: batch produce until the topic holds `count` messages, bounded by --prefill-timeout.

export interface PrefillFigures {
  requested: number;
  accepted: number;
  seconds: number;
  msgsPerSec: number;
  timedOut: boolean;
  errorCounts: Record<string, number>;
}

async function prefill(ctx: Context, label: string, topic: string, count: number): Promise<PrefillFigures> {
  const { options } = ctx;
  const payload = makePayload(options.messageBytes);
  const headers = { ...authHeaders(ctx), 'content-type': 'application/json' };
  const path = topicPath(topic, 'produce/batch');
  const full = requestBuffer(ctx.target.url, 'POST', path, headers, makeBatchBody(payload, prefillMessagesPerRequest, ctx.partition));
  const errors = new Map<string, number>();
  let issued = 0;
  let accepted = 0;
  let failed = 0;
  const startMs = performance.now();
  const deadlineMs = startMs + options.prefillTimeoutSec * 1000;
  const more = (): boolean => issued < count && performance.now() < deadlineMs && failed < prefillErrorsMax;
  const loop = async (connection: HttpConnection): Promise<void> => {
    while (more()) {
      const n = Math.min(prefillMessagesPerRequest, count - issued);
      issued += n;
      const request = n === prefillMessagesPerRequest ? full
        : requestBuffer(ctx.target.url, 'POST', path, headers, makeBatchBody(payload, n, ctx.partition));
      const reply = await connection.request(request).catch((error: unknown) => failureCode(error));
      if (typeof reply !== 'string' && reply.status === 202) {
        accepted += Number(/"accepted":(\d+)/.exec(reply.body.toString('latin1'))?.[1] ?? n);
        continue;
      }
      issued -= n;
      failed++;
      bump(errors, typeof reply === 'string' ? reply : String(reply.status));
      await sleep(typeof reply === 'string' || reply.status === 429 || reply.status === 503 ? 100 : 10);
    }
  };
  const progress = setInterval(() => {
    const sec = (performance.now() - startMs) / 1000;
    process.stderr.write(`  [${label}] prefill ${fixed(sec, 0).padStart(3)}s  ${formatInt(accepted)} / ` +
      `${formatInt(count)} messages  ${formatInt(accepted / sec)} msg/s\n`);
  }, 1000);
  const connections = Array.from({ length: prefillConnections }, () => new HttpConnection(ctx.address));
  try {
    await Promise.race([Promise.all(connections.map(loop)), ctx.serverExited]);
  } finally {
    clearInterval(progress);
    for (const connection of connections) connection.destroy();
  }
  const seconds = (performance.now() - startMs) / 1000;
  return { requested: count, accepted, seconds, msgsPerSec: accepted / seconds, timedOut: accepted < count,
    errorCounts: Object.fromEntries(errors) };
}

// ---------------------------------------------------------------------------------------------------------------
// consume-single and consume-batch: closed loops that drain a prefilled topic.

interface DrainSpec {
  name: string;
  topic: string;
  connections: number;
  /** null: single consume and ack by query; else consume?max and batch ack. */
  max: number | null;
  /** Messages the topic holds when the run starts. */
  available: number;
}

/** Counters of one drain run; only responses completed while phase is 'measure' count. */
class DrainState {
  phase: Phase = 'warmup';
  windowStartMs = 0;
  /** When the prefill ran out (a consume answered 204 with at most a round of messages unaccounted for). */
  drainedAtMs: number | null = null;
  drainedIn: Phase | null = null;
  onDrained: () => void = () => undefined;
  /** Messages received in consume answers, every phase: how far the prefill is used up. */
  consumedTotal = 0;
  ackedTotal = 0;
  ackedAtWindowStart = 0;
  consumedInWindow = 0;
  consumeAnswersInWindow = 0;
  ackedInWindow = 0;
  readonly consumeUs = newHistogram();
  readonly ackUs = newHistogram();
  readonly consumeStatus = new Map<string, number>();
  readonly ackStatus = new Map<string, number>();
  /** Failures by "<request> <status or code>", e.g. "consume 429", "ack-item 410", "consume ECONNRESET". */
  readonly errors = new Map<string, number>();
  firstBadBody: string | null = null;
  answersSeen = 0;
  /** performance.now() when the run started, and when the first 200 consume answer arrived. */
  readonly startedMs = performance.now();
  firstAnswerMs: number | null = null;
  /** Messages acked in each whole or partial second of the window. */
  readonly ackedPerSecond: number[] = [];

  get sending(): boolean {
    return this.phase !== 'drain';
  }

  get counting(): boolean {
    return this.phase === 'measure';
  }

  error(key: string, by = 1): void {
    if (this.counting) bump(this.errors, key, by);
  }

  markDrained(atMs: number): void {
    if (this.drainedAtMs !== null) return;
    this.drainedAtMs = atMs;
    this.drainedIn = this.phase;
    this.phase = 'drain';
    this.onDrained();
  }
}

/** One request of a drain loop, timed and counted; null when it got no response (counted as an error). */
async function drainRequest(connection: HttpConnection, request: Buffer, state: DrainState,
  kind: 'consume' | 'ack'): Promise<HttpReply | null> {
  let reply: HttpReply;
  try {
    reply = await connection.request(request);
  } catch (error) {
    state.error(`${kind} ${failureCode(error)}`);
    await sleep(50);
    return null;
  }
  if (state.counting) {
    recordUs(kind === 'consume' ? state.consumeUs : state.ackUs, reply.endedMs - reply.startedMs);
    bump(kind === 'consume' ? state.consumeStatus : state.ackStatus, String(reply.status));
  }
  return reply;
}

async function drainLoop(connection: HttpConnection, spec: DrainSpec, state: DrainState, consume: Buffer,
  acks: AckRequests): Promise<void> {
  const max = spec.max ?? 1;
  while (state.sending) {
    const reply = await drainRequest(connection, consume, state, 'consume');
    if (reply === null) continue;
    if (reply.status === 200) {
      await ackAnswer(connection, spec, state, reply.body, acks);
    } else if (reply.status === 204) {
      // Nothing available: the prefill is used up when at most one round of leases is unaccounted for.
      if (state.consumedTotal >= spec.available - spec.connections * max) state.markDrained(reply.endedMs);
      else state.error('consume 204-with-messages-left');
      await sleep(1);
    } else {
      state.error(`consume ${reply.status}`);
      await sleep(10);
    }
  }
}

/** Acks every message of a consume answer (also after the window closed, so no lease is left behind). */
async function ackAnswer(connection: HttpConnection, spec: DrainSpec, state: DrainState, body: Buffer,
  acks: AckRequests): Promise<void> {
  // Spans, not strings: the batch ack copies the handles' bytes straight from the answer.
  const spans = scanHandleSpans(body);
  const count = spans.length / 2;
  state.consumedTotal += count;
  state.firstAnswerMs ??= performance.now();
  if (state.counting) {
    state.consumedInWindow += count;
    state.consumeAnswersInWindow++;
  }
  if (state.answersSeen++ % bodyCheckEvery === 0 || count === 0) {
    const problem = checkConsumeBody(body, spec.topic, spec.max !== null, spec.max ?? 1, handlesFromSpans(body, spans));
    if (problem !== null) {
      state.error('consume bad-body');
      state.firstBadBody ??= `${problem}: ${body.toString('utf8', 0, 300)}`;
    }
  }
  if (count === 0) return;
  const request = spec.max === null ? acks.single(body.toString('latin1', spans[0]!, spans[1]!)) : acks.batchFromSpans(body, spans);
  const reply = await drainRequest(connection, request, state, 'ack');
  if (reply === null) return;
  let settled = 0;
  if (spec.max === null) {
    if (reply.status === 204) settled = 1;
    else state.error(`ack ${reply.status}`);
  } else if (reply.status === 200) {
    const statuses = ackStatuses(reply.body, count);
    if (statuses.length !== count) state.error('ack results-count-mismatch');
    for (const status of statuses) {
      if (status === 204) settled++;
      else state.error(`ack-item ${status}`);
    }
  } else {
    state.error(`ack ${reply.status}`);
  }
  state.ackedTotal += settled;
  if (state.counting) {
    state.ackedInWindow += settled;
    const second = Math.floor((reply.endedMs - state.windowStartMs) / 1000);
    state.ackedPerSecond[second] = (state.ackedPerSecond[second] ?? 0) + settled;
  }
}

export interface RequestFigures {
  /** Responses (any status) completed in the window, per second, and their latency, write to last byte. */
  requests: number;
  reqPerSec: number;
  latencyMs: LatencySummaryMs;
  statusCounts: Record<string, number>;
}

export interface DrainFigures {
  name: string;
  topic: string;
  connections: number;
  max: number | null;
  prefill: PrefillFigures;
  plannedWindowSec: number;
  windowSec: number;
  /** The prefill ran out: during 'warmup' (no window at all) or 'measure' (the window ended early), or null. */
  drainedIn: Phase | null;
  /** Messages whose ack completed with 204 (per handle for a batch) inside the window, per second. */
  ackedMessages: number;
  msgsPerSec: number;
  /** msgsPerSec x --message-bytes, in 10^6 bytes per second (payload bytes). */
  payloadMBPerSec: number;
  consumedMessages: number;
  /** Messages per 200 consume answer (max for a full batch). */
  messagesPerConsume: number;
  /** Messages acked in each second of the window (the last one partial): shows a ramp-up or a decline. */
  ackedPerSecond: number[];
  /** From the start of the run (warm-up) to the first 200 consume answer, ms. */
  firstAnswerMs: number | null;
  consume: RequestFigures;
  ack: RequestFigures;
  errorCounts: Record<string, number>;
  firstBadBody: string | null;
  clientCpuPercent: number;
  /** Bench process CPU per acked message, µs: the load generator's own cost. */
  clientCpuUsPerMessage: number;
  serverCpuPercent: number | null;
  serverThreads: ServerThreadCpu[];
  otherCpuPercent: number | null;
  connectionsOpened: number;
  abandonedInFlight: number;
}

async function measureDrain(ctx: Context, spec: DrainSpec, prefilled: PrefillFigures): Promise<DrainFigures> {
  const { options } = ctx;
  const state = new DrainState();
  const drained = new Promise<void>((resolve) => (state.onDrained = resolve));
  const cpu = new CpuWindow(ctx.target.serverPid);
  const params = [...(spec.max === null ? [] : [`max=${spec.max}`]), ...(ctx.partition === undefined ? [] : [`partition=${ctx.partition}`])];
  const query = params.length === 0 ? '' : `?${params.join('&')}`;
  const headers = { ...authHeaders(ctx), ...(spec.max === null ? {} : { 'x-svc-client': clientHeader }) };
  const consume = requestBuffer(ctx.target.url, 'GET', topicPath(spec.topic, 'consume') + query, headers);
  const acks = new AckRequests(ctx.target, spec.topic);
  process.stderr.write(`${spec.name}: ${spec.connections} connections, ${options.warmupSec}s warm-up + ` +
    `${options.durationSec}s (or until ${formatInt(spec.available)} prefilled messages run out), ${ctx.target.url}\n`);
  const connections = Array.from({ length: spec.connections }, () => new HttpConnection(ctx.address));
  const loops = connections.map((connection) => drainLoop(connection, spec, state, consume, acks));
  const progress = drainProgress(spec, state);
  let windowMs = 0;
  try {
    await Promise.race([sleep(options.warmupSec * 1000), drained, ctx.serverExited]);
    if (state.phase === 'warmup') {
      state.phase = 'measure';
      state.windowStartMs = performance.now();
      state.ackedAtWindowStart = state.ackedTotal;
      cpu.start();
      await Promise.race([sleep(options.durationSec * 1000), drained, ctx.serverExited]);
      windowMs = (state.drainedAtMs ?? performance.now()) - state.windowStartMs;
      cpu.end();
    }
    state.phase = 'drain';
    await Promise.race([Promise.allSettled(loops), sleep(drainTimeoutMs)]);
  } finally {
    clearInterval(progress);
  }
  const abandoned = connections.filter((connection) => connection.busy).length;
  for (const connection of connections) connection.destroy();
  await Promise.allSettled(loops);
  const opened = connections.reduce((sum, connection) => sum + connection.opened, 0);
  return drainFigures(ctx, spec, prefilled, state, cpu, windowMs, { opened, abandoned });
}

function drainProgress(spec: DrainSpec, state: DrainState): NodeJS.Timeout {
  const startedMs = performance.now();
  let lastAcked = 0;
  let lastMs = startedMs;
  return setInterval(() => {
    const now = performance.now();
    const rate = ((state.ackedTotal - lastAcked) * 1000) / (now - lastMs);
    [lastAcked, lastMs] = [state.ackedTotal, now];
    const inWindow = state.ackedTotal - state.ackedAtWindowStart;
    const average = state.phase === 'measure' && now - state.windowStartMs >= 100
      ? `  avg ${formatInt((inWindow * 1000) / (now - state.windowStartMs))} msg/s` : '';
    const left = Math.max(0, spec.available - state.consumedTotal);
    process.stderr.write(`  [${spec.name}] ${state.phase.padEnd(7)} ${fixed((now - startedMs) / 1000, 0).padStart(3)}s  ` +
      `${formatInt(rate).padStart(9)} msg/s acked${average}  ${formatInt(left)} left\n`);
  }, 1000);
}

function requestFigures(histogram: Histogram, statuses: Map<string, number>, seconds: number): RequestFigures {
  const { count: requests, ...latencyMs } = summary(histogram);
  const reqPerSec = seconds > 0 ? requests / seconds : 0;
  return { requests, reqPerSec, latencyMs, statusCounts: Object.fromEntries(statuses) };
}

function drainFigures(ctx: Context, spec: DrainSpec, prefilled: PrefillFigures, state: DrainState, cpuWindow: CpuWindow,
  windowMs: number, sockets: { opened: number; abandoned: number }): DrainFigures {
  const seconds = windowMs / 1000;
  const cpu = cpuWindow.figures(windowMs);
  return {
    name: spec.name, topic: spec.topic, connections: spec.connections, max: spec.max, prefill: prefilled,
    plannedWindowSec: ctx.options.durationSec, windowSec: seconds, drainedIn: state.drainedIn,
    ackedMessages: state.ackedInWindow,
    msgsPerSec: seconds > 0 ? state.ackedInWindow / seconds : 0,
    payloadMBPerSec: seconds > 0 ? (state.ackedInWindow * ctx.options.messageBytes) / seconds / 1e6 : 0,
    consumedMessages: state.consumedInWindow,
    messagesPerConsume: state.consumeAnswersInWindow > 0 ? state.consumedInWindow / state.consumeAnswersInWindow : 0,
    ackedPerSecond: Array.from(state.ackedPerSecond, (count) => count ?? 0),
    firstAnswerMs: state.firstAnswerMs === null ? null : state.firstAnswerMs - state.startedMs,
    consume: requestFigures(state.consumeUs, state.consumeStatus, seconds),
    ack: requestFigures(state.ackUs, state.ackStatus, seconds),
    errorCounts: Object.fromEntries(state.errors), firstBadBody: state.firstBadBody,
    clientCpuPercent: cpu.clientCpuPercent,
    clientCpuUsPerMessage: state.ackedInWindow > 0 ? (cpu.clientCpuMs * 1000) / state.ackedInWindow : 0,
    serverCpuPercent: cpu.serverCpuPercent, serverThreads: cpu.serverThreads, otherCpuPercent: cpu.otherCpuPercent,
    connectionsOpened: sockets.opened, abandonedInFlight: sockets.abandoned,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Wake-up latency: K long polls on an empty topic, an open-loop producer of one message at a time.

/** Per message id: when it was written, when its produce answered 202, when a consumer got it (NaN: not yet). */
class WakeLedger {
  readonly sentMs: Float64Array;
  readonly acceptedMs: Float64Array;
  readonly receivedMs: Float64Array;
  readonly inWindow: Uint8Array;
  readonly wakeUs = newHistogram();
  readonly endToEndUs = newHistogram();
  readonly produceUs = newHistogram();
  readonly ackUs = newHistogram();
  readonly consumeStatus = new Map<string, number>();
  readonly errors = new Map<string, number>();
  sentInWindow = 0;
  acceptedInWindow = 0;
  deliveredInWindow = 0;
  deliveredBefore202 = 0;
  duplicates = 0;
  skippedBusy = 0;
  deliveredTotal = 0;

  constructor(readonly capacity: number) {
    this.sentMs = new Float64Array(capacity).fill(NaN);
    this.acceptedMs = new Float64Array(capacity).fill(NaN);
    this.receivedMs = new Float64Array(capacity).fill(NaN);
    this.inWindow = new Uint8Array(capacity);
  }

  accepted(id: number, atMs: number): void {
    this.acceptedMs[id] = atMs;
    if (this.inWindow[id]) {
      this.acceptedInWindow++;
      recordUs(this.produceUs, atMs - this.sentMs[id]!);
    }
    this.settle(id);
  }

  received(id: number, atMs: number): void {
    if (id < 0 || id >= this.capacity || Number.isNaN(this.sentMs[id]!)) {
      bump(this.errors, 'consume unknown-id');
      return;
    }
    if (!Number.isNaN(this.receivedMs[id]!)) {
      this.duplicates++;
      return;
    }
    this.receivedMs[id] = atMs;
    this.deliveredTotal++;
    this.settle(id);
  }

  /** Records the message's latencies once both its 202 and its delivery are known. */
  private settle(id: number): void {
    const accepted = this.acceptedMs[id]!;
    const received = this.receivedMs[id]!;
    if (!this.inWindow[id] || Number.isNaN(accepted) || Number.isNaN(received)) return;
    this.deliveredInWindow++;
    if (received < accepted) this.deliveredBefore202++;
    recordUs(this.wakeUs, received - accepted);
    recordUs(this.endToEndUs, received - this.sentMs[id]!);
  }

  /** Messages sent in the window and accepted (202) that no consumer has received yet. */
  undelivered(): number {
    let count = 0;
    for (let id = 0; id < this.capacity; id++) {
      if (this.inWindow[id] && !Number.isNaN(this.acceptedMs[id]!) && Number.isNaN(this.receivedMs[id]!)) count++;
    }
    return count;
  }
}

interface WakeState {
  phase: Phase;
  producing: boolean;
  polling: boolean;
  /** Pollers with a consume (long poll) in flight. */
  waiting: number;
  windowStartMs: number;
  windowEndMs: number;
}

async function pollLoop(connection: HttpConnection, state: WakeState, ledger: WakeLedger, poll: Buffer,
  acks: AckRequests): Promise<void> {
  while (state.polling) {
    state.waiting++;
    const reply = await connection.request(poll).catch((error: unknown) => failureCode(error));
    state.waiting--;
    if (!state.polling) return;
    if (typeof reply === 'string') {
      bump(ledger.errors, `consume ${reply}`);
      await sleep(50);
      continue;
    }
    if (state.phase === 'measure') bump(ledger.consumeStatus, String(reply.status));
    if (reply.status === 204) continue;
    if (reply.status !== 200) {
      bump(ledger.errors, `consume ${reply.status}`);
      await sleep(10);
      continue;
    }
    const id = scanTracedMessages(reply.body)[0]?.id;
    const handle = scanHandles(reply.body)[0];
    if (id === undefined || !Number.isInteger(id) || handle === undefined) bump(ledger.errors, 'consume bad-body');
    else ledger.received(id, reply.endedMs);
    if (handle === undefined) continue;
    const ack = await connection.request(acks.single(handle)).catch((error: unknown) => failureCode(error));
    // An ack cut off by the bench closing its sockets at the end is not the node's error.
    if (typeof ack === 'string') {
      if (state.polling) bump(ledger.errors, `ack ${ack}`);
    } else if (ack.status !== 204) bump(ledger.errors, `ack ${ack.status}`);
    else if (state.phase === 'measure') recordUs(ledger.ackUs, ack.endedMs - ack.startedMs);
  }
}

/** Sends message ids 0, 1, ... at --wake-rate on the first idle producer connection; skips an id when none is idle. */
function startProducer(ctx: Context, state: WakeState, ledger: WakeLedger, topic: string,
  connections: HttpConnection[]): Promise<void> {
  const intervalMs = 1000 / ctx.options.wakeRate;
  const headers = { ...authHeaders(ctx), 'content-type': 'application/json' };
  const template = new TracedRequestTemplate(ctx.target.url, topicPath(topic, 'produce'), headers, ctx.options.messageBytes);
  const send = (connection: HttpConnection, id: number): void => {
    const request = template.request(id, epochUsNow());
    ledger.sentMs[id] = performance.now();
    if (state.phase === 'measure') [ledger.inWindow[id], ledger.sentInWindow] = [1, ledger.sentInWindow + 1];
    connection.request(request).then(
      (reply) => {
        if (reply.status === 202) ledger.accepted(id, reply.endedMs);
        else bump(ledger.errors, `produce ${reply.status}`);
      },
      (error: unknown) => bump(ledger.errors, `produce ${failureCode(error)}`));
  };
  const startMs = performance.now();
  let next = 0;
  return new Promise<void>((resolve) => {
    const tick = (): void => {
      const now = performance.now();
      while (state.producing && next < ledger.capacity && startMs + next * intervalMs <= now) {
        const idle = connections.find((connection) => !connection.busy);
        if (idle === undefined) ledger.skippedBusy += state.phase === 'measure' ? 1 : 0;
        else send(idle, next);
        next++;
      }
      if (!state.producing || next >= ledger.capacity) return resolve();
      setTimeout(tick, Math.max(0, startMs + next * intervalMs - performance.now()));
    };
    tick();
  });
}

export interface WakeFigures {
  topic: string;
  pollers: number;
  ratePerSec: number;
  windowSec: number;
  /** Messages written in the window, answered 202, and received by a consumer (within the grace after it). */
  sent: number;
  accepted: number;
  delivered: number;
  undelivered: number;
  duplicates: number;
  /** Messages a consumer held before their producer saw the 202 (recorded as latency 0). */
  deliveredBefore202: number;
  /** Ids due in the window that the producer skipped because all its connections were busy (open loop behind). */
  skippedBusy: number;
  /** From the producer's 202 to the consumer's last response byte: the wake-up latency of issue 3. */
  wakeLatencyMs: LatencySummaryMs & { count: number };
  /** From writing the produce request to the consumer's last response byte. */
  endToEndMs: LatencySummaryMs & { count: number };
  produceMs: LatencySummaryMs & { count: number };
  ackMs: LatencySummaryMs & { count: number };
  consumeStatusCounts: Record<string, number>;
  errorCounts: Record<string, number>;
  /** The bench process's event-loop lateness in the window (a 1 ms timer's delay past its due time): how late the
   * client itself may have noticed a response. */
  clientLoopDelayMs: { p50: number; p99: number; max: number };
  clientCpuPercent: number;
  clientCpuUsPerMessage: number;
  serverCpuPercent: number | null;
  serverThreads: ServerThreadCpu[];
  otherCpuPercent: number | null;
}

async function measureWake(ctx: Context, topic: string): Promise<WakeFigures> {
  const { options } = ctx;
  const ledger = new WakeLedger(Math.ceil((options.wakeRate * (options.warmupSec + options.durationSec)) + 16));
  const state: WakeState = { phase: 'warmup', producing: true, polling: true, waiting: 0, windowStartMs: 0, windowEndMs: 0 };
  const poll = requestBuffer(ctx.target.url, 'GET', topicPath(topic, 'consume') + '?wait=10s', authHeaders(ctx));
  const acks = new AckRequests(ctx.target, topic);
  process.stderr.write(`wake-up: ${options.pollers} long-polling consumers (wait=10s), producer ${options.wakeRate} msg/s ` +
    `one at a time, ${options.warmupSec}s warm-up + ${options.durationSec}s, ${ctx.target.url}\n`);
  const pollers = Array.from({ length: options.pollers }, () => new HttpConnection(ctx.address));
  const producers = Array.from({ length: wakeProducerConnections }, () => new HttpConnection(ctx.address));
  const loops = pollers.map((connection) => pollLoop(connection, state, ledger, poll, acks));
  await waitUntil(() => state.waiting === options.pollers, 2000);
  const producer = startProducer(ctx, state, ledger, topic, producers);
  const progress = wakeProgress(state, ledger, options.pollers);
  const cpu = new CpuWindow(ctx.target.serverPid);
  const loopDelay = monitorEventLoopDelay({ resolution: loopDelayResolutionMs });
  try {
    await Promise.race([sleep(options.warmupSec * 1000), ctx.serverExited]);
    [state.phase, state.windowStartMs] = ['measure', performance.now()];
    cpu.start();
    loopDelay.enable();
    await Promise.race([sleep(options.durationSec * 1000), ctx.serverExited]);
    loopDelay.disable();
    cpu.end();
    [state.phase, state.windowEndMs, state.producing] = ['drain', performance.now(), false];
    await producer;
    await waitUntil(() => ledger.undelivered() === 0 && !producers.some((p) => p.busy), wakeDeliveryGraceMs);
  } finally {
    clearInterval(progress);
    state.polling = false;
    for (const connection of [...pollers, ...producers]) connection.destroy();
  }
  await Promise.allSettled(loops);
  return wakeFigures(ctx, topic, state, ledger, cpu, loopDelay);
}

/** Polls cond every 10 ms until it holds or timeoutMs passes. */
async function waitUntil(cond: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!cond() && performance.now() < deadline) await sleep(10);
}

function wakeProgress(state: WakeState, ledger: WakeLedger, pollers: number): NodeJS.Timeout {
  const startedMs = performance.now();
  let [lastSent, lastDelivered, lastMs] = [0, 0, startedMs];
  return setInterval(() => {
    const now = performance.now();
    const sent = ledger.sentMs.reduce((n, ms) => (Number.isNaN(ms) ? n : n + 1), 0);
    const seconds = (now - lastMs) / 1000;
    const p99 = ledger.wakeUs.totalCount === 0 ? ''
      : `  wake p99 ${fixed(ledger.wakeUs.getValueAtPercentile(99) / 1000, 2)} ms so far`;
    process.stderr.write(`  [wake-up] ${state.phase.padEnd(7)} ${fixed((now - startedMs) / 1000, 0).padStart(3)}s  ` +
      `sent ${formatInt((sent - lastSent) / seconds)}/s  ` +
      `delivered ${formatInt((ledger.deliveredTotal - lastDelivered) / seconds)}/s  ` +
      `polls waiting ${state.waiting}/${pollers}${p99}\n`);
    [lastSent, lastDelivered, lastMs] = [sent, ledger.deliveredTotal, now];
  }, 1000);
}

function wakeFigures(ctx: Context, topic: string, state: WakeState, ledger: WakeLedger, cpuWindow: CpuWindow,
  loopDelay: ReturnType<typeof monitorEventLoopDelay>): WakeFigures {
  const windowMs = state.windowEndMs - state.windowStartMs;
  const cpu = cpuWindow.figures(windowMs);
  // The histogram holds the intervals between its timer's runs; lateness is the interval minus the resolution.
  const nsToMs = (ns: number): number => (Number.isFinite(ns) ? Math.max(0, ns / 1e6 - loopDelayResolutionMs) : 0);
  return {
    topic, pollers: ctx.options.pollers, ratePerSec: ctx.options.wakeRate, windowSec: windowMs / 1000,
    sent: ledger.sentInWindow, accepted: ledger.acceptedInWindow, delivered: ledger.deliveredInWindow,
    undelivered: ledger.undelivered(), duplicates: ledger.duplicates, deliveredBefore202: ledger.deliveredBefore202,
    skippedBusy: ledger.skippedBusy,
    wakeLatencyMs: summary(ledger.wakeUs), endToEndMs: summary(ledger.endToEndUs), produceMs: summary(ledger.produceUs),
    ackMs: summary(ledger.ackUs),
    consumeStatusCounts: Object.fromEntries(ledger.consumeStatus), errorCounts: Object.fromEntries(ledger.errors),
    clientLoopDelayMs: {
      p50: nsToMs(loopDelay.percentile(50)), p99: nsToMs(loopDelay.percentile(99)), max: nsToMs(loopDelay.max),
    },
    clientCpuPercent: cpu.clientCpuPercent,
    clientCpuUsPerMessage: ledger.sentInWindow > 0 ? (cpu.clientCpuMs * 1000) / ledger.sentInWindow : 0,
    serverCpuPercent: cpu.serverCpuPercent, serverThreads: cpu.serverThreads, otherCpuPercent: cpu.otherCpuPercent,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// The scenario.

export interface ConsumeReport {
  scenario: string;
  startedAt: string;
  target: string;
  options: Record<string, unknown>;
  /** Settings the bench gave the node it started (environment variables), so the report says what ran. */
  nodeEnv: Record<string, string>;
  drainRuns: DrainFigures[];
  wake: WakeFigures | null;
  targets: { batchMsgsPerSec: number; wakeP99Ms: number };
  /** --compare with consume-batch: Redis Streams doing the same work, and our msgs/s over its. */
  redis: RedisConsumeFigures | null;
  redisVersion: string | null;
  batchOverRedis: number | null;
  missingPeers: string[];
  messageBytes: number;
  failures: string[];
}

/** The consume cap (per identity) the runs need: a batch consume counts as its max. */
function nodeEnvFor(options: BenchOptions): Record<string, string> {
  const needed = Math.max(options.phases.includes('single') ? options.connections : 0,
    options.phases.includes('batch') ? options.batchConnections * options.max : 0,
    options.phases.includes('wake') ? options.pollers : 0);
  if (needed <= consumeCapDefault) return {};
  if (options.url !== null) {
    process.stderr.write(`warning: these runs hold up to ${needed} consumes in flight (a batch consume counts ` +
      `as its max); a node with the default http.max_consume_in_flight_per_identity (${consumeCapDefault}) ` +
      'answers 429 beyond that\n');
    return {};
  }
  return { SVC_HTTP_MAX_CONSUME_IN_FLIGHT_PER_IDENTITY: String(needed) };
}

export async function runConsume(options: BenchOptions): Promise<ConsumeReport> {
  const startedAt = new Date().toISOString();
  const failures: string[] = [];
  const drainRuns: DrainFigures[] = [];
  let wake: WakeFigures | null = null;
  const nodeEnv = nodeEnvFor(options);
  let target: BrokerTarget | null = null;
  try {
    target = await startBroker(options, nodeEnv);
    const server = target.server;
    const ctx: Context = { options, target, address: HttpConnection.forUrl(target.url),
      serverExited: server === null ? new Promise<void>(() => undefined) : server.exited.then(() => undefined) };
    const stamp = Date.now();
    for (const phase of options.phases) {
      try {
        const topic = await newTopic(ctx, `bench-consume-${stamp}-${phase}`);
        if (phase === 'wake') wake = await measureWake(ctx, topic);
        else drainRuns.push(await drainRun(ctx, phase, topic));
      } catch (error) {
        failures.push(`${phase}: ${errorText(error)}`);
      }
      if (server?.hasExited()) throw new Error(`broker exited during ${phase}; its output:\n${server.outputTail()}`);
    }
  } catch (error) {
    failures.push(errorText(error));
  }
  failures.push(...judge(drainRuns, wake));
  // Redis after the broker's runs, with the broker stopped, so the two never share the cores.
  let redis: RedisConsumeFigures | null = null;
  let redisVersion: string | null = null;
  const missingPeers: string[] = [];
  if (options.compare && options.phases.includes('batch')) {
    await target?.server?.stop();
    const redisMissing = redisBaselineMissing();
    if (redisMissing !== null) {
      missingPeers.push(redisMissing);
    } else {
      try {
        const peer = await startRedis();
        redisVersion = peer.version;
        redis = await runRedisConsume(peer, { consumers: options.redisConsumers, count: options.max,
          prefill: options.batchPrefill, durationSec: options.durationSec, payload: makePayload(options.messageBytes),
          prefillConnections: redisPrefillConnections });
        await peer.stop();
      } catch (error) {
        failures.push(`redis: ${errorText(error)}`);
      }
    }
  }
  const batch = drainRuns.find((run) => run.name === 'consume-batch');
  const batchOverRedis = batch === undefined || redis === null || redis.msgsPerSec === 0 ? null : batch.msgsPerSec / redis.msgsPerSec;
  return { scenario: options.scenario, startedAt, target: target === null ? 'none' : target.url,
    options: reportedOptions(options, produceOnlyOptions), nodeEnv, drainRuns, wake,
    targets: { batchMsgsPerSec: targetBatchMsgsPerSec, wakeP99Ms: targetWakeP99Ms }, redis, redisVersion, batchOverRedis,
    missingPeers, messageBytes: options.messageBytes, failures };
}

/** The summary rows of `all`. */
export function consumeHeadlines(report: ConsumeReport): Headline[] {
  const headlines: Headline[] = [];
  for (const run of report.drainRuns) {
    const batch = run.name === 'consume-batch';
    const checks: TargetCheck[] = batch ? [{ label: 'msg/s', value: run.msgsPerSec, atLeast: targetBatchMsgsPerSec, decimals: 0 }] : [];
    headlines.push({ scenario: run.name, value: run.msgsPerSec,
      figure: `${formatInt(run.msgsPerSec)} msg/s${run.drainedIn === null ? '' : ` (${fixed(run.windowSec, 1)} s, drained)`}`,
      target: batch ? `>= ${formatInt(targetBatchMsgsPerSec)} msg/s` : 'none', floorRatio: null,
      redisRatio: batch ? report.batchOverRedis : null, checks,
      otherCpuPercentMax: maxKnown([run.otherCpuPercent, batch ? report.redis?.otherCpuPercent : null]) });
  }
  if (report.wake !== null) {
    const p99 = report.wake.wakeLatencyMs.p99;
    const checks: TargetCheck[] = [{ label: 'p99 ms', value: report.wake.wakeLatencyMs.count > 0 ? p99 : null,
      atMost: targetWakeP99Ms, decimals: 2 }];
    headlines.push({ scenario: 'wake-up', value: p99, figure: `p99 ${fixed(p99, 2)} ms`,
      target: `p99 <= ${targetWakeP99Ms} ms`, floorRatio: null, redisRatio: null,
      checks, otherCpuPercentMax: report.wake.otherCpuPercent });
  }
  return headlines;
}

async function newTopic(ctx: Context, name: string): Promise<string> {
  await createTopic(ctx.target, name, ctx.options.partitions);
  const target = ctx.target;
  if (ctx.options.url !== null) cleanups.push(() => deleteTopic(target, name));
  return name;
}

async function drainRun(ctx: Context, phase: Exclude<ConsumePhase, 'wake'>, topic: string): Promise<DrainFigures> {
  const { options } = ctx;
  const single = phase === 'single';
  const name = single ? 'consume-single' : 'consume-batch';
  const count = single ? options.prefill : options.batchPrefill;
  const prefilled = await prefill(ctx, name, topic, count);
  const short = prefilled.timedOut
    ? ` (stopped short of ${formatInt(count)}: --prefill-timeout, or errors ${formatErrors(prefilled.errorCounts)})` : '';
  process.stderr.write(`${name}: prefilled ${formatInt(prefilled.accepted)} messages in ` +
    `${fixed(prefilled.seconds, 1)} s${short}\n`);
  if (prefilled.accepted === 0) throw new Error(`prefill wrote nothing (errors: ${formatErrors(prefilled.errorCounts)})`);
  return measureDrain(ctx, { name, topic, connections: single ? options.connections : options.batchConnections,
    max: single ? null : options.max, available: prefilled.accepted }, prefilled);
}

/** consume-batch of partition 0 of a prefilled topic, filled through `fill` and consumed and acked through `via` (the
 *  forwarded bench: the owner, then a node that forwards to it). */
export async function drainThrough(options: BenchOptions, fill: BrokerTarget, via: BrokerTarget, topic: string): Promise<DrainFigures> {
  const contextOf = (target: BrokerTarget): Context => ({ options, target, address: HttpConnection.forUrl(target.url),
    serverExited: target.server === null ? new Promise<void>(() => undefined) : target.server.exited.then(() => undefined),
    partition: 0 });
  const prefilled = await prefill(contextOf(fill), 'consume-batch', topic, options.batchPrefill);
  if (prefilled.accepted === 0) throw new Error(`prefill wrote nothing (errors: ${formatErrors(prefilled.errorCounts)})`);
  return measureDrain(contextOf(via), { name: 'consume-batch', topic, connections: options.batchConnections, max: options.max,
    available: prefilled.accepted }, prefilled);
}

/** Failures a reader must not miss: runs without figures. Errors and drained windows are shown in the table. */
function judge(drainRuns: DrainFigures[], wake: WakeFigures | null): string[] {
  const failures: string[] = [];
  for (const run of drainRuns) {
    const raise = 'raise --prefill/--batch-prefill';
    if (run.drainedIn === 'warmup') {
      failures.push(`${run.name}: the prefill ran out during warm-up; ${raise}`);
    } else if (run.ackedMessages === 0) {
      failures.push(`${run.name}: no message acked in the window (errors: ${formatErrors(run.errorCounts)})`);
    } else if (run.windowSec < windowSecMin) {
      const into = `${fixed(run.windowSec, 2)} s into the window`;
      failures.push(`${run.name}: the prefill ran out ${into}, too short to trust; ${raise}`);
    }
    if (run.firstBadBody !== null) failures.push(`${run.name}: consume answer did not check out: ${run.firstBadBody}`);
  }
  if (wake !== null && wake.delivered === 0) {
    failures.push(`wake-up: no message delivered (errors: ${formatErrors(wake.errorCounts)})`);
  }
  return failures;
}

// ---------------------------------------------------------------------------------------------------------------
// Output.

function latencyCells(latency: LatencySummaryMs): string[] {
  return [latency.p50, latency.p90, latency.p99, latency.p999, latency.max].map((ms) => fixed(ms, 2));
}

function errorsOf(run: DrainFigures, kind: 'consume' | 'ack'): string {
  const own = Object.entries(run.errorCounts)
    .filter(([key]) => key.startsWith(`${kind} `) || (kind === 'ack' && key.startsWith('ack-item ')));
  return own.length === 0 ? 'none' : own.map(([key, count]) => `${key.replace(/^consume |^ack /, '')}:${count}`).join(' ');
}

function drainRows(run: DrainFigures): string[][] {
  const window = `${fixed(run.windowSec, 2)}${run.drainedIn === null ? '' : ' drained'}`;
  const perMsg = (figure: number): string => (run.ackedMessages > 0 ? fixed(figure, 1) : 'n/a');
  return [
    [run.name, String(run.connections), window, formatInt(run.msgsPerSec), fixed(run.payloadMBPerSec, 1),
      fixed(run.messagesPerConsume, 1), 'consume',
      formatInt(run.consume.reqPerSec), ...latencyCells(run.consume.latencyMs), errorsOf(run, 'consume'),
      `${fixed(run.clientCpuPercent, 0)}%`, perMsg(run.clientCpuUsPerMessage),
      serverCpuText(run.serverCpuPercent, run.serverThreads), percent(run.otherCpuPercent)],
    ['', '', '', '', '', '', run.max === null ? 'ack' : 'ack batch', formatInt(run.ack.reqPerSec),
      ...latencyCells(run.ack.latencyMs), errorsOf(run, 'ack'), '', '', '', ''],
  ];
}

function wakeLines(wake: WakeFigures): string[] {
  const out = [`wake-up: ${wake.pollers} consumers long-polling (wait=10s) an empty topic, one message at a time at ` +
    `${formatInt(wake.ratePerSec)}/s, ${fixed(wake.windowSec, 2)} s window: ${formatInt(wake.sent)} sent, ` +
    `${formatInt(wake.accepted)} answered 202, ${formatInt(wake.delivered)} delivered, ${formatInt(wake.undelivered)} ` +
    `not delivered within ${wakeDeliveryGraceMs / 1000} s, ${wake.duplicates} duplicates, ${wake.deliveredBefore202} ` +
    `delivered before their 202 (counted as 0), ${wake.skippedBusy} sends skipped (producer connections busy)`];
  const rows = [
    ['wake-up: producer 202 -> consumer has it', wake.wakeLatencyMs],
    ['produce write -> consumer has it', wake.endToEndMs],
    ['produce write -> 202', wake.produceMs],
    ['ack (write -> 204)', wake.ackMs],
  ].map(([label, latency]) => {
    const l = latency as WakeFigures['wakeLatencyMs'];
    return [label as string, formatInt(l.count), ...latencyCells(l)];
  });
  out.push(...renderTable(['latency', 'count', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms'], rows, [0]));
  const d = wake.clientLoopDelayMs;
  out.push(`consume statuses ${formatErrors(wake.consumeStatusCounts)}; errors ${formatErrors(wake.errorCounts)}; ` +
    `client CPU ${fixed(wake.clientCpuPercent, 0)}% (${fixed(wake.clientCpuUsPerMessage, 0)} µs/msg), client event-loop ` +
    `lateness p50 ${fixed(d.p50, 2)} / p99 ${fixed(d.p99, 2)} / max ${fixed(d.max, 2)} ms; server CPU ` +
    `${serverCpuText(wake.serverCpuPercent, wake.serverThreads)}; other CPU ${percent(wake.otherCpuPercent)}`);
  return out;
}

function targetLines(report: ConsumeReport): string[] {
  const out = ['issue 3 and 4 targets:'];
  const batch = report.drainRuns.find((run) => run.name === 'consume-batch');
  if (batch !== undefined) {
    const met = batch.msgsPerSec >= targetBatchMsgsPerSec ? 'met' : 'NOT met';
    out.push(`  batched consume+ack >= ${formatInt(targetBatchMsgsPerSec)} msg/s: ${formatInt(batch.msgsPerSec)} msg/s, ` +
      `${fixed((batch.msgsPerSec / targetBatchMsgsPerSec) * 100, 1)}% of target: ${met}` +
      `${batch.drainedIn === null ? '' : ` (window ended early: prefill drained after ${fixed(batch.windowSec, 2)} s)`}`);
  }
  if (report.wake !== null) {
    const p99 = report.wake.wakeLatencyMs.p99;
    out.push(`  wake-up p99 <= ${targetWakeP99Ms} ms: ${fixed(p99, 3)} ms over ` +
      `${formatInt(report.wake.wakeLatencyMs.count)} messages: ${p99 <= targetWakeP99Ms ? 'met' : 'NOT met'}`);
  }
  return out;
}

export function printConsumeTable(report: ConsumeReport): void {
  const out: string[] = [];
  if (report.drainRuns.length > 0) {
    const header = ['run', 'conns', 'window s', 'msgs/s', 'MB/s', 'msgs/consume', 'request', 'req/s', 'p50 ms', 'p90 ms',
      'p99 ms', 'p99.9 ms', 'max ms', 'errors', 'client CPU', 'client µs/msg', 'server CPU', 'other CPU'];
    out.push(...renderTable(header, report.drainRuns.flatMap(drainRows), [0, 6, 13]));
    for (const run of report.drainRuns) {
      const p = run.prefill;
      const perSecond = run.ackedPerSecond.map((count) => formatInt(count)).join(' ');
      out.push(`${run.name}: prefill ${formatInt(p.accepted)} msgs in ${fixed(p.seconds, 1)} s ` +
        `(${formatInt(p.msgsPerSec)} msg/s, batch produce)${p.timedOut ? ' STOPPED SHORT' : ''}; first consume ` +
        `answer ${run.firstAnswerMs === null ? 'never' : `${fixed(run.firstAnswerMs, 0)} ms`} after the start; ` +
        `${formatInt(run.ackedMessages)} acked in the window` +
        `${run.drainedIn === null ? '' : `, which ended early when the prefill ran out (during ${run.drainedIn})`}`);
      out.push(`  ${run.name} msgs acked per second of the window: ${perSecond || 'none'}`);
    }
    out.push('');
  }
  if (report.wake !== null) out.push(...wakeLines(report.wake), '');
  if (report.redis !== null) {
    const r = report.redis;
    out.push(`${r.name} (Redis ${report.redisVersion ?? '?'}, appendfsync always, ${r.consumers} consumers, ioredis): ` +
      `${formatInt(r.msgsPerSec)} msg/s, ${fixed(r.payloadMBPerSec, 1)} MB/s over ${fixed(r.windowSec, 2)} s` +
      `${r.drained ? ' (drained)' : ''}; read+ack p50 ${fixed(r.latencyMs.p50, 2)} / p90 ${fixed(r.latencyMs.p90, 2)} / p99 ` +
      `${fixed(r.latencyMs.p99, 2)} / p99.9 ${fixed(r.latencyMs.p999, 2)} / max ${fixed(r.latencyMs.max, 2)} ms; errors ` +
      `${formatErrors(r.errorCounts)}; client CPU ${percent(r.clientCpuPercent)}, server CPU ${percent(r.serverCpuPercent)}; ` +
      `prefill ${formatInt(r.prefilled)} entries in ${fixed(r.prefillSec, 1)} s`);
    if (report.batchOverRedis !== null) {
      out.push(`consume-batch msgs/s / Redis XREADGROUP+XACK msgs/s: ${fixed(report.batchOverRedis, 3)}`);
    }
  }
  for (const missing of report.missingPeers) out.push(missing);
  const targets = targetLines(report);
  if (targets.length > 1) out.push(...targets);
  if (Object.keys(report.nodeEnv).length > 0) {
    out.push(`node started with ${Object.entries(report.nodeEnv).map(([k, v]) => `${k}=${v}`).join(' ')} ` +
      `(a batch consume counts as its max against the per-user consume cap, default ${consumeCapDefault})`);
  }
  out.push(`msgs/s = messages acked (204, per handle for a batch ack) inside the window / window; latencies per request ` +
    `from write to last response byte; CPU % is of one core (${os.cpus().length} cores here); client µs/msg = bench ` +
    `process CPU per acked message`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}
