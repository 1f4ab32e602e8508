// Goal: writevAllSync writes every piece back to back at its position, also when the kernel takes only part of a
// writev (a disk filling up, a signal): the rest goes out piece by piece, and an error on the way is thrown. Method:
// real files; node:fs's writevSync replaced through tap's mockImport by one that writes only a prefix of what it is
// given, as a short writev does.
import t, { type Test } from 'tap';
import * as fs from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type DurableFs = typeof import('../../src/util/durable_fs.js');

/** durable_fs with a writevSync that writes at most `limit` bytes of each call (all of them for Infinity), and with
 *  writeSync replaced when given. */
async function withShortWritev(t: Test, limit: number, writeSync = fs.writeSync):
Promise<{ module: DurableFs; calls: number[] }> {
  const calls: number[] = [];
  const writevSync = (fd: number, buffers: readonly NodeJS.ArrayBufferView[], position: number): number => {
    const whole = Buffer.concat(buffers.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)));
    const taken = Math.min(whole.byteLength, limit);
    calls.push(taken);
    return fs.writeSync(fd, whole, 0, taken, position);
  };
  // The compiled module beside this compiled test: tap would resolve a relative name from the source map's .ts path.
  const url = new URL('../../src/util/durable_fs.js', import.meta.url).href;
  const module = await t.mockImport<DurableFs>(url, { 'node:fs': { ...fs, writevSync, writeSync } });
  return { module, calls };
}

async function scratchFile(t: Test): Promise<{ path: string; fd: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'durable-fs-'));
  const path = join(dir, 'f');
  const fd = fs.openSync(path, 'w+');
  t.teardown(async () => {
    fs.closeSync(fd);
    await rm(dir, { recursive: true, force: true });
  });
  return { path, fd };
}

const pieces = [Buffer.from('abcdef'), Buffer.from('ghij'), Buffer.from('klmnopqrst')];

t.test('a whole writev: one call, the pieces back to back at the position', async (t) => {
  const { module, calls } = await withShortWritev(t, Infinity);
  const { path, fd } = await scratchFile(t);
  fs.writeSync(fd, Buffer.from('0123'), 0, 4, 0);
  module.writevAllSync(fd, pieces, 4);
  t.same(calls, [20]);
  t.equal((await readFile(path)).toString(), '0123abcdefghijklmnopqrst');
});

for (const limit of [0, 3, 6, 8, 19]) {
  t.test(`a writev that takes ${limit} of 20 bytes: the rest follows, nothing twice, nothing skipped`, async (t) => {
    const { module, calls } = await withShortWritev(t, limit);
    const { path, fd } = await scratchFile(t);
    module.writevAllSync(fd, pieces, 0);
    t.same(calls, [limit], 'one writev, then plain writes');
    t.equal((await readFile(path)).toString(), 'abcdefghijklmnopqrst');
  });
}

t.test('an error while writing the rest is thrown, after what the writev took', async (t) => {
  const full = (): number => {
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  };
  const { module } = await withShortWritev(t, 5, full as unknown as typeof fs.writeSync);
  const { path, fd } = await scratchFile(t);
  t.throws(() => module.writevAllSync(fd, pieces, 0), { code: 'ENOSPC' });
  t.equal((await readFile(path)).toString(), 'abcde', 'the writev\'s part is there, nothing else');
});
