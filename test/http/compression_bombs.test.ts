// Goal: compressed batch bodies that decode past 16 MiB are answered 413, store nothing, and leave the node's memory
// where it was (issue 27 point 1: 300 zstd bodies of a few hundred bytes grew a node by 5.5 GiB for good, gzip bombs
// by some 320 MiB).
// Method: black box. One node per encoding; 160 bodies of a few KiB to 64 KiB, each decoding to 64 MiB of spaces,
// sent to the batch produce route in waves of 8 at once; the node process's RSS (from /proc) before and after, and
// the topic read back (test/helpers/stored.ts: a marker per partition, so what the node might still commit counts).
// The growth per encoding is printed in the assertion's text (the figures of the notes).
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { Client, assertError, pollUntil, sleep } from '../helpers/http.js';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { storedCounts } from '../helpers/stored.js';

const MiB = 1024 * 1024;
const bombCount = 160;
const waveSize = 8;
const headers = { 'content-type': 'application/json', 'x-svc-client': 't' };

async function rssMiB(node: StartedNode): Promise<number> {
  const status = await readFile(`/proc/${node.process.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

const spaces = Buffer.alloc(64 * MiB, 0x20);
const bombs: [string, Buffer][] = [['zstd', zstdCompress(spaces)], ['gzip', gzipSync(spaces, { level: 9 })]];
const compressors: Record<string, (body: Buffer) => Buffer> = { zstd: zstdCompress, gzip: (body) => gzipSync(body) };

for (const [encoding, bomb] of bombs) {
  t.test(`${encoding} bombs: 413 each, nothing stored, memory back where it was`, async (t) => {
    const node = await startNodeFor(t);
    const client = new Client(node.url, node.auth);
    const post = (body: Buffer): ReturnType<Client['post']> =>
      client.post('/v1/topics/bombs/produce/batch', body, { headers: { ...headers, 'content-encoding': encoding } });
    t.equal((await client.post('/v1/topics', { name: 'bombs' })).status, 201);
    t.ok(bomb.length < 128 * 1024, `a ${bomb.length}-byte body that decodes to 64 MiB`);
    // One real decode first, so the pool threads and their decoders exist before the first reading.
    const warm = compressors[encoding]!(Buffer.from(JSON.stringify({ messages: [{ payload: { warm: 1 }, partition: 1 }] })));
    t.equal((await post(warm)).status, 202);
    const before = await rssMiB(node);
    let refused = 0;
    let peak = before;
    for (let sent = 0; sent < bombCount; sent += waveSize) {
      peak = Math.max(peak, await rssMiB(node));
      const answers = await Promise.all(Array.from({ length: waveSize }, () => post(bomb)));
      for (const res of answers) {
        if (res.status === 413) refused++;
        else assertError(t, res, 413, 'decoded');
      }
    }
    t.equal(refused, bombCount, 'every bomb answered 413');
    await sleep(500);
    const grown = (await rssMiB(node)) - before;
    // A pool thread may hold one bomb's 16 MiB until GC; 160 retained decodes would be gigabytes.
    t.ok(grown < 256, `${encoding}: RSS grew ${grown.toFixed(0)} MiB over ${bombCount} bombs (${before.toFixed(0)} MiB before, ${(peak - before).toFixed(0)} MiB more at the highest)`);
    const stored = await storedCounts(node, 'bombs');
    t.same(stored, stored.map((_, p) => (p === 1 ? 1 : 0)), 'nothing stored but the warm-up message in partition 1');
  });
}

t.test('64 small bodies at once, each decoding to 15.9 MiB: stored whole or 503, decoded memory held to the budget', async (t) => {
  // Before decoded bytes counted against http.max_batch_body_bytes_in_flight (256 MiB here), all 64 were decoded and
  // held at once: the node grew by 2.2 to 2.7 GiB. Each body's decoded share now holds while it is worked on.
  const node = await startNodeFor(t);
  const client = new Client(node.url, node.auth);
  t.equal((await client.post('/v1/topics', { name: 'wide', partitions: 3 })).status, 201);
  const messages = Array.from({ length: 17 }, (_, i) => ({ payload: String.fromCharCode(97 + i).repeat(980_000), partition: 0 }));
  const body = zstdCompress(Buffer.from(JSON.stringify({ messages })));
  t.ok(body.length < 4096, `${body.length} bytes as sent`);
  const before = await rssMiB(node);
  let peak = before;
  let sending = true;
  const sampler = (async (): Promise<void> => {
    for (let i = 0; sending && i < 60_000; i++) {
      peak = Math.max(peak, await rssMiB(node));
      await sleep(10);
    }
  })();
  const zstdHeaders = { ...headers, 'content-encoding': 'zstd' };
  const answers = await Promise.all(Array.from({ length: 64 }, () => client.post('/v1/topics/wide/produce/batch', body, { headers: zstdHeaders, timeoutMs: 120_000 })));
  sending = false;
  await sampler;
  let accepted = 0;
  for (const res of answers) {
    if (res.status === 202) accepted++;
    else assertError(t, res, 503, 'budget');
    if (res.status === 503) t.equal(res.headers['retry-after'], '1', 'Retry-After: 1');
  }
  t.ok(accepted > 0, `${accepted} of 64 accepted`);
  t.ok(peak - before < 1536, `RSS at most ${(peak - before).toFixed(0)} MiB above ${before.toFixed(0)} MiB while they ran`);
  const last = await pollUntil(async () => {
    const res = await client.get(`/v1/topics/wide/consume?partition=0&offset=${accepted * 17 - 1}`);
    return res.status === 200 ? res : undefined;
  }, 10_000);
  t.ok(last, `the ${accepted * 17} messages of the accepted bodies are stored`);
  t.equal((await client.get(`/v1/topics/wide/consume?partition=0&offset=${accepted * 17}`)).status, 204, 'and nothing else');
});
