// Goal: issue 4's targets judged as checks (bench/targets.ts): a check passes inside its bound and fails outside it or
// unmeasured; over repeated runs of `all`, each check's figures line up per run, the runs that met it are counted, and
// the median of the measured figures is judged against the same bound; `all --repeat` prints that table and says which
// targets the medians miss. Method: pure functions over hand-made summary rows, and the printed text.
import t from 'tap';
import { printOverRuns, type AllRepeatReport } from '../../bench/all.js';
import { checkPasses, checksMet, checksOverRuns, verdictText, type TargetCheck } from '../../bench/targets.js';
import { printedBy } from '../helpers/stdout_capture.js';

const floor = (value: number | null): TargetCheck => ({ label: 'x floor', value, atLeast: 0.6, decimals: 3 });
const p99 = (value: number | null): TargetCheck => ({ label: 'p99 ms', value, atMost: 10, decimals: 1 });
const wake = (value: number | null): TargetCheck => ({ label: 'p99 ms', value, atMost: 2, decimals: 2 });

t.test('a check passes at and inside its bound, fails outside it and when unmeasured', async (t) => {
  t.ok(checkPasses(floor(0.6)), 'at the lower bound');
  t.notOk(checkPasses(floor(0.5999)), 'just under it');
  t.ok(checkPasses(p99(10)), 'at the upper bound');
  t.notOk(checkPasses(p99(10.01)), 'just over it');
  t.notOk(checkPasses(floor(null)), 'not measured');
  t.equal(checksMet([]), null, 'no checks: no target');
  t.equal(checksMet([floor(0.61), p99(8)]), true);
  t.equal(checksMet([floor(0.61), p99(11)]), false, 'one failing check fails the row');
  t.same([verdictText([]), verdictText([floor(0.61), p99(8)]), verdictText([floor(null)])], ['-', 'met', 'NOT met'],
    'the verdict the tables print');
});

t.test('over runs: per-run figures, runs met, and the median judged against the bound', async (t) => {
  const runs = [
    [{ scenario: 'produce-single', checks: [floor(0.58), p99(8.1)] }, { scenario: 'wake-up', checks: [wake(1.2)] }],
    [{ scenario: 'produce-single', checks: [floor(0.64), p99(7.5)] }, { scenario: 'wake-up', checks: [wake(3.1)] }],
    // A run whose produce-single lacked its floor, and which had no wake-up row at all.
    [{ scenario: 'produce-single', checks: [p99(9.9)] }],
    [{ scenario: 'produce-single', checks: [floor(0.62), p99(10.5)] }, { scenario: 'wake-up', checks: [wake(1.5)] }],
  ];
  const over = checksOverRuns(runs);
  t.same(over.map((c) => [c.scenario, c.check]), [['produce-single', 'x floor >= 0.600'], ['produce-single', 'p99 ms <= 10.0'],
    ['wake-up', 'p99 ms <= 2.00']], 'one line per check of each row, in the order the runs give them');
  const [floorLine, p99Line, wakeLine] = over;
  t.same(floorLine!.values, [0.58, 0.64, null, 0.62], 'a run that did not measure the check shows null');
  t.equal(floorLine!.met, 2, 'two of four runs met the floor ratio');
  t.equal(floorLine!.median, 0.62, 'median of the three measured figures');
  t.equal(floorLine!.medianMet, true);
  t.equal(p99Line!.met, 3);
  t.equal(p99Line!.median, (8.1 + 9.9) / 2, 'median of four: the mean of the middle two');
  t.same(wakeLine!.values, [1.2, 3.1, null, 1.5]);
  t.equal(wakeLine!.met, 2, 'the 3.1 ms run missed');
  t.equal(wakeLine!.runs, 4);
  t.equal(wakeLine!.median, 1.5);
  t.equal(wakeLine!.medianMet, true);
});

t.test('a median outside the bound is NOT met, and the printed table says which', async (t) => {
  const over = checksOverRuns([
    [{ scenario: 'produce-single', checks: [floor(0.55), p99(8)] }],
    [{ scenario: 'produce-single', checks: [floor(0.59), p99(8)] }],
    [{ scenario: 'produce-single', checks: [floor(0.7), p99(8)] }],
  ]);
  t.equal(over[0]!.median, 0.59);
  t.equal(over[0]!.medianMet, false);
  const report: AllRepeatReport = { scenario: 'all-repeat', startedAt: '', finishedAt: '', argv: ['--compare', '--repeat', '3'],
    runs: 3, checks: over, files: [] };
  const text = printedBy(() => printOverRuns(report));
  t.match(text, /over 3 runs of npm run bench -- all --compare --repeat 3/);
  t.match(text, /produce-single\s+x floor >= 0\.600\s+0\.550 \/ 0\.590 \/ 0\.700\s+1 of 3\s+0\.590\s+NOT met/);
  t.match(text, /produce-single\s+p99 ms <= 10\.0\s+8\.0 \/ 8\.0 \/ 8\.0\s+3 of 3\s+8\.0\s+met/);
  t.match(text, /NOT met by the medians over 3 runs: produce-single x floor >= 0\.600$/m);
});

t.test('rates print with thousands separators', async (t) => {
  const over = checksOverRuns([[{ scenario: 'produce-batch', checks: [{ label: 'msg/s', value: 1_272_068, atLeast: 1_000_000, decimals: 0 }] }]]);
  t.equal(over[0]!.check, 'msg/s >= 1,000,000');
});
