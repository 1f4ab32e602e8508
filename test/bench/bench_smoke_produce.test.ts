// Goal: `npm run bench`'s produce scenarios keep working (issue 4: a short run that checks the output's shape, never its
// speed). Method: as test/bench/bench_smoke.test.ts, in a file of its own so that each file's runs stay well inside
// the runner's time per file: produce-single takes turns over rounds with every baseline (bench/README.md).
import t from 'tap';
import { bench, cpuKeys, hasRedis, hasWrk, jsonResult, latencyKeys, numbers, quick, rows, run, type Json } from '../helpers/bench_run.js';

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

