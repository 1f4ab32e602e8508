// Goal: gzip bodies decode exactly up to the cap and no further; the batch body budget is one counter however many
// threads take from it; a decode takes from it only past 1 MiB and past what the front took for the body as sent,
// and stops (BudgetFull) when it cannot cover the next bytes (issue 27 point 1).
// Method: real gzip made with node:zlib; the decoders on this thread; the budget shared with a worker thread that
// takes and gives through its own view of the same memory.
import t from 'tap';
import { Worker } from 'node:worker_threads';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { gzipDecodeBounded } from '../../src/pool/bounded_gzip.js';
import { DecodedTooLarge, zstdDecodeBounded } from '../../src/pool/bounded_zstd.js';
import { BudgetFull, ByteBudget, DecodeBudget, decodeShare, decodeShareTaken } from '../../src/pool/byte_budget.js';

const MiB = 1024 * 1024;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    return error;
  }
}

function thrown(fn: () => unknown): unknown {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error;
  }
}

t.test('gzip: bodies up to the cap decode whole, one member or several; past it, DecodedTooLarge', async (t) => {
  const text = Buffer.from('x'.repeat(3 * MiB) + 'end');
  t.same(await gzipDecodeBounded(gzipSync(text), 16 * MiB), text, 'a 3 MiB body spanning many output chunks');
  const two = Buffer.concat([gzipSync('{"messages":'), gzipSync('[]}')]);
  t.equal(Buffer.from(await gzipDecodeBounded(two, 16 * MiB)).toString(), '{"messages":[]}', 'members one after another');
  const exact = Buffer.alloc(1000, 0x61);
  t.equal((await gzipDecodeBounded(gzipSync(exact), 1000)).length, 1000, 'exactly the cap is allowed');
  t.type(await rejection(gzipDecodeBounded(gzipSync(exact), 999)), DecodedTooLarge, 'one byte past it is not');
  const bomb = gzipSync(Buffer.alloc(64 * MiB, 0x20), { level: 9 });
  t.type(await rejection(gzipDecodeBounded(bomb, 16 * MiB)), DecodedTooLarge, 'a 64 MiB bomb stops at the cap');
});

t.test('gzip: broken input is an error, never a hang', async (t) => {
  const member = gzipSync(Buffer.alloc(100_000, 0x62));
  const cut = await rejection(gzipDecodeBounded(member.subarray(0, member.length - 5), 16 * MiB));
  t.ok(cut instanceof Error && !(cut instanceof DecodedTooLarge), 'a cut member');
  t.ok((await rejection(gzipDecodeBounded(Buffer.from('not gzip at all'), 16 * MiB))) instanceof Error, 'no member at all');
});

t.test('the budget: takes up to its size, gives back, never below zero', async (t) => {
  const budget = new ByteBudget(10);
  t.ok(budget.tryTake(6));
  t.notOk(budget.tryTake(5), 'past the size');
  t.ok(budget.tryTake(4), 'exactly the size');
  budget.give(10);
  t.equal(budget.usedBytes, 0);
  t.throws(() => budget.give(1), /more than taken/);
});

t.test('the budget is one counter across threads', async (t) => {
  const budget = new ByteBudget(1000);
  t.ok(budget.tryTake(100));
  // The worker sees the same memory: it takes 900, then fails to take 1 more, and reports both.
  const source = `const { parentPort, workerData } = require('node:worker_threads');
    const words = new BigInt64Array(workerData);
    const take = (n) => { const used = Atomics.load(words, 0); if (used + BigInt(n) > words[1]) return false;
      return Atomics.compareExchange(words, 0, used, used + BigInt(n)) === used; };
    parentPort.postMessage([take(900), take(1)]);`;
  const worker = new Worker(source, { eval: true, workerData: budget.shared });
  const [took, tookMore] = await new Promise<boolean[]>((resolve) => worker.once('message', resolve));
  await worker.terminate();
  t.same([took, tookMore], [true, false], 'the other thread saw what this one took');
  t.equal(budget.usedBytes, 1000, 'and this one sees what it took');
  t.notOk(budget.tryTake(1));
  // A DecodeBudget attaches to the shared memory the way a pool thread does.
  budget.give(1000);
  const decoding = new DecodeBudget(decodeShare(new ByteBudget(budget.shared), 0, 0));
  decoding.cover(1000);
  t.notOk(budget.tryTake(1), 'a decode through an attached view takes from the same counter');
});

t.test('a decode takes only past 1 MiB and past what the front took, and stops when the budget is out', async (t) => {
  const budget = new ByteBudget(8 * MiB);
  const free = decodeShare(budget, MiB, 0);
  const freeDecode = new DecodeBudget(free);
  freeDecode.cover(512 * 1024);
  freeDecode.cover(MiB);
  t.equal(budget.usedBytes, 0, 'up to 1 MiB decoded takes nothing');
  freeDecode.cover(MiB + 1);
  t.equal(budget.usedBytes, MiB + 1, 'past it, the whole decoded size');
  freeDecode.cover(3 * MiB);
  t.equal(decodeShareTaken(free), 3 * MiB, 'what it took is in the share for the front to give back');
  budget.give(3 * MiB);
  t.ok(budget.tryTake(2 * MiB), 'the front took 2 MiB for the body as sent');
  const covered = decodeShare(budget, MiB, 2 * MiB);
  const coveredDecode = new DecodeBudget(covered);
  coveredDecode.cover(2 * MiB);
  t.equal(budget.usedBytes, 2 * MiB, 'decoded bytes up to the size as sent are covered already');
  coveredDecode.cover(5 * MiB);
  t.equal(decodeShareTaken(covered), 3 * MiB, 'the share is the larger of the two sizes');
  t.type(thrown(() => coveredDecode.cover(9 * MiB)), BudgetFull, 'past the budget: BudgetFull');
  t.equal(budget.usedBytes, 5 * MiB, 'a refused take takes nothing');
});

t.test('the decoders stop when onDecoded throws, and hear every chunk before it is kept', async (t) => {
  const plain = Buffer.alloc(4 * MiB, 0x61);
  for (const [name, decode] of [
    ['gzip', (onDecoded: (bytes: number) => void) => gzipDecodeBounded(gzipSync(plain), 16 * MiB, onDecoded)],
    ['zstd', async (onDecoded: (bytes: number) => void) => zstdDecodeBounded(zstdCompress(plain), 16 * MiB, onDecoded)],
  ] as const) {
    const heard: number[] = [];
    t.equal((await decode((bytes) => heard.push(bytes))).length, 4 * MiB, `${name}: decodes whole`);
    t.equal(heard[heard.length - 1], 4 * MiB, `${name}: the last call has the whole size`);
    t.ok(heard.every((bytes, i) => i === 0 || bytes > heard[i - 1]!), `${name}: sizes grow`);
    const stopped = await rejection(decode((bytes) => {
      if (bytes > 2 * MiB) throw new BudgetFull();
    }));
    t.type(stopped, BudgetFull, `${name}: a throw from onDecoded stops the decode`);
  }
});
