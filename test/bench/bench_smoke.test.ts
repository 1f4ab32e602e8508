// Goal: `npm run bench` keeps working (issue 4: a short run of each scenario that checks the output's shape, never
// its speed). Method: run dist/bench/run.js for every scenario with one- or two-second windows and small counts
// against the nodes the harness starts itself, with --json; assert the tables' key lines on stdout, progress lines
// on stderr, and that the JSON result holds the figures as numbers; then remove the JSON file. wrk and Redis run
// when installed (scripts/install-peers.sh) and are checked to say so when not. all's summary table is checked on a
// report made here, without running all.
import t, { type Test } from 'tap';
import { execFileSync, spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { printSummary, type AllReport } from '../../bench/all.js';

const runJs = fileURLToPath(new URL('../../bench/run.js', import.meta.url));

function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const hasWrk = onPath('wrk');
const hasRedis = onPath('redis-server') && onPath('redis-benchmark');

function bench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [runJs, ...args, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 100_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

type Json = Record<string, unknown>;

async function jsonResult(t: Test, stdout: string): Promise<Json> {
  const path = /wrote (\S+\.json)/.exec(stdout)?.[1];
  t.ok(path, 'the JSON result file is named');
  if (path === undefined) return {};
  t.teardown(() => rm(path, { force: true }));
  const report = JSON.parse(await readFile(path, 'utf8')) as Json;
  t.type(report.commit, 'string', 'the JSON names the commit');
  t.type((report.machine as Json | undefined)?.cpuCount, 'number', 'and the machine');
  return report;
}

/** Each key of obj (a dotted path each) holds a finite number. */
function numbers(t: Test, obj: unknown, keys: string[], label: string): void {
  for (const key of keys) {
    const value = key.split('.').reduce<unknown>((at, part) => (at as Json | undefined)?.[part], obj);
    t.ok(typeof value === 'number' && Number.isFinite(value), `${label}: ${key} is a number (${String(value)})`);
  }
}

const latencyKeys = ['latencyMs.p50', 'latencyMs.p90', 'latencyMs.p99', 'latencyMs.p999', 'latencyMs.max'];
const cpuKeys = ['clientCpuPercent', 'serverCpuPercent'];

function run(report: Json, name: string): Json | undefined {
  return (report.runs as Json[] | undefined)?.find((r) => r.name === name);
}

const quick = ['--warmup', '0.5'];

/** The rows of report named `name`, in the order run. */
function rows(report: Json, name: string): Json[] {
  return ((report.runs as Json[] | undefined) ?? []).filter((r) => r.name === name);
}

t.test('produce-single --compare: floor, ours, wrk and Redis (when installed) taking turns, ratios', async (t) => {
  const out = await bench(['produce-single', '--compare', '--duration', '2', '--rounds', '2', '--connections', '16', ...quick]);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  t.match(out.stdout, /\nsingle produce\s+net\s+16\s+[\d,]+\s+[\d,]+/, 'a row for single produce');
  t.match(out.stdout, /single produce req\/s \/ http floor req\/s: \d+\.\d{3}/);
  t.match(out.stderr, /req\/s/, 'progress lines while it runs');
  const report = await jsonResult(t, out.stdout);
  t.equal(report.scenario, 'produce-single');
  for (const name of ['single produce', 'http floor (hello world)']) {
    numbers(t, run(report, name), ['msgsPerSec', 'payloadMBPerSec', ...latencyKeys, ...cpuKeys], name);
  }
  if (hasWrk) {
    numbers(t, run(report, 'single produce (wrk)'), ['reqPerSec', 'latencyMs.p99'], 'wrk');
    numbers(t, run(report, 'http floor (hello world, wrk)'), ['reqPerSec', 'latencyMs.p99'], 'floor driven by wrk');
    const fsyncFloor = run(report, 'fsync floor (group-commit fdatasync, wrk)');
    numbers(t, fsyncFloor, ['reqPerSec', 'latencyMs.p99', 'serverCpuPercent'], 'fsync floor driven by wrk');
    t.same(fsyncFloor?.errorCounts, {}, 'the fsync floor answers every request 202');
    numbers(t, report.ratios, ['singleWrkOfFloorWrk', 'singleWrkOfFsyncFloorWrk'], 'ratios');
    const turns = [...(hasRedis ? ['redis XADD'] : []), 'http floor (hello world, wrk)', 'fsync floor (group-commit fdatasync, wrk)',
      'single produce (wrk)'];
    for (const name of turns) t.same(rows(report, name).map((r) => r.round), [1, 2], `${name}: one row per round`);
    t.same(rows(report, 'single produce (wrk)').map((r) => r.durationSec).every((s) => (s as number) >= 0.9 && (s as number) < 1.5),
      true, 'each round\'s window is --duration / --rounds');
    const rounds = (report.ratios as Json).singleWrkRounds as Json;
    t.equal(rounds.rounds, 2);
    t.equal((rounds.ofFloor as number[]).length, 2, 'a floor ratio per round');
    const ofFloor = rounds.ofFloor as number[];
    t.equal((report.ratios as Json).singleWrkOfFloorWrk, (ofFloor[0]! + ofFloor[1]!) / 2, 'the ratio is the median of the rounds\'');
    t.match(out.stdout, /single produce req\/s \/ http floor req\/s, both driven by wrk: \d+\.\d{3} \(median of the rounds' \d+\.\d{3}, \d+\.\d{3}\)/);
    t.match(out.stdout, /single produce req\/s \/ fsync floor req\/s \(group-commit fdatasync\), both driven by wrk: \d+\.\d{3}/);
    t.match(out.stdout, /\nsingle produce \(wrk\) #2\s+wrk\s+16\s/, 'the table names each round');
    t.match(out.stdout, /produce-single >= 0\.6x floor.*: [\d,]+ msg\/s \(wrk\), p99 [\d.]+ ms, x\d+\.\d\d fsync floor \(2 rounds/,
      'the headline is wrk\'s over its rounds, with the fsync floor ratio');
  } else {
    t.match(out.stdout, /wrk not installed \(scripts\/install-peers.sh\)/);
  }
  if (hasRedis) {
    numbers(t, run(report, 'redis XADD'), ['msgsPerSec', 'latencyMs.p99', ...cpuKeys], 'redis XADD');
    numbers(t, report.ratios, hasWrk ? ['singleOverRedis', 'singleWrkOverRedis'] : ['singleOverRedis'], 'ratios');
  } else {
    t.match(out.stdout, /redis-server not installed/);
  }
  numbers(t, report.ratios, ['singleReqPerSecOfFloor'], 'ratios');
});

t.test('produce-batch --rate --compare: open loop figures, batch floor and pipelined Redis', async (t) => {
  const out = await bench(['produce-batch', '--compare', '--rate', '20', '--batch', '100', '--batch-connections', '2',
    '--duration', '1', ...quick]);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  t.match(out.stdout, /open loop at 20 req\/s: \d+ due in the window/);
  const report = await jsonResult(t, out.stdout);
  const batch = run(report, 'batch produce (100)');
  numbers(t, batch, ['msgsPerSec', 'payloadMBPerSec', ...latencyKeys, ...cpuKeys, 'openLoop.due', 'openLoop.sentLate',
    'openLoop.notSent', 'openLoop.sendLatenessMs.p99'], 'batch produce');
  numbers(t, report.ratios, ['batchReqPerSecOfFloor'], 'ratios');
  if (hasRedis) numbers(t, report.ratios, ['batchOverRedis'], 'ratios');
});

t.test('produce-batch closed loop: wrk drives the same route beside the bench client (when installed)', { skip: !hasWrk }, async (t) => {
  const out = await bench(['produce-batch', '--batch', '100', '--batch-connections', '2', '--duration', '1', ...quick]);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  const report = await jsonResult(t, out.stdout);
  const wrk = run(report, 'batch produce (wrk)');
  numbers(t, wrk, ['reqPerSec', 'msgsPerSec', 'latencyMs.p99'], 'batch produce (wrk)');
  t.equal(wrk?.messagesPerRequest, 100, 'a wrk request carries the batch');
  numbers(t, report.ratios, ['batchOverWrk'], 'ratios');
});

t.test('consume-single: drain run figures', async (t) => {
  const out = await bench(['consume-single', '--duration', '1', '--prefill', '20000', '--connections', '8', ...quick]);
  t.ok(out.code === 0 || out.code === 1, `ends by itself (exit ${out.code}; 1 when the prefill ran out early)`);
  t.match(out.stdout, /\nconsume-single\s+8\s/, 'a consume-single row');
  const report = await jsonResult(t, out.stdout);
  const single = (report.drainRuns as Json[])[0];
  numbers(t, single, ['msgsPerSec', 'payloadMBPerSec', 'consume.latencyMs.p99', 'ack.latencyMs.p999', ...cpuKeys], 'consume-single');
});

t.test('consume-batch --compare: drain run and Redis XREADGROUP + XACK (when installed)', async (t) => {
  const out = await bench(['consume-batch', '--compare', '--duration', '1', '--batch-prefill', '150000',
    '--batch-connections', '4', ...quick]);
  t.ok(out.code === 0 || out.code === 1, `ends by itself (exit ${out.code})`);
  t.match(out.stdout, /batched consume\+ack >= 300,000 msg\/s: [\d,]+ msg\/s/, 'the target line');
  const report = await jsonResult(t, out.stdout);
  const drain = (report.drainRuns as Json[])[0]!;
  numbers(t, drain, ['msgsPerSec', 'consume.latencyMs.max', ...cpuKeys], 'consume-batch');
  // Batch acks are built from the answers' bytes: a malformed one would show as an ack error here.
  t.ok((drain.ackedMessages as number) > 0, `messages acked (${String(drain.ackedMessages)})`);
  t.same(drain.errorCounts, {}, 'no consume or ack errors');
  if (hasRedis) {
    numbers(t, report.redis, ['msgsPerSec', 'payloadMBPerSec', 'latencyMs.p99', 'clientCpuPercent', 'serverCpuPercent'], 'redis');
    numbers(t, report, ['batchOverRedis'], 'report');
  } else {
    t.match(out.stdout, /redis-server not installed/);
  }
});

t.test('wake-up: latency percentiles', async (t) => {
  const out = await bench(['wake-up', '--duration', '1', '--pollers', '4', ...quick]);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  t.match(out.stdout, /wake-up: producer 202 -> consumer has it\s+[\d,]+\s+\d+\.\d{2}/);
  t.match(out.stdout, /wake-up p99 <= 2 ms: \d+\.\d+ ms/);
  const report = await jsonResult(t, out.stdout);
  numbers(t, report.wake, ['wakeLatencyMs.p50', 'wakeLatencyMs.p999', 'wakeLatencyMs.max', ...cpuKeys], 'wake-up');
});

t.test('end-to-end: peak, open-loop producers and long-polling consumers', async (t) => {
  const out = await bench(['end-to-end', '--duration', '1', '--peak', '1', '--connections', '16', '--consumers', '4', ...quick]);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  t.match(out.stdout, /produce 202 -> consumer has it \(end-to-end\)\s+[\d,]+\s+\d+\.\d{2}/);
  t.match(out.stdout, /end-to-end: p99 [\d.]+ ms at [\d,]+ msg\/s; target p99 <= 10 ms/);
  const report = await jsonResult(t, out.stdout);
  numbers(t, report, ['ratePerSec', 'msgsPerSec', 'payloadMBPerSec', ...latencyKeys, 'sendToReceiptMs.p99', 'produceMs.p99',
    'due', 'sentLate', 'notSent', 'peak.reqPerSec', ...cpuKeys], 'end-to-end');
  // The producer writes each id and send time into a copy of one request: a wrong digit shows as an unknown id.
  t.ok((report.delivered as number) > 0, `messages delivered (${String(report.delivered)})`);
  t.same(report.errorCounts, {}, 'no errors, no unknown ids');
  t.same([report.undelivered, report.lost, report.duplicates], [0, 0, 0], 'none undelivered, lost or duplicated');
});

t.test('soak --duration 2s: interval rows with RSS, throughput and p99', async (t) => {
  const out = await bench(['soak', '--duration', '2s', '--interval', '0.5', '--rate', '300', '--connections', '8',
    '--consumers', '4', ...quick]);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  t.match(out.stdout, /\nat s\s+server RSS MiB\s+produced\/s/, 'the interval table');
  t.match(out.stderr, /\[soak\] measure .*server RSS \d+ MiB/, 'progress lines');
  const report = await jsonResult(t, out.stdout);
  const intervals = report.intervals as Json[];
  t.ok(intervals.length >= 2, `at least two interval rows (${intervals.length})`);
  numbers(t, intervals[0], ['serverRssBytes', 'producedPerSec', 'deliveredPerSec', 'p99Ms'], 'interval');
  numbers(t, report, ['msgsPerSec', ...latencyKeys], 'soak');
});

t.test('footprint scaled down: RSS at each step and the pass/fail line', async (t) => {
  const out = await bench(['footprint', '--topics', '20', '--polls', '200', '--duration', '1']);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  t.match(out.stdout, /footprint <= 300 MiB: [\d.]+ MiB: (PASS|FAIL) \(scaled down/);
  t.match(out.stdout, /SVC_HTTP_MAX_CONSUME_IN_FLIGHT_PER_IDENTITY=\d+/, 'says which settings the node got');
  const report = await jsonResult(t, out.stdout);
  numbers(t, report, ['rssBytes.idle', 'rssBytes.afterTopics', 'rssBytes.afterPolls', 'rssBytes.maxWhileHolding',
    'topicsCreated', 'pollsWaiting'], 'footprint');
  t.equal(report.topicsCreated, 20);
});

t.test('all: the summary table', async (t) => {
  const report: AllReport = { scenario: 'all', startedAt: '', finishedAt: '', argv: ['--compare'], failures: [],
    scenarios: [{ scenario: 'produce-single', file: null, failures: [], seconds: 30 }],
    summary: [{ scenario: 'produce-single', figure: '1,000 msg/s, p99 1.0 ms', value: 1000, target: 'p99 <= 10 ms',
      floorRatio: 0.5, redisRatio: null, met: false, otherCpuPercentMax: 12 }] };
  const write = process.stdout.write;
  let text = '';
  process.stdout.write = ((chunk: string) => ((text += chunk), true)) as typeof process.stdout.write;
  try {
    printSummary(report);
  } finally {
    process.stdout.write = write;
  }
  t.match(text, /scenario\s+our figure\s+target\s+floor ratio\s+Redis ratio\s+met\s+other CPU/);
  t.match(text, /produce-single\s+1,000 msg\/s, p99 1.0 ms\s+p99 <= 10 ms\s+0.50\s+-\s+NOT met\s+12%/);
});
