// Goal: `npm run bench -- forward-hop` keeps working: a short run (one round of 50 requests per series) ends by
// itself, prints its three series and the line saying what the dedicated thread adds, and writes a JSON result whose
// figures are numbers. Checks the output's shape, never its speed. Method: dist/bench/run.js with --json
// (test/helpers/bench_run.ts); the scenario starts its own worker threads on 127.0.0.1 and stops them.
import t from 'tap';
import { bench, jsonResult, numbers } from '../helpers/bench_run.js';

t.test('forward-hop: transport hop, the same through a PortChannel, and the bare thread hop', async (t) => {
  const out = await bench(['forward-hop', '--rounds', '1', '--count', '50']);
  t.equal(out.code, 0, `exit 0 (stderr tail: ${out.stderr.slice(-400)})`);
  t.match(out.stdout, /forwarded request, sent on the transport's thread\s+[\d.]+\s+[\d.]+\s+[\d.]+/);
  t.match(out.stdout, /the same, sent from another thread \(PortChannel\)\s+[\d.]+/);
  t.match(out.stdout, /MessagePort round trip \(the thread hop\)\s+[\d.]+/);
  t.match(out.stdout, /a dedicated data-plane thread adds p50 -?[\d.]+ µs, p99 -?[\d.]+ µs; the thread hop is x[\d.]+ of the transport hop/);
  t.match(out.stdout, /other processes took (\d+%|n\/a) of a core meanwhile/);
  const report = await jsonResult(t, out.stdout);
  for (const series of ['transport', 'viaThread', 'portRoundTrip']) {
    numbers(t, report, ['p50', 'p99', 'p999', 'max'].map((p) => `latencyMs.${series}.${p}`), series);
  }
  numbers(t, report, ['threadAddsMs.p50', 'threadAddsMs.p99', 'hopOverTransportP50'], 'forward-hop');
  t.same([report.rounds, report.countPerRound, report.failures], [1, 50, []]);
  t.ok(report.otherCpuPercent === null || typeof report.otherCpuPercent === 'number', 'other CPU: a number, or null without /proc');
});
