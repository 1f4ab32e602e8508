// CPU per record of a partition log's write path (stage, then flush every 10,000 records, as the partition worker
// does with a dispatched ingress group) and of its read path (PartitionLog.readMany, as a batch consume calls it: runs
// of --run consecutive offsets in order), for built trees, in the active segment (one segment holds everything) and
// in sealed segments (4 MiB segments: every read but the last segment's goes through the sealed segments' read-ahead).
// Each round writes --records records of the bench's 100 B payload into a fresh temp directory per tree and layout
// (the write's figure is its second half, the first warming it up, and includes its page-cache writes, not a sync),
// reads them all --passes times, and keeps the best pass: the first passes run while V8 still compiles. Rounds
// alternate the trees, so a slow minute of a shared machine falls on both. docs/performance.md quotes it.
// Usage: node docs/perf/partition_log_cpu.mjs TREE [TREE ...] [--rounds 3] [--records 300000] [--run 100] [--passes 6]
//        (each TREE built: TREE/dist/workers/segment_log.js)
import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '3' }, records: { type: 'string', default: '300000' },
    run: { type: 'string', default: '100' }, passes: { type: 'string', default: '6' },
  },
});
const rounds = Number(values.rounds);
const records = Number(values.records);
const runLength = Number(values.run);
const passes = Number(values.passes);
if (positionals.length === 0) throw new Error('give at least one built tree');
for (const [name, value, max] of [['rounds', rounds, 20], ['records', records, 5_000_000], ['run', runLength, 10_000], ['passes', passes, 50]]) {
  if (!Number.isSafeInteger(value) || value < 1 || value > max) throw new Error(`--${name} must be an integer in 1..${max}`);
}
const layouts = [['active', 2 ** 31], ['sealed', 4 * 1024 * 1024]];
const payload = new TextEncoder().encode(`{"d":"${'x'.repeat(92)}"}`);

const trees = await Promise.all(positionals.map(async (tree) => {
  const script = join(resolve(tree), 'dist', 'workers', 'segment_log.js');
  if (!existsSync(script)) throw new Error(`${script} does not exist: build the tree first`);
  return { tree, PartitionLog: (await import(pathToFileURL(script).href)).PartitionLog };
}));

/** CPU nanoseconds per record written, and per record read in the best pass. */
async function measure(PartitionLog, segmentBytesMax) {
  const base = await mkdtemp(join(os.tmpdir(), 'partition-log-cpu-'));
  const log = await PartitionLog.open({ dir: join(base, 'topics', '0123456789abcdef', '0'), segmentBytesMax });
  try {
    // The first half warms the write path up; the second half's CPU is the figure.
    const half = Math.floor(records / 2);
    let writeStart = process.cpuUsage();
    for (let i = 0; i < records; i++) {
      if (i === half) writeStart = process.cpuUsage();
      log.stage({ timestampSec: 1_700_000_000, key: null, payload, payloadKind: 1, ingressSeq: 100 + i, ingressIndex: 0 });
      if (i % 10_000 === 9_999) await log.flush();
    }
    await log.flush();
    const written = process.cpuUsage(writeStart);
    const writeNs = ((written.user + written.system) * 1000) / (records - half);
    let best = Infinity;
    for (let pass = 0; pass < passes; pass++) {
      const before = process.cpuUsage();
      for (let first = 0; first + runLength <= records; first += runLength) {
        const offsets = Array.from({ length: runLength }, (_, i) => first + i);
        const read = await log.readMany(offsets);
        if (typeof read[0] === 'string' || read[0].offset !== first) throw new Error(`offset ${first} read back wrong`);
      }
      const used = process.cpuUsage(before);
      best = Math.min(best, ((used.user + used.system) * 1000) / (Math.floor(records / runLength) * runLength));
    }
    return { writeNs, readNs: best };
  } finally {
    await log.close();
    await rm(base, { recursive: true, force: true });
  }
}

const figures = new Map();
const keep = (key, ns) => figures.set(key, [...(figures.get(key) ?? []), ns]);
for (let round = 1; round <= rounds; round++) {
  for (const { tree, PartitionLog } of trees) {
    for (const [layout, segmentBytesMax] of layouts) {
      const { writeNs, readNs } = await measure(PartitionLog, segmentBytesMax);
      keep(`${tree} write ${layout}`, writeNs);
      keep(`${tree} read ${layout}`, readNs);
      process.stdout.write(`round ${round} ${tree} ${layout}: write ${writeNs.toFixed(0)}, read ${readNs.toFixed(0)} ns per record\n`);
    }
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [key, ns] of figures) process.stdout.write(`median ${key}: ${median(ns).toFixed(0)} ns per record (${ns.map((x) => x.toFixed(0)).join(' / ')})\n`);
