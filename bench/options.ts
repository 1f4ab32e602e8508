// Command-line options of `npm run bench -- <scenario>` (bench/run.ts): one parser for every scenario, with
// defaults that depend on the scenario (e.g. --connections is 256 for produce, 64 for consume). Pure apart from
// the URL check; bench process main thread.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ClientKind } from './load.js';

const brokerScriptDefault = fileURLToPath(new URL('../src/main.js', import.meta.url));

export const scenarios = ['produce', 'consume'] as const;
export type Scenario = (typeof scenarios)[number];

export type ConsumePhase = 'single' | 'batch' | 'wake';
export const consumePhases: readonly ConsumePhase[] = ['single', 'batch', 'wake'];

export interface BenchOptions {
  scenario: Scenario;
  url: string | null;
  user: string;
  password: string | null;
  topic: string | null;
  partitions: number;
  connections: number;
  batchConnections: number;
  durationSec: number;
  warmupSec: number;
  messageBytes: number;
  batch: number;
  client: ClientKind;
  json: boolean;
  skipFloor: boolean;
  /** produce: also measure single produce on a node with security off, for the credential cache's cost. */
  compareSecurity: boolean;
  serverPid: number | null;
  nodeScript: string;
  nodeArgs: string[];
  /** consume: messages per batch consume (`max`) and per batch ack. */
  max: number;
  /** consume: messages written before consume-single, and before consume-batch. */
  prefill: number;
  batchPrefill: number;
  /** consume: a prefill stops after this many seconds even when short of its count. */
  prefillTimeoutSec: number;
  /** consume: long-poll consumers and the producer's messages per second in the wake-up run. */
  pollers: number;
  wakeRate: number;
  /** consume: the runs to do, in this order. */
  phases: ConsumePhase[];
}

export const usage = `usage: node dist/bench/run.js produce|consume [options]   (npm run bench -- <scenario> [options])
common:
  --url U                 broker to target (default: start one: node dist/src/main.js on a free loopback port)
  --user X --password P   Basic credentials for --url (default user admin)
  --partitions N          partitions of the created topics (default 6)
  --duration S            measured seconds per run (default 10); --warmup S before each (default 2)
  --message-bytes B       payload bytes per message, a JSON object, >= 8 (>= 32 for consume) (default 100)
  --server-pid PID        with --url: the server process whose CPU to report
  --node-script PATH      broker entry to start (default dist/src/main.js); --node-arg A adds a flag (repeatable)
  --json                  also write bench/results/<scenario>-<ISO time>.json
produce:
  --topic T               use this existing topic (default: create bench-<time> with --partitions)
  --connections N         connections for the floor and single produce (default 256)
  --batch-connections N   connections for batch produce (default 16)
  --batch N               messages per batch request, 1..1000 (default 1000)
  --client net|undici     load generator client (default net; see bench/README.md)
  --skip-floor            do not measure the hello-world floor
  --compare-security      produce: also run single produce against a node with security off (issue 5's check)
consume:
  --phases LIST           runs to do, comma-separated: single,batch,wake (default all three)
  --connections N         consume-single connections (default 64)
  --batch-connections N   consume-batch connections (default 16)
  --max N                 messages per batch consume and batch ack, 1..100 (default 100)
  --prefill N             messages written before consume-single (default 200000)
  --batch-prefill N       messages written before consume-batch (default 1000000)
  --prefill-timeout S     a prefill stops after S seconds even if short (default 20)
  --pollers K             long-poll consumers in the wake-up run (default 16)
  --wake-rate R           messages per second the wake-up producer sends, 1..5000 (default 200)`;

export class UsageError extends Error {}

export function parseOptions(argv: string[]): BenchOptions {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      url: { type: 'string' }, user: { type: 'string' }, password: { type: 'string' }, topic: { type: 'string' },
      partitions: { type: 'string' }, connections: { type: 'string' }, 'batch-connections': { type: 'string' },
      duration: { type: 'string' }, warmup: { type: 'string' }, 'message-bytes': { type: 'string' },
      batch: { type: 'string' }, client: { type: 'string' }, json: { type: 'boolean' },
      'skip-floor': { type: 'boolean' }, 'compare-security': { type: 'boolean' }, 'server-pid': { type: 'string' }, 'node-script': { type: 'string' },
      'node-arg': { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' },
      phases: { type: 'string' }, max: { type: 'string' }, prefill: { type: 'string' },
      'batch-prefill': { type: 'string' }, 'prefill-timeout': { type: 'string' }, pollers: { type: 'string' },
      'wake-rate': { type: 'string' },
    },
  });
  if (values.help || positionals.length !== 1) throw new UsageError(values.help ? '' : 'give exactly one scenario');
  const scenario = positionals[0]!;
  if (!(scenarios as readonly string[]).includes(scenario)) {
    throw new UsageError(`unknown scenario ${scenario}; known: ${scenarios.join(', ')}`);
  }
  const consume = scenario === 'consume';
  const client = values.client ?? 'net';
  if (client !== 'net' && client !== 'undici') throw new UsageError(`--client must be net or undici, got ${client}`);
  if (consume && client !== 'net') throw new UsageError('consume has its own raw client; --client does not apply');
  if (consume && values.topic !== undefined) throw new UsageError('consume creates its own topics; --topic does not apply');
  const url = values.url?.replace(/\/+$/, '') ?? null;
  if (url !== null) checkLoopbackUrl(url);
  return {
    scenario: scenario as Scenario,
    url,
    user: values.user ?? 'admin',
    password: values.password ?? null,
    topic: values.topic ?? null,
    partitions: intOption('partitions', values.partitions, 6, 3, 108),
    connections: intOption('connections', values.connections, consume ? 64 : 256, 1, 10_000),
    batchConnections: intOption('batch-connections', values['batch-connections'], 16, 1, 10_000),
    durationSec: numberOption('duration', values.duration, 10, 0.5, 3600),
    warmupSec: numberOption('warmup', values.warmup, 2, 0, 600),
    messageBytes: intOption('message-bytes', values['message-bytes'], 100, consume ? 32 : 8, 1024 * 1024),
    batch: intOption('batch', values.batch, 1000, 1, 1000),
    client,
    json: values.json ?? false,
    skipFloor: values['skip-floor'] ?? false,
    compareSecurity: values['compare-security'] ?? false,
    serverPid: values['server-pid'] === undefined ? null : intOption('server-pid', values['server-pid'], 0, 1, 2 ** 31),
    nodeScript: values['node-script'] ?? brokerScriptDefault,
    nodeArgs: values['node-arg'] ?? [],
    max: intOption('max', values.max, 100, 1, 100),
    prefill: intOption('prefill', values.prefill, 200_000, 1, 100_000_000),
    batchPrefill: intOption('batch-prefill', values['batch-prefill'], 1_000_000, 1, 100_000_000),
    prefillTimeoutSec: numberOption('prefill-timeout', values['prefill-timeout'], 20, 1, 3600),
    pollers: intOption('pollers', values.pollers, 16, 1, 1000),
    wakeRate: numberOption('wake-rate', values['wake-rate'], 200, 1, 5000),
    phases: parsePhases(values.phases),
  };
}

function parsePhases(text: string | undefined): ConsumePhase[] {
  if (text === undefined) return [...consumePhases];
  const phases = text.split(',').map((part) => part.trim()).filter((part) => part !== '');
  for (const phase of phases) {
    if (!(consumePhases as readonly string[]).includes(phase)) {
      throw new UsageError(`--phases: unknown run ${phase}; known: ${consumePhases.join(', ')}`);
    }
  }
  if (phases.length === 0) throw new UsageError('--phases: name at least one run');
  return consumePhases.filter((phase) => phases.includes(phase));
}

/** The load loops are heavy by design, so they only ever target this machine. */
function checkLoopbackUrl(text: string): void {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--url ${text} is not a URL`);
  }
  if (url.protocol !== 'http:') throw new UsageError(`--url must be http:// (plain HTTP), got ${url.protocol}`);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname)) {
    throw new UsageError(`--url must be a loopback address (127.0.0.1, localhost, [::1]), got ${url.hostname}`);
  }
}

function numberOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max) throw new UsageError(`--${name} must be ${min}..${max}`);
  return value;
}

function intOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  const value = numberOption(name, text, fallback, min, max);
  if (!Number.isInteger(value)) throw new UsageError(`--${name} must be an integer`);
  return value;
}
