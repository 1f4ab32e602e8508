// The ingress log alone (src/front/ingress_log.ts): CONC concurrent appenders (default 256) of one 100 B record each,
// SECS seconds (default 5), in a temp dir; prints appends/s, syncs/s and append latency. TREE is the built checkout to
// load (default: this one), so two builds can be compared in alternation. CONC=1 shows one group's cost: a synced
// write and the hops through the event loop around it.
// Usage: npm run build && CONC=128 node docs/perf/ingress_alone.mjs
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
const tree = process.env.TREE ?? fileURLToPath(new URL('../..', import.meta.url)).replace(/\/$/, '');
const { IngressLog } = await import(`${tree}/dist/src/front/ingress_log.js`);
const dir = await mkdtemp(`${os.tmpdir()}/ingress-alone-`);
const { log } = await IngressLog.open({ dir, segmentBytesMax: 64 << 20 });
log.onSynced = () => {};
const payload = new Uint8Array(100).fill(7);
/** PayloadKind.Binary: a const enum, so the built tree has no object to import it from. */
const payloadKindBinary = 2;
const lat = []; let n = 0; const end = performance.now() + Number(process.env.SECS ?? 5) * 1000;

/** One append, answered once its group is synced. */
function appendOne() {
  return new Promise((resolve, reject) => {
    const entry = { seq: log.takeSeq(), topicId: '0123456789abcdef', timestampSec: 1,
      records: [{ partition: 0, key: null, payload, payloadKind: payloadKindBinary }] };
    log.appendThen(entry, { appended: (error) => (error === null ? resolve() : reject(error)) });
  });
}

async function client() {
  while (performance.now() < end) {
    const t = performance.now();
    await appendOne();
    lat.push(performance.now() - t); n++;
  }
}
const t0 = performance.now();
await Promise.all(Array.from({ length: Number(process.env.CONC ?? 256) }, client));
const ms = performance.now() - t0;
await log.close(); await rm(dir, { recursive: true });
lat.sort((a, b) => a - b); const q = (p) => lat[Math.floor(p * (lat.length - 1))].toFixed(3);
console.log(`${tree.split('/').pop()}: ${(n / ms * 1000).toFixed(0)} appends/s, ${(log.syncCount / ms * 1000).toFixed(0)} syncs/s, ${(n / log.syncCount).toFixed(0)}/sync, latency p50 ${q(0.5)} p99 ${q(0.99)} ms`);
