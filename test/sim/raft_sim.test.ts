// Goal: under message loss, delay, reordering, duplication, partitions, crashes and restarts (from what the shell
// persisted), asynchronous persistence, compaction, membership changes and leadership transfers, the Raft core
// keeps election safety, log matching, leader completeness and state machine safety after every event, and a
// healed cluster elects a leader and commits a proposal on every member within a bound. Method: the seeded
// simulation in test/sim/raft/sim.ts, a few hundred seeds over 3 and 5 voters (the long run is npm run test:sim).
// A failure names SEED=<n>; see test/sim/README.md to replay it with a trace.
import t from 'tap';
import { createHash } from 'node:crypto';
import { runSimulation } from './raft/sim.js';

const seedCount = Number(process.env['RAFT_SIM_SEEDS'] ?? 300);
const only = process.env['SEED'] === undefined ? null : Number(process.env['SEED']);

t.test('safety after every event and liveness after healing, for every seed', async (t) => {
  const seeds = only !== null ? [only] : Array.from({ length: seedCount }, (_, i) => i + 1);
  let failures = 0;
  for (const seed of seeds) {
    for (const nodes of [3, 5] as const) {
      const trace = only !== null ? (line: string) => process.stderr.write(`${line}\n`) : undefined;
      const result = runSimulation({ seed, nodes, trace });
      if (!result.ok) {
        failures += 1;
        t.fail(`SEED=${seed} nodes=${nodes}: ${result.error}\n  replay: SEED=${seed} node dist/scripts/raft_sim.js --seed ${seed} --nodes ${nodes}`);
        if (failures >= 5) return;
      }
    }
  }
  t.pass(`${seeds.length} seeds x (3, 5) voters`);
});

t.test('a seed decides the whole run', async (t) => {
  const seed = only ?? 7;
  const hash = (): string => {
    const h = createHash('sha256');
    runSimulation({ seed, nodes: 5, trace: (line) => h.update(line) });
    return h.digest('hex');
  };
  t.equal(hash(), hash());
});
