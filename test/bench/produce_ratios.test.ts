// Goal: the ratios of produce-single over its baselines when the sides take turns are the median of each round's own
// pair (a round that lacks a side gives no ratio for it), its msgs/s are all the rounds' requests over all their
// windows, its p99 the median of the rounds' p99s, and the headline judges issue 4's targets on those; the window of a
// side is --duration shared out over the rounds in whole seconds, at least one. Method: made-up rows through
// produceRatios and produceHeadlines, and roundWindowSec and median on chosen values.
import t from 'tap';
import { median, type ThroughputFigures } from '../../bench/common.js';
import { httpFloorReqPerSec, produceHeadlines, produceRatios, roundWindowSec, type ProduceReport } from '../../bench/produce.js';
import { checksMet } from '../../bench/targets.js';

function row(name: string, round: number | undefined, reqPerSec: number, p99: number, durationSec = 2): ThroughputFigures {
  return {
    name, target: 'http://127.0.0.1:1', client: name.startsWith('redis') ? 'redis-benchmark' : name.includes('wrk') ? 'wrk' : 'net',
    connections: 256,
    durationSec, messagesPerRequest: 1, requestBodyBytes: 100, acceptedRequests: reqPerSec * durationSec, reqPerSec,
    msgsPerSec: reqPerSec, payloadMBPerSec: reqPerSec / 1e4,
    latencyMs: { p50: 1, p90: 2, p99, p999: NaN, max: 20, mean: NaN },
    statusCounts: {}, errorCounts: {}, clientCpuPercent: 50, clientCpuUsPerRequest: 9, serverCpuPercent: 90,
    serverThreads: [], otherCpuPercent: 1, connectionsOpened: 256, abandonedInFlight: 0, openLoop: null,
    ...(round === undefined ? {} : { round }),
  };
}

const floor = 'http floor (hello world, wrk)';
const fsyncFloor = 'fsync floor (group-commit fdatasync, wrk)';
const single = 'single produce (wrk)';
const redis = 'redis XADD';

function report(runs: ThroughputFigures[]): ProduceReport {
  return { scenario: 'produce-single', startedAt: '', topic: 't', target: '', options: {}, runs, ratios: produceRatios(runs),
    missingPeers: [], redisVersion: '7', failures: [] };
}

t.test('median: the middle one, the mean of the middle two, none of nothing', async (t) => {
  t.equal(median([3, 1, 2]), 2);
  t.equal(median([100, 1, 2, 3]), 2.5);
  t.equal(median([7]), 7);
  t.equal(median([]), null);
});

t.test('the machine\'s HTTP floor: the median of wrk\'s rounds, else the bench client\'s floor, else none', async (t) => {
  t.equal(httpFloorReqPerSec([row(floor, 1, 60_000, 5), row(single, 1, 30_000, 9), row(floor, 2, 70_000, 5),
    row(floor, 3, 50_000, 5), row('http floor (hello world)', undefined, 40_000, 5)]), 60_000);
  t.equal(httpFloorReqPerSec([row('http floor (hello world)', undefined, 40_000, 5), row(single, 1, 30_000, 9)]), 40_000);
  t.equal(httpFloorReqPerSec([row(single, 1, 30_000, 9)]), null);
});

t.test('a side\'s window is --duration over --rounds in whole seconds, at least 1', async (t) => {
  t.equal(roundWindowSec(10, 3), 3);
  t.equal(roundWindowSec(10, 1), 10);
  t.equal(roundWindowSec(2, 5), 1, 'shorter than a second rounds up to one');
  t.equal(roundWindowSec(0.5, 1), 1);
  t.equal(roundWindowSec(60, 4), 15);
});

t.test('the ratios are medians of each round\'s own pair; a round without Redis gives no Redis ratio', async (t) => {
  const runs = [
    row(floor, 1, 100_000, 5), row(fsyncFloor, 1, 80_000, 6), row(single, 1, 50_000, 12), row(redis, 1, 60_000, 7),
    row(floor, 2, 80_000, 5), row(fsyncFloor, 2, 70_000, 6), row(single, 2, 60_000, 8),
    row(floor, 3, 90_000, 5), row(fsyncFloor, 3, 75_000, 6), row(single, 3, 63_000, 9), row(redis, 3, 70_000, 7),
  ];
  const r = produceRatios(runs);
  t.same(r.singleWrkRounds?.ofFloor, [0.5, 0.75, 0.7], 'each round over its own floor');
  t.equal(r.singleWrkOfFloorWrk, 0.7, 'the median, not the ratio of the sums (173,000 / 270,000 = 0.64)');
  t.same(r.singleWrkRounds?.overRedis.map((x) => Number(x.toFixed(3))), [0.833, 0.9], 'round 2 has no Redis row and no Redis ratio');
  t.equal(Number(r.singleWrkOverRedis?.toFixed(4)), Number(((50 / 60 + 63 / 70) / 2).toFixed(4)));
  t.equal(r.singleWrkRounds?.msgsPerSec, (50_000 + 60_000 + 63_000) * 2 / 6, 'all requests over all windows');
  t.same(r.singleWrkRounds?.p99sMs, [12, 8, 9]);
  t.equal(r.singleWrkRounds?.p99Ms, 9, 'the median p99');
  const [headline] = produceHeadlines(report(runs));
  t.equal(headline?.floorRatio, 0.7);
  t.equal(checksMet(headline?.checks ?? []), true, 'x0.7 floor, x0.87 Redis, p99 9 ms meet 0.6, 0.8 and 10 ms');
  t.match(headline?.figure, /^57,667 msg\/s \(wrk\), p99 9\.0 ms, x0\.\d\d fsync floor \(3 rounds/);
});

t.test('one median short of a target is enough to miss it', async (t) => {
  const runs = [
    row(floor, 1, 100_000, 5), row(single, 1, 70_000, 9), row(redis, 1, 80_000, 7),
    row(floor, 2, 100_000, 5), row(single, 2, 55_000, 11), row(redis, 2, 60_000, 7),
    row(floor, 3, 100_000, 5), row(single, 3, 58_000, 12), row(redis, 3, 65_000, 7),
  ];
  const [headline] = produceHeadlines(report(runs));
  t.equal(headline?.floorRatio, 0.58);
  t.equal(Number(headline?.redisRatio?.toFixed(3)), Number((58 / 65).toFixed(3)), 'the Redis ratio is met (x0.89)');
  t.equal(checksMet(headline?.checks ?? []), false, 'x0.58 of the floor misses 0.6 (and the p99 of 11 ms misses 10)');
  t.match(headline?.figure, /p99 11\.0 ms/);
});

t.test('without rounds (no wrk) the bench client\'s rows make the headline', async (t) => {
  const runs = [row('http floor (hello world)', undefined, 80_000, 6), row('single produce', undefined, 48_000, 9)];
  const r = produceRatios(runs);
  t.equal(r.singleWrkRounds, null);
  t.equal(r.singleWrkOfFloorWrk, null);
  const [headline] = produceHeadlines(report(runs));
  t.equal(headline?.floorRatio, 0.6);
  t.match(headline?.figure, /^48,000 msg\/s \(net\), p99 9\.0 ms$/, 'the bench client\'s figure, with no rounds or fsync floor');
});
