// Entry of `npm run bench -- <scenario>` (node dist/bench/run.js <scenario> [options]); bench/README.md explains
// the figures. Scenarios: produce-single, produce-batch (bench/produce.ts), consume-single, consume-batch, wake-up
// (bench/consume.ts), end-to-end, soak (bench/end_to_end.ts), footprint (bench/footprint.ts), forward-hop
// (bench/forward_hop.ts) and all (bench/all.ts: every one with short durations, then a summary table); `produce` and
// `consume` are older names for groups of them.
// Options: bench/options.ts; shared parts: bench/common.ts. Runs on the bench process's main thread with the load
// generators; servers are child processes, stopped and their data dirs removed before it exits, also on error and
// Ctrl-C.
import { runAll } from './all.js';
import { cleanup, writeJson } from './common.js';
import { parseOptions, usage, type BenchOptions } from './options.js';
import { runScenario } from './scenario.js';

async function main(): Promise<number> {
  let options: BenchOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${message ? message + '\n' : ''}${usage}\n`);
    return 2;
  }
  if (options.scenario === 'all') return runAll(options);
  const run = await runScenario(options);
  run.print();
  if (options.json) process.stdout.write(`wrote ${writeJson(run.report)}\n`);
  return run.report.failures.length === 0 ? 0 : 1;
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`\n${signal}: stopping servers\n`);
    void cleanup().then(() => process.exit(130));
  });
}

main()
  .then(async (code) => {
    await cleanup();
    process.exit(code);
  })
  .catch(async (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    await cleanup();
    process.exit(1);
  });
