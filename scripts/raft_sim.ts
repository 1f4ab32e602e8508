// The long run of the deterministic Raft simulation (test/sim/raft/sim.ts): many seeds, progress lines, and at the
// end the seed count, the failures and the elapsed time; exits 1 on any failure. `npm run test:sim`.
//   node dist/scripts/raft_sim.js [--seeds N] [--seed N] [--nodes 3|5]
// --seed replays one seed with a trace on stderr. Without --nodes every seed runs with 3 and with 5 voters.
import { runSimulation } from '../test/sim/raft/sim.js';

function flag(name: string): number | null {
  const i = process.argv.indexOf(name);
  if (i === -1) return null;
  const value = Number(process.argv[i + 1]);
  if (!Number.isSafeInteger(value) || value <= 0) {
    process.stderr.write(`${name} needs a positive integer\n`);
    process.exit(2);
  }
  return value;
}

const seeds = flag('--seeds') ?? 10_000;
const one = flag('--seed') ?? (process.env['SEED'] !== undefined ? Number(process.env['SEED']) : null);
const nodesFlag = flag('--nodes');
if (nodesFlag !== null && nodesFlag !== 3 && nodesFlag !== 5) {
  process.stderr.write('--nodes must be 3 or 5\n');
  process.exit(2);
}
const nodeCounts: (3 | 5)[] = nodesFlag === null ? [3, 5] : [nodesFlag as 3 | 5];

const started = performance.now();
let runs = 0;
const failures: string[] = [];
const list = one !== null ? [one] : Array.from({ length: seeds }, (_, i) => i + 1);
for (const seed of list) {
  for (const nodes of nodeCounts) {
    const trace = one !== null ? (line: string) => process.stderr.write(`${line}\n`) : undefined;
    const result = runSimulation({ seed, nodes, trace });
    runs += 1;
    if (!result.ok) {
      failures.push(`SEED=${seed} nodes=${nodes}: ${result.error}`);
      process.stdout.write(`FAIL SEED=${seed} nodes=${nodes}: ${result.error}\n  replay: node dist/scripts/raft_sim.js --seed ${seed} --nodes ${nodes}\n`);
    } else if (one !== null) {
      process.stdout.write(`ok SEED=${seed} nodes=${nodes}: ${JSON.stringify(result.stats)} events ${result.events}\n`);
    }
  }
  if (one === null && seed % 500 === 0) {
    process.stdout.write(`${seed}/${list.length} seeds, ${failures.length} failures, ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  }
}
const elapsed = (performance.now() - started) / 1000;
process.stdout.write(`seeds ${list.length} (runs ${runs}: voters ${nodeCounts.join(' and ')}), failures ${failures.length}, elapsed ${elapsed.toFixed(1)} s\n`);
process.exit(failures.length === 0 ? 0 : 1);
