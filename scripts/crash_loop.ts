// Runs the crash scenario of test/helpers/crash_scenario.ts N times (default 100) against freshly started nodes and
// prints one progress line per trial and a summary; exits 1 on any loss, duplicate or failed trial. With --cluster it
// runs the cluster scenario of test/helpers/cluster_crash_scenario.ts instead (3 nodes behind the link proxy, kill -9
// or a cut or blackholed link under produce and consume load through every node).
// Usage: node dist/scripts/crash_loop.js [--trials N] [--seed S] [--producers P] [--stop-on-failure]
//        node dist/scripts/crash_loop.js --cluster [--trials N] [--seed S] [--faults kill,cut,drop,stall,delay,move,decommission]
//        [--stop-on-failure]
// (npm run crash-loop -- --trials 100). A failing trial prints its seed and keeps its data for inspection.
import { parseArgs } from 'node:util';
import { describeTrial, randomSeed, runCrashTrial, type CrashTrialResult } from '../test/helpers/crash_scenario.js';
import { describeClusterTrial, runClusterCrashTrial, type ClusterFaultKind, type ClusterTrialResult } from '../test/helpers/cluster_crash_scenario.js';

const { values } = parseArgs({
  options: {
    trials: { type: 'string', default: '100' },
    seed: { type: 'string' },
    producers: { type: 'string' },
    faults: { type: 'string', default: 'kill,cut,drop' },
    cluster: { type: 'boolean', default: false },
    'stop-on-failure': { type: 'boolean', default: false },
  },
});
const trials = Number(values.trials);
const producers = Number(values.producers ?? (values.cluster ? '4' : '32'));
if (!Number.isInteger(trials) || trials < 1 || trials > 100_000) throw new Error('--trials: an integer from 1 to 100000');
if (!Number.isInteger(producers) || producers < 1 || producers > 1024) throw new Error('--producers: an integer from 1 to 1024');
const faultKinds = values.faults.split(',').map((kind) => kind.trim());
if (faultKinds.some((kind) => !['kill', 'cut', 'drop', 'stall', 'delay', 'move', 'decommission'].includes(kind))) {
  throw new Error('--faults: a list of kill, cut, drop, stall, delay, move, decommission');
}
const baseSeed = values.seed !== undefined ? Number(values.seed) >>> 0 : randomSeed();

if (values.cluster) await clusterLoop();
else await singleNodeLoop();

async function singleNodeLoop(): Promise<void> {
  const startedAt = Date.now();
  const failed: CrashTrialResult[] = [];
  let acked = 0;
  let unackedPresent = 0;
  let records = 0;
  for (let index = 1; index <= trials; index++) {
    const result = await runCrashTrial({ seed: (baseSeed + index - 1) >>> 0, producers });
    acked += result.ackedIds;
    unackedPresent += result.unackedPresent;
    records += result.recordsRead;
    console.log(`[${index}/${trials}] ${describeTrial(index, result)}`);
    if (!result.ok) {
      failed.push(result);
      if (result.nodeOutputTail) console.log(result.nodeOutputTail.split('\n').slice(-30).join('\n'));
      if (values['stop-on-failure']) break;
    }
  }
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  const missing = failed.reduce((n, r) => n + r.missing.length, 0);
  const duplicates = failed.reduce((n, r) => n + r.duplicates.length, 0);
  console.log(`summary: ${trials} trials from seed ${baseSeed} in ${seconds} s; ${failed.length} failed; ` +
    `${acked} acknowledged ids, ${records} records read, ${unackedPresent} unacknowledged ids present; ` +
    `${missing} missing, ${duplicates} duplicated`);
  for (const result of failed) console.log(`  failed: seed ${result.seed} (${result.error ?? 'loss or duplicate'}) data ${result.dataDir}`);
  process.exit(failed.length === 0 ? 0 : 1);
}

async function clusterLoop(): Promise<void> {
  const startedAt = Date.now();
  const failed: ClusterTrialResult[] = [];
  const byFault: Record<string, number> = {};
  let ran = 0;
  let acked = 0;
  let unackedPresent = 0;
  let records = 0;
  let consumed = 0;
  for (let index = 1; index <= trials; index++) {
    const result = await runClusterCrashTrial({ seed: (baseSeed + index - 1) >>> 0, producersPerNode: producers, faults: faultKinds as ClusterFaultKind[] });
    ran++;
    acked += result.ackedIds;
    unackedPresent += result.unackedPresent;
    records += result.recordsRead;
    consumed += result.consumed;
    if (result.fault !== undefined) byFault[result.fault.kind] = (byFault[result.fault.kind] ?? 0) + 1;
    console.log(`[${index}/${trials}] ${describeClusterTrial(index, result)}`);
    if (!result.ok) {
      failed.push(result);
      if (result.nodeOutputTail) console.log(result.nodeOutputTail);
      if (values['stop-on-failure']) break;
    }
  }
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  const missing = failed.reduce((n, r) => n + r.missing.length, 0);
  const duplicates = failed.reduce((n, r) => n + r.duplicates.length, 0);
  console.log(`summary: cluster, ${ran} trials from seed ${baseSeed} in ${seconds} s (faults ${JSON.stringify(byFault)}); ` +
    `${failed.length} failed; ${acked} acknowledged ids, ${records} records read, ${unackedPresent} unacknowledged ids present, ` +
    `${consumed} consumed; ${missing} missing, ${duplicates} duplicated`);
  for (const result of failed) console.log(`  failed: seed ${result.seed} (${result.error ?? 'loss or duplicate'}) data ${result.keptData ?? '-'}`);
  process.exit(failed.length === 0 ? 0 : 1);
}
