// Scenarios end-to-end and soak of `npm run bench` (bench/README.md): producers and long-polling consumers on one
// topic at once, against a node the bench starts itself (or --url).
//   end-to-end  first a closed-loop single produce run measures the peak rate (--peak seconds), then an open-loop
//               producer sends single produces at 50% of it (or --rate) while --consumers batch consumers long-poll
//               (consume?wait=10s&max=--max, batch ack). Latency: the produce's 202 -> a consumer has the message.
//   soak        the same flow at a steady --rate (default 5,000 msg/s) for --duration (default 10m), with a row per
//               --interval (10 s): server RSS, produced and delivered msgs/s, p99 latency.
// Each payload carries its message id and the client's send time (epoch µs). The open-loop producer runs on a
// worker thread of the bench process (bench/end_to_end_producer.ts) and the consumers on its main thread, so
// neither's backlog delays the other's timestamps; both threads read one clock, performance.timeOrigin +
// performance.now(), and meet in a ledger ring in shared memory (the producer writes each id's send and 202, the
// main thread its receipt). Bench process main thread, except SharedLedger's producer methods; every loop ends by
// itself (flags, deadlines) and closes its sockets.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import type { Histogram } from 'hdr-histogram-js';
import {
  cleanups, CpuWindow, createTopic, deleteTopic, errorText, fixed, formatErrors, formatInt, latencySummaryMs,
  makePayload, maxKnown, newHistogram, percent, recordUs, renderTable, reportedOptions, serverCpuText, sleep, startBroker,
  type BrokerTarget, type Headline, type LatencySummaryMs, type ServerThreadCpu, type ThroughputFigures,
} from './common.js';
import { AckRequests, scanHandles, scanStatuses, topicPath } from './consume.js';
import { HttpConnection, HttpFailure, requestBuffer } from './http_conn.js';
import { runLoad } from './load.js';
import { readRssBytes } from './node_process.js';
import type { BenchOptions } from './options.js';

/** Issue 4: end-to-end p99 <= 10 ms at 50% of the peak rate. */
export const endToEndTargetP99Ms = 10;
const soakRateDefault = 5000;
/** The node's default consume cap per identity (http.max_consume_in_flight_per_identity); a batch counts as max. */
const consumeCapDefault = 1024;
const clientHeader = 'bench';
/** A produce sent later than this after its scheduled time counts as late (the scheduler's timer runs about every ms). */
export const lateThresholdMs = 2;
/** After the window, how long messages already accepted may take to reach a consumer. */
export const deliveryGraceMs = 5_000;
/** The ledger keeps this many seconds of messages (at the rate); older undelivered ones count as lost. */
const ledgerSeconds = 60;
/** end-to-end's progress line period; soak uses --interval. */
const endToEndProgressSec = 2;
/** Also what keeps ids below 2^31, so they fit the ledger's Int32Arrays. */
const idDigits = 9;
/** The producer thread's start (module loading, first tick) and, after the window, its report. */
const producerStartTimeoutMs = 10_000;
const producerReportTimeoutMs = deliveryGraceMs + 10_000;
/** The producer thread stops by itself this long after the window should have ended without the main thread's word. */
const producerStopSlackMs = 30_000;

const produceOnlyOptions = ['topic', 'batch', 'client', 'skipFloor', 'compareSecurity', 'prefill', 'batchPrefill',
  'prefillTimeoutSec', 'pollers', 'wakeRate', 'phases', 'topics', 'polls', 'redisConsumers', 'argv', 'batchConnections'];

type Phase = 'warmup' | 'measure' | 'drain';
const phases: readonly Phase[] = ['warmup', 'measure', 'drain'];

/** {"id":"000000123","t":1795358795603123,"d":"xx..."}: id, send time in epoch µs, filler to exactly bytes. */
export function flowPayload(id: number, sentEpochUs: number, bytes: number): Buffer {
  const head = `{"id":"${String(id).padStart(idDigits, '0')}","t":${sentEpochUs},"d":"`;
  const fill = bytes - head.length - 2;
  if (fill < 0) throw new Error(`--message-bytes ${bytes} is too small for the id and timestamp (${head.length + 2})`);
  return Buffer.from(head + 'x'.repeat(fill) + '"}');
}

const idKey = Buffer.from('"payload":{"id":"');
const timeKey = Buffer.from('","t":');

/** Ids and send times (epoch µs) of the messages in a consume answer, in order. */
function scanMessages(body: Buffer): Array<{ id: number; sentEpochUs: number }> {
  const found: Array<{ id: number; sentEpochUs: number }> = [];
  let at = body.indexOf(idKey);
  while (at >= 0) {
    const idStart = at + idKey.length;
    const id = Number(body.toString('latin1', idStart, idStart + idDigits));
    const timeAt = body.indexOf(timeKey, idStart);
    let sentEpochUs = NaN;
    if (timeAt === idStart + idDigits) {
      const end = body.indexOf(0x2c, timeAt + timeKey.length);
      sentEpochUs = Number(body.toString('latin1', timeAt + timeKey.length, end));
    }
    found.push({ id, sentEpochUs });
    at = body.indexOf(idKey, idStart);
  }
  return found;
}

/** Epoch ms (sub-ms precision) of a performance.now() value taken on this thread: the clock both threads share. */
export function epochMs(threadMs: number): number {
  return performance.timeOrigin + threadMs;
}

export function failureCode(error: unknown): string {
  return error instanceof HttpFailure ? error.code : errorText(error);
}

export function summary(histogram: Histogram): LatencySummaryMs & { count: number } {
  return { count: histogram.totalCount, ...latencySummaryMs(histogram) };
}

// ---------------------------------------------------------------------------------------------------------------
// The ledger: per message id, when its 202 came and when a consumer had it, in a ring of ledgerSeconds. The
// producer thread writes the send and the answer of each id, the main thread the receipt; a slot's plain fields
// are written before its id is published with Atomics.store, and read after Atomics.load saw that id.

export interface SharedLedgerBuffers {
  size: number;
  /** Int32 per slot: the id last sent into it (-1: none); its answer's id; the id a consumer last had from it. */
  sentIds: SharedArrayBuffer;
  answeredIds: SharedArrayBuffer;
  receivedIds: SharedArrayBuffer;
  /** Float64 per slot: the 202's epoch ms, NaN when the answer was not a 202. */
  acceptedMs: SharedArrayBuffer;
  /** Uint8 per slot: scheduled inside the window. */
  inWindow: SharedArrayBuffer;
  /** Int32 [phase index, messages answered 202 so far]. */
  control: SharedArrayBuffer;
  /** Float64 [the window's start, epoch ms]. */
  windowStart: SharedArrayBuffer;
}

const controlPhase = 0;
const controlAccepted = 1;

export class SharedLedger {
  readonly size: number;
  private readonly sentIds: Int32Array;
  private readonly answeredIds: Int32Array;
  private readonly receivedIds: Int32Array;
  private readonly acceptedMs: Float64Array;
  private readonly inWindow: Uint8Array;
  private readonly control: Int32Array;
  private readonly windowStart: Float64Array;

  constructor(readonly buffers: SharedLedgerBuffers) {
    this.size = buffers.size;
    this.sentIds = new Int32Array(buffers.sentIds);
    this.answeredIds = new Int32Array(buffers.answeredIds);
    this.receivedIds = new Int32Array(buffers.receivedIds);
    this.acceptedMs = new Float64Array(buffers.acceptedMs);
    this.inWindow = new Uint8Array(buffers.inWindow);
    this.control = new Int32Array(buffers.control);
    this.windowStart = new Float64Array(buffers.windowStart);
  }

  static create(ratePerSec: number): SharedLedger {
    const size = Math.max(1024, Math.ceil(ratePerSec * ledgerSeconds));
    const ids = (): SharedArrayBuffer => {
      const buffer = new SharedArrayBuffer(size * Int32Array.BYTES_PER_ELEMENT);
      new Int32Array(buffer).fill(-1);
      return buffer;
    };
    return new SharedLedger({ size, sentIds: ids(), answeredIds: ids(), receivedIds: ids(),
      acceptedMs: new SharedArrayBuffer(size * Float64Array.BYTES_PER_ELEMENT),
      inWindow: new SharedArrayBuffer(size), control: new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT),
      windowStart: new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT) });
  }

  phase(): Phase {
    return phases[Atomics.load(this.control, controlPhase)]!;
  }

  /** Main thread. */
  openWindow(startEpochMs: number): void {
    this.windowStart[0] = startEpochMs;
    Atomics.store(this.control, controlPhase, phases.indexOf('measure'));
  }

  /** Main thread: the producer stops scheduling. */
  drain(): void {
    Atomics.store(this.control, controlPhase, phases.indexOf('drain'));
  }

  windowStartEpochMs(): number {
    return this.windowStart[0]!;
  }

  /** 202s so far, any phase (the soak rows' produced/s). */
  acceptedTotal(): number {
    return Atomics.load(this.control, controlAccepted);
  }

  /** Producer thread: id goes out now. True when it takes the slot of a message accepted and never received. */
  sent(id: number, counting: boolean): boolean {
    const slot = id % this.size;
    const previous = this.sentIds[slot]!;
    const lost = previous >= 0 && !Number.isNaN(this.acceptedAt(previous)) &&
      Atomics.load(this.receivedIds, slot) !== previous;
    this.inWindow[slot] = counting ? 1 : 0;
    Atomics.store(this.sentIds, slot, id);
    return lost;
  }

  /** Producer thread: id's answer came, a 202 at atEpochMs or (NaN) anything else. */
  answered(id: number, atEpochMs: number): void {
    const slot = id % this.size;
    if (this.sentIds[slot] !== id) return;
    this.acceptedMs[slot] = atEpochMs;
    Atomics.store(this.answeredIds, slot, id);
    if (!Number.isNaN(atEpochMs)) Atomics.add(this.control, controlAccepted, 1);
  }

  isCurrent(id: number): boolean {
    return Atomics.load(this.sentIds, id % this.size) === id;
  }

  isAnswered(id: number): boolean {
    return Atomics.load(this.answeredIds, id % this.size) === id;
  }

  /** The 202's epoch ms of id, NaN when none (yet). */
  acceptedAt(id: number): number {
    return this.isAnswered(id) ? this.acceptedMs[id % this.size]! : NaN;
  }

  countsForWindow(id: number): boolean {
    return this.inWindow[id % this.size] === 1;
  }

  isReceived(id: number): boolean {
    return Atomics.load(this.receivedIds, id % this.size) === id;
  }

  /** Main thread. */
  markReceived(id: number): void {
    Atomics.store(this.receivedIds, id % this.size, id);
  }

  /** Messages produced in the window that were accepted and not yet received. */
  undelivered(): number {
    let count = 0;
    for (let slot = 0; slot < this.size; slot++) {
      const id = Atomics.load(this.sentIds, slot);
      if (id >= 0 && this.inWindow[slot] === 1 && !Number.isNaN(this.acceptedAt(id)) && !this.isReceived(id)) count++;
    }
    return count;
  }
}

/** The main thread's side: receipts, and the figures settled when a message has both its 202 and its receipt. */
class Ledger {
  private readonly receivedMs: Float64Array;
  /** Received before the producer thread had their answer: settled when it comes (or when the slot moves on). */
  private pending: number[] = [];
  /** 202 -> consumer has it, for messages produced in the window; and per interval (soak rows). */
  readonly deliveryUs = newHistogram();
  intervalUs = newHistogram();
  /** The embedded send time -> consumer has it (epoch clock), for messages produced in the window. */
  readonly sendToReceiptUs = newHistogram();
  deliveredInWindow = 0;
  deliveredTotal = 0;
  duplicates = 0;
  before202 = 0;
  unknown = 0;

  constructor(readonly shared: SharedLedger) {
    this.receivedMs = new Float64Array(shared.size).fill(NaN);
  }

  received(id: number, sentEpochUs: number, atEpochMs: number): void {
    const shared = this.shared;
    if (!Number.isInteger(id) || !shared.isCurrent(id)) {
      this.unknown++;
      return;
    }
    if (shared.isReceived(id)) {
      this.duplicates++;
      return;
    }
    this.receivedMs[id % shared.size] = atEpochMs;
    shared.markReceived(id);
    this.deliveredTotal++;
    if (shared.countsForWindow(id) && Number.isFinite(sentEpochUs)) {
      recordUs(this.sendToReceiptUs, (Math.round(atEpochMs * 1000) - sentEpochUs) / 1000);
    }
    if (!this.settle(id)) this.pending.push(id);
  }

  settlePending(): void {
    if (this.pending.length > 0) this.pending = this.pending.filter((id) => !this.settle(id));
  }

  /** False while id's answer has not come yet. */
  private settle(id: number): boolean {
    const shared = this.shared;
    if (!shared.isCurrent(id)) return true;
    if (!shared.isAnswered(id)) return false;
    const accepted = shared.acceptedAt(id);
    if (Number.isNaN(accepted)) return true;
    const received = this.receivedMs[id % shared.size]!;
    if (received < accepted) this.before202++;
    recordUs(this.intervalUs, received - accepted);
    if (!shared.countsForWindow(id)) return true;
    this.deliveredInWindow++;
    recordUs(this.deliveryUs, received - accepted);
    return true;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The producer thread (bench/end_to_end_producer.ts): what it is given, what it reports, and its handle here.

export interface ProducerSetup {
  url: string;
  path: string;
  headers: Record<string, string>;
  messageBytes: number;
  ratePerSec: number;
  connections: number;
  ledger: SharedLedgerBuffers;
  /** How long it may produce before it gives up waiting for the drain phase. */
  stopWithinMs: number;
}

/** The producer's counts and latencies, as FlowReport's fields of the same names. */
export interface ProducerTotals {
  due: number;
  sentLate: number;
  notSent: number;
  acceptedInWindow: number;
  /** Accepted, then overwritten in the ring before any consumer had them (older than ledgerSeconds). */
  lost: number;
  produceMs: LatencySummaryMs & { count: number };
  sendLatenessMs: LatencySummaryMs;
  produceStatusCounts: Record<string, number>;
  errorCounts: Record<string, number>;
}

export type ProducerMessage = { kind: 'started' } | { kind: 'done'; totals: ProducerTotals };

class ProducerThread {
  private readonly worker: Worker;
  /** Rejects when the thread throws, or exits before its report. */
  readonly failure: Promise<never>;
  private readonly started: Promise<void>;
  private readonly done: Promise<ProducerTotals>;

  constructor(setup: ProducerSetup) {
    this.worker = new Worker(new URL('./end_to_end_producer.js', import.meta.url), { workerData: setup });
    let reported = false;
    this.failure = new Promise<never>((_, reject) => {
      this.worker.once('error', (error) => {
        reject(new Error(`end-to-end producer thread failed: ${error.stack ?? error.message}`));
      });
      this.worker.once('exit', (code) => {
        if (!reported) reject(new Error(`end-to-end producer thread exited (code ${code}) before its report`));
      });
    });
    // Races hand the rejection on; this keeps one nobody is racing from being unhandled.
    this.failure.catch(() => undefined);
    this.started = new Promise((resolve) => this.worker.on('message', (message: ProducerMessage) => {
      if (message.kind === 'started') resolve();
    }));
    this.done = new Promise((resolve) => this.worker.on('message', (message: ProducerMessage) => {
      if (message.kind !== 'done') return;
      reported = true;
      resolve(message.totals);
    }));
  }

  whenStarted(): Promise<void> {
    return within(Promise.race([this.started, this.failure]), producerStartTimeoutMs, 'end-to-end producer thread start');
  }

  whenDone(): Promise<ProducerTotals> {
    return within(Promise.race([this.done, this.failure]), producerReportTimeoutMs, 'end-to-end producer thread report');
  }

  async terminate(): Promise<void> {
    await this.worker.terminate();
  }
}

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms / 1000} s`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------------------------------------------
// The consumers, on the main thread.

class FlowState {
  phase: Phase = 'warmup';
  consuming = true;
  acked = 0;
  ackedInWindow = 0;
  consumesWaiting = 0;
  readonly ackUs = newHistogram();
  readonly consumeStatus = new Map<string, number>();
  readonly errors = new Map<string, number>();

  get counting(): boolean {
    return this.phase === 'measure';
  }

  bump(map: Map<string, number>, key: string): void {
    if (this.counting) map.set(key, (map.get(key) ?? 0) + 1);
  }
}

interface Flow {
  options: BenchOptions;
  target: BrokerTarget;
  topic: string;
  ratePerSec: number;
  state: FlowState;
  ledger: Ledger;
}

/** One long-polling batch consumer: consume?wait=10s&max, record what arrived, batch ack, poll again. */
async function consumeLoop(flow: Flow, connection: HttpConnection, poll: Buffer, acks: AckRequests): Promise<void> {
  const { state, ledger } = flow;
  while (state.consuming) {
    state.consumesWaiting++;
    const reply = await connection.request(poll).catch((error: unknown) => failureCode(error));
    state.consumesWaiting--;
    if (!state.consuming) return;
    if (typeof reply === 'string') {
      state.bump(state.errors, `consume ${reply}`);
      await sleep(50);
      continue;
    }
    state.bump(state.consumeStatus, String(reply.status));
    if (reply.status === 204) continue;
    if (reply.status !== 200) {
      state.bump(state.errors, `consume ${reply.status}`);
      await sleep(10);
      continue;
    }
    const messages = scanMessages(reply.body);
    const handles = scanHandles(reply.body);
    if (messages.length !== handles.length) state.bump(state.errors, 'consume bad-body');
    const receivedEpochMs = epochMs(reply.endedMs);
    ledger.settlePending();
    for (const message of messages) ledger.received(message.id, message.sentEpochUs, receivedEpochMs);
    if (handles.length === 0) continue;
    const ack = await connection.request(acks.batch(handles)).catch((error: unknown) => failureCode(error));
    if (typeof ack === 'string') {
      state.bump(state.errors, `ack ${ack}`);
      continue;
    }
    if (ack.status !== 200) {
      state.bump(state.errors, `ack ${ack.status}`);
      continue;
    }
    const settled = scanStatuses(ack.body).filter((status) => status === 204).length;
    state.acked += settled;
    if (state.counting) {
      state.ackedInWindow += settled;
      recordUs(state.ackUs, ack.endedMs - ack.startedMs);
      if (settled !== handles.length) state.bump(state.errors, 'ack-item not 204');
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Intervals (soak rows, and end-to-end's progress lines).

export interface FlowInterval {
  /** Seconds since the window opened, at the interval's end (negative during warm-up). */
  atSec: number;
  seconds: number;
  serverRssBytes: number | null;
  producedPerSec: number;
  deliveredPerSec: number;
  /** 202 -> consumer has it, over messages settled in this interval. */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  serverCpuPercent: number | null;
  clientCpuPercent: number;
}

function startIntervals(flow: Flow, periodSec: number, label: string, serverPid: number | null,
  windowStartMs: () => number, rows: FlowInterval[]): () => void {
  const { state, ledger } = flow;
  let [lastMs, lastAccepted, lastDelivered] = [performance.now(), 0, 0];
  let cpu = new CpuWindow(serverPid);
  cpu.start();
  const timer = setInterval(() => {
    const now = performance.now();
    cpu.end();
    const seconds = (now - lastMs) / 1000;
    const figures = cpu.figures(now - lastMs);
    ledger.settlePending();
    const accepted = ledger.shared.acceptedTotal();
    const histogram = ledger.intervalUs;
    ledger.intervalUs = newHistogram();
    const row: FlowInterval = {
      atSec: state.phase === 'warmup' ? -1 : (now - windowStartMs()) / 1000, seconds,
      serverRssBytes: serverPid === null ? null : readRssBytes(serverPid),
      producedPerSec: (accepted - lastAccepted) / seconds,
      deliveredPerSec: (ledger.deliveredTotal - lastDelivered) / seconds,
      p50Ms: histogram.getValueAtPercentile(50) / 1000, p99Ms: histogram.getValueAtPercentile(99) / 1000,
      maxMs: histogram.maxValue / 1000, serverCpuPercent: figures.serverCpuPercent, clientCpuPercent: figures.clientCpuPercent,
    };
    if (state.phase === 'measure') rows.push(row);
    [lastMs, lastAccepted, lastDelivered] = [now, accepted, ledger.deliveredTotal];
    cpu = new CpuWindow(serverPid);
    cpu.start();
    const rss = row.serverRssBytes === null ? 'n/a' : `${fixed(row.serverRssBytes / 2 ** 20, 0)} MiB`;
    process.stderr.write(`  [${label}] ${state.phase.padEnd(7)} ${fixed(Math.max(0, row.atSec), 0).padStart(4)}s  ` +
      `produced ${formatInt(row.producedPerSec)}/s  delivered ${formatInt(row.deliveredPerSec)}/s  p99 ` +
      `${fixed(row.p99Ms, 2)} ms  server RSS ${rss}  CPU server ${percent(row.serverCpuPercent)} client ` +
      `${percent(row.clientCpuPercent)}  polls waiting ${state.consumesWaiting}\n`);
  }, periodSec * 1000);
  return () => clearInterval(timer);
}

// ---------------------------------------------------------------------------------------------------------------
// The scenario.

export interface FlowReport {
  scenario: 'end-to-end' | 'soak';
  startedAt: string;
  target: string;
  topic: string;
  options: Record<string, unknown>;
  /** Settings the bench gave the node it started (environment variables). */
  nodeEnv: Record<string, string>;
  /** end-to-end without --rate: the closed-loop single produce run that measured the peak. */
  peak: ThroughputFigures | null;
  ratePerSec: number;
  rateSource: string;
  windowSec: number;
  producers: number;
  consumers: number;
  /** Produces due in the window, sent late (> lateThresholdMs after schedule), never sent, answered 202. */
  due: number;
  sentLate: number;
  notSent: number;
  lateThresholdMs: number;
  accepted: number;
  /** Messages produced in the window that a consumer received (within the grace after it), per second of window. */
  delivered: number;
  msgsPerSec: number;
  payloadMBPerSec: number;
  undelivered: number;
  lost: number;
  duplicates: number;
  deliveredBefore202: number;
  acked: number;
  /** The produce's 202 -> the consumer has the message: the end-to-end latency. */
  latencyMs: LatencySummaryMs & { count: number };
  /** The send time embedded in the payload -> the consumer has it (epoch clock, same host). */
  sendToReceiptMs: LatencySummaryMs & { count: number };
  /** Scheduled send -> 202 (open loop, so queueing behind a busy connection counts). */
  produceMs: LatencySummaryMs & { count: number };
  sendLatenessMs: LatencySummaryMs;
  ackMs: LatencySummaryMs & { count: number };
  produceStatusCounts: Record<string, number>;
  consumeStatusCounts: Record<string, number>;
  errorCounts: Record<string, number>;
  clientCpuPercent: number;
  serverCpuPercent: number | null;
  serverThreads: ServerThreadCpu[];
  otherCpuPercent: number | null;
  serverRssBytesEnd: number | null;
  intervals: FlowInterval[];
  failures: string[];
}

function nodeEnvFor(options: BenchOptions): Record<string, string> {
  const needed = options.consumers * options.max;
  if (needed <= consumeCapDefault) return {};
  if (options.url !== null) {
    process.stderr.write(`warning: ${options.consumers} consumers x max ${options.max} = ${needed} consumes in flight; a ` +
      `node with the default http.max_consume_in_flight_per_identity (${consumeCapDefault}) answers 429 beyond that\n`);
    return {};
  }
  return { SVC_HTTP_MAX_CONSUME_IN_FLIGHT_PER_IDENTITY: String(needed) };
}

export async function runFlow(options: BenchOptions): Promise<FlowReport> {
  const scenario = options.scenario === 'soak' ? 'soak' : 'end-to-end';
  const startedAt = new Date().toISOString();
  const failures: string[] = [];
  const nodeEnv = nodeEnvFor(options);
  const target = await startBroker(options, nodeEnv);
  const topic = `bench-${scenario}-${Date.now()}`;
  await createTopic(target, topic, options.partitions);
  if (options.url !== null) cleanups.push(() => deleteTopic(target, topic));
  let peak: ThroughputFigures | null = null;
  let ratePerSec = options.rate ?? soakRateDefault;
  let rateSource = options.rate !== null ? '--rate' : `soak default`;
  if (scenario === 'end-to-end' && options.rate === null) {
    peak = await measurePeak(options, target, `bench-peak-${Date.now()}`);
    ratePerSec = Math.max(1, Math.round(peak.reqPerSec / 2));
    rateSource = `50% of the peak single produce rate measured first (${formatInt(peak.reqPerSec)} req/s)`;
    await sleep(1000);
  }
  const flow: Flow = { options, target, topic, ratePerSec, state: new FlowState(),
    ledger: new Ledger(SharedLedger.create(ratePerSec)) };
  const { state, ledger } = flow;
  const address = HttpConnection.forUrl(target.url);
  const authorization: Record<string, string> = target.authorization === null ? {} : { authorization: target.authorization };
  const poll = requestBuffer(target.url, 'GET', `${topicPath(topic, 'consume')}?wait=10s&max=${options.max}`,
    { ...authorization, 'x-svc-client': clientHeader });
  const acks = new AckRequests(target, topic);
  const consumers = Array.from({ length: options.consumers }, () => new HttpConnection(address));
  process.stderr.write(`${scenario}: ${formatInt(ratePerSec)} msg/s open loop (${rateSource}) on up to ` +
    `${options.connections} connections, ${options.consumers} consumers long-polling (wait=10s, max=${options.max}), ` +
    `${options.warmupSec}s warm-up + ${options.durationSec}s, ${target.url}\n`);
  const loops = consumers.map((connection) => consumeLoop(flow, connection, poll, acks));
  const deadline = performance.now() + 3000;
  while (state.consumesWaiting < options.consumers && performance.now() < deadline) await sleep(10);
  const producer = new ProducerThread({ url: target.url, path: topicPath(topic, 'produce'),
    headers: { ...authorization, 'content-type': 'application/json' }, messageBytes: options.messageBytes, ratePerSec,
    connections: options.connections, ledger: ledger.shared.buffers,
    stopWithinMs: (options.warmupSec + options.durationSec) * 1000 + producerStopSlackMs });
  const serverExited = target.server === null ? new Promise<void>(() => undefined) : target.server.exited.then(() => undefined);
  const intervals: FlowInterval[] = [];
  let windowStartMs = 0;
  let stopIntervals = (): void => undefined;
  const cpu = new CpuWindow(target.serverPid);
  let windowMs = 0;
  let totals: ProducerTotals;
  try {
    await producer.whenStarted();
    stopIntervals = startIntervals(flow, scenario === 'soak' ? options.intervalSec : endToEndProgressSec, scenario,
      target.serverPid, () => windowStartMs, intervals);
    await Promise.race([sleep(options.warmupSec * 1000), serverExited, producer.failure]);
    [state.phase, windowStartMs] = ['measure', performance.now()];
    ledger.shared.openWindow(epochMs(windowStartMs));
    cpu.start();
    await Promise.race([sleep(options.durationSec * 1000), serverExited, producer.failure]);
    cpu.end();
    windowMs = performance.now() - windowStartMs;
    state.phase = 'drain';
    ledger.shared.drain();
    const graceEnd = performance.now() + deliveryGraceMs;
    totals = await producer.whenDone();
    while (ledger.shared.undelivered() > 0 && performance.now() < graceEnd) {
      ledger.settlePending();
      await sleep(20);
    }
    ledger.settlePending();
  } finally {
    stopIntervals();
    state.consuming = false;
    ledger.shared.drain();
    for (const connection of consumers) connection.destroy();
    await producer.terminate();
  }
  await Promise.allSettled(loops);
  if (target.server?.hasExited()) failures.push(`broker exited during ${scenario}; its output:\n${target.server.outputTail()}`);
  const seconds = windowMs / 1000;
  const figures = cpu.figures(windowMs);
  const report: FlowReport = {
    scenario, startedAt, target: target.url, topic, options: reportedOptions(options, produceOnlyOptions), nodeEnv, peak,
    ratePerSec, rateSource, windowSec: seconds, producers: options.connections, consumers: options.consumers,
    due: totals.due, sentLate: totals.sentLate, notSent: totals.notSent, lateThresholdMs, accepted: totals.acceptedInWindow,
    delivered: ledger.deliveredInWindow, msgsPerSec: seconds > 0 ? ledger.deliveredInWindow / seconds : 0,
    payloadMBPerSec: seconds > 0 ? (ledger.deliveredInWindow * options.messageBytes) / seconds / 1e6 : 0,
    undelivered: ledger.shared.undelivered(), lost: totals.lost, duplicates: ledger.duplicates,
    deliveredBefore202: ledger.before202, acked: state.ackedInWindow,
    latencyMs: summary(ledger.deliveryUs), sendToReceiptMs: summary(ledger.sendToReceiptUs),
    produceMs: totals.produceMs, sendLatenessMs: totals.sendLatenessMs, ackMs: summary(state.ackUs),
    produceStatusCounts: totals.produceStatusCounts, consumeStatusCounts: Object.fromEntries(state.consumeStatus),
    errorCounts: { ...totals.errorCounts, ...Object.fromEntries(state.errors) }, clientCpuPercent: figures.clientCpuPercent,
    serverCpuPercent: figures.serverCpuPercent, serverThreads: figures.serverThreads, otherCpuPercent: figures.otherCpuPercent,
    serverRssBytesEnd: target.serverPid === null ? null : readRssBytes(target.serverPid), intervals, failures,
  };
  if (ledger.unknown > 0) report.errorCounts['consume unknown-id'] = ledger.unknown;
  if (report.delivered === 0) failures.push(`${scenario}: no message delivered (errors: ${formatErrors(report.errorCounts)})`);
  return report;
}

/** Closed-loop single produce on its own topic for --peak seconds: the rate end-to-end then runs at half of. */
async function measurePeak(options: BenchOptions, target: BrokerTarget, topic: string): Promise<ThroughputFigures> {
  await createTopic(target, topic, options.partitions);
  if (options.url !== null) cleanups.push(() => deleteTopic(target, topic));
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.authorization !== null) headers['authorization'] = target.authorization;
  const body = makePayload(options.messageBytes);
  const cpu = new CpuWindow(target.serverPid);
  process.stderr.write(`end-to-end peak: closed-loop single produce, ${options.connections} connections, 1s warm-up + ` +
    `${options.peakSec}s\n`);
  const result = await runLoad({ label: 'end-to-end peak', url: target.url, connections: options.connections,
    request: { method: 'POST', path: topicPath(topic, 'produce'), headers, body }, warmupMs: Math.min(1, options.warmupSec) * 1000,
    durationMs: options.peakSec * 1000, client: 'net', expectedStatus: 202, onWindowStart: () => cpu.start(),
    onWindowEnd: () => cpu.end(), onProgress: (line) => process.stderr.write(line + '\n') });
  const seconds = result.windowMs / 1000;
  const c = cpu.figures(result.windowMs, result.clientCpuPercent);
  const reqPerSec = result.okResponses / seconds;
  if (reqPerSec === 0) throw new Error(`end-to-end peak: no 202 (errors ${formatErrors(result.errorCounts)})`);
  return { name: 'peak single produce', target: target.url, client: 'net', connections: options.connections,
    durationSec: seconds, messagesPerRequest: 1, requestBodyBytes: body.length, acceptedRequests: result.okResponses,
    reqPerSec, msgsPerSec: reqPerSec, payloadMBPerSec: (reqPerSec * options.messageBytes) / 1e6, latencyMs: result.latencyMs,
    statusCounts: result.statusCounts, errorCounts: result.errorCounts, clientCpuPercent: result.clientCpuPercent,
    clientCpuUsPerRequest: result.clientCpuUsPerResponse, serverCpuPercent: c.serverCpuPercent, serverThreads: c.serverThreads,
    otherCpuPercent: c.otherCpuPercent, connectionsOpened: result.connectionsOpened,
    abandonedInFlight: result.abandonedInFlight, openLoop: null };
}

// ---------------------------------------------------------------------------------------------------------------
// Output.

export function flowHeadlines(report: FlowReport): Headline[] {
  const p99 = report.latencyMs.p99;
  if (report.scenario === 'end-to-end') {
    return [{ scenario: 'end-to-end', value: p99, figure: `p99 ${fixed(p99, 2)} ms at ${formatInt(report.ratePerSec)} msg/s`,
      target: `p99 <= ${endToEndTargetP99Ms} ms at 50% of peak`, floorRatio: null, redisRatio: null,
      met: report.latencyMs.count > 0 && p99 <= endToEndTargetP99Ms,
      otherCpuPercentMax: maxKnown([report.otherCpuPercent, report.peak?.otherCpuPercent]) }];
  }
  const rss = report.intervals.map((row) => row.serverRssBytes ?? 0);
  const growth = rss.length >= 2 ? (rss[rss.length - 1]! - rss[0]!) / 2 ** 20 : null;
  return [{ scenario: 'soak', value: report.msgsPerSec,
    figure: `${formatInt(report.msgsPerSec)} msg/s for ${fixed(report.windowSec, 0)} s, p99 ${fixed(p99, 2)} ms` +
      (growth === null ? '' : `, RSS ${growth >= 0 ? '+' : ''}${fixed(growth, 0)} MiB`),
    target: 'none (steady RSS and p99)', floorRatio: null, redisRatio: null, met: null,
    otherCpuPercentMax: report.otherCpuPercent }];
}

function latencyRow(label: string, l: LatencySummaryMs & { count?: number }): string[] {
  return [label, l.count === undefined ? '' : formatInt(l.count), ...[l.p50, l.p90, l.p99, l.p999, l.max].map((ms) => fixed(ms, 2))];
}

export function printFlowTable(report: FlowReport): void {
  const out: string[] = [];
  if (report.peak !== null) {
    const p = report.peak;
    out.push(`peak (closed loop, ${p.connections} connections, ${fixed(p.durationSec, 1)} s): ${formatInt(p.reqPerSec)} ` +
      `req/s, p99 ${fixed(p.latencyMs.p99, 2)} ms, errors ${formatErrors(p.errorCounts)}; rate = ${formatInt(report.ratePerSec)} msg/s`);
  }
  const header = ['scenario', 'rate/s', 'window s', 'msgs/s', 'MB/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms',
    'errors', 'client CPU', 'server CPU', 'other CPU'];
  const l = report.latencyMs;
  out.push(...renderTable(header, [[report.scenario, formatInt(report.ratePerSec), fixed(report.windowSec, 1),
    formatInt(report.msgsPerSec), fixed(report.payloadMBPerSec, 2), ...[l.p50, l.p90, l.p99, l.p999, l.max].map((ms) => fixed(ms, 2)),
    formatErrors(report.errorCounts), percent(report.clientCpuPercent),
    serverCpuText(report.serverCpuPercent, report.serverThreads), percent(report.otherCpuPercent)]], [0, 10]));
  out.push('');
  out.push(...renderTable(['latency', 'count', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms'], [
    latencyRow('produce 202 -> consumer has it (end-to-end)', report.latencyMs),
    latencyRow('send time in payload -> consumer has it', report.sendToReceiptMs),
    latencyRow('produce: scheduled -> 202 (open loop)', report.produceMs),
    latencyRow('produce: scheduled -> written (client lateness)', report.sendLatenessMs),
    latencyRow('batch ack (write -> 200)', report.ackMs),
  ], [0]));
  out.push(`produces: ${formatInt(report.due)} due in the window, ${formatInt(report.accepted)} answered 202, ` +
    `${formatInt(report.sentLate)} sent more than ${report.lateThresholdMs} ms late, ${formatInt(report.notSent)} not sent ` +
    `(statuses ${formatErrors(report.produceStatusCounts)}); consumers: ${formatInt(report.delivered)} delivered, ` +
    `${formatInt(report.undelivered)} not delivered within ${deliveryGraceMs / 1000} s, ${report.lost} lost from the ledger, ` +
    `${report.duplicates} duplicates, ${report.deliveredBefore202} before their 202 (counted as 0), ${formatInt(report.acked)} ` +
    `acked (consume statuses ${formatErrors(report.consumeStatusCounts)})`);
  if (report.scenario === 'soak' && report.intervals.length > 0) {
    out.push('');
    out.push(...renderTable(['at s', 'server RSS MiB', 'produced/s', 'delivered/s', 'p50 ms', 'p99 ms', 'max ms', 'server CPU',
      'client CPU'], report.intervals.map((row) => [fixed(row.atSec, 0),
      row.serverRssBytes === null ? 'n/a' : fixed(row.serverRssBytes / 2 ** 20, 1), formatInt(row.producedPerSec),
      formatInt(row.deliveredPerSec), fixed(row.p50Ms, 2), fixed(row.p99Ms, 2), fixed(row.maxMs, 2),
      percent(row.serverCpuPercent), percent(row.clientCpuPercent)]), []));
  }
  for (const h of flowHeadlines(report)) {
    out.push(`${h.scenario}: ${h.figure}; target ${h.target}${h.met === null ? '' : `: ${h.met ? 'met' : 'NOT met'}`}`);
  }
  if (Object.keys(report.nodeEnv).length > 0) {
    out.push(`node started with ${Object.entries(report.nodeEnv).map(([k, v]) => `${k}=${v}`).join(' ')} ` +
      `(${report.consumers} consumers x max ${(report.options['max'] as number | undefined) ?? '?'}; a batch consume counts as ` +
      `its max against the per-user consume cap, default ${consumeCapDefault})`);
  }
  out.push(`msgs/s = messages produced in the window that a consumer received, per second; latencies on one clock ` +
    `across the bench's producer and consumer threads (performance.timeOrigin + performance.now); CPU % is of one core ` +
    `(${os.cpus().length} cores here; client CPU counts both threads)`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}
