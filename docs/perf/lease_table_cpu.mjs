// Time per message of the lease path alone, for built trees: a PartitionActor (the pure read-path state of one
// partition) takes 100 messages at a time and acks the oldest of 32 outstanding batches, as consume-batch's 32
// connections do, with the partition worker's own nonces. Each round runs every tree in turn, six passes of 20,000
// takes, and keeps the best pass (the first compile). Single-threaded and without I/O, so it moves less with a shared
// machine than the bench does. docs/performance.md quotes it.
// Usage: node docs/perf/lease_table_cpu.mjs TREE [TREE ...] [--rounds 3]   (each TREE built: TREE/dist/workers/...)
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { rounds: { type: 'string', default: '3' } } });
const rounds = Number(values.rounds);
if (positionals.length === 0 || !Number.isSafeInteger(rounds) || rounds < 1 || rounds > 20) {
  throw new Error('usage: lease_table_cpu.mjs TREE [TREE ...] [--rounds 1..20]');
}
const trees = await Promise.all(positionals.map(async (tree) => {
  const dir = join(resolve(tree), 'dist', 'workers');
  if (!existsSync(join(dir, 'partition_actor.js'))) throw new Error(`${dir}/partition_actor.js does not exist: build the tree first`);
  const { PartitionActor } = await import(pathToFileURL(join(dir, 'partition_actor.js')).href);
  const readPath = await import(pathToFileURL(join(dir, 'partition_read_path.js')).href);
  if (typeof readPath.nextNonce !== 'function') throw new Error(`${tree} predates c194008: its nonces are not exported`);
  return { tree, PartitionActor, nonce: readPath.nextNonce };
}));

const batch = 100;
const outstandingMax = 32;
const takesPerPass = 20_000;

/** Nanoseconds per message taken and acked, best of six passes. */
function measure({ PartitionActor, nonce }) {
  const actor = new PartitionActor({
    oldestOffset: 0, highWatermark: 6 * takesPerPass * batch, nonceSource: nonce,
    config: { visibilityTimeoutMs: 30_000, maxInFlightPerPartition: 10_000, maxAckedAheadPerPartition: 100_000 },
  });
  const outstanding = [];
  let nowMs = 1_000_000;
  let best = Infinity;
  for (let pass = 0; pass < 6; pass++) {
    let acked = 0;
    const started = process.hrtime.bigint();
    for (let i = 0; i < takesPerPass; i++) {
      nowMs += 0.01;
      const leased = actor.handle({ kind: 'take', max: batch }, nowMs).find((effect) => effect.kind === 'leased');
      outstanding.push(leased.leases);
      if (outstanding.length <= outstandingMax) continue;
      const leases = outstanding.shift().map((lease) => ({ offset: lease.offset, nonce: lease.nonce }));
      actor.handle({ kind: 'settle', mode: 'ack', leases }, nowMs);
      acked += leases.length;
    }
    best = Math.min(best, Number(process.hrtime.bigint() - started) / acked);
  }
  return best;
}

const figures = new Map();
for (let round = 1; round <= rounds; round++) {
  for (const entry of trees) {
    const ns = measure(entry);
    figures.set(entry.tree, [...(figures.get(entry.tree) ?? []), ns]);
    process.stdout.write(`round ${round} ${entry.tree}: ${ns.toFixed(0)} ns per message taken and acked\n`);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
for (const [tree, ns] of figures) process.stdout.write(`median ${tree}: ${median(ns).toFixed(0)} ns (${ns.map((x) => x.toFixed(0)).join(' / ')})\n`);
