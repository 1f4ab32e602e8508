// Issue 4's targets as checks: each summary row of `npm run bench` carries the bounds its scenario is judged by, with
// the figures of the run, and `all --repeat N` judges the median of each figure over the runs. On a shared machine one
// run is a sample: the runs' figures, how many met each bound, and the medians say more together than any run alone.
// Bench process main thread.
import { fixed, formatInt, median } from './common.js';

/** One bound of a target: `value` must be at least `atLeast` or at most `atMost`; null means it was not measured,
 *  which fails (a row leaves out a check it could not run, such as the floor ratio without --compare). */
export interface TargetCheck {
  label: string;
  value: number | null;
  atLeast?: number;
  atMost?: number;
  /** Places to print the value and bound with. */
  decimals: number;
}

export function checkPasses(check: TargetCheck): boolean {
  if (check.value === null) return false;
  if (check.atLeast !== undefined && check.value < check.atLeast) return false;
  return check.atMost === undefined || check.value <= check.atMost;
}

/** null for a row without a target (no checks). */
export function checksMet(checks: readonly TargetCheck[]): boolean | null {
  return checks.length === 0 ? null : checks.every(checkPasses);
}

/** A row's verdict as the tables print it: met, NOT met, or '-' without a target. */
export function verdictText(checks: readonly TargetCheck[]): string {
  const met = checksMet(checks);
  return met === null ? '-' : met ? 'met' : 'NOT met';
}

/** A check's figure or bound as printed: counts and rates with thousands separators. */
export function figureText(value: number, decimals: number): string {
  return decimals === 0 ? formatInt(value) : fixed(value, decimals);
}

/** "x floor >= 0.600" */
export function boundText(check: TargetCheck): string {
  const bounds = [check.atLeast === undefined ? '' : `>= ${figureText(check.atLeast, check.decimals)}`,
    check.atMost === undefined ? '' : `<= ${figureText(check.atMost, check.decimals)}`].filter((text) => text !== '');
  return `${check.label} ${bounds.join(' and ')}`;
}

/** One check over the repeated runs. */
export interface CheckOverRuns {
  scenario: string;
  check: string;
  /** Per run, in order; null where the run did not measure it (or had no such row). */
  values: (number | null)[];
  /** Runs whose value passed. */
  met: number;
  runs: number;
  /** Median of the measured values; null when none was. */
  median: number | null;
  medianMet: boolean;
  decimals: number;
}

/** Every check of every row, across runs (each run's summary rows, in the order `all` gives them). A row or check that
 *  a run lacks counts as not measured there. */
export function checksOverRuns(runs: ReadonlyArray<ReadonlyArray<{ scenario: string; checks: readonly TargetCheck[] }>>): CheckOverRuns[] {
  const keyed = new Map<string, { scenario: string; template: TargetCheck; values: (number | null)[]; met: number }>();
  runs.forEach((rows, run) => {
    for (const row of rows) {
      for (const check of row.checks) {
        const key = `${row.scenario}\u0000${check.label}`;
        let entry = keyed.get(key);
        if (entry === undefined) {
          entry = { scenario: row.scenario, template: check, values: new Array<number | null>(runs.length).fill(null), met: 0 };
          keyed.set(key, entry);
        }
        entry.values[run] = check.value;
        if (checkPasses(check)) entry.met += 1;
      }
    }
  });
  return [...keyed.values()].map(({ scenario, template, values, met }) => {
    const measured = values.filter((value): value is number => value !== null);
    const middle = median(measured);
    return { scenario, check: boundText(template), values, met, runs: runs.length, median: middle,
      medianMet: checkPasses({ ...template, value: middle }), decimals: template.decimals };
  });
}
