// Where single produce's front thread spends its time per request, beside the uWS hello-world floor's thread: each
// server in turn is driven by wrk as the bench drives it (256 connections, 100 B), its request thread is sampled by
// `perf record -t` (Debian's linux-perf) for the wrk window, and the samples become microseconds of CPU per request,
// by shared object (kernel, node's runtime, the JIT's code, uWS, libc) and by symbol. docs/performance.md quotes it.
// Usage: node docs/perf/front_vs_floor.mjs [--tree .] [--seconds 6] [--top 25]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { requireWrk, withFloorServer, withProduceNode } from './wrk_node.mjs';

const { values } = parseArgs({
  options: { tree: { type: 'string', default: '.' }, seconds: { type: 'string', default: '6' }, top: { type: 'string', default: '25' } },
});
const seconds = Number(values.seconds);
const top = Number(values.top);
if (!(seconds >= 2 && seconds <= 60) || !(top >= 1 && top <= 200)) {
  console.error('usage: node docs/perf/front_vs_floor.mjs [--tree DIR] [--seconds 2..60] [--top 1..200]');
  process.exit(2);
}
requireWrk();
if (spawnSync('perf', ['--version']).status !== 0) {
  console.error('perf not found: apt-get install linux-perf');
  process.exit(2);
}
const tree = resolve(values.tree);
const samplesPerSec = 2999;
const scratch = mkdtempSync(join(os.tmpdir(), 'front-vs-floor-'));

/** Samples thread `tid` while `window` runs wrk after a 2 s warm-up; returns 2xx req/s and the perf data file. */
async function sampled(tid, name, window) {
  await window(2);
  const data = join(scratch, `${name}.data`);
  const perf = spawn('perf', ['record', '-F', String(samplesPerSec), '-e', 'cpu-clock', '-t', String(tid), '-o', data], { stdio: 'ignore' });
  const perfExited = new Promise((done) => perf.on('exit', done));
  try {
    const run = await window(seconds);
    return { reqPerSec: run.reqPerSec, requests: run.reqPerSec * run.durationSec, data };
  } finally {
    perf.kill('SIGINT');
    await perfExited;
  }
}

/** Microseconds per request by key ('dso' or 'dso,sym') from a perf data file. */
function perRequestUs(data, sort, requests) {
  const report = spawnSync('perf', ['report', '-i', data, '--no-children', '--sort', sort, '--stdio', '-n', '-g', 'none'], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const byKey = new Map();
  for (const line of report.stdout.split('\n')) {
    const match = /^\s+[\d.]+%\s+(\d+)\s+(.+?)\s*$/.exec(line);
    if (match === null) continue;
    const key = match[2].replace(/\[JIT\] tid \d+/, '[JIT]').replace(/\s+/g, ' ').slice(0, 110);
    byKey.set(key, (byKey.get(key) ?? 0) + Number(match[1]) * 1e6 / samplesPerSec / requests);
  }
  return byKey;
}

try {
  const ours = await withProduceNode(tree, { topic: 'front-vs-floor', env: { NODE_OPTIONS: '--perf-basic-prof' } },
    ({ window, serverPid }) => sampled(serverPid, 'node', window));
  const floor = await withFloorServer(tree, { nodeFlags: ['--perf-basic-prof'] }, ({ window, serverPid }) => sampled(serverPid, 'floor', window));
  console.log(`single produce ${Math.round(ours.reqPerSec)} req/s, hello-world floor ${Math.round(floor.reqPerSec)} req/s`);
  const oursByDso = perRequestUs(ours.data, 'dso', ours.requests);
  const floorByDso = perRequestUs(floor.data, 'dso', floor.requests);
  const total = (map) => [...map.values()].reduce((sum, us) => sum + us, 0);
  console.log(`CPU of the request thread per request: ${total(oursByDso).toFixed(2)} us against ${total(floorByDso).toFixed(2)} us`);
  for (const dso of new Set([...oursByDso.keys(), ...floorByDso.keys()])) {
    const a = oursByDso.get(dso) ?? 0;
    const b = floorByDso.get(dso) ?? 0;
    if (a + b >= 0.01) console.log(`  ${dso.padEnd(28)} ${a.toFixed(2).padStart(6)} us  ${b.toFixed(2).padStart(6)} us`);
  }
  const oursBySym = perRequestUs(ours.data, 'dso,sym', ours.requests);
  const floorBySym = perRequestUs(floor.data, 'dso,sym', floor.requests);
  const gaps = [...new Set([...oursBySym.keys(), ...floorBySym.keys()])]
    .map((key) => ({ key, ours: oursBySym.get(key) ?? 0, floor: floorBySym.get(key) ?? 0 }))
    .sort((x, y) => (y.ours - y.floor) - (x.ours - x.floor))
    .slice(0, top);
  console.log(`the ${top} symbols with the largest gap (us per request, ours then the floor's):`);
  for (const gap of gaps) console.log(`  ${gap.ours.toFixed(3)}  ${gap.floor.toFixed(3)}  ${gap.key}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
