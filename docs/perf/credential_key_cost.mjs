// What the credential cache's key costs per request, on this machine: the front computes a SHA-256 of each
// request's Authorization value (node:crypto's one-shot hash, base64) and looks it up in a Map, as
// src/front/auth.ts does; beside it, the same lookup keyed by the Authorization text itself (which DESIGN.md rules
// out: the cache would hold passwords in the clear) and SHA-256 with a latin1 digest (a shorter key string). Each
// lookup gets a fresh string, as uWS gives one per request. docs/performance.md quotes its figures.
// Usage: node docs/perf/credential_key_cost.mjs [--lookups 2000000] [--rounds 3]
import { hash } from 'node:crypto';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { lookups: { type: 'string', default: '2000000' }, rounds: { type: 'string', default: '3' } } });
const lookups = Number(values.lookups);
const rounds = Number(values.rounds);
if (!(lookups >= 1000 && lookups <= 100_000_000) || !(rounds >= 1 && rounds <= 20)) {
  console.error('usage: node docs/perf/credential_key_cost.mjs [--lookups 1000..100000000] [--rounds 1..20]');
  process.exit(2);
}

const headers = Array.from({ length: 4 }, (_, i) => 'Basic ' + Buffer.from(`bench-user-${i}:a-password-of-some-length`).toString('base64'));
const keyings = {
  'sha256 base64 (the node)': (text) => hash('sha256', text, 'base64'),
  'sha256 latin1': (text) => hash('sha256', text, 'latin1'),
  'the text itself (ruled out)': (text) => text,
};

/** ns per lookup of keying over fresh copies of the headers. */
function measure(keying) {
  const cache = new Map(headers.map((text, i) => [keying(text), i]));
  let found = 0;
  const lookup = (n) => {
    for (let i = 0; i < n; i++) found += cache.get(keying((' ' + headers[i & 3]).slice(1))) === undefined ? 0 : 1;
  };
  lookup(Math.min(lookups, 200_000));
  const start = process.hrtime.bigint();
  lookup(lookups);
  const ns = Number(process.hrtime.bigint() - start) / lookups;
  if (found === 0) throw new Error('no lookup hit: the measurement is wrong');
  return ns;
}

for (let round = 1; round <= rounds; round++) {
  const line = Object.entries(keyings).map(([name, keying]) => `${name} ${measure(keying).toFixed(0)} ns`);
  console.log(`round ${round}: ${line.join(', ')}`);
}
