// Goal: the frame's crc32 (a slicing-by-8 loop in JS for small bodies, zlib above) equals zlib's crc32 for every
// length and alignment, so frames written by either path check out when read by the other.
// Method: compare crc32Range with zlib.crc32 over lengths 0..600 at several start offsets of one buffer.
import t from 'tap';
import { crc32 } from 'node:zlib';
import { crc32Range, encodeFrame, frameHeaderBytes, frameWhole } from '../../src/util/frame.js';

t.test('crc32Range is zlib crc32 for every length and start', async (t) => {
  const bytes = new Uint8Array(700).map((_, i) => (i * 167 + 13) & 0xff);
  let mismatches = 0;
  for (const start of [0, 1, 3, 7, 8]) {
    for (let length = 0; length <= 600; length++) {
      if (crc32Range(bytes, start, start + length) !== crc32(bytes.subarray(start, start + length))) mismatches += 1;
    }
  }
  t.equal(mismatches, 0);
});

t.test('a frame checks out whole and fails with one flipped body byte', async (t) => {
  for (const length of [1, 9, 140, 256, 257, 1200]) {
    const frame = encodeFrame(new Uint8Array(length).map((_, i) => (i * 7) & 0xff));
    t.ok(frameWhole(frame, 0, frame.byteLength), `${length} B frame checks out`);
    frame[frameHeaderBytes + (length >> 1)]! ^= 0x10;
    t.notOk(frameWhole(frame, 0, frame.byteLength), `${length} B frame with a flipped byte fails`);
  }
});
