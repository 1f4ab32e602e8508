// Goal: the front's BodyReader hands a body over exactly once and whole: a one-chunk body of the announced length goes
// to a listener that reads in place as uWS's own chunk (no copy), and nothing can read it after that chunk is gone;
// every other body (a listener that keeps bytes, a body in several chunks, a length that differs from the announced
// one) is copied before the chunk goes, and a body past the cap fails. Method: a stand-in for uWS's HttpResponse that
// keeps the onData handler, fed ArrayBuffers by hand. Pure.
import t from 'tap';
import type { HttpResponse } from 'uWebSockets.js';
import { BodyReader, type BodyListener } from '../../src/front/body.js';
import type { BrokerError } from '../../src/errors.js';

type DataHandler = (chunk: ArrayBuffer, isLast: boolean) => void;

/** The part of HttpResponse BodyReader uses: onData, whose handler the test calls as uWS would; `current` is the chunk
 *  being delivered, or null between deliveries. */
function fakeResponse(): { res: HttpResponse; send: (bytes: number[], isLast: boolean) => void; current: () => ArrayBuffer | null } {
  let handler: DataHandler | null = null;
  let current: ArrayBuffer | null = null;
  const res = { onData: (h: DataHandler) => { handler = h; } } as unknown as HttpResponse;
  const send = (bytes: number[], isLast: boolean): void => {
    current = Uint8Array.from(bytes).buffer;
    try {
      handler!(current, isLast);
    } finally {
      current = null;
    }
  };
  return { res, send, current: () => current };
}

interface Heard {
  bodies: { copy: number[]; sameBuffer: boolean }[];
  failures: BrokerError[];
}

/** A listener that records what it was given, and whether that was a view of the chunk being delivered (`chunkOf`). */
function listener(readsInPlace: boolean, chunkOf: () => ArrayBuffer | null): BodyListener & { heard: Heard } {
  const heard: Heard = { bodies: [], failures: [] };
  return {
    heard,
    readsInPlace,
    onBody: (bytes) => heard.bodies.push({ copy: [...bytes], sameBuffer: bytes.buffer === chunkOf() }),
    onFailure: (error) => heard.failures.push(error),
  };
}

const rule = { bytesMax: 8, oversizeStatus: 413 as const };

t.test('a one-chunk body of the announced length reaches an in-place reader as the chunk itself, once', async (t) => {
  const { res, send, current } = fakeResponse();
  const reader = new BodyReader(res, 3, rule);
  const inPlace = listener(true, current);
  reader.whenDone(inPlace);
  send([1, 2, 3], true);
  t.same(inPlace.heard.bodies, [{ copy: [1, 2, 3], sameBuffer: true }], 'no copy: a view of the chunk');
  t.equal(reader.receiving, false);
  t.throws(() => reader.whenDone(listener(false, () => null)), /one listener per body/, 'the chunk is gone: no second read');
  await t.rejects(reader.done, /one listener per body/, 'nor as a promise');
});

t.test('a listener that keeps bytes, several chunks, or a length other than announced get a copy', async (t) => {
  const cases: { name: string; readsInPlace: boolean; announced: number | null; chunks: number[][] }[] = [
    { name: 'a listener that keeps the bytes', readsInPlace: false, announced: 3, chunks: [[1, 2, 3]] },
    { name: 'a body in two chunks', readsInPlace: true, announced: 4, chunks: [[1, 2], [3, 4]] },
    { name: 'a chunked body (no length announced)', readsInPlace: true, announced: null, chunks: [[5, 6, 7]] },
    { name: 'a chunk shorter than announced', readsInPlace: true, announced: 5, chunks: [[1, 2, 3]] },
  ];
  for (const c of cases) {
    const { res, send, current } = fakeResponse();
    const reader = new BodyReader(res, c.announced, rule);
    const heard = listener(c.readsInPlace, current);
    reader.whenDone(heard);
    c.chunks.forEach((chunk, i) => send(chunk, i === c.chunks.length - 1));
    t.same(heard.heard.bodies, [{ copy: c.chunks.flat(), sameBuffer: false }], `${c.name}: whole, and copied`);
    t.same(heard.heard.failures, [], `${c.name}: no failure`);
  }
});

t.test('a body past the cap fails in place and copied alike; an announced one before any byte', async (t) => {
  for (const readsInPlace of [true, false]) {
    const { res, send } = fakeResponse();
    const reader = new BodyReader(res, null, rule);
    const heard = listener(readsInPlace, () => null);
    reader.whenDone(heard);
    send([1, 2, 3, 4, 5, 6], false);
    send([7, 8, 9], true);
    t.same(heard.heard.bodies, [], `readsInPlace ${readsInPlace}: no body`);
    t.equal(heard.heard.failures[0]?.status, 413, `readsInPlace ${readsInPlace}: 413`);
  }
  const { res } = fakeResponse();
  const announced = new BodyReader(res, 9, rule);
  const heard = listener(true, () => null);
  announced.whenDone(heard);
  t.equal(heard.heard.failures[0]?.status, 413, 'an announced length past the cap fails before the body comes');
});
