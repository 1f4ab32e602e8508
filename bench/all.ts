// Scenario all of `npm run bench` (bench/README.md): every scenario one after the other, each with its own node
// (stopped before the next starts), 10 s windows after a 1 s warm-up and a 60 s soak, so the whole run takes about
// 5-8 minutes; then one summary table: scenario, our figure, issue 4's target, ratio to the hello-world floor
// and to Redis (with --compare), met or not. --json writes each scenario's file plus all-<time>.json. Options given
// on the command line apply to every scenario that takes them. --repeat N does all that N times and then judges each
// target by the median of its figures over the runs (bench/targets.ts; all-repeat-<time>.json with --json). Bench
// process main thread.
import { cleanup, errorText, fixed, formatInt, percent, renderTable, writeJson, type Headline } from './common.js';
import { endToEndWarmupSec, parseOptions, type BenchOptions } from './options.js';
import { httpFloorReqPerSec, type ProduceReport } from './produce.js';
import { runScenario } from './scenario.js';
import { checksOverRuns, figureText, verdictText, type CheckOverRuns } from './targets.js';

/** Issue 4 set its absolute targets (batch produce 1,000,000 msg/s, batched consume 300,000 msg/s) on a machine whose
 *  HTTP floor answers about 100,000-145,000 req/s; the summary puts this run's floor beside that. */
const issueFloorReqPerSec = { low: 100_000, high: 145_000 };

/** Other processes' CPU (% of one core) above which a row is flagged as noise. */
const noisyOtherCpuPercent = 50;

export const allScenarios = ['produce-single', 'produce-batch', 'consume-single', 'consume-batch', 'wake-up', 'end-to-end',
  'soak', 'footprint', 'forward-hop'] as const;

/** consume-batch's prefill inside all, per second of warm-up and window: the target rate (300,000 msg/s) with a third
 *  to spare, so a node at the target does not drain the prefill before the window ends. */
const allBatchPrefillPerSec = 400_000;

/** Whether argv gives option name (as `--name V` or `--name=V`). */
function given(argv: string[], name: string): boolean {
  return argv.some((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
}

/** argv without option name and its value (`--name V` or `--name=V`). */
function withoutOption(argv: readonly string[], name: string): string[] {
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === `--${name}`) i++;
    else if (!argv[i]!.startsWith(`--${name}=`)) rest.push(argv[i]!);
  }
  return rest;
}

/** The argv of one scenario inside all: all's defaults for what the user left out, then the user's options. */
export function scenarioArgv(all: BenchOptions, scenario: string): string[] {
  const argv = [scenario];
  if (scenario === 'soak') argv.push('--duration', String(all.soakDurationSec));
  else if (!given(all.argv, 'duration')) argv.push('--duration', String(all.durationSec));
  if (!given(all.argv, 'warmup')) argv.push('--warmup', String(scenario === 'end-to-end' ? endToEndWarmupSec : all.warmupSec));
  // At 300,000 msg/s the scenario's own default (1,000,000) drains in under 3 s of a 10 s window.
  if (scenario === 'consume-batch' && !given(all.argv, 'batch-prefill')) {
    argv.push('--batch-prefill', String(Math.ceil((all.warmupSec + all.durationSec) * allBatchPrefillPerSec)));
  }
  const rest = withoutOption(all.argv, 'repeat');
  if (scenario === 'soak') {
    // The soak's length comes from --soak-duration; drop a --duration meant for the others.
    const at = rest.findIndex((arg) => arg === '--duration' || arg.startsWith('--duration='));
    if (at >= 0) rest.splice(at, rest[at] === '--duration' ? 2 : 1);
  }
  return [...argv, ...rest];
}

export interface AllReport {
  scenario: 'all';
  startedAt: string;
  finishedAt: string;
  argv: string[];
  summary: Headline[];
  /** The HTTP floor's req/s in this run (produce-single's hello-world server), null when it did not run. */
  httpFloorReqPerSec: number | null;
  /** Per scenario: the JSON file written (with --json), and its failures. */
  scenarios: Array<{ scenario: string; file: string | null; failures: string[]; seconds: number }>;
  failures: string[];
}

/** Over --repeat runs of all: each check of each target, per run and by its median. */
export interface AllRepeatReport {
  scenario: 'all-repeat';
  startedAt: string;
  finishedAt: string;
  argv: string[];
  runs: number;
  checks: CheckOverRuns[];
  /** Each run's all-<time>.json (with --json). */
  files: string[];
}

export async function runAll(options: BenchOptions): Promise<number> {
  const startedAt = new Date().toISOString();
  const summaries: Headline[][] = [];
  const files: string[] = [];
  let failed = false;
  for (let run = 1; run <= options.repeat; run++) {
    if (options.repeat > 1) process.stderr.write(`\n##### all: run ${run} of ${options.repeat}\n`);
    const report = await runAllOnce(options);
    summaries.push(report.summary);
    if (report.file !== null) files.push(report.file);
    failed ||= report.failures.length > 0;
  }
  if (options.repeat > 1) {
    const repeated: AllRepeatReport = { scenario: 'all-repeat', startedAt, finishedAt: new Date().toISOString(),
      argv: options.argv, runs: options.repeat, checks: checksOverRuns(summaries), files };
    printOverRuns(repeated);
    if (options.json) process.stdout.write(`wrote ${writeJson(repeated)}\n`);
  }
  return failed ? 1 : 0;
}

/** One run of every scenario, its summary printed (and written with --json). */
async function runAllOnce(options: BenchOptions): Promise<AllReport & { file: string | null }> {
  const startedAt = new Date().toISOString();
  const summary: Headline[] = [];
  const scenarios: AllReport['scenarios'] = [];
  const failures: string[] = [];
  let floorReqPerSec: number | null = null;
  for (const scenario of allScenarios) {
    const startMs = Date.now();
    const argv = scenarioArgv(options, scenario);
    process.stderr.write(`\n=== all: ${argv.join(' ')}\n`);
    let file: string | null = null;
    let own: string[] = [];
    try {
      const run = await runScenario(parseOptions(argv));
      run.print();
      if (options.json) {
        file = writeJson(run.report);
        process.stdout.write(`wrote ${file}\n`);
      }
      own = run.report.failures;
      summary.push(...run.headlines());
      if (scenario === 'produce-single') floorReqPerSec = httpFloorReqPerSec((run.report as ProduceReport).runs);
    } catch (error) {
      own = [errorText(error)];
      process.stdout.write(`\n${scenario}: FAILED: ${own[0]}\n`);
    }
    await cleanup();
    failures.push(...own.map((failure) => `${scenario}: ${failure.split('\n')[0]}`));
    scenarios.push({ scenario, file, failures: own, seconds: (Date.now() - startMs) / 1000 });
  }
  const report: AllReport = { scenario: 'all', startedAt, finishedAt: new Date().toISOString(), argv: options.argv, summary,
    httpFloorReqPerSec: floorReqPerSec, scenarios, failures };
  printSummary(report);
  const file = options.json ? writeJson(report) : null;
  if (file !== null) process.stdout.write(`wrote ${file}\n`);
  return { ...report, file };
}

/** Three places: at two, a median of 0.599 read 0.60 beside "NOT met" for a 0.6 target. */
function ratio(value: number | null): string {
  return value === null ? '-' : fixed(value, 3);
}

export function printSummary(report: AllReport): void {
  const rows = report.summary.map((h) => [h.scenario, h.figure, h.target, ratio(h.floorRatio), ratio(h.redisRatio),
    verdictText(h.checks), h.otherCpuPercentMax === null ? '-' : percent(h.otherCpuPercentMax)]);
  const seconds = report.scenarios.reduce((sum, s) => sum + s.seconds, 0);
  const out = [`summary of npm run bench -- all ${report.argv.join(' ')} (${fixed(seconds / 60, 1)} min)`,
    ...renderTable(['scenario', 'our figure', 'target', 'floor ratio', 'Redis ratio', 'met', 'other CPU'], rows, [0, 1, 2, 5])];
  out.push('floor ratio: our req/s over the uWS hello-world server fed the same requests; Redis ratio: our msgs/s over ' +
    'Redis Streams with appendfsync always doing the same work (XADD; pipelined XADD; XREADGROUP + XACK); both ' +
    'measured in this run (--compare), "-" when not measured; other CPU: the most CPU other processes took during any ' +
    'run behind the row (% of one core): above about 50% the figure and its ratios are mostly noise');
  if (report.httpFloorReqPerSec !== null) out.push(machineLine(report.httpFloorReqPerSec));
  const noisy = report.summary.filter((h) => (h.otherCpuPercentMax ?? 0) > noisyOtherCpuPercent).map((h) => h.scenario);
  if (noisy.length > 0) out.push(`NOISY: other processes took more than ${noisyOtherCpuPercent}% of a core during ${noisy.join(', ')}`);
  for (const failure of report.failures) out.push(`FAILED: ${failure}`);
  process.stdout.write(`\n${out.join('\n')}\n`);
}

export function printOverRuns(report: AllRepeatReport): void {
  const rows = report.checks.map((c) => [c.scenario, c.check,
    c.values.map((value) => (value === null ? '-' : figureText(value, c.decimals))).join(' / '), `${c.met} of ${c.runs}`,
    c.median === null ? '-' : figureText(c.median, c.decimals), c.medianMet ? 'met' : 'NOT met']);
  const missed = report.checks.filter((c) => !c.medianMet).map((c) => `${c.scenario} ${c.check}`);
  const out = [`over ${report.runs} runs of npm run bench -- all ${report.argv.join(' ')}`,
    ...renderTable(['scenario', 'check', 'per run', 'runs met', 'median', 'median met'], rows, [0, 1, 2, 5]),
    'per run: the figure each run judged ("-": not measured in that run); median: of the measured figures, judged ' +
    'against the same bound',
    missed.length === 0 ? `every target met by its medians over ${report.runs} runs`
      : `NOT met by the medians over ${report.runs} runs: ${missed.join('; ')}`];
  process.stdout.write(`\n${out.join('\n')}\n`);
}

/** How fast this machine is beside the one issue 4 set its absolute targets on, so a reader can weigh those targets. */
function machineLine(floorReqPerSec: number): string {
  const { low, high } = issueFloorReqPerSec;
  return `machine: the HTTP floor answered ${formatInt(floorReqPerSec)} req/s in this run, x${fixed(floorReqPerSec / low, 2)} ` +
    `of the low end of the machine issue 4 set its absolute targets on (a floor of ${formatInt(low)}-${formatInt(high)} ` +
    'req/s); the floor and Redis ratios compare like with like on any machine';
}
