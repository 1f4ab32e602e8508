// Where single produce's threads spend a wrk window: a fresh node of the tree (security on, temp data dir, the bench's
// own startBroker) with a topic of --partitions partitions, a 2 s wrk warm-up, then each thread's
// /proc/<pid>/task/<tid>/schedstat (time running, time runnable but waiting for a CPU) read around a wrk window of the
// bench's produce-single shape. Prints req/s and, for the busiest threads, both as a share of the window: a front
// thread that waits for a CPU is held back by the other threads on the two cores, one that neither runs nor waits has
// nothing to do. docs/performance.md quotes it ("Single produce with many partitions").
// Usage: node docs/perf/thread_sched.mjs [--tree .] [--partitions 6 (the bench's 3..108)] [--seconds 5] [--threads 4]
import { readdirSync, readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { requireBenchArgs, requireWrk, withProduceNode } from './wrk_node.mjs';

const { values } = parseArgs({
  options: {
    tree: { type: 'string', default: '.' }, partitions: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '5' }, threads: { type: 'string', default: '4' },
  },
});
const seconds = Number(values.seconds);
const threads = Number(values.threads);
if (!(seconds >= 1 && seconds <= 120) || !(threads >= 1 && threads <= 64)) {
  console.error('usage: node docs/perf/thread_sched.mjs [--tree .] [--partitions N] [--seconds 1..120] ' +
    '[--threads 1..64]');
  process.exit(2);
}
const benchArgs = requireBenchArgs(['--partitions', values.partitions]);
requireWrk();

/** Per thread id: [ns running, ns waiting for a CPU] so far; a thread gone between the reads is skipped. */
function schedstats(pid) {
  const stats = new Map();
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const [runNs, waitNs] = readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').trim().split(' ').map(Number);
      stats.set(Number(tid), [runNs, waitNs]);
    } catch {
      // The thread ended after the listing.
    }
  }
  return stats;
}

await withProduceNode(values.tree, { topic: 'thread-sched', benchArgs },
  async ({ window, serverPid }) => {
    await window(2);
    const before = schedstats(serverPid);
    const startNs = process.hrtime.bigint();
    const run = await window(seconds);
    const wallNs = Number(process.hrtime.bigint() - startNs);
    const after = schedstats(serverPid);
    const rows = [...after].filter(([tid]) => before.has(tid)).map(([tid, [runNs, waitNs]]) => {
      const [runBefore, waitBefore] = before.get(tid);
      return { tid, run: (runNs - runBefore) / wallNs, wait: (waitNs - waitBefore) / wallNs };
    }).sort((a, b) => b.run - a.run).slice(0, threads);
    console.log(`${values.partitions} partitions: ${Math.round(run.reqPerSec)} req/s, wrk p99 ${run.latencyMs.p99} ms`);
    for (const row of rows) {
      const name = row.tid === serverPid ? 'front' : `thread ${row.tid}`;
      console.log(`  ${name}: running ${(row.run * 100).toFixed(1)}%, waiting for a CPU ${(row.wait * 100).toFixed(1)}%`);
    }
  });
