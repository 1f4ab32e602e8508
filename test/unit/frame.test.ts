// Goal: the frame's crc32 (a slicing-by-8 loop in JS for small bodies, zlib above) equals zlib's crc32 for every
// length and alignment, so frames written by either path check out when read by the other; the loop's kept view of
// the last array, or one its caller keeps, never answers for another array, nor for old bytes of the same one.
// Method: compare crc32Range with zlib.crc32 over lengths 0..600 at several start offsets of one buffer, then over
// views at odd offsets of one ArrayBuffer taken in turn, and after writing into an array already checked.
import t from 'tap';
import { crc32 } from 'node:zlib';
import { checkedFrameBodies, crc32Range, encodeFrame, frameHeaderBytes, frameWhole, wordsOf, writeFrame } from '../../src/util/frame.js';

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

t.test('crc32Range of views taken in turn, at odd offsets of one buffer, and of an array changed since', async (t) => {
  const buffer = new ArrayBuffer(4096);
  const whole = new Uint8Array(buffer).map((_, i) => (i * 89 + 7) & 0xff);
  const views = [new Uint8Array(buffer, 3, 500), new Uint8Array(buffer, 1001, 300), whole, new Uint8Array(buffer, 2049, 255)];
  const zlibOf = (bytes: Uint8Array, start: number, end: number): number => crc32(bytes.subarray(start, end));
  const wrong: string[] = [];
  for (let round = 0; round < 3; round++) {
    views.forEach((view, k) => {
      for (const [start, end] of [[0, 40], [5, 130], [1, 256], [0, view.byteLength]] as const) {
        if (crc32Range(view, start, Math.min(end, view.byteLength)) !== zlibOf(view, start, Math.min(end, view.byteLength))) {
          wrong.push(`view ${k} [${start}, ${end}) round ${round}`);
        }
      }
    });
  }
  t.same(wrong, [], 'each view answers for its own bytes, whichever view came before');
  const withWords = views.map((view) => crc32Range(view, 1, 129, wordsOf(view)));
  t.same(withWords, views.map((view) => zlibOf(view, 1, 129)), 'the same through a view the caller keeps (wordsOf)');
  const target = views[0]!;
  const before = crc32Range(target, 0, 100);
  target[50] = target[50]! ^ 0xff;
  t.not(crc32Range(target, 0, 100), before, 'a byte written since the last call changes the crc');
  t.equal(crc32Range(target, 0, 100), zlibOf(target, 0, 100));
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
