// Bytes the front thread allocates per single produce, by the function that allocates them, for built trees: for each
// round and tree in turn, a fresh node of that tree (security on, temp data dir, the bench's own startBroker) with a
// preload that runs V8's sampling heap profiler on the main thread (objects that died young included, a sample per
// 512 B on average), a 2 s wrk warm-up, then the profiler over `wrk -t1 -c256 -d<seconds>s` POSTing the bench's 100 B
// payload. Bytes over wrk's request count is a figure that moves by a few percent between runs on a shared machine,
// where req/s moves by tens. docs/performance.md quotes it.
// Usage: node docs/perf/alloc_per_request.mjs TREE [TREE ...] [--seconds 4] [--rounds 1] [--top 12]
//        (each TREE built: TREE/dist/src/main.js)
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { requireWrk, withProduceNode } from './wrk_node.mjs';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { seconds: { type: 'string', default: '4' }, rounds: { type: 'string', default: '1' }, top: { type: 'string', default: '12' } },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const top = Number(values.top);
if (positionals.length === 0 || !(seconds >= 1 && seconds <= 60) || !(rounds >= 1 && rounds <= 10) || !(top >= 0 && top <= 100)) {
  console.error('usage: node docs/perf/alloc_per_request.mjs TREE [TREE ...] [--seconds 1..60] [--rounds 1..10] [--top 0..100]');
  process.exit(2);
}
requireWrk();

const scratch = mkdtempSync(join(os.tmpdir(), 'alloc-per-request-'));
const profilePath = join(scratch, 'profile.json');
const preload = join(scratch, 'sample_allocations.mjs');
// SIGUSR2 starts the sampling, the next one writes the profile; worker threads are left alone.
writeFileSync(preload, `
import { Session } from 'node:inspector';
import { renameSync, writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
if (isMainThread) {
  const session = new Session();
  session.connect();
  let sampling = false;
  process.on('SIGUSR2', () => {
    if (!sampling) {
      sampling = true;
      session.post('HeapProfiler.startSampling', { samplingInterval: 512, includeObjectsCollectedByMinorGC: true,
        includeObjectsCollectedByMajorGC: true }, () => writeFileSync(${JSON.stringify(profilePath + '.started')}, ''));
      return;
    }
    // Written whole under another name first: the tool takes the file as soon as it exists.
    session.post('HeapProfiler.stopSampling', (error, result) => {
      writeFileSync(${JSON.stringify(profilePath + '.part')}, error ? JSON.stringify({ error: String(error) }) : JSON.stringify(result.profile));
      renameSync(${JSON.stringify(profilePath + '.part')}, ${JSON.stringify(profilePath)});
    });
  });
}
`);

async function waitForFile(path, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} did not appear within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Self bytes per function (name, file and line) of a sampling heap profile. */
function bytesByFunction(profile) {
  const byFunction = new Map();
  let total = 0;
  const stack = [profile.head];
  while (stack.length > 0) {
    const node = stack.pop();
    const frame = node.callFrame;
    const name = `${frame.functionName || '(anonymous)'} ${frame.url.replace(/^.*\/dist\//, '')}:${frame.lineNumber + 1}`;
    total += node.selfSize;
    if (node.selfSize > 0) byFunction.set(name, (byFunction.get(name) ?? 0) + node.selfSize);
    stack.push(...node.children);
  }
  return { total, byFunction };
}

async function measure(tree) {
  rmSync(profilePath, { force: true });
  rmSync(profilePath + '.started', { force: true });
  const env = { NODE_OPTIONS: `--import=${preload}` };
  return withProduceNode(tree, { topic: 'alloc', env }, async ({ window, serverPid }) => {
    await window(2);
    process.kill(serverPid, 'SIGUSR2');
    await waitForFile(profilePath + '.started', 10_000);
    const run = await window(seconds);
    process.kill(serverPid, 'SIGUSR2');
    await waitForFile(profilePath, 30_000);
    // The profile saw every request the node answered, 2xx or not.
    const non2xx = run.errorCounts['non-2xx'] ?? 0;
    const requests = run.acceptedRequests + non2xx;
    const profile = JSON.parse(readFileSync(profilePath, 'utf8'));
    if (profile.error !== undefined) throw new Error(`sampling failed: ${profile.error}`);
    return { requests, non2xx, reqPerSec: requests / seconds, ...bytesByFunction(profile) };
  });
}

try {
  for (let round = 1; round <= rounds; round++) {
    for (const tree of positionals) {
      const m = await measure(tree);
      console.log(`round ${round} ${tree}: ${Math.round(m.total / m.requests)} bytes per request on the front ` +
        `(${m.requests} requests, ${Math.round(m.reqPerSec)} req/s while sampling${m.non2xx > 0 ? `, ${m.non2xx} not 2xx` : ''})`);
      const rows = [...m.byFunction].sort((a, b) => b[1] - a[1]).slice(0, top);
      for (const [name, bytes] of rows) console.log(`  ${(bytes / m.requests).toFixed(0).padStart(6)}  ${name}`);
    }
  }
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
