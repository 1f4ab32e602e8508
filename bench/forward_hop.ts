// Scenario forward-hop of `npm run bench` (bench/README.md): what one forwarded request costs on the node-to-node
// transport, and what running the data plane's endpoint on a dedicated thread adds to it. Three threads, 127.0.0.1
// only: this one plays the front; a "link" worker owns node 1's PeerTransport (the dedicated thread); an "owner"
// worker owns node 2's and answers every data-channel request. In rounds that take turns, with bounded counts:
// the request sent by the link thread itself (the transport hop), the same request sent from here through a
// PortChannel (the hop plus the thread hop), and a bare MessagePort round trip here <-> link (the thread hop alone).
// Bench process main thread; the same file is the two workers' entry (runPeer).
import { isMainThread, MessageChannel, parentPort, Worker, workerData, type MessagePort } from 'node:worker_threads';
import type { Histogram } from 'hdr-histogram-js';
import { PeerTransport } from '../src/transport/peer_transport.js';
import { bridgeChannel, PortChannel } from '../src/transport/port_channel.js';
import { cleanups, fixed, latencySummaryMs, newHistogram, recordUs, renderTable, type Headline, type LatencySummaryMs } from './common.js';
import { readMachineBusyCpuMs } from './node_process.js';
import type { BenchOptions } from './options.js';

const loopback = '127.0.0.1';
/** A request that takes longer is a broken run, not a slow one: it fails the scenario. */
const requestTimeoutMs = 5000;
/** Requests per series before the first measured round: connections open and the code paths warm up. */
const warmupCount = 3000;
/** A small forwarded produce: routing fields and a 100-byte record. */
const requestBody = (seq: number) => ({ topic: 'bench', partition: 0, seq, value: new Uint8Array(100) });

type PeerData = { forwardHopRole: 'owner' } | { forwardHopRole: 'link'; ownerPort: number; dataPort: MessagePort; echoPort: MessagePort };
type Series = 'transport' | 'viaThread' | 'portRoundTrip';

export interface ForwardHopReport {
  scenario: 'forward-hop';
  startedAt: string;
  rounds: number;
  countPerRound: number;
  /** The request from the link thread itself; the same request from this thread through a PortChannel; a bare
   *  MessagePort round trip this thread <-> the link thread. µs figures in ms, as the other scenarios give them. */
  latencyMs: Record<Series, LatencySummaryMs>;
  /** viaThread minus transport at p50 and p99, ms: what the dedicated thread adds to a forwarded request. */
  threadAddsMs: { p50: number; p99: number };
  /** portRoundTrip p50 over transport p50: the thread hop as a share of the transport hop. */
  hopOverTransportP50: number;
  /** Busy CPU of the machine outside this process (its three threads) over the measured rounds, % of one core;
   *  null without /proc. Above about 50% on 2 cores the figures are mostly scheduling noise. */
  otherCpuPercent: number | null;
  failures: string[];
}

function secret(): Uint8Array {
  return new Uint8Array(32).fill(0x5a);
}

/** The owner answers each request; the link serves nothing but makes requests, relays the front's and echoes. */
async function runPeer(data: PeerData): Promise<void> {
  const nodeId = data.forwardHopRole === 'owner' ? 2 : 1;
  const transport = await PeerTransport.listen({ nodeId, clusterSecret: secret(), listen: { host: loopback, port: 0 } });
  if (data.forwardHopRole === 'owner') {
    transport.openChannel('data', { onMessage: () => {}, onRequest: async (_from, body) => ({ offset: (body as { seq: number }).seq }) });
    parentPort!.postMessage({ port: transport.port });
    return;
  }
  const channel = bridgeChannel(transport, 'data', data.dataPort, {
    onMessage: () => {},
    onRequest: () => Promise.reject(new Error('the link takes no requests in this bench')),
  });
  channel.setPeer(2, { host: loopback, port: data.ownerPort });
  data.echoPort.on('message', (message: unknown) => data.echoPort.postMessage(message));
  parentPort!.on('message', (command: { count: number }) => {
    void timeRequests(command.count, (seq) => channel.request(2, requestBody(seq), requestTimeoutMs)).then(
      (samples) => parentPort!.postMessage({ samples }, [samples.buffer as ArrayBuffer]),
      (error: unknown) => parentPort!.postMessage({ error: String(error) }),
    );
  });
  parentPort!.postMessage({ ready: true });
}

/** Sends count requests one after the other; each one's round trip in ms. */
async function timeRequests(count: number, send: (seq: number) => Promise<unknown>): Promise<Float64Array> {
  const samples = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const startedAt = performance.now();
    await send(i);
    samples[i] = performance.now() - startedAt;
  }
  return samples;
}

function startPeer(data: PeerData, transferList: MessagePort[] = []): Worker {
  const worker = new Worker(new URL(import.meta.url), { workerData: data, transferList });
  cleanups.push(() => worker.terminate().then(() => undefined));
  return worker;
}

function nextMessage<T>(worker: Worker): Promise<T> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    worker.once('error', onError);
    worker.once('message', (message: T) => {
      worker.off('error', onError);
      resolve(message);
    });
  });
}

interface Peers {
  link: Worker;
  front: PortChannel;
  echo: MessagePort;
}

async function startPeers(): Promise<Peers> {
  const owner = startPeer({ forwardHopRole: 'owner' });
  const { port: ownerPort } = await nextMessage<{ port: number }>(owner);
  const data = new MessageChannel();
  const echo = new MessageChannel();
  const link = startPeer({ forwardHopRole: 'link', ownerPort, dataPort: data.port2, echoPort: echo.port2 }, [data.port2, echo.port2]);
  await nextMessage(link);
  const front = new PortChannel('data', data.port1, { onMessage: () => {} });
  return { link, front, echo: echo.port1 };
}

async function measureSeries(series: Series, peers: Peers, count: number): Promise<Float64Array> {
  if (series === 'viaThread') return timeRequests(count, (seq) => peers.front.request(2, requestBody(seq), requestTimeoutMs));
  if (series === 'portRoundTrip') {
    return timeRequests(count, (seq) => new Promise((resolve) => {
      peers.echo.once('message', resolve);
      peers.echo.postMessage(requestBody(seq));
    }));
  }
  peers.link.postMessage({ count });
  const answer = await nextMessage<{ samples?: Float64Array; error?: string }>(peers.link);
  if (answer.samples === undefined) throw new Error(`link thread: ${answer.error}`);
  return answer.samples;
}

export async function runForwardHop(options: BenchOptions): Promise<ForwardHopReport> {
  const startedAt = new Date().toISOString();
  const peers = await startPeers();
  const order: Series[] = ['transport', 'viaThread', 'portRoundTrip'];
  const histograms = { transport: newHistogram(), viaThread: newHistogram(), portRoundTrip: newHistogram() } satisfies Record<Series, Histogram>;
  for (const series of order) await measureSeries(series, peers, warmupCount);
  const cpu = { machineMs: readMachineBusyCpuMs(), process: process.cpuUsage(), startedAt: performance.now() };
  for (let round = 0; round < options.rounds; round++) {
    // Each round starts with another series, so a slow stretch of a shared machine falls on every series alike.
    for (let k = 0; k < order.length; k++) {
      const series = order[(round + k) % order.length]!;
      for (const ms of await measureSeries(series, peers, options.count)) recordUs(histograms[series], ms);
    }
    process.stderr.write(`forward-hop: round ${round + 1} of ${options.rounds} done\n`);
  }
  const otherCpuPercent = otherCpuPercentSince(cpu);
  await peers.front.close();
  peers.echo.close();
  const latencyMs = { transport: latencySummaryMs(histograms.transport), viaThread: latencySummaryMs(histograms.viaThread),
    portRoundTrip: latencySummaryMs(histograms.portRoundTrip) };
  return { scenario: 'forward-hop', startedAt, rounds: options.rounds, countPerRound: options.count, latencyMs,
    threadAddsMs: { p50: latencyMs.viaThread.p50 - latencyMs.transport.p50, p99: latencyMs.viaThread.p99 - latencyMs.transport.p99 },
    hopOverTransportP50: latencyMs.portRoundTrip.p50 / latencyMs.transport.p50, otherCpuPercent, failures: [] };
}

function otherCpuPercentSince(start: { machineMs: number | null; process: NodeJS.CpuUsage; startedAt: number }): number | null {
  const machineMs = readMachineBusyCpuMs();
  if (machineMs === null || start.machineMs === null) return null;
  const own = process.cpuUsage(start.process);
  const otherMs = machineMs - start.machineMs - (own.user + own.system) / 1000;
  return Math.max(0, (otherMs / (performance.now() - start.startedAt)) * 100);
}

const us = (ms: number): string => fixed(ms * 1000, 1);

export function printForwardHop(report: ForwardHopReport): void {
  const names: Record<Series, string> = { transport: 'forwarded request, sent on the transport\'s thread',
    viaThread: 'the same, sent from another thread (PortChannel)', portRoundTrip: 'MessagePort round trip (the thread hop)' };
  const rows = (Object.keys(names) as Series[]).map((series) => {
    const l = report.latencyMs[series];
    return [names[series], us(l.p50), us(l.p90), us(l.p99), us(l.p999), us(l.max)];
  });
  const out = [`forward-hop: round trips on 127.0.0.1, ${report.rounds} rounds x ${report.countPerRound} requests per series`,
    ...renderTable(['series', 'p50 µs', 'p90 µs', 'p99 µs', 'p99.9 µs', 'max µs'], rows, [0]),
    `a dedicated data-plane thread adds p50 ${us(report.threadAddsMs.p50)} µs, p99 ${us(report.threadAddsMs.p99)} µs; ` +
    `the thread hop is x${fixed(report.hopOverTransportP50, 2)} of the transport hop at p50`,
    `other processes took ${report.otherCpuPercent === null ? 'n/a' : `${fixed(report.otherCpuPercent, 0)}%`} of a core meanwhile ` +
    '(above about 50% the figures are mostly scheduling noise)'];
  process.stdout.write(`\n${out.join('\n')}\n`);
}

export function forwardHopHeadlines(report: ForwardHopReport): Headline[] {
  const { transport, portRoundTrip } = report.latencyMs;
  return [{ scenario: 'forward-hop', figure: `p50 ${us(transport.p50)} µs, p99 ${us(transport.p99)} µs; thread hop p50 ` +
    `${us(portRoundTrip.p50)} µs (x${fixed(report.hopOverTransportP50, 2)})`, value: transport.p50, target: '-', floorRatio: null,
    redisRatio: null, checks: [], otherCpuPercentMax: report.otherCpuPercent }];
}

if (!isMainThread && typeof (workerData as { forwardHopRole?: unknown } | null)?.forwardHopRole === 'string') {
  await runPeer(workerData as PeerData);
}
