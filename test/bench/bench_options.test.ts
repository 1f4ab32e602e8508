// Goal: the bench's connection defaults per scenario are the ones bench/README.md gives (256 for single produce, 64 for
// consume-single, 16 for batch produce, 32 for consume-batch, where its throughput peaks), and a given value wins; so
// is the number of rounds in which single produce and its baselines take turns. Method: parse the command lines a
// user types.
import t from 'tap';
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
