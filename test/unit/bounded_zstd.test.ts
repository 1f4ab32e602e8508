// Goal: zstd bodies decode exactly up to the cap and no further, with memory that does not grow from one body to the
// next (issue 27 point 1: bombs of a few KiB each grew a node by 5.5 GiB through zstd-napi's stream).
// Method: real zstd frames made with zstd-napi's compressor; the decoder on this thread; RSS read around 200 bombs.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { Compressor } from 'zstd-napi';
import { DecodedTooLarge, zstdDecodeBounded } from '../../src/pool/bounded_zstd.js';

const MiB = 1024 * 1024;

function tooLarge(decode: () => unknown): boolean {
  try {
    decode();
    return false;
  } catch (error) {
    return error instanceof DecodedTooLarge;
  }
}
const compressor = new Compressor();
compressor.setParameters({ compressionLevel: 3 });

t.test('bodies up to the cap decode whole, one frame or several', async (t) => {
  const text = Buffer.from(randomBytes(1536 * 1024).toString('base64'));
  t.same(zstdDecodeBounded(compressor.compress(text), 16 * MiB), text, 'a 2 MiB body spanning many output chunks');
  const two = Buffer.concat([compressor.compress(Buffer.from('{"messages":')), compressor.compress(Buffer.from('[]}'))]);
  t.equal(Buffer.from(zstdDecodeBounded(two, 16 * MiB)).toString(), '{"messages":[]}', 'frames one after another');
  const exact = Buffer.alloc(1000, 0x61);
  t.equal(zstdDecodeBounded(compressor.compress(exact), 1000).length, 1000, 'exactly the cap is allowed');
  t.ok(tooLarge(() => zstdDecodeBounded(compressor.compress(exact), 999)), 'one byte past it is not');
});

t.test('broken input is an error, never a hang', async (t) => {
  const frame = compressor.compress(Buffer.alloc(100_000, 0x62));
  t.throws(() => zstdDecodeBounded(frame.subarray(0, frame.length - 5), 16 * MiB), /ends inside a frame|zstd/i, 'a cut frame');
  t.throws(() => zstdDecodeBounded(Buffer.from('not zstd at all'), 16 * MiB), Error, 'no frame at all');
});

t.test('200 bombs decoding past the cap leave memory where it was', async (t) => {
  const bomb = compressor.compress(Buffer.alloc(64 * MiB, 0x20));
  t.ok(bomb.length < 16 * 1024, `a ${bomb.length}-byte body that decodes to 64 MiB`);
  zstdDecodeBounded(compressor.compress(Buffer.from('warm')), 16 * MiB);
  const before = process.memoryUsage().rss;
  let refused = 0;
  for (let i = 0; i < 200; i++) if (tooLarge(() => zstdDecodeBounded(bomb, 16 * MiB))) refused++;
  t.equal(refused, 200, 'every bomb is refused as too large');
  const grownMiB = (process.memoryUsage().rss - before) / MiB;
  // Each bomb may hold the cap (16 MiB) until GC; 200 retained contexts or windows would be gigabytes.
  t.ok(grownMiB < 256, `RSS grew ${grownMiB.toFixed(0)} MiB over 200 bombs`);
});
