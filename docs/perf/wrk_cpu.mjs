// A/B of single produce between built trees, driven by wrk: for each round and each tree in turn, a fresh node of that
// tree (security on, temp data dir, the bench's own startBroker), a topic of 6 partitions (or --partitions), a 2 s wrk
// warm-up, then `wrk -t1 -c256 -d<seconds>s` POSTing the bench's 100 B payload. Prints req/s, wrk's p99, and the
// node's CPU per request: the front (main) thread, the busiest other thread (the partition worker) and all threads,
// read from /proc/<pid>/task/*/stat around the window. Per-thread CPU moves less than req/s on a shared machine, and
// alternating the trees spreads the machine's slow minutes over both. docs/performance.md quotes its figures.
// Usage: node docs/perf/wrk_cpu.mjs TREE [TREE ...] [--seconds 8] [--rounds 3] [--partitions 6 (the bench's 3..108)]
//   (each TREE built: TREE/dist/src/main.js)
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { requireBenchArgs, requireWrk, withProduceNode } from './wrk_node.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seconds: { type: 'string', default: '8' },
    rounds: { type: 'string', default: '3' },
    partitions: { type: 'string', default: '6' },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
if (positionals.length === 0 || !(seconds >= 1 && seconds <= 120) || !(rounds >= 1 && rounds <= 20)) {
  console.error('usage: node docs/perf/wrk_cpu.mjs TREE [TREE ...] [--seconds 1..120] [--rounds 1..20] ' +
    '[--partitions N]');
  process.exit(2);
}
const benchArgs = requireBenchArgs(['--partitions', values.partitions]);
requireWrk();
const here = fileURLToPath(new URL('../..', import.meta.url));
const { readThreadCpuMs } = await import(join(here, 'dist/bench/node_process.js'));

/** One node of tree: returns req/s (2xx answers), p99 and CPU per request. */
function measure(tree) {
  return withProduceNode(tree, { topic: 'wrk-cpu', benchArgs }, async ({ window, serverPid }) => {
    await window(2);
    const before = readThreadCpuMs(serverPid);
    const run = await window(seconds);
    const after = readThreadCpuMs(serverPid);
    if (before === null || after === null) throw new Error(`cannot read the CPU times of node ${serverPid}`);
    const requests = run.reqPerSec * run.durationSec;
    const perRequestUs = (tid) => ((after.get(tid) ?? 0) - (before.get(tid) ?? 0)) * 1000 / requests;
    const others = [...after.keys()].filter((tid) => tid !== serverPid).map(perRequestUs);
    const total = [...after.keys()].reduce((sum, tid) => sum + perRequestUs(tid), 0);
    return { reqPerSec: run.reqPerSec, p99: `${run.latencyMs.p99.toFixed(2)}ms`, front: perRequestUs(serverPid),
      worker: Math.max(0, ...others), total };
  });
}

for (let round = 1; round <= rounds; round++) {
  for (const tree of positionals) {
    const m = await measure(tree);
    console.log(`round ${round} ${tree}: ${Math.round(m.reqPerSec)} req/s, p99 ${m.p99}, front ${m.front.toFixed(2)} us/req, ` +
      `busiest other thread ${m.worker.toFixed(2)}, all threads ${m.total.toFixed(2)}`);
  }
}
