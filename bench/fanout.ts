// Scenario fanout of `npm run bench` (issue 30): a parent with three children (two ordinary, one delay child) against a
// lone topic on one node it starts itself (or --url). Figures: closed-loop batch produce into the parent over the same
// into the lone topic (target >= 0.5: each parent message is four writes), and beside it the rate the family sustains
// (parent messages over the time until every child copied them: copying runs behind produce); then, while batches at
// half the parent's peak rate (or --rate) go open loop (the produce bench's client) to partitions 1 and up, probes
// (single produces, 100 a second, carrying their send time) go to partition 0, whose copies long-polling consumers
// read from the children's partition 0: child lag p99 (send to arrival at the consumer, target <= 100 ms) and a delay
// child's lateness (arrival minus send minus the delay; an upper bound, since the parent commits after the send) p99
// (target <= 50 ms) and minimum (never below 0). Consumers of the whole load would measure their own backlog on a
// small machine. Bench process main thread.
import { createTopic, fixed, formatInt, latencySummaryMs, makeBatchBody, makePayload, newHistogram, recordUs, renderTable, sleep,
  startBroker, type BrokerTarget, type Headline, type LatencySummaryMs } from './common.js';
import type { BenchOptions } from './options.js';
import { measure } from './produce.js';

const delayMs = 1_000;
const targets = { produceRatio: 0.5, childLagP99Ms: 100, delayLatenessP99Ms: 50 };
const consumersPerChild = 4;

export interface FanoutReport {
  scenario: 'fanout';
  startedAt: string;
  loneMsgsPerSec: number;
  parentMsgsPerSec: number;
  produceRatio: number;
  /** Parent messages of the peak run over the time from its start until every child had copied them. */
  sustainedMsgsPerSec: number;
  pacedMsgsPerSec: number;
  childLagMs: LatencySummaryMs | null;
  delayLatenessMs: LatencySummaryMs | null;
  delayLatenessMinMs: number | null;
  copiesSeen: { child: number; delay: number };
  /** Consume answers other than 200 (204 after a wait included), by status; fetch failures as 'error'. */
  consumeStatuses: Record<string, number>;
  failures: string[];
}

function headersOf(target: BrokerTarget, extra: Record<string, string> = {}): Record<string, string> {
  return { 'content-type': 'application/json', ...(target.authorization === null ? {} : { authorization: target.authorization }), ...extra };
}

async function peak(options: BenchOptions, target: BrokerTarget, topic: string): Promise<number> {
  const body = makeBatchBody(makePayload(options.messageBytes), options.batch);
  const request = { method: 'POST' as const, path: `/v1/topics/${topic}/produce/batch`, headers: headersOf(target), body };
  const figures = await measure({ ...options, rate: null }, {
    name: `batch produce to ${topic}`, url: target.url, request, connections: options.batchConnections,
    messagesPerRequest: options.batch, serverPid: target.serverPid, server: target.server,
  });
  return figures.msgsPerSec;
}

/** A parent with two ordinary children and a delay child. */
async function createFamily(options: BenchOptions, target: BrokerTarget, parent: string, child = `${parent}-child`, delay = `${parent}-delay`): Promise<void> {
  await createTopic(target, parent, options.partitions);
  await createTopic(target, child, options.partitions, { parent });
  await createTopic(target, `${child}-2`, options.partitions, { parent });
  await createTopic(target, delay, options.partitions, { parent, fanout_delay_ms: delayMs });
}

/** Waits (up to 5 minutes) until every child of the parent has copied everything: the next phase starts level. */
async function caughtUp(target: BrokerTarget, parent: string): Promise<void> {
  for (let i = 0; i < 3000; i++) {
    const res = await fetch(`${target.url}/v1/topics/${parent}/children`, { headers: headersOf(target) });
    const children = ((await res.json()) as { children: { lag_messages: number }[] }).children;
    if (children.every((c) => c.lag_messages === 0)) return;
    await sleep(100);
  }
  throw new Error(`the children of ${parent} did not catch up within 5 minutes`);
}

/** Long-polls a child, acks what it got and records arrival minus the send time each payload carries, minus offsetMs. */
async function consumeLoop(target: BrokerTarget, topic: string, offsetMs: number, until: () => boolean, record: (ms: number) => void,
  statuses: Record<string, number>): Promise<void> {
  const headers = headersOf(target, { 'x-svc-client': `bench-fanout-${topic}` });
  while (!until()) {
    const res = await fetch(`${target.url}/v1/topics/${topic}/consume?partition=0&wait=1s&max=100`, { headers }).catch(() => null);
    if (res === null || res.status !== 200) {
      const key = res === null ? 'error' : String(res.status);
      statuses[key] = (statuses[key] ?? 0) + 1;
      if (res === null) await sleep(100);
      else await res.arrayBuffer();
      continue;
    }
    const arrivedMs = Date.now();
    const messages = ((await res.json()) as { messages: { payload: { s: number }; receipt_handle: string }[] }).messages;
    for (const m of messages) if (typeof m.payload?.s === 'number') record(arrivedMs - m.payload.s - offsetMs);
    const ack = await fetch(`${target.url}/v1/topics/${topic}/ack`, {
      method: 'POST', headers, body: JSON.stringify({ receipt_handles: messages.map((m) => m.receipt_handle) }),
    });
    await ack.arrayBuffer();
  }
}

/** Batches to the parent's partitions 1 and up, open loop at msgsPerSec, and beside them probes to partition 0, 100 a
 *  second, each carrying its send time. */
async function produceAtRate(options: BenchOptions, target: BrokerTarget, parent: string, msgsPerSec: number): Promise<void> {
  const payload = makePayload(options.messageBytes).toString('utf8');
  const entries = Array.from({ length: options.batch }, (_, i) => `{"partition":${1 + (i % (options.partitions - 1))},"payload":${payload}}`);
  const request = { method: 'POST' as const, path: `/v1/topics/${parent}/produce/batch`, headers: headersOf(target),
    body: Buffer.from(`{"messages":[${entries.join(',')}]}`) };
  let batchesDone = false;
  const probes = (async () => {
    const startMs = Date.now();
    for (let k = 0; !batchesDone && k < 100 * (options.durationSec + 60); k++) {
      const dueMs = startMs + k * 10;
      if (dueMs > Date.now()) await sleep(dueMs - Date.now());
      await fetch(`${target.url}/v1/topics/${parent}/produce?partition=0`, { method: 'POST', headers: headersOf(target), body: JSON.stringify({ s: Date.now() }) })
        .then((res) => res.arrayBuffer(), () => undefined);
    }
  })();
  await measure({ ...options, rate: msgsPerSec / options.batch, warmupSec: 0 }, {
    name: `batch produce to ${parent}, paced`, url: target.url, request, connections: options.batchConnections,
    messagesPerRequest: options.batch, serverPid: target.serverPid, server: target.server,
  }).finally(() => (batchesDone = true));
  await probes;
}

/** Messages the topic holds (its partitions' high watermarks). */
async function topicTotal(target: BrokerTarget, topic: string): Promise<number> {
  const res = await fetch(`${target.url}/v1/topics/${topic}`, { headers: headersOf(target) });
  const stats = ((await res.json()) as { partition_stats: { high_watermark: number }[] }).partition_stats;
  return stats.reduce((sum, p) => sum + p.high_watermark, 0);
}

export async function runFanout(options: BenchOptions): Promise<FanoutReport> {
  const startedAt = new Date().toISOString();
  const target = await startBroker(options);
  const stamp = Date.now();
  const [lone, parent, child, delay] = ['lone', 'parent', 'child', 'delay'].map((name) => `bench-fanout-${name}-${stamp}`) as [string, string, string, string];
  await createTopic(target, lone, options.partitions);
  await createFamily(options, target, `${parent}-peak`);
  const loneMsgsPerSec = await peak(options, target, lone);
  const peakStartMs = Date.now();
  const parentMsgsPerSec = await peak(options, target, `${parent}-peak`);
  await caughtUp(target, `${parent}-peak`);
  const sustainedMsgsPerSec = (await topicTotal(target, `${parent}-peak`)) / ((Date.now() - peakStartMs) / 1000);
  // A family of its own for the paced phase: its children hold no backlog of the peak phase.
  await createFamily(options, target, parent, child, delay);
  const pacedRate = options.rate ?? parentMsgsPerSec / 2;
  const lag = newHistogram();
  const lateness = newHistogram();
  let latenessMin = Infinity;
  const seen = { child: 0, delay: 0 };
  const statuses: Record<string, number> = {};
  let recording = false;
  let stop = false;
  const consumers = [
    ...Array.from({ length: consumersPerChild }, () => consumeLoop(target, child, 0, () => stop, (ms) => {
      if (recording) { recordUs(lag, Math.max(0.001, ms)); seen.child++; }
    }, statuses)),
    ...Array.from({ length: consumersPerChild }, () => consumeLoop(target, delay, delayMs, () => stop, (ms) => {
      if (recording) { recordUs(lateness, Math.max(0.001, ms)); latenessMin = Math.min(latenessMin, ms); seen.delay++; }
    }, statuses)),
  ];
  await sleep(500);
  recording = true;
  process.stderr.write(`fanout: producing ${formatInt(pacedRate)} msgs/s into ${parent} for ${options.durationSec}s\n`);
  await produceAtRate(options, target, parent, pacedRate);
  await caughtUp(target, parent);
  await sleep(delayMs + 2_000);
  stop = true;
  await Promise.all(consumers);
  const report: FanoutReport = {
    scenario: 'fanout', startedAt, loneMsgsPerSec, parentMsgsPerSec, produceRatio: parentMsgsPerSec / loneMsgsPerSec,
    sustainedMsgsPerSec, pacedMsgsPerSec: pacedRate, childLagMs: seen.child > 0 ? latencySummaryMs(lag) : null,
    delayLatenessMs: seen.delay > 0 ? latencySummaryMs(lateness) : null, delayLatenessMinMs: seen.delay > 0 ? latenessMin : null,
    copiesSeen: seen, consumeStatuses: statuses, failures: [],
  };
  if (report.delayLatenessMinMs !== null && report.delayLatenessMinMs < 0) report.failures.push('a delay child copy arrived early');
  return report;
}

export function printFanout(report: FanoutReport): void {
  const l = report.childLagMs;
  const d = report.delayLatenessMs;
  const rows = [
    ['batch produce, lone topic', `${formatInt(report.loneMsgsPerSec)} msgs/s`, '-'],
    ['batch produce, parent of 3 children', `${formatInt(report.parentMsgsPerSec)} msgs/s (x${fixed(report.produceRatio, 2)})`, `>= x${targets.produceRatio}`],
    ['  sustained: until the children copied it all', `${formatInt(report.sustainedMsgsPerSec)} msgs/s (x${fixed(report.sustainedMsgsPerSec / report.loneMsgsPerSec, 2)})`, '-'],
    [`child lag of probes, ${formatInt(report.pacedMsgsPerSec)} msgs/s beside`, l === null ? 'n/a' : `p50 ${fixed(l.p50, 1)} ms, p99 ${fixed(l.p99, 1)} ms, max ${fixed(l.max, 1)} ms (${formatInt(report.copiesSeen.child)} copies)`, `p99 <= ${targets.childLagP99Ms} ms`],
    [`delay child (${delayMs} ms) lateness`, d === null ? 'n/a' : `p50 ${fixed(d.p50, 1)} ms, p99 ${fixed(d.p99, 1)} ms, min ${fixed(report.delayLatenessMinMs!, 1)} ms (${formatInt(report.copiesSeen.delay)} copies)`, `p99 <= ${targets.delayLatenessP99Ms} ms, min >= 0`],
  ];
  process.stdout.write(`\n${renderTable(['figure', 'value', 'target'], rows, [0, 1, 2]).join('\n')}\n` +
    `consume answers other than 200: ${JSON.stringify(report.consumeStatuses)}\n`);
}

export function fanoutHeadlines(report: FanoutReport): Headline[] {
  return [{ scenario: 'fanout', figure: `parent x${fixed(report.produceRatio, 2)} of lone; child lag p99 ${fixed(report.childLagMs?.p99 ?? NaN, 1)} ms`,
    value: report.produceRatio, target: `>= x${targets.produceRatio}`, floorRatio: null, redisRatio: null, checks: [], otherCpuPercentMax: null }];
}
