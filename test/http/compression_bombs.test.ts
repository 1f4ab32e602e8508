// Goal: compressed batch bodies that decode past 16 MiB are answered 413, store nothing, and leave the node's memory
// where it was (issue 27 point 1: 300 zstd bodies of a few hundred bytes grew a node by 5.5 GiB for good, gzip bombs
// by some 320 MiB).
// Method: black box. One node per encoding; 160 bodies of a few KiB to 64 KiB, each decoding to 64 MiB of spaces,
// sent to the batch produce route in waves of 8 at once; the node process's RSS (from /proc) before and after, and
// replay of offset 0. The growth per encoding is printed in the assertion's text (the figures of the notes).
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { Client, assertError, sleep } from '../helpers/http.js';
import { startNodeFor, type StartedNode } from '../helpers/node.js';

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
    t.equal((await client.get('/v1/topics/bombs/consume?partition=0&offset=0')).status, 204, 'nothing stored');
  });
}
