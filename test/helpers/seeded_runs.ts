// The seed loop every partition simulation runs under tap: seeds 1..seedCount (or SEED=<n> alone, STEPS=<n> to
// shorten or lengthen), a failure printed with the line that replays it, and the check that one seed yields one
// trace and another seed another (Iggy's simulator). Used by test/sim/partition_actor.test.ts and
// partition_sim.test.ts.
import type { Test } from 'tap';

export interface SeededRun {
  traceHash: string;
}

export interface SeededRunsOptions<R extends SeededRun> {
  /** The compiled test file, named in the replay line. */
  file: string;
  seedCount: number;
  stepsPerSeed: number;
  simulate(seed: number, steps: number): R;
  /** Asserts that a whole run did real work; failures inside simulate() throw. */
  check(t: Test, seed: number, result: R): void;
  /** How a thrown failure is shown (default: its message). */
  describe?(error: unknown): string;
}

function envInt(name: string): number | undefined {
  const text = process.env[name];
  if (text === undefined || text === '') return undefined;
  const value = Number(text);
  if (!Number.isSafeInteger(value)) throw new Error(`${name}=${text} is not an integer`);
  return value;
}

export function seededRuns<R extends SeededRun>(t: Test, options: SeededRunsOptions<R>): void {
  const replaySeed = envInt('SEED');
  const steps = envInt('STEPS') ?? options.stepsPerSeed;
  const seeds = replaySeed !== undefined ? [replaySeed] : Array.from({ length: options.seedCount }, (_, i) => i + 1);
  const describe = options.describe ?? ((error: unknown) => (error instanceof Error ? error.message : String(error)));
  for (const seed of seeds) {
    t.test(`seed ${seed}`, async (t) => {
      try {
        options.check(t, seed, options.simulate(seed, steps));
      } catch (error) {
        const described = describe(error);
        const text = described.startsWith('SEED=') ? described : `SEED=${seed}: ${described}`;
        const stepsEnv = steps === options.stepsPerSeed ? '' : ` STEPS=${steps}`;
        process.stderr.write(`${text}\nreplay: SEED=${seed}${stepsEnv} npx tap ${options.file}\n`);
        t.fail(text.split('\n')[0]!);
      }
    });
  }
  t.test('one seed gives one trace', async (t) => {
    const seed = replaySeed ?? 7;
    const shortSteps = Math.min(steps, 1000);
    const first = options.simulate(seed, shortSteps);
    const second = options.simulate(seed, shortSteps);
    t.equal(first.traceHash, second.traceHash, `SEED=${seed}: the same seed replays the same trace`);
    const other = options.simulate(seed + 1, shortSteps);
    t.not(other.traceHash, first.traceHash, 'another seed takes another path');
  });
}
