// Goal: compressed batch bodies that decode past 16 MiB are answered 413, store nothing, and leave the node's memory
// where it was (issue 27 point 1: 300 zstd bodies of a few hundred bytes grew a node by 5.5 GiB for good).
// Method: black box. A node; 120 zstd and 40 gzip bodies of a few KiB, each decoding to 64 MiB of spaces, sent to
// the batch produce route; the node process's RSS (from /proc) before and after, and replay of offset 0.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { Client, assertError, sleep } from '../helpers/http.js';
import { startNodeFor } from '../helpers/node.js';

const MiB = 1024 * 1024;
const node = await startNodeFor(t);
const client = new Client(node.url, node.auth);

async function rssMiB(): Promise<number> {
  const status = await readFile(`/proc/${node.process.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

t.test('bombs: 413 each, nothing stored, memory back where it was', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'bombs' })).status, 201);
  const spaces = Buffer.alloc(64 * MiB, 0x20);
  const bombs: [string, Buffer, number][] = [['zstd', zstdCompress(spaces), 120], ['gzip', gzipSync(spaces, { level: 9 }), 40]];
  const warm = zstdCompress(Buffer.from(JSON.stringify({ messages: [{ payload: { warm: 1 }, partition: 1 }] })));
  const headers = { 'content-type': 'application/json', 'x-svc-client': 't' };
  t.equal((await client.post('/v1/topics/bombs/produce/batch', warm, { headers: { ...headers, 'content-encoding': 'zstd' } })).status, 202);
  const before = await rssMiB();
  for (const [encoding, body, count] of bombs) {
    t.ok(body.length < 128 * 1024, `${encoding}: a ${body.length}-byte body that decodes to 64 MiB`);
    let refused = 0;
    for (let i = 0; i < count; i++) {
      const res = await client.post('/v1/topics/bombs/produce/batch', body, { headers: { ...headers, 'content-encoding': encoding } });
      if (res.status === 413) refused++;
      else assertError(t, res, 413, 'decoded');
    }
    t.equal(refused, count, `${encoding}: every bomb answered 413`);
  }
  await sleep(500);
  const grown = (await rssMiB()) - before;
  // One bomb may hold the 16 MiB cap per pool thread until GC; 160 retained decodes would be gigabytes.
  t.ok(grown < 384, `RSS grew ${grown.toFixed(0)} MiB over 160 bombs (${before.toFixed(0)} MiB before)`);
  t.equal((await client.get('/v1/topics/bombs/consume?partition=0&offset=0')).status, 204, 'nothing stored');
});
