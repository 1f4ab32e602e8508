// Scenarios end-to-end and soak of `npm run bench` (bench/README.md): producers and long-polling consumers on one
// topic at once, against a node the bench starts itself (or --url).
//   end-to-end  first a closed-loop single produce run measures the peak rate (--peak seconds), then an open-loop
//               producer sends single produces at 50% of it (or --rate) while --consumers batch consumers long-poll
//               (consume?wait=10s&max=--max; each batch acked on a second connection beside the next poll). Latency:
//               the produce's 202 -> a consumer has the message.
//   soak        the same flow at a steady --rate (default 5,000 msg/s) for --duration (default 10m), with a row per
//               --interval (10 s): server RSS, produced and delivered msgs/s, p99 latency.
// Each payload carries its message id and the client's send time (epoch µs); both ends run in this process, on the
// same clock, and answers are stamped with the start of the event-loop turn that read them (bench/turn_clock.ts), so
// a consumer's answer read after hundreds of 202s of the same turn does not look later than it came. Producers and
// consumers share one thread on purpose: docs/decisions.md "End-to-end: one client thread, answers stamped per turn".
// Bench process main thread; every loop ends by itself (flags, deadlines) and closes its sockets.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { Histogram } from 'hdr-histogram-js';
import {
  cleanups, CpuWindow, createTopic, deleteTopic, errorText, fixed, formatErrors, formatInt, latencySummaryMs,
  makePayload, maxKnown, newHistogram, percent, recordUs, renderTable, reportedOptions, serverCpuText, sleep, startBroker,
  type BrokerTarget, type Headline, type LatencySummaryMs, type ServerThreadCpu, type ThroughputFigures,
} from './common.js';
import { verdictText, type TargetCheck } from './targets.js';
import { AckRequests, ackStatuses, scanHandleSpans, topicPath } from './consume.js';
import { HttpConnection, HttpFailure, requestBuffer, type HttpReply } from './http_conn.js';
import { runLoad } from './load.js';
import { turnNow } from './turn_clock.js';
import { readRssBytes } from './node_process.js';
import { epochUs, epochUsNow, idLimit, scanTracedMessages, TracedRequestTemplate } from './traced_message.js';
import type { BenchOptions } from './options.js';

/** Issue 4: end-to-end p99 <= 10 ms at 50% of the peak rate. */
export const endToEndTargetP99Ms = 10;
const soakRateDefault = 5000;
/** The node's default consume cap per identity (http.max_consume_in_flight_per_identity); a batch counts as max. */
const consumeCapDefault = 1024;
const clientHeader = 'bench';
/** A produce sent later than this after its scheduled time counts as late (the scheduler's timer runs about every ms). */
const lateThresholdMs = 2;
/** After the window, how long messages already accepted may take to reach a consumer. */
const deliveryGraceMs = 5_000;
/** The ledger keeps this many seconds of messages (at the rate); older undelivered ones count as lost. */
const ledgerSeconds = 60;
/** end-to-end's progress line period; soak uses --interval. */
const endToEndProgressSec = 2;

const produceOnlyOptions = ['topic', 'batch', 'client', 'skipFloor', 'compareSecurity', 'rounds', 'prefill', 'batchPrefill',
  'prefillTimeoutSec', 'pollers', 'wakeRate', 'phases', 'topics', 'polls', 'redisConsumers', 'argv', 'batchConnections'];

type Phase = 'warmup' | 'measure' | 'drain';

// ---------------------------------------------------------------------------------------------------------------
// The ledger: per message id, when its 202 came and when a consumer had it, in a ring of ledgerSeconds.

class Ledger {
  private readonly size: number;
  private readonly ids: Float64Array;
  private readonly acceptedMs: Float64Array;
  private readonly receivedMs: Float64Array;
  private readonly inWindow: Uint8Array;
  /** 202 -> consumer has it, for messages produced in the window; and per interval (soak rows). */
  readonly deliveryUs = newHistogram();
  intervalUs = newHistogram();
  /** The embedded send time -> consumer has it (epoch clock), for messages produced in the window. */
  readonly sendToReceiptUs = newHistogram();
  deliveredInWindow = 0;
  deliveredTotal = 0;
  duplicates = 0;
  before202 = 0;
  /** Accepted, then overwritten in the ring before any consumer had them (older than ledgerSeconds). */
  lost = 0;
  unknown = 0;

  constructor(ratePerSec: number) {
    this.size = Math.max(1024, Math.ceil(ratePerSec * ledgerSeconds));
    this.ids = new Float64Array(this.size).fill(-1);
    this.acceptedMs = new Float64Array(this.size).fill(NaN);
    this.receivedMs = new Float64Array(this.size).fill(NaN);
    this.inWindow = new Uint8Array(this.size);
  }

  sent(id: number, counting: boolean): void {
    const slot = id % this.size;
    if (this.ids[slot]! >= 0 && !Number.isNaN(this.acceptedMs[slot]!) && Number.isNaN(this.receivedMs[slot]!)) this.lost++;
    this.ids[slot] = id;
    this.acceptedMs[slot] = NaN;
    this.receivedMs[slot] = NaN;
    this.inWindow[slot] = counting ? 1 : 0;
  }

  accepted(id: number, atMs: number): void {
    const slot = id % this.size;
    if (this.ids[slot] !== id) return;
    this.acceptedMs[slot] = atMs;
    this.settle(slot);
  }

  received(id: number, sentEpochUs: number, atMs: number): void {
    const slot = id % this.size;
    if (!Number.isInteger(id) || this.ids[slot] !== id) {
      this.unknown++;
      return;
    }
    if (!Number.isNaN(this.receivedMs[slot]!)) {
      this.duplicates++;
      return;
    }
    this.receivedMs[slot] = atMs;
    this.deliveredTotal++;
    if (this.inWindow[slot] && Number.isFinite(sentEpochUs)) {
      recordUs(this.sendToReceiptUs, (epochUs(atMs) - sentEpochUs) / 1000);
    }
    this.settle(slot);
  }

  /** Messages produced in the window that were accepted and not yet received. */
  undelivered(): number {
    let count = 0;
    for (let slot = 0; slot < this.size; slot++) {
      if (this.inWindow[slot] && !Number.isNaN(this.acceptedMs[slot]!) && Number.isNaN(this.receivedMs[slot]!)) count++;
    }
    return count;
  }

  private settle(slot: number): void {
    const accepted = this.acceptedMs[slot]!;
    const received = this.receivedMs[slot]!;
    if (Number.isNaN(accepted) || Number.isNaN(received)) return;
    if (received < accepted) this.before202++;
    recordUs(this.intervalUs, received - accepted);
    if (!this.inWindow[slot]) return;
    this.deliveredInWindow++;
    recordUs(this.deliveryUs, received - accepted);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The open-loop producer: message i is due at start + i / rate; it goes out on an idle connection or waits in a
// bounded backlog; its produce latency counts from the scheduled time.

class FlowState {
  phase: Phase = 'warmup';
  /** performance.now() when the window opened; a message counts for the window when it was scheduled inside it. */
  windowStartMs = Infinity;
  producing = true;
  consuming = true;
  due = 0;
  sentLate = 0;
  notSent = 0;
  accepted = 0;
  acceptedInWindow = 0;
  acked = 0;
  ackedInWindow = 0;
  consumesWaiting = 0;
  readonly produceUs = newHistogram();
  readonly ackUs = newHistogram();
  readonly latenessUs = newHistogram();
  readonly produceStatus = new Map<string, number>();
  readonly consumeStatus = new Map<string, number>();
  readonly errors = new Map<string, number>();

  get counting(): boolean {
    return this.phase === 'measure';
  }

  bump(map: Map<string, number>, key: string): void {
    if (this.counting) map.set(key, (map.get(key) ?? 0) + 1);
  }
}

function failureCode(error: unknown): string {
  return error instanceof HttpFailure ? error.code : errorText(error);
}

/** A consumer's two connections: its long polls on one, its batch acks on the other. */
interface FlowConsumer {
  polls: HttpConnection;
  acks: HttpConnection;
}

interface Flow {
  options: BenchOptions;
  target: BrokerTarget;
  topic: string;
  ratePerSec: number;
  state: FlowState;
  ledger: Ledger;
}

function startProducer(flow: Flow, connections: HttpConnection[]): Promise<void> {
  const { options, target, state, ledger } = flow;
  const headers = { ...(target.authorization === null ? {} : { authorization: target.authorization }),
    'content-type': 'application/json' };
  const template = new TracedRequestTemplate(target.url, topicPath(flow.topic, 'produce'), headers, options.messageBytes);
  const intervalMs = 1000 / flow.ratePerSec;
  const backlogMax = Math.max(1000, Math.ceil(flow.ratePerSec * 5));
  const idle: HttpConnection[] = [...connections];
  const backlog: Array<{ id: number; scheduledMs: number }> = [];
  let backlogHead = 0;
  const send = (connection: HttpConnection, id: number, scheduledMs: number): void => {
    // Messages scheduled during the warm-up and sent late into the window stay out of the window's figures.
    const counting = state.counting && scheduledMs >= state.windowStartMs;
    const latenessMs = performance.now() - scheduledMs;
    if (counting) {
      recordUs(state.latenessUs, latenessMs);
      if (latenessMs > lateThresholdMs) state.sentLate++;
    }
    ledger.sent(id, counting);
    connection.send(template.request(id, epochUsNow()), (reply) => {
      recordProduce(flow, id, scheduledMs, counting, reply);
      // The connection is free: the oldest waiting message goes next, else it parks as idle.
      if (backlogHead < backlog.length && state.producing) {
        const next = backlog[backlogHead++]!;
        if (backlogHead > 4096 && backlogHead * 2 > backlog.length) {
          backlog.splice(0, backlogHead);
          backlogHead = 0;
        }
        send(connection, next.id, next.scheduledMs);
      } else {
        idle.push(connection);
      }
    });
  };
  const startMs = performance.now();
  let next = 0;
  return new Promise<void>((resolve) => {
    const tick = (): void => {
      if (!state.producing) {
        if (state.counting || state.phase === 'drain') state.notSent += backlog.length - backlogHead;
        return resolve();
      }
      const now = performance.now();
      const dueNow = Math.min(Math.floor((now - startMs) / intervalMs) + 1, next + Math.ceil(flow.ratePerSec));
      for (; next < dueNow; next++) {
        const scheduledMs = startMs + next * intervalMs;
        if (state.counting) state.due++;
        if (next >= idLimit) {
          // Ids are idDigits wide in the payload: past them nothing is sent (hours at any rate the bench reaches).
          if (state.counting) state.notSent++;
          state.bump(state.errors, `produce id past ${idLimit - 1}`);
          continue;
        }
        const connection = idle.pop();
        if (connection !== undefined) send(connection, next, scheduledMs);
        else if (backlog.length - backlogHead < backlogMax) backlog.push({ id: next, scheduledMs });
        else if (state.counting) state.notSent++;
      }
      setTimeout(tick, Math.max(0, startMs + next * intervalMs - performance.now()));
    };
    tick();
  });
}

/** Counts a produce's answer; its latency counts from the scheduled time, so queueing behind a busy connection shows. */
function recordProduce(flow: Flow, id: number, scheduledMs: number, counting: boolean, reply: HttpReply | HttpFailure): void {
  const { state, ledger } = flow;
  if (reply instanceof HttpFailure) {
    state.bump(state.errors, `produce ${reply.code}`);
  } else {
    state.bump(state.produceStatus, String(reply.status));
    if (reply.status !== 202) state.bump(state.errors, `produce ${reply.status}`);
    else {
      state.accepted++;
      ledger.accepted(id, reply.endedMs);
      if (counting) {
        state.acceptedInWindow++;
        recordUs(state.produceUs, reply.endedMs - scheduledMs);
      }
    }
  }
}

/** One long-polling batch consumer: consume?wait=10s&max, record what arrived, hand the batch ack to a connection of
 *  its own and poll again at once, as a consumer that keeps up would: a poll that waited for its batch's ack left
 *  the consumer away for the ack's round trip, which after a stall is when the backlog needs it most
 *  (docs/decisions.md "End-to-end consumers ack beside their next poll"). One ack in flight per consumer: the next
 *  batch's ack goes once the last one is answered. */
async function consumeLoop(flow: Flow, consumer: FlowConsumer, poll: Buffer, acks: AckRequests): Promise<void> {
  const { state, ledger } = flow;
  let lastAck: Promise<void> = Promise.resolve();
  while (state.consuming) {
    state.consumesWaiting++;
    const reply = await consumer.polls.request(poll).catch((error: unknown) => failureCode(error));
    state.consumesWaiting--;
    if (!state.consuming) break;
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
    const messages = scanTracedMessages(reply.body);
    const spans = scanHandleSpans(reply.body);
    const count = spans.length / 2;
    if (messages.length !== count) state.bump(state.errors, 'consume bad-body');
    for (const message of messages) ledger.received(message.id, message.sentEpochUs, reply.endedMs);
    if (count === 0) continue;
    const request = acks.batchFromSpans(reply.body, spans);
    await lastAck;
    lastAck = ackBatch(flow, consumer.acks, request, count);
  }
  await lastAck;
}

/** Sends one batch ack of count handles and counts what it settled. */
async function ackBatch(flow: Flow, connection: HttpConnection, request: Buffer, count: number): Promise<void> {
  const { state } = flow;
  const ack = await connection.request(request).catch((error: unknown) => failureCode(error));
  if (typeof ack === 'string') {
    state.bump(state.errors, `ack ${ack}`);
    return;
  }
  if (ack.status !== 200) {
    state.bump(state.errors, `ack ${ack.status}`);
    return;
  }
  const settled = ackStatuses(ack.body, count).filter((status) => status === 204).length;
  state.acked += settled;
  if (state.counting) {
    state.ackedInWindow += settled;
    recordUs(state.ackUs, ack.endedMs - ack.startedMs);
    if (settled !== count) state.bump(state.errors, 'ack-item not 204');
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
  rows: FlowInterval[]): () => void {
  const { state, ledger } = flow;
  let [lastMs, lastAccepted, lastDelivered] = [performance.now(), 0, 0];
  let cpu = new CpuWindow(serverPid);
  cpu.start();
  const timer = setInterval(() => {
    const now = performance.now();
    cpu.end();
    const seconds = (now - lastMs) / 1000;
    const figures = cpu.figures(now - lastMs);
    const histogram = ledger.intervalUs;
    ledger.intervalUs = newHistogram();
    const row: FlowInterval = {
      atSec: state.phase === 'warmup' ? -1 : (now - state.windowStartMs) / 1000, seconds,
      serverRssBytes: serverPid === null ? null : readRssBytes(serverPid),
      producedPerSec: (state.accepted - lastAccepted) / seconds,
      deliveredPerSec: (ledger.deliveredTotal - lastDelivered) / seconds,
      p50Ms: histogram.getValueAtPercentile(50) / 1000, p99Ms: histogram.getValueAtPercentile(99) / 1000,
      maxMs: histogram.maxValue / 1000, serverCpuPercent: figures.serverCpuPercent, clientCpuPercent: figures.clientCpuPercent,
    };
    if (state.phase === 'measure') rows.push(row);
    [lastMs, lastAccepted, lastDelivered] = [now, state.accepted, ledger.deliveredTotal];
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

function summary(histogram: Histogram): LatencySummaryMs & { count: number } {
  return { count: histogram.totalCount, ...latencySummaryMs(histogram) };
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
  const { peak, ratePerSec, rateSource } = await flowRate(options, target, scenario);
  const flow: Flow = { options, target, topic, ratePerSec, state: new FlowState(), ledger: new Ledger(ratePerSec) };
  const { state, ledger } = flow;
  const address = HttpConnection.forUrl(target.url);
  const authorization: Record<string, string> = target.authorization === null ? {} : { authorization: target.authorization };
  const poll = requestBuffer(target.url, 'GET', `${topicPath(topic, 'consume')}?wait=10s&max=${options.max}`,
    { ...authorization, 'x-svc-client': clientHeader });
  const acks = new AckRequests(target, topic);
  const consumers: FlowConsumer[] = Array.from({ length: options.consumers },
    () => ({ polls: new HttpConnection(address, turnNow), acks: new HttpConnection(address, turnNow) }));
  const producers = Array.from({ length: options.connections }, () => new HttpConnection(address, turnNow));
  process.stderr.write(`${scenario}: ${formatInt(ratePerSec)} msg/s open loop (${rateSource}) on up to ` +
    `${options.connections} connections, ${options.consumers} consumers long-polling (wait=10s, max=${options.max}), ` +
    `${options.warmupSec}s warm-up + ${options.durationSec}s, ${target.url}\n`);
  const loops = consumers.map((consumer) => consumeLoop(flow, consumer, poll, acks));
  const deadline = performance.now() + 3000;
  while (state.consumesWaiting < options.consumers && performance.now() < deadline) await sleep(10);
  const producer = startProducer(flow, producers);
  const serverExited = target.server === null ? new Promise<void>(() => undefined) : target.server.exited.then(() => undefined);
  const intervals: FlowInterval[] = [];
  const stopIntervals = startIntervals(flow, scenario === 'soak' ? options.intervalSec : endToEndProgressSec, scenario,
    target.serverPid, intervals);
  const cpu = new CpuWindow(target.serverPid);
  let windowMs = 0;
  try {
    windowMs = await runWindow(flow, producer, serverExited, cpu);
  } finally {
    stopIntervals();
    state.consuming = false;
    state.producing = false;
    for (const connection of [...consumers.flatMap((c) => [c.polls, c.acks]), ...producers]) connection.destroy();
  }
  await Promise.allSettled(loops);
  if (target.server?.hasExited()) failures.push(`broker exited during ${scenario}; its output:\n${target.server.outputTail()}`);
  const seconds = windowMs / 1000;
  const figures = cpu.figures(windowMs);
  const report: FlowReport = {
    scenario, startedAt, target: target.url, topic, options: reportedOptions(options, produceOnlyOptions), nodeEnv, peak,
    ratePerSec, rateSource, windowSec: seconds, producers: options.connections, consumers: options.consumers,
    due: state.due, sentLate: state.sentLate, notSent: state.notSent, lateThresholdMs, accepted: state.acceptedInWindow,
    delivered: ledger.deliveredInWindow, msgsPerSec: seconds > 0 ? ledger.deliveredInWindow / seconds : 0,
    payloadMBPerSec: seconds > 0 ? (ledger.deliveredInWindow * options.messageBytes) / seconds / 1e6 : 0,
    undelivered: ledger.undelivered(), lost: ledger.lost, duplicates: ledger.duplicates,
    deliveredBefore202: ledger.before202, acked: state.ackedInWindow,
    latencyMs: summary(ledger.deliveryUs), sendToReceiptMs: summary(ledger.sendToReceiptUs),
    produceMs: summary(state.produceUs), sendLatenessMs: latencySummaryMs(state.latenessUs), ackMs: summary(state.ackUs),
    produceStatusCounts: Object.fromEntries(state.produceStatus), consumeStatusCounts: Object.fromEntries(state.consumeStatus),
    errorCounts: Object.fromEntries(state.errors), clientCpuPercent: figures.clientCpuPercent,
    serverCpuPercent: figures.serverCpuPercent, serverThreads: figures.serverThreads, otherCpuPercent: figures.otherCpuPercent,
    serverRssBytesEnd: target.serverPid === null ? null : readRssBytes(target.serverPid), intervals, failures,
  };
  if (ledger.unknown > 0) report.errorCounts['consume unknown-id'] = ledger.unknown;
  if (report.delivered === 0) failures.push(`${scenario}: no message delivered (errors: ${formatErrors(report.errorCounts)})`);
  return report;
}

/** The open-loop rate: --rate, else end-to-end's half of the peak it measures first (then lets the node rest a
 *  second), else soak's default. */
async function flowRate(options: BenchOptions, target: BrokerTarget, scenario: FlowReport['scenario']):
  Promise<{ peak: ThroughputFigures | null; ratePerSec: number; rateSource: string }> {
  if (scenario !== 'end-to-end' || options.rate !== null) {
    return { peak: null, ratePerSec: options.rate ?? soakRateDefault,
      rateSource: options.rate !== null ? '--rate' : `soak default` };
  }
  const peak = await measurePeak(options, target, `bench-peak-${Date.now()}`);
  await sleep(1000);
  return { peak, ratePerSec: Math.max(1, Math.round(peak.reqPerSec / 2)),
    rateSource: `50% of the peak single produce rate measured first (${formatInt(peak.reqPerSec)} req/s)` };
}

/** Warm-up, the measured window, then the drain: the producer stops and accepted messages get deliveryGraceMs to
 *  reach a consumer. A node that exits ends the waits early. Returns the window's length in ms. */
async function runWindow(flow: Flow, producer: Promise<void>, serverExited: Promise<void>, cpu: CpuWindow): Promise<number> {
  const { options, state, ledger } = flow;
  await Promise.race([sleep(options.warmupSec * 1000), serverExited]);
  [state.phase, state.windowStartMs] = ['measure', performance.now()];
  cpu.start();
  await Promise.race([sleep(options.durationSec * 1000), serverExited]);
  cpu.end();
  const windowMs = performance.now() - state.windowStartMs;
  [state.phase, state.producing] = ['drain', false];
  await producer;
  const graceEnd = performance.now() + deliveryGraceMs;
  while (ledger.undelivered() > 0 && performance.now() < graceEnd) await sleep(20);
  return windowMs;
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
    const checks: TargetCheck[] = [{ label: 'p99 ms', value: report.latencyMs.count > 0 ? p99 : null,
      atMost: endToEndTargetP99Ms, decimals: 2 }];
    return [{ scenario: 'end-to-end', value: p99, figure: `p99 ${fixed(p99, 2)} ms at ${formatInt(report.ratePerSec)} msg/s`,
      target: `p99 <= ${endToEndTargetP99Ms} ms at 50% of peak`, floorRatio: null, redisRatio: null,
      checks,
      otherCpuPercentMax: maxKnown([report.otherCpuPercent, report.peak?.otherCpuPercent]) }];
  }
  const rss = report.intervals.map((row) => row.serverRssBytes ?? 0);
  const growth = rss.length >= 2 ? (rss[rss.length - 1]! - rss[0]!) / 2 ** 20 : null;
  return [{ scenario: 'soak', value: report.msgsPerSec,
    figure: `${formatInt(report.msgsPerSec)} msg/s for ${fixed(report.windowSec, 0)} s, p99 ${fixed(p99, 2)} ms` +
      (growth === null ? '' : `, RSS ${growth >= 0 ? '+' : ''}${fixed(growth, 0)} MiB`),
    target: 'none (steady RSS and p99)', floorRatio: null, redisRatio: null, checks: [],
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
    out.push(`${h.scenario}: ${h.figure}; target ${h.target}${h.checks.length === 0 ? '' : `: ${verdictText(h.checks)}`}`);
  }
  if (Object.keys(report.nodeEnv).length > 0) {
    out.push(`node started with ${Object.entries(report.nodeEnv).map(([k, v]) => `${k}=${v}`).join(' ')} ` +
      `(${report.consumers} consumers x max ${(report.options['max'] as number | undefined) ?? '?'}; a batch consume counts as ` +
      `its max against the per-user consume cap, default ${consumeCapDefault})`);
  }
  out.push(`msgs/s = messages produced in the window that a consumer received, per second; latencies on this process's ` +
    `clock (performance.now; an answer at the start of the event-loop turn that read it); CPU % is of one core (${os.cpus().length} cores here)`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}
