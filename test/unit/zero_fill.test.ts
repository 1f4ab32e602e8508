// Goal: util/zero_fill.ts keeps its safety rules in both of its modes (async handle on the front thread, blocking
// writes on partition workers): zeros only ever land past every byte of data, fills grow from the first chunk by
// doubling up to chunkBytes and never pass limitBytes, a data write that reaches into a fill waits for the fill's
// write, a roll's cut leaves exactly the data, and a fill that fails only stops filling.
// Method: real files in a temp dir; data written with plain fs calls the way the logs write it (reserve, write,
// extendIfLow), file contents and sizes read back after each step.
import t, { type Test } from 'tap';
import { statSync } from 'node:fs';
import { mkdtemp, open, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ZeroFill } from '../../src/util/zero_fill.js';

const KiB = 1024;

async function tempFile(t: Test): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'zero-fill-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'log');
  await (await open(file, 'w')).close();
  return file;
}

function pattern(bytes: number, seed: number): Uint8Array {
  return new Uint8Array(bytes).map((_, i) => ((i * 31 + seed) % 255) + 1);
}

for (const blockingWrites of [false, true]) {
  const mode = blockingWrites ? 'blocking writes' : 'async handle';

  t.test(`${mode}: fills double from the first chunk, stop at the limit, and never cover data`, async (t) => {
    const file = await tempFile(t);
    const data = await open(file, 'r+');
    t.teardown(() => data.close());
    const fill = new ZeroFill({ path: file, fileBytes: 0, limitBytes: 40 * KiB, chunkBytes: 16 * KiB, firstChunkBytes: 4 * KiB, blockingWrites });
    const expected = new Uint8Array(40 * KiB);
    let end = 0;
    const sizes: number[] = [];
    // Bounded: 12 appends of 3 KiB reach 36 KiB, below the 40 KiB limit.
    for (let i = 0; i < 12; i++) {
      const chunk = pattern(3 * KiB, i);
      await fill.reserve(end + chunk.byteLength);
      await data.write(chunk, 0, chunk.byteLength, end);
      expected.set(chunk, end);
      end += chunk.byteLength;
      fill.extendIfLow(end);
      await fill.idle();
      sizes.push((await stat(file)).size);
    }
    const bytes = await readFile(file);
    t.same(bytes.subarray(0, end), Buffer.from(expected.subarray(0, end)), 'every data byte is intact');
    t.ok(bytes.subarray(end).every((b) => b === 0), 'past the data: zeros only');
    t.equal(sizes[0], 3 * KiB + 4 * KiB, 'the first fill is firstChunkBytes past the data');
    t.ok(sizes.every((size, i) => i === 0 || size >= sizes[i - 1]!), 'the file never shrinks while open');
    t.ok(Math.max(...sizes) <= 40 * KiB, `no zeros past the limit (largest size ${Math.max(...sizes)})`);
    t.equal(fill.fileBytes, bytes.byteLength, 'fileBytes is the size on disk once idle');
    // Data ends at 3, 6, 9, ... KiB; a fill starts once less than half the last fill is left: 4 KiB at 3, 8 KiB at 6,
    // 16 KiB at 12, then 16 KiB at 24 cut to the 9 KiB left below the limit.
    const growth = sizes.flatMap((size, i) => (i > 0 && size > sizes[i - 1]! ? [size - sizes[i - 1]!] : []));
    t.same(growth, [8 * KiB, 16 * KiB, 9 * KiB], 'each fill doubles the last, up to chunkBytes and the limit');
    await fill.close();
  });

  t.test(`${mode}: data reaching into a fill in flight waits for the fill's write, then overwrites zeros`, async (t) => {
    const file = await tempFile(t);
    const data = await open(file, 'r+');
    t.teardown(() => data.close());
    const fill = new ZeroFill({ path: file, fileBytes: 0, limitBytes: 1024 * KiB, chunkBytes: 256 * KiB, blockingWrites });
    fill.extendIfLow(0);
    // A blocking fill has written its zeros when extendIfLow returns; an async one only once reserve has waited.
    if (blockingWrites) t.equal(statSync(file).size, 256 * KiB, 'the blocking fill wrote its zeros at once');
    const chunk = pattern(100 * KiB, 7);
    // Without waiting for the fill: reserve must not let the data write race the zeros it reaches into.
    const wait = fill.reserve(chunk.byteLength);
    // A blocking fill's zeros are written already: nothing to wait for, so a caller can write in the same step.
    t.equal(wait === null, blockingWrites, blockingWrites ? 'reserve has no wait' : 'reserve returns the wait for the fill');
    await wait;
    t.ok((await stat(file)).size >= 256 * KiB, 'the fill\'s zeros are written before reserve resolves');
    t.equal(fill.reserve(chunk.byteLength), null, 'once the zeros are written, reserving inside them has no wait');
    await data.write(chunk, 0, chunk.byteLength, 0);
    await fill.idle();
    const bytes = await readFile(file);
    t.same(bytes.subarray(0, chunk.byteLength), Buffer.from(chunk), 'the data is not overwritten by the fill');
    t.equal(bytes.byteLength, 256 * KiB);
    t.ok(bytes.subarray(chunk.byteLength).every((b) => b === 0));
    await fill.close();
  });

  t.test(`${mode}: closeAndCut leaves exactly the data, durable size included`, async (t) => {
    const file = await tempFile(t);
    const data = await open(file, 'r+');
    t.teardown(() => data.close());
    const fill = new ZeroFill({ path: file, fileBytes: 0, limitBytes: 1024 * KiB, chunkBytes: 64 * KiB, blockingWrites });
    const chunk = pattern(5000, 3);
    await fill.reserve(chunk.byteLength);
    await data.write(chunk, 0, chunk.byteLength, 0);
    fill.extendIfLow(chunk.byteLength);
    await fill.closeAndCut(data, chunk.byteLength);
    t.same(await readFile(file), Buffer.from(chunk));
    fill.extendIfLow(chunk.byteLength);
    await fill.idle();
    t.equal((await stat(file)).size, chunk.byteLength, 'a closed fill writes nothing more');
  });

  t.test(`${mode}: a fill that fails stops filling, and reserve does not wait on it`, async (t) => {
    const file = await tempFile(t);
    const missing = path.join(path.dirname(file), 'no-such-dir', 'log');
    const fill = new ZeroFill({ path: missing, fileBytes: 0, limitBytes: 1024 * KiB, chunkBytes: 64 * KiB, blockingWrites });
    fill.extendIfLow(0);
    await fill.reserve(60 * KiB);
    await fill.idle();
    // Data near the failed chunk's end: a fill still running would prepare the next chunk now.
    fill.extendIfLow(60 * KiB);
    t.equal(fill.fileBytes, 64 * KiB, 'only the failed fill was ever prepared');
    await fill.close();
  });
}
