// Goal: the bench's connection defaults per scenario are the ones bench/README.md gives (256 for single produce, 64 for
// consume-single, 16 for batch produce, 32 for consume-batch, where its throughput peaks), and a given value wins; so
// is the number of rounds in which single produce and its baselines take turns; --server-cpu-prof applies only to a
// node the bench starts; --repeat only to all; the warm-up per scenario, inside all too; fanout's --rate paces its
// second phase. Method: parse the command
// lines a user types, and the argv all hands each scenario.
import t from 'tap';
import { join } from 'node:path';
import { scenarioArgv } from '../../bench/all.js';
import { parseOptions } from '../../bench/options.js';

t.test('connection defaults per scenario', async (t) => {
  t.equal(parseOptions(['produce-single']).connections, 256);
  t.equal(parseOptions(['produce-batch']).batchConnections, 16);
  t.equal(parseOptions(['consume-single']).connections, 64);
  t.equal(parseOptions(['consume-batch']).batchConnections, 32);
  t.equal(parseOptions(['consume']).batchConnections, 32, 'the consume alias runs consume-batch with its default');
});

t.test('a given connection count wins', async (t) => {
  t.equal(parseOptions(['consume-batch', '--batch-connections', '16']).batchConnections, 16);
  t.equal(parseOptions(['produce-batch', '--batch-connections=8']).batchConnections, 8);
  t.throws(() => parseOptions(['consume-batch', '--batch-connections', '0']), 'below 1 is refused');
});

t.test('single produce takes turns with its baselines over 3 rounds unless --rounds says otherwise', async (t) => {
  t.equal(parseOptions(['produce-single']).rounds, 3);
  t.equal(parseOptions(['produce-single', '--rounds', '5']).rounds, 5);
  t.equal(parseOptions(['produce-single', '--rounds', '1']).rounds, 1, 'one round: each side once, as before');
  t.throws(() => parseOptions(['produce-single', '--rounds', '0']), /rounds/, 'below 1 is refused, naming the option');
  t.throws(() => parseOptions(['produce-single', '--rounds', '21']), /rounds/, 'above 20 is refused');
  t.throws(() => parseOptions(['produce-single', '--rounds', 'two']), /rounds/, 'a word is refused');
});

t.test('--server-cpu-prof names a directory for the node the bench starts, and is refused with --url', async (t) => {
  t.equal(parseOptions(['consume-batch']).serverCpuProfDir, null, 'off unless given');
  t.equal(parseOptions(['consume-batch', '--server-cpu-prof', '/tmp/profiles']).serverCpuProfDir, '/tmp/profiles');
  t.equal(parseOptions(['wake-up', '--server-cpu-prof=rel']).serverCpuProfDir, join(process.cwd(), 'rel'), 'a relative path is made absolute');
  t.throws(() => parseOptions(['consume-batch', '--url', 'http://127.0.0.1:7942', '--server-cpu-prof', '/tmp/p']),
    /--server-cpu-prof .*--url/, 'a node the bench does not start cannot be profiled by it');
  t.throws(() => parseOptions(['consume-batch', '--server-cpu-prof=']), /needs a directory/);
});

t.test("fanout's --rate: the paced phase's messages a second, half the peak unless given", async (t) => {
  t.equal(parseOptions(['fanout']).rate, null, 'unset: the scenario takes half the parent\'s peak');
  t.equal(parseOptions(['fanout', '--rate', '90000']).rate, 90_000);
  t.throws(() => parseOptions(['fanout', '--rate', '0']), /--rate must be 1\.\.10000000/, 'below 1 is refused');
  t.throws(() => parseOptions(['fanout', '--rate', 'fast']), /--rate/, 'a word is refused, naming the option');
});

t.test('--repeat runs all N times, 1 unless given, and applies to all only', async (t) => {
  t.equal(parseOptions(['all']).repeat, 1);
  t.equal(parseOptions(['all', '--repeat', '5', '--compare']).repeat, 5);
  t.throws(() => parseOptions(['all', '--repeat', '0']), /--repeat must be 1\.\.10/, 'below 1 is refused');
  t.throws(() => parseOptions(['all', '--repeat', '11']), /--repeat must be 1\.\.10/, 'above 10 is refused');
  t.throws(() => parseOptions(['all', '--repeat', '2.5']), /--repeat must be an integer/);
  t.throws(() => parseOptions(['produce-single', '--repeat', '3']), /--repeat applies to all only/);
});

t.test('warm-up: 2 s, end-to-end 3 s; inside all 1 s, its end-to-end 3 s; a given --warmup wins everywhere', async (t) => {
  t.equal(parseOptions(['produce-single']).warmupSec, 2);
  t.equal(parseOptions(['end-to-end']).warmupSec, 3);
  t.equal(parseOptions(['end-to-end', '--warmup', '0.5']).warmupSec, 0.5);
  const all = parseOptions(['all']);
  t.equal(all.warmupSec, 1);
  const warmupIn = (argv: string[]): number => parseOptions(argv).warmupSec;
  t.equal(warmupIn(scenarioArgv(all, 'consume-batch')), 1);
  t.equal(warmupIn(scenarioArgv(all, 'end-to-end')), 3);
  const given = parseOptions(['all', '--warmup', '2']);
  t.equal(warmupIn(scenarioArgv(given, 'end-to-end')), 2, 'the user\'s --warmup reaches end-to-end too');
  t.equal(warmupIn(scenarioArgv(given, 'produce-batch')), 2);
});
