// Scenario footprint of `npm run bench` (bench/README.md): the broker node's memory at rest under many topics and
// many idle long polls. Against a node it starts itself (or --url with --server-pid): server RSS when idle, after
// creating --topics topics of 3 partitions each, and while holding --polls idle long polls, one raw keep-alive socket
// each (consume?wait=10s on an empty topic, re-issued when answered). Issue 4's target: 1,000 topics x 3 partitions
// and 10,000 idle long polls in <= 300 MiB RSS, printed as a line (never thrown). Bench process main thread.
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import {
  cleanups, CpuWindow, createTopic, deleteTopic, errorText, fixed, formatErrors, formatInt, percent, reportedOptions,
  sleep, startBroker, type BrokerTarget, type Headline,
} from './common.js';
import type { TargetCheck } from './targets.js';
import { topicPath } from './consume.js';
import { HttpConnection, HttpFailure, requestBuffer } from './http_conn.js';
import { readRssBytes } from './node_process.js';
import type { BenchOptions } from './options.js';

const MiB = 2 ** 20;
/** Issue 4: 1,000 topics x 3 partitions and 10,000 idle long polls in <= 300 MiB RSS. */
export const footprintLimitBytes = 300 * MiB;
const partitionsPerTopic = 3;
/** Topic creates in flight at once. */
const createConcurrency = 16;
/** Polls opened per step, and how long a step may wait for its sockets to connect. */
const pollsPerStep = 500;
const stepWaitMs = 3000;
/** After the polls are out (and after the topics), the node gets this long to settle before RSS is read. */
const settleMs = 2000;
const pollWait = '10s';
/** Every loop here ends by this deadline even if the node stops answering. */
const createTimeoutMs = 10 * 60_000;

const otherScenarioOptions = ['topic', 'batch', 'client', 'skipFloor', 'compareSecurity', 'rounds', 'rate', 'max', 'prefill',
  'batchPrefill', 'prefillTimeoutSec', 'pollers', 'wakeRate', 'phases', 'consumers', 'peakSec', 'intervalSec',
  'soakDurationSec', 'redisConsumers', 'argv', 'batchConnections', 'connections', 'partitions'];

export interface FootprintReport {
  scenario: 'footprint';
  startedAt: string;
  target: string;
  options: Record<string, unknown>;
  nodeEnv: Record<string, string>;
  topics: number;
  partitionsPerTopic: number;
  topicsCreated: number;
  topicCreateSec: number;
  topicErrors: Record<string, number>;
  polls: number;
  /** Polls whose socket connected, and polls waiting (request written, no answer yet) when RSS was read. */
  pollsConnected: number;
  pollsWaiting: number;
  pollsOpenSec: number;
  /** Answers to the polls while held: 204 when a wait ran out (then re-issued), anything else is an error. */
  pollStatusCounts: Record<string, number>;
  pollErrors: Record<string, number>;
  holdSec: number;
  rssBytes: { idle: number | null; afterTopics: number | null; afterPolls: number | null; maxWhileHolding: number | null };
  limitBytes: number;
  /** max(afterPolls, maxWhileHolding) <= limit; null when RSS could not be read (--url without --server-pid). */
  met: boolean | null;
  /** The bench process's own RSS at the end (it holds the client sockets). */
  clientRssBytes: number;
  clientCpuPercent: number;
  serverCpuPercent: number | null;
  failures: string[];
}

function nodeEnvFor(options: BenchOptions): Record<string, string> {
  return {
    SVC_HTTP_MAX_CONSUME_IN_FLIGHT_PER_IDENTITY: String(Math.max(1024, options.polls + 64)),
    SVC_HTTP_MAX_CONNECTIONS: String(Math.max(4096, options.polls + 1024)),
  };
}

function rss(target: BrokerTarget): number | null {
  return target.serverPid === null ? null : readRssBytes(target.serverPid);
}

function mib(bytes: number | null): string {
  return bytes === null ? 'n/a' : `${fixed(bytes / MiB, 1)} MiB`;
}

export async function runFootprint(options: BenchOptions): Promise<FootprintReport> {
  const startedAt = new Date().toISOString();
  const failures: string[] = [];
  const nodeEnv = options.url === null ? nodeEnvFor(options) : {};
  if (options.url !== null) {
    process.stderr.write(`warning: with --url the node must allow ${options.polls} consumes in flight per user ` +
      `(http.max_consume_in_flight_per_identity) and ${options.polls} connections (http.max_connections)\n`);
  }
  const target = await startBroker(options, nodeEnv);
  await sleep(settleMs);
  const idle = rss(target);
  process.stderr.write(`footprint: server RSS idle ${mib(idle)}; creating ${options.topics} topics x ${partitionsPerTopic} ` +
    `partitions\n`);
  const stamp = Date.now();
  const names = Array.from({ length: options.topics }, (_, i) => `bench-fp-${stamp}-${i}`);
  const created = await createTopics(options, target, names);
  if (created.count < names.length) failures.push(`only ${created.count} of ${names.length} topics created`);
  await sleep(settleMs);
  const afterTopics = rss(target);
  process.stderr.write(`footprint: ${created.count} topics in ${fixed(created.seconds, 1)} s; server RSS ${mib(afterTopics)}; ` +
    `opening ${options.polls} idle long polls\n`);
  const polls = await holdPolls(options, target, names.slice(0, Math.max(1, created.count)));
  const held = heldRssBytes(polls);
  const met = held === null ? null : held <= footprintLimitBytes;
  if (polls.connected < options.polls) failures.push(`only ${polls.connected} of ${options.polls} poll sockets connected`);
  if (target.server?.hasExited()) failures.push(`broker exited during footprint; its output:\n${target.server.outputTail()}`);
  return {
    scenario: 'footprint', startedAt, target: target.url, options: reportedOptions(options, otherScenarioOptions), nodeEnv,
    topics: options.topics, partitionsPerTopic, topicsCreated: created.count, topicCreateSec: created.seconds,
    topicErrors: created.errors, polls: options.polls, pollsConnected: polls.connected, pollsWaiting: polls.waiting,
    pollsOpenSec: polls.openSec, pollStatusCounts: polls.statusCounts, pollErrors: polls.errors, holdSec: polls.holdSec,
    rssBytes: { idle, afterTopics, afterPolls: polls.afterPolls, maxWhileHolding: polls.maxWhileHolding },
    limitBytes: footprintLimitBytes, met, clientRssBytes: process.memoryUsage.rss(),
    clientCpuPercent: polls.clientCpuPercent, serverCpuPercent: polls.serverCpuPercent, failures,
  };
}

/** POST /v1/topics for every name, createConcurrency at a time; the first error of each kind is kept. */
async function createTopics(options: BenchOptions, target: BrokerTarget, names: string[]): Promise<{ count: number;
  seconds: number; errors: Record<string, number> }> {
  const startMs = performance.now();
  const deadlineMs = startMs + createTimeoutMs;
  const errors = new Map<string, number>();
  let next = 0;
  let count = 0;
  const progress = setInterval(() => process.stderr.write(`  [footprint] ${count} / ${names.length} topics, ` +
    `${formatInt(count / ((performance.now() - startMs) / 1000))}/s\n`), 2000);
  const worker = async (): Promise<void> => {
    while (next < names.length && performance.now() < deadlineMs && errors.size < 20) {
      const name = names[next++]!;
      try {
        await createTopic(target, name, partitionsPerTopic);
        count++;
        if (options.url !== null) cleanups.push(() => deleteTopic(target, name));
      } catch (error) {
        const key = errorText(error).slice(0, 120);
        errors.set(key, (errors.get(key) ?? 0) + 1);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: createConcurrency }, worker));
  } finally {
    clearInterval(progress);
  }
  return { count, seconds: (performance.now() - startMs) / 1000, errors: Object.fromEntries(errors) };
}

interface PollFigures {
  connected: number;
  waiting: number;
  openSec: number;
  holdSec: number;
  afterPolls: number | null;
  maxWhileHolding: number | null;
  statusCounts: Record<string, number>;
  errors: Record<string, number>;
  clientCpuPercent: number;
  serverCpuPercent: number | null;
}

/** What the held polls share: whether to go on, how many wait for an answer, and the answers and errors so far. */
interface PollState {
  polling: boolean;
  waiting: number;
  statuses: Map<string, number>;
  errors: Map<string, number>;
}

/** One idle long poll on its own socket, re-issued when answered (204: its wait ran out). A failure or an unexpected
 *  status waits 100 ms before the next poll, so a node that refuses is not hammered. */
async function pollLoop(state: PollState, connection: HttpConnection, request: Buffer): Promise<void> {
  const { statuses, errors } = state;
  while (state.polling) {
    state.waiting++;
    let status: string;
    try {
      status = String((await connection.request(request)).status);
    } catch (error) {
      status = error instanceof HttpFailure ? error.code : errorText(error);
      if (state.polling) errors.set(status, (errors.get(status) ?? 0) + 1);
      await sleep(100);
      continue;
    } finally {
      state.waiting--;
    }
    if (!state.polling) return;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    if (status !== '204' && status !== '200') {
      errors.set(status, (errors.get(status) ?? 0) + 1);
      await sleep(100);
    }
  }
}

/** Opens the polls in steps, lets the node settle, reads RSS, then holds them for --duration sampling RSS. */
async function holdPolls(options: BenchOptions, target: BrokerTarget, topics: string[]): Promise<PollFigures> {
  const address = HttpConnection.forUrl(target.url);
  const headers: Record<string, string> = target.authorization === null ? {} : { authorization: target.authorization };
  const requests = topics.map((topic) => requestBuffer(target.url, 'GET', `${topicPath(topic, 'consume')}?wait=${pollWait}`, headers));
  const state: PollState = { polling: true, waiting: 0, statuses: new Map(), errors: new Map() };
  const connections: HttpConnection[] = [];
  const loops: Promise<void>[] = [];
  const connectedCount = (): number => connections.reduce((sum, connection) => sum + (connection.opened > 0 ? 1 : 0), 0);
  const openStartMs = performance.now();
  try {
    for (let opened = 0; opened < options.polls && (target.server === null || !target.server.hasExited());) {
      const step = Math.min(pollsPerStep, options.polls - opened);
      for (let i = 0; i < step; i++, opened++) {
        const connection = new HttpConnection(address);
        connections.push(connection);
        loops.push(pollLoop(state, connection, requests[opened % requests.length]!));
      }
      const stepDeadline = performance.now() + stepWaitMs;
      while (connectedCount() < opened && performance.now() < stepDeadline) await sleep(20);
      process.stderr.write(`  [footprint] ${connectedCount()} / ${options.polls} poll sockets connected, ` +
        `${state.waiting} polls waiting\n`);
    }
    const openSec = (performance.now() - openStartMs) / 1000;
    await sleep(settleMs);
    const afterPolls = rss(target);
    const connected = connectedCount();
    const waiting = state.waiting;
    process.stderr.write(`footprint: ${connected} poll sockets, ${waiting} polls waiting; server RSS ${mib(afterPolls)}; ` +
      `holding them ${options.durationSec} s\n`);
    const cpu = new CpuWindow(target.serverPid);
    cpu.start();
    const holdStartMs = performance.now();
    let maxWhileHolding = afterPolls;
    while (performance.now() - holdStartMs < options.durationSec * 1000) {
      await sleep(Math.min(1000, options.durationSec * 1000));
      const now = rss(target);
      if (now !== null) maxWhileHolding = Math.max(maxWhileHolding ?? 0, now);
      process.stderr.write(`  [footprint] holding ${fixed((performance.now() - holdStartMs) / 1000, 0)}s  server RSS ` +
        `${mib(now)}  polls waiting ${state.waiting}  answers ${formatErrors(Object.fromEntries(state.statuses))}\n`);
    }
    cpu.end();
    const holdMs = performance.now() - holdStartMs;
    const figures = cpu.figures(holdMs);
    return { connected, waiting, openSec, holdSec: holdMs / 1000, afterPolls, maxWhileHolding,
      statusCounts: Object.fromEntries(state.statuses), errors: Object.fromEntries(state.errors),
      clientCpuPercent: figures.clientCpuPercent, serverCpuPercent: figures.serverCpuPercent };
  } finally {
    state.polling = false;
    for (const connection of connections) connection.destroy();
    await Promise.allSettled(loops);
  }
}

/** The RSS the target is judged by: the most seen once the polls were open; null when it could not be read. */
function heldRssBytes(rss: { afterPolls: number | null; maxWhileHolding: number | null }): number | null {
  return rss.afterPolls === null ? null : Math.max(rss.afterPolls, rss.maxWhileHolding ?? 0);
}

export function footprintHeadlines(report: FootprintReport): Headline[] {
  const held = heldRssBytes(report.rssBytes);
  // Without the server's RSS (--url without --server-pid) the row has no verdict.
  const checks: TargetCheck[] = held === null ? [] : [
    { label: 'RSS MiB', value: held / MiB, atMost: footprintLimitBytes / MiB, decimals: 1 },
    { label: 'topics', value: report.topics, atLeast: 1000, decimals: 0 },
    { label: 'polls', value: report.polls, atLeast: 10_000, decimals: 0 },
  ];
  return [{ scenario: 'footprint', value: held === null ? null : held / MiB,
    figure: `${held === null ? 'RSS n/a' : mib(held)} (${formatInt(report.topicsCreated)} topics x ` +
      `${report.partitionsPerTopic}, ${formatInt(report.pollsWaiting)} polls)`,
    target: `<= ${footprintLimitBytes / MiB} MiB at 1,000 x 3 and 10,000 polls`, floorRatio: null, redisRatio: null,
    checks,
    otherCpuPercentMax: null }];
}

export function printFootprint(report: FootprintReport): void {
  const r = report.rssBytes;
  const out = [
    `footprint: ${formatInt(report.topicsCreated)} topics x ${report.partitionsPerTopic} partitions created in ` +
      `${fixed(report.topicCreateSec, 1)} s (errors ${formatErrors(report.topicErrors)}); ${formatInt(report.pollsConnected)} ` +
      `poll sockets opened in ${fixed(report.pollsOpenSec, 1)} s, ${formatInt(report.pollsWaiting)} polls waiting ` +
      `(consume?wait=${pollWait} on an empty topic, re-issued when answered), held ${fixed(report.holdSec, 1)} s`,
    '',
    'server RSS                         MiB',
    '---------------------------------  --------',
    `idle (fresh node)                  ${mib(r.idle).padStart(8)}`,
    `after the topics                   ${mib(r.afterTopics).padStart(8)}`,
    `after the polls                    ${mib(r.afterPolls).padStart(8)}`,
    `max while holding the polls        ${mib(r.maxWhileHolding).padStart(8)}`,
    '',
    `poll answers while held ${formatErrors(report.pollStatusCounts)} (204: a ${pollWait} wait ran out and the poll was ` +
      `re-issued); errors ${formatErrors(report.pollErrors)}; client CPU ${percent(report.clientCpuPercent)}, server CPU ` +
      `${percent(report.serverCpuPercent)} while holding; bench process RSS ${mib(report.clientRssBytes)}`,
  ];
  const scaled = report.topics < 1000 || report.polls < 10_000 ? ` (scaled down: --topics ${report.topics} --polls ` +
    `${report.polls}; the target is for 1,000 and 10,000)` : '';
  out.push(report.met === null
    ? `footprint <= ${footprintLimitBytes / MiB} MiB: not judged, server RSS unknown (with --url pass --server-pid)`
    : `footprint <= ${footprintLimitBytes / MiB} MiB: ${mib(heldRssBytes(r))}: ${report.met ? 'PASS' : 'FAIL'}${scaled}`);
  if (Object.keys(report.nodeEnv).length > 0) {
    out.push(`node started with ${Object.entries(report.nodeEnv).map(([k, v]) => `${k}=${v}`).join(' ')}: every poll ` +
      `counts against the per-user consume cap (http.max_consume_in_flight_per_identity, default 1024) and holds a ` +
      `connection (http.max_connections, default 4096); http.max_consume_wait stays at its default 10 s, so polls are ` +
      `re-issued as their waits run out`);
  }
  out.push(`MiB = 2^20 bytes; RSS = VmRSS of /proc/<pid>/status; CPU % is of one core (${os.cpus().length} cores here)`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}
