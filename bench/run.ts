// Entry of `npm run bench -- <scenario>` (node dist/bench/run.js <scenario> [options]); bench/README.md explains
// the figures. Scenarios: `produce` (bench/produce.ts: HTTP floor, single and batch produce) and `consume`
// (bench/consume.ts: single and batch consume+ack, long-poll wake-up latency). Options: bench/options.ts; shared
// parts: bench/common.ts. Runs on the bench process's main thread with the load generators; servers are child
// processes (bench/node_process.ts), stopped and their data dirs removed before it exits, also on error and Ctrl-C.
import { cleanup, writeJson } from './common.js';
import { printConsumeTable, runConsume } from './consume.js';
import { parseOptions, usage, type BenchOptions } from './options.js';
import { printProduceTable, runProduce } from './produce.js';

async function main(): Promise<number> {
  let options: BenchOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`${message ? message + '\n' : ''}${usage}\n`);
    return 2;
  }
  if (options.scenario === 'produce') {
    const report = await runProduce(options);
    printProduceTable(report);
    if (options.json) process.stdout.write(`wrote ${writeJson(report)}\n`);
    return report.failures.length === 0 ? 0 : 1;
  }
  const report = await runConsume(options);
  printConsumeTable(report);
  if (options.json) process.stdout.write(`wrote ${writeJson(report)}\n`);
  return report.failures.length === 0 ? 0 : 1;
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
