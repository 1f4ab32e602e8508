// write + fdatasync latency of 16 KB writes, appending (append), into a file zero-filled up front (whole), or into
// zeros filled 4 MiB ahead through a second handle (chunk [MiB]), as src/util/zero_fill.ts does. Writes under DIR
// (default: the OS temp dir). Usage: node docs/perf/fsync_overwrite.mjs append|whole|chunk [chunkMiB] [DIR]
import os from 'node:os';
import { open, unlink } from 'node:fs/promises';
const mode = process.argv[2]; const size = 16000; const chunk = Number(process.argv[3] ?? 4) << 20;
const path = `${process.argv[4] ?? os.tmpdir()}/fsync-${mode}-${process.pid}`;
const h = await open(path, 'w+');
const buf = Buffer.alloc(size, 1);
let prepared = 0, filling = null, fillH = null;
const zeros = Buffer.alloc(chunk);
if (mode === 'whole') { const z = Buffer.alloc(64 << 20); await h.write(z, 0, z.length, 0); await h.datasync(); prepared = 64 << 20; }
let pos = 0; const lat = [];
const end = Date.now() + 4000;
while (Date.now() < end) {
  const t = process.hrtime.bigint();
  if (mode === 'chunk' && pos + size > prepared && filling) await filling;
  await h.write(buf, 0, buf.length, pos); pos += buf.length;
  await h.datasync();
  lat.push(Number(process.hrtime.bigint() - t) / 1e6);
  if (mode === 'chunk' && !filling && prepared - pos < chunk / 2) {
    const from = Math.max(prepared, pos);
    prepared = from + chunk;
    filling = (async () => { fillH ??= await open(path, 'r+'); await fillH.write(zeros, 0, chunk, from); await fillH.datasync(); })().then(() => { filling = null; });
  }
}
await filling; await fillH?.close();
await h.close(); await unlink(path);
lat.sort((a,b)=>a-b);
const q = (p) => lat[Math.floor(p*(lat.length-1))].toFixed(3);
console.log(`${mode.padEnd(6)} n=${lat.length} p50=${q(0.5)} p90=${q(0.9)} p99=${q(0.99)} max=${q(1)} ms`);
