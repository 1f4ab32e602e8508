// A/B of single produce between two environments of one built tree, driven by wrk as wrk_cpu.mjs drives it: in each
// round a fresh node without the variables and one with them (KEY=VALUE arguments, e.g. UV_USE_IO_URING=1 or
// NODE_OPTIONS=--max-semi-space-size=64), in alternating order so a slow minute of the shared machine falls on both.
// Prints each node's req/s and wrk's p99, then the rounds' with/without ratios and their median.
// Usage: node docs/perf/env_ab.mjs KEY=VALUE [KEY=VALUE ...] [--tree .] [--seconds 5] [--rounds 6]
//   [--partitions 6 (the bench's 3..108)]
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { requireBenchArgs, requireWrk, withProduceNode } from './wrk_node.mjs';

const { median } = await import(join(fileURLToPath(new URL('../..', import.meta.url)), 'dist/bench/common.js'));

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    tree: { type: 'string', default: '.' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '6' },
    partitions: { type: 'string', default: '6' },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const withVars = Object.fromEntries(positionals.map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]));
if (positionals.length === 0 || positionals.some((pair) => pair.indexOf('=') <= 0) || !(seconds >= 1 && seconds <= 120)
  || !(rounds >= 1 && rounds <= 20)) {
  console.error('usage: node docs/perf/env_ab.mjs KEY=VALUE [KEY=VALUE ...] [--tree DIR] [--seconds 1..120] ' +
    '[--rounds 1..20] [--partitions N]');
  process.exit(2);
}
const benchArgs = requireBenchArgs(['--partitions', values.partitions]);
requireWrk();

/** The bench's figures of a wrk window at one node started with env, after a 2 s warm-up. */
function measure(env, topic) {
  return withProduceNode(values.tree, { topic, env, benchArgs }, async ({ window }) => {
    await window(2);
    return window(seconds);
  });
}

const ratios = [];
for (let round = 1; round <= rounds; round++) {
  const sides = round % 2 === 1 ? ['without', 'with'] : ['with', 'without'];
  const figures = {};
  for (const side of sides) {
    figures[side] = await measure(side === 'with' ? withVars : {}, `env-ab-${round}-${side}`);
    console.log(`round ${round} ${side}: ${Math.round(figures[side].reqPerSec)} req/s (2xx), p99 ${figures[side].latencyMs.p99.toFixed(2)} ms`);
  }
  ratios.push(figures.with.reqPerSec / figures.without.reqPerSec);
}
console.log(`with/without: ${ratios.map((r) => r.toFixed(3)).join(' ')}; median ${median(ratios).toFixed(3)}`);
