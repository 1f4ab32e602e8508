// `npm run bench -- produce-forwarded` and `consume-forwarded` (issue 29): a 3-node cluster on this machine, the same
// load sent to a partition's owner and to a node that does not own it, and the ratio forwarded / direct from the one
// run (target >= 0.6 for single produce, and for consume-batch with batch ack). Each run has a topic of its own and
// uses its partition 0 only; the consume runs are prefilled through the owner. Bench process main thread; scenario.ts calls it.
import { createTopic, errorText, fixed, formatInt, makePayload, sleep, type BrokerTarget, type Headline } from './common.js';
import { drainThrough, type DrainFigures } from './consume.js';
import { ownersOf, startCluster } from './cluster_nodes.js';
import type { BenchOptions } from './options.js';
import { measure } from './produce.js';

const targetRatio = 0.6;

export interface ForwardedReport {
  scenario: string;
  startedAt: string;
  /** msgs/s of the direct run, then the forwarded one. */
  direct: number | null;
  forwarded: number | null;
  ratio: number | null;
  /** Each run's p99 latency of its main request, ms. */
  p99Ms: { direct: number | null; forwarded: number | null };
  failures: string[];
}

/** A fresh topic (3 partitions, the fewest allowed) visible on every node, with partition 0's owner and a non-owner. */
async function topicOnCluster(nodes: BrokerTarget[], name: string): Promise<{ owner: BrokerTarget; other: BrokerTarget }> {
  await createTopic(nodes[0]!, name, 3);
  for (const node of nodes) {
    for (let tries = 0; tries < 100 && (await fetch(`${node.url}/v1/topics/${name}`)).status !== 200; tries++) await sleep(100);
  }
  const owner = (await ownersOf(nodes[0]!, name))[0]!;
  return { owner: nodes[owner - 1]!, other: nodes[owner % nodes.length]! };
}

export async function runForwarded(options: BenchOptions): Promise<ForwardedReport> {
  const report: ForwardedReport = { scenario: options.scenario, startedAt: new Date().toISOString(), direct: null, forwarded: null,
    ratio: null, p99Ms: { direct: null, forwarded: null }, failures: [] };
  try {
    const nodes = await startCluster(options, { SVC_HTTP_MAX_CONSUME_IN_FLIGHT_PER_IDENTITY: String(options.batchConnections * options.max) });
    const stamp = Date.now();
    for (const forwarded of [false, true]) {
      const { owner, other } = await topicOnCluster(nodes, `bench-fwd-${stamp}-${forwarded ? 'f' : 'd'}`);
      const via = forwarded ? other : owner;
      const topic = `bench-fwd-${stamp}-${forwarded ? 'f' : 'd'}`;
      const { msgsPerSec, p99 } = options.scenario === 'produce-forwarded'
        ? await produceRun(options, via, topic, forwarded)
        : await consumeRun(options, owner, via, topic);
      report[forwarded ? 'forwarded' : 'direct'] = msgsPerSec;
      report.p99Ms[forwarded ? 'forwarded' : 'direct'] = p99;
      await sleep(1000);
    }
  } catch (error) {
    report.failures.push(errorText(error));
  }
  report.ratio = report.direct !== null && report.forwarded !== null && report.direct > 0 ? report.forwarded / report.direct : null;
  return report;
}

async function produceRun(options: BenchOptions, via: BrokerTarget, topic: string, forwarded: boolean): Promise<{ msgsPerSec: number; p99: number }> {
  const run = await measure(options, {
    name: `single produce, ${forwarded ? 'to a non-owner' : 'to the owner'}`, url: via.url, connections: options.connections,
    messagesPerRequest: 1, serverPid: via.serverPid, server: via.server,
    request: { method: 'POST', path: `/v1/topics/${topic}/produce?partition=0`, headers: { 'content-type': 'application/json' }, body: makePayload(options.messageBytes) },
  });
  return { msgsPerSec: run.msgsPerSec, p99: run.latencyMs.p99 };
}

async function consumeRun(options: BenchOptions, owner: BrokerTarget, via: BrokerTarget, topic: string): Promise<{ msgsPerSec: number; p99: number }> {
  const run: DrainFigures = await drainThrough(options, owner, via, topic);
  return { msgsPerSec: run.msgsPerSec, p99: run.consume.latencyMs.p99 };
}

export function printForwarded(report: ForwardedReport): void {
  const what = report.scenario === 'produce-forwarded' ? 'single produce' : 'consume-batch with batch ack';
  const line = (label: string, value: number | null, p99: number | null): string =>
    `${label}: ${value === null ? 'n/a' : `${formatInt(value)} msg/s`}${p99 === null ? '' : `, p99 ${fixed(p99, 2)} ms`}`;
  const lines = [`${what} on a 3-node cluster, partition 0`, line('  to the owner', report.direct, report.p99Ms.direct),
    line('  through a non-owner', report.forwarded, report.p99Ms.forwarded),
    `  forwarded / direct: ${report.ratio === null ? 'n/a' : fixed(report.ratio, 3)} (target >= ${targetRatio})`];
  for (const failure of report.failures) lines.push(`FAILED: ${failure}`);
  process.stdout.write(lines.join('\n') + '\n');
}

export function forwardedHeadlines(report: ForwardedReport): Headline[] {
  return [{ scenario: report.scenario, value: report.ratio, figure: `forwarded / direct ${report.ratio === null ? 'n/a' : fixed(report.ratio, 3)}`,
    target: `>= ${targetRatio}`, floorRatio: null, redisRatio: null,
    checks: [{ label: 'ratio', value: report.ratio, atLeast: targetRatio, decimals: 3 }], otherCpuPercentMax: null }];
}
