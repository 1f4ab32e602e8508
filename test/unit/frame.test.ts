// Goal: the frame's crc32 (a slicing-by-8 loop in JS for small bodies, zlib above) equals zlib's crc32 for every
// length and alignment, so frames written by either path check out when read by the other.
// Method: compare crc32Range with zlib.crc32 over lengths 0..600 at several start offsets of one buffer.
import t from 'tap';
import { crc32 } from 'node:zlib';
import { checkedFrameBodies, crc32Range, encodeFrame, frameHeaderBytes, frameWhole, writeFrame } from '../../src/util/frame.js';

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

t.test('writeFrame at an offset of a view, for bodies past 64 KiB, and refusing an empty body', async (t) => {
  for (const length of [1, 300, 70_000, 16_777_300]) {
    const body = new Uint8Array(length).map((_, i) => (i * 31 + 7) & 0xff);
    // A view that starts 5 bytes into its buffer, the frame 3 bytes into the view.
    const backing = new Uint8Array(5 + 3 + frameHeaderBytes + length + 4);
    const target = backing.subarray(5, backing.byteLength - 4);
    const written = writeFrame(target, 3, body);
    t.equal(written, frameHeaderBytes + length);
    t.ok(frameWhole(target, 3, 3 + written), `${length} B: a whole frame at the offset`);
    t.equal(new DataView(target.buffer, target.byteOffset).getUint32(3, true), length, 'length, little-endian');
    t.equal(crc32(body), new DataView(target.buffer, target.byteOffset).getUint32(7, true), 'crc32 of the body');
    t.same([...backing.subarray(0, 8), ...backing.subarray(backing.byteLength - 4)], new Array(12).fill(0), 'nothing written outside');
  }
  t.throws(() => writeFrame(new Uint8Array(16), 0, new Uint8Array(0)), /empty body/);
});

t.test('checkedFrameBodies gives back the bodies of frames that tile the buffer, and throws on any other buffer', async (t) => {
  const bodies = [1, 300, 70_000].map((length, k) => new Uint8Array(length).fill(k + 1));
  const frames = bodies.map(encodeFrame);
  const group = new Uint8Array(frames.reduce((sum, frame) => sum + frame.byteLength, 0));
  frames.reduce((at, frame) => (group.set(frame, at), at + frame.byteLength), 0);
  t.same(checkedFrameBodies(group).map((body) => [...body]), bodies.map((body) => [...body]), 'each body, in order');
  t.same(checkedFrameBodies(new Uint8Array(0)), [], 'no frames in no bytes');
  t.throws(() => checkedFrameBodies(group.subarray(0, group.byteLength - 1)), /no whole frame/, 'a cut last frame');
  t.throws(() => checkedFrameBodies(group.subarray(0, frameHeaderBytes - 1)), /no whole frame/, 'a cut header');
  const withZeros = new Uint8Array(group.byteLength + frameHeaderBytes);
  withZeros.set(group);
  t.throws(() => checkedFrameBodies(withZeros), /no whole frame/, 'a zero length after the frames');
});
