// Command-line options of `npm run bench -- <scenario>` (bench/run.ts): one parser for every scenario, with
// defaults that depend on the scenario (e.g. --connections is 256 for produce, 64 for consume). Pure apart from
// the URL check; bench process main thread.
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { ClientKind } from './load.js';

const brokerScriptDefault = fileURLToPath(new URL('../src/main.js', import.meta.url));

/** The scenarios of `npm run bench -- <scenario>`; bench/README.md describes each. */
export const scenarios = ['produce-single', 'produce-batch', 'consume-single', 'consume-batch', 'end-to-end', 'wake-up',
  'soak', 'footprint', 'forward-hop', 'produce-forwarded', 'consume-forwarded', 'fanout', 'all'] as const;
/** Older names kept working: `produce` = produce-single then produce-batch (one report), `consume` = consume-single,
 *  consume-batch and wake-up (one report). */
export const scenarioAliases = ['produce', 'consume'] as const;
export type Scenario = (typeof scenarios)[number] | (typeof scenarioAliases)[number];

export type ConsumePhase = 'single' | 'batch' | 'wake';
export const consumePhases: readonly ConsumePhase[] = ['single', 'batch', 'wake'];

export function isProduceScenario(scenario: Scenario): boolean {
  return scenario === 'produce' || scenario === 'produce-single' || scenario === 'produce-batch';
}

export function isConsumeScenario(scenario: Scenario): boolean {
  return scenario === 'consume' || scenario === 'consume-single' || scenario === 'consume-batch' || scenario === 'wake-up' ||
    scenario === 'consume-forwarded';
}

export interface BenchOptions {
  scenario: Scenario;
  /** The arguments this was parsed from, less the scenario (`all` re-parses them per scenario). */
  argv: string[];
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
  /** Measure the baselines in the same run: the hello-world floor, and Redis when redis-server is installed. */
  compare: boolean;
  /** produce: also measure single produce on a node with security off, for the credential cache's cost. */
  compareSecurity: boolean;
  /** produce: single and batch produce to a topic with a 10-property schema beside one without (issue 28). */
  schema: boolean;
  /** produce-single: rounds in which the wrk-driven floors, the node and Redis XADD take turns, each window
   *  durationSec / rounds long, so that a slow minute of a shared machine falls on every side alike. */
  rounds: number;
  /** Open loop: requests (produce-*) or messages (end-to-end, soak) per second, sent on a fixed schedule; null =
   *  closed loop (produce-*) or 50% of the peak measured first (end-to-end; soak's default is fixed). */
  rate: number | null;
  serverPid: number | null;
  nodeScript: string;
  nodeArgs: string[];
  /** The node started here runs with --cpu-prof, writing a profile of each of its threads here when it stops. */
  serverCpuProfDir: string | null;
  /** consume: messages per batch consume (`max`) and per batch ack; also end-to-end's and soak's consumers. */
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
  /** end-to-end, soak: long-polling batch consumers. */
  consumers: number;
  /** end-to-end: seconds of closed-loop single produce that measure the peak rate (when --rate is not given). */
  peakSec: number;
  /** soak: seconds per row of its table (and per progress line). */
  intervalSec: number;
  /** all: the soak's duration. */
  soakDurationSec: number;
  /** all: how many times to run every scenario; above 1 a table over the runs follows (bench/targets.ts). */
  repeat: number;
  /** footprint: topics to create (3 partitions each) and idle long polls to hold. */
  topics: number;
  polls: number;
  /** --compare, consume-batch: Redis consumers (XREADGROUP COUNT max + XACK). */
  redisConsumers: number;
  /** forward-hop: requests per series in each of --rounds rounds. */
  count: number;
}

export const usage = `usage: node dist/bench/run.js <scenario> [options]   (npm run bench -- <scenario> [options])
scenarios: produce-single produce-batch consume-single consume-batch end-to-end wake-up soak footprint forward-hop
  produce-forwarded consume-forwarded fanout all
           (produce = produce-single + produce-batch, consume = consume-single + consume-batch + wake-up)
common:
  --url U                 broker to target (default: start one: node dist/src/main.js on a free loopback port)
  --user X --password P   Basic credentials for --url (default user admin)
  --partitions N          partitions of the created topics (default 6)
  --duration D            measured time per run: 10, 10s or 10m (default 10 s; soak 10m)
  --warmup S              seconds before each measured window (default 2; end-to-end 3; all 1, its end-to-end 3)
  --message-bytes B       payload bytes per message, a JSON object, >= 8 (>= 48 for consume, end-to-end, soak) (default 100)
  --compare               also measure the baselines in the same run: the uWS hello-world floor, and Redis with
                          appendfsync always when redis-server is installed (scripts/install-peers.sh)
  --server-pid PID        with --url: the server process whose CPU and RSS to report
  --node-script PATH      broker entry to start (default dist/src/main.js); --node-arg=A adds a flag (repeatable)
  --server-cpu-prof DIR   the node started here runs under node --cpu-prof: one .cpuprofile per thread (front,
                          partition workers, raft) lands in DIR when the node stops; not with --url
  --json                  also write bench/results/<scenario>-<ISO time>.json
produce-single, produce-batch:
  --topic T               use this existing topic (default: create bench-<time> with --partitions)
  --connections N         connections for single produce (default 256)
  --batch-connections N   connections for batch produce (default 16)
  --batch N               messages per batch request, 1..1000 (default 1000)
  --rate N                open loop: N requests per second on a fixed schedule, latency from the scheduled time
  --client net|undici     load generator client (default net; see bench/README.md)
  --skip-floor            do not measure the hello-world floor nor the fsync floor (produce alias)
  --compare-security      produce: also run single produce against a node with security off (issue 5's check)
  --schema                produce: single and batch produce with a 10-property schema against none, one run each
  --rounds N              rounds in which the wrk-driven floors, the node and Redis XADD take turns, each for
                          --duration / N (at least 1 s); the ratios are the median of the rounds' (default 3)
consume-single, consume-batch, wake-up:
  --phases LIST           consume alias: runs to do, comma-separated: single,batch,wake (default all three)
  --connections N         consume-single connections (default 64)
  --batch-connections N   consume-batch connections (default 32: its peak, bench/README.md)
  --max N                 messages per batch consume and batch ack, 1..100 (default 100)
  --prefill N             messages written before consume-single (default 200000)
  --batch-prefill N       messages written before consume-batch (default 1000000; also Redis's stream)
  --prefill-timeout S     a prefill stops after S seconds even if short (default 20)
  --pollers K             long-poll consumers in the wake-up run (default 16)
  --wake-rate R           messages per second the wake-up producer sends, 1..5000 (default 200)
  --redis-consumers N     --compare: Redis XREADGROUP consumers (default 4)
end-to-end, soak:
  --rate N                messages per second, open loop (default: end-to-end 50% of the peak single produce rate
                          measured first in the same run; soak 5000)
  --connections N         producer connections (default 256)
  --consumers N           long-polling batch consumers (consume?wait=10s&max=--max) (default 16)
  --peak S                end-to-end: seconds of closed-loop single produce that measure the peak (default 3)
  --interval S            soak: seconds per progress line and table row (default 10)
fanout:
  --rate N                messages per second into the parent in the paced phase (default: half the parent's peak)
footprint:
  --topics N              topics to create, 3 partitions each (default 1000)
  --polls N               idle long polls to hold, one raw keep-alive socket each (default 10000)
  --duration D            how long to hold the polls, sampling RSS (default 10 s)
forward-hop (no broker: node-to-node transports in two worker threads on 127.0.0.1):
  --count N               requests per series per round (default 2000); --rounds N rounds take turns (default 3)
all:
  --soak-duration D       the soak's length inside all (default 60s)
  --repeat N              run all N times (1..10, default 1), then judge each target's checks by their median over
                          the runs, beside each run's figure and how many runs met it`;

export class UsageError extends Error {}

function serverCpuProfDirOf(url: string | null, dir: string | undefined): string | null {
  if (dir === undefined) return null;
  if (url !== null) throw new UsageError('--server-cpu-prof profiles a node the bench starts; it does not apply with --url');
  if (dir === '') throw new UsageError('--server-cpu-prof needs a directory');
  return resolve(dir);
}

/** The flags of usage, for parseArgs (strict: any other flag is an error). */
const flags = {
  url: { type: 'string' }, user: { type: 'string' }, password: { type: 'string' }, topic: { type: 'string' },
  partitions: { type: 'string' }, connections: { type: 'string' }, 'batch-connections': { type: 'string' },
  duration: { type: 'string' }, warmup: { type: 'string' }, 'message-bytes': { type: 'string' },
  batch: { type: 'string' }, client: { type: 'string' }, json: { type: 'boolean' }, compare: { type: 'boolean' },
  'skip-floor': { type: 'boolean' }, 'compare-security': { type: 'boolean' }, schema: { type: 'boolean' }, rounds: { type: 'string' }, 'server-pid': { type: 'string' },
  'node-script': { type: 'string' }, 'node-arg': { type: 'string', multiple: true }, 'server-cpu-prof': { type: 'string' }, help: { type: 'boolean', short: 'h' },
  phases: { type: 'string' }, max: { type: 'string' }, prefill: { type: 'string' },
  'batch-prefill': { type: 'string' }, 'prefill-timeout': { type: 'string' }, pollers: { type: 'string' },
  'wake-rate': { type: 'string' }, rate: { type: 'string' }, consumers: { type: 'string' }, peak: { type: 'string' },
  interval: { type: 'string' }, 'soak-duration': { type: 'string' }, topics: { type: 'string' },
  polls: { type: 'string' }, 'redis-consumers': { type: 'string' }, repeat: { type: 'string' }, count: { type: 'string' },
} as const;

/** The one positional argument, a scenario or an alias; --help asks for the usage alone (an empty UsageError). */
function scenarioOf(help: boolean | undefined, positionals: string[]): Scenario {
  if (help || positionals.length !== 1) throw new UsageError(help ? '' : 'give exactly one scenario');
  const name = positionals[0]!;
  if (!(scenarios as readonly string[]).includes(name) && !(scenarioAliases as readonly string[]).includes(name)) {
    throw new UsageError(`unknown scenario ${name}; known: ${scenarios.join(', ')} (and ${scenarioAliases.join(', ')})`);
  }
  return name as Scenario;
}

export function parseOptions(argv: string[]): BenchOptions {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: flags });
  const scenario = scenarioOf(values.help, positionals);
  const consume = isConsumeScenario(scenario);
  const flow = scenario === 'end-to-end' || scenario === 'soak';
  const client = values.client ?? 'net';
  if (client !== 'net' && client !== 'undici') throw new UsageError(`--client must be net or undici, got ${client}`);
  if (!isProduceScenario(scenario) && client !== 'net' && scenario !== 'all') {
    throw new UsageError(`${scenario} has its own raw client; --client does not apply`);
  }
  if (values.rate !== undefined && client !== 'net') throw new UsageError('--rate needs --client net');
  if ((consume || flow || scenario === 'footprint') && values.topic !== undefined) {
    throw new UsageError(`${scenario} creates its own topics; --topic does not apply`);
  }
  if (values.phases !== undefined && scenario !== 'consume') throw new UsageError('--phases applies to the consume alias only');
  if (values.repeat !== undefined && scenario !== 'all') throw new UsageError('--repeat applies to all only');
  const url = values.url?.replace(/\/+$/, '') ?? null;
  if (url !== null) checkLoopbackUrl(url);
  const durationDefault = scenario === 'soak' ? 600 : 10;
  return {
    scenario,
    argv: argv.filter((arg) => arg !== scenario),
    url,
    user: values.user ?? 'admin',
    password: values.password ?? null,
    topic: values.topic ?? null,
    partitions: intOption('partitions', values.partitions, 6, 3, 108),
    connections: intOption('connections', values.connections, consume ? 64 : 256, 1, 10_000),
    batchConnections: intOption('batch-connections', values['batch-connections'], consume ? 32 : 16, 1, 10_000),
    durationSec: durationOption('duration', values.duration, durationDefault, 0.5, 24 * 3600),
    warmupSec: numberOption('warmup', values.warmup, warmupSecDefault(scenario), 0, 600),
    messageBytes: intOption('message-bytes', values['message-bytes'], 100, consume || flow ? 48 : 8, 1024 * 1024),
    batch: intOption('batch', values.batch, 1000, 1, 1000),
    client,
    json: values.json ?? false,
    skipFloor: values['skip-floor'] ?? false,
    compare: values.compare ?? false,
    compareSecurity: values['compare-security'] ?? false,
    schema: values.schema ?? false,
    rounds: intOption('rounds', values.rounds, 3, 1, 20),
    rate: values.rate === undefined ? null : numberOption('rate', values.rate, 0, 1, 10_000_000),
    serverPid: values['server-pid'] === undefined ? null : intOption('server-pid', values['server-pid'], 0, 1, 2 ** 31),
    nodeScript: values['node-script'] ?? brokerScriptDefault,
    nodeArgs: values['node-arg'] ?? [],
    serverCpuProfDir: serverCpuProfDirOf(url, values['server-cpu-prof']),
    max: intOption('max', values.max, 100, 1, 100),
    prefill: intOption('prefill', values.prefill, 200_000, 1, 100_000_000),
    batchPrefill: intOption('batch-prefill', values['batch-prefill'], 1_000_000, 1, 100_000_000),
    prefillTimeoutSec: numberOption('prefill-timeout', values['prefill-timeout'], 20, 1, 3600),
    pollers: intOption('pollers', values.pollers, 16, 1, 1000),
    wakeRate: numberOption('wake-rate', values['wake-rate'], 200, 1, 5000),
    phases: phasesOf(scenario, values.phases),
    consumers: intOption('consumers', values.consumers, 16, 1, 1000),
    peakSec: numberOption('peak', values.peak, 3, 0.5, 600),
    intervalSec: numberOption('interval', values.interval, 10, 0.5, 3600),
    soakDurationSec: durationOption('soak-duration', values['soak-duration'], 60, 1, 24 * 3600),
    topics: intOption('topics', values.topics, 1000, 1, 100_000),
    polls: intOption('polls', values.polls, 10_000, 1, 18_000),
    redisConsumers: intOption('redis-consumers', values['redis-consumers'], 4, 1, 256),
    repeat: intOption('repeat', values.repeat, 1, 1, 10),
    count: intOption('count', values.count, 2000, 10, 1_000_000),
  };
}

/** end-to-end's warm-up, also inside all: its flow settles about 2 s after it starts at half the peak, most likely
 *  while the consume and ack paths, which the peak run before it never takes, run cold (docs/decisions.md
 *  "End-to-end warms up for 3 s"). */
export const endToEndWarmupSec = 3;

function warmupSecDefault(scenario: Scenario): number {
  if (scenario === 'end-to-end') return endToEndWarmupSec;
  return scenario === 'all' ? 1 : 2;
}

/** The consume runs a scenario does: one for consume-single, consume-batch and wake-up; --phases for consume. */
function phasesOf(scenario: Scenario, text: string | undefined): ConsumePhase[] {
  if (scenario === 'consume-single') return ['single'];
  if (scenario === 'consume-batch') return ['batch'];
  if (scenario === 'wake-up') return ['wake'];
  return parsePhases(text);
}

/** Seconds: "90", "90s" or "10m". */
function durationOption(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const match = /^(\d+(?:\.\d+)?)(s|m)?$/.exec(text.trim());
  if (match === null) throw new UsageError(`--${name} must be seconds (30, 30s) or minutes (10m), got ${text}`);
  const seconds = Number(match[1]) * (match[2] === 'm' ? 60 : 1);
  if (seconds < min || seconds > max) throw new UsageError(`--${name} must be ${min} s to ${max} s`);
  return seconds;
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
