// The functions with the most self time in each .cpuprofile of a directory: what `npm run bench -- <scenario>
// --server-cpu-prof DIR` leaves there, one profile per thread of the node (the front thread, each partition worker,
// the Raft thread, the bcrypt pool). Per profile: its sample count, then the top functions as a share of its samples,
// with file and line; "(idle)" is the thread waiting for work. The profiles cover the node's whole life, prefill and
// warm-up included.
// Usage: node docs/perf/cpuprofile_top.mjs DIR [--top 25]
import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '25' } } });
const top = Number(values.top);
if (positionals.length !== 1 || !Number.isSafeInteger(top) || top < 1) throw new Error('usage: cpuprofile_top.mjs DIR [--top N]');
const dir = positionals[0];
const files = readdirSync(dir).filter((name) => name.endsWith('.cpuprofile')).sort();
if (files.length === 0) throw new Error(`no .cpuprofile in ${dir}`);

for (const file of files) {
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfByFunction = new Map();
  for (const id of profile.samples) {
    const { functionName, url, lineNumber } = nodes.get(id).callFrame;
    const name = `${functionName || '(anonymous)'} ${url === '' ? '' : `${basename(url)}:${lineNumber + 1}`}`;
    selfByFunction.set(name, (selfByFunction.get(name) ?? 0) + 1);
  }
  const total = profile.samples.length;
  process.stdout.write(`${file}: ${total} samples\n`);
  for (const [name, count] of [...selfByFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    process.stdout.write(`${((100 * count) / total).toFixed(1).padStart(6)}%  ${name}\n`);
  }
}
