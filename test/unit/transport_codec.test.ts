// Goal: the pieces under the node-to-node transport, without sockets: the length-prefixed frame codec (frames
// split byte by byte, many frames in one chunk, a header announcing too much, bytes that do not depend on
// history, Uint8Arrays with their own buffer), the handshake proofs (a proof for another role, connection or
// node never verifies) and the cluster secret rule and file loader. Method: call the functions directly; the
// loader reads files written to a temp dir.
import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeFrame, FrameDecoder, FrameTooLargeError, frameHeaderBytes } from '../../src/transport/frame_codec.js';
import {
  freshInstance,
  freshNonce,
  handshakeProof,
  parseHello,
  proofMatches,
  secretKey,
  transportVersion,
  type Transcript,
} from '../../src/transport/handshake.js';
import { checkClusterSecret, readClusterSecretFile } from '../../src/transport/cluster_secret.js';

const values: unknown[] = [
  { type: 'append', term: 3, entries: [{ index: 7, data: new Uint8Array([1, 2, 3]) }] },
  [0, 'hello', null, true],
  'x'.repeat(300),
  2 ** 40 + 1,
  { nested: { bytes: new Uint8Array(3000).fill(9) } },
];

function concat(frames: Buffer[]): Buffer {
  return Buffer.concat(frames);
}

t.test('a frame is [u32 big-endian length][msgpackr body]', async (t) => {
  const frame = encodeFrame({ a: 1 });
  t.equal(frame.readUInt32BE(0), frame.byteLength - frameHeaderBytes);
  t.same(new FrameDecoder(1024).pushAll(frame), [{ a: 1 }]);
});

t.test('encoding does not depend on what was encoded before (no record structures)', async (t) => {
  const first = encodeFrame({ term: 1, from: 2, kind: 'vote' });
  for (let i = 0; i < 10; i++) encodeFrame({ term: i, from: 2, kind: 'vote' });
  t.same(encodeFrame({ term: 1, from: 2, kind: 'vote' }), first);
});

t.test('many frames in one chunk decode in order', async (t) => {
  const stream = concat(values.map((v) => encodeFrame(v)));
  const decoder = new FrameDecoder(1 << 20);
  t.same(decoder.pushAll(stream), values);
  t.same(decoder.pushAll(Buffer.alloc(0)), []);
});

t.test('frames split byte by byte decode in order', async (t) => {
  const stream = concat(values.map((v) => encodeFrame(v)));
  const decoder = new FrameDecoder(1 << 20);
  const decoded: unknown[] = [];
  for (let i = 0; i < stream.byteLength; i++) decoded.push(...decoder.pushAll(stream.subarray(i, i + 1)));
  t.same(decoded, values);
});

t.test('frames split at every offset of a two-chunk stream decode in order', async (t) => {
  const stream = concat(values.slice(0, 4).map((v) => encodeFrame(v)));
  for (let cut = 0; cut <= stream.byteLength; cut++) {
    const decoder = new FrameDecoder(1 << 20);
    const decoded = [...decoder.pushAll(stream.subarray(0, cut)), ...decoder.pushAll(stream.subarray(cut))];
    if (JSON.stringify(decoded) !== JSON.stringify(values.slice(0, 4))) {
      t.fail(`cut at ${cut}`);
      return;
    }
  }
  t.pass('every cut');
});

t.test('decoded byte strings are Uint8Arrays with their own buffer', async (t) => {
  const payload = new Uint8Array([5, 6, 7, 8]);
  const stream = concat([encodeFrame({ p: payload }), encodeFrame('tail')]);
  const [first] = new FrameDecoder(1024).pushAll(stream) as [{ p: Uint8Array }];
  t.equal(first.p.constructor, Uint8Array, 'a plain Uint8Array, not a Buffer');
  t.same([...first.p], [5, 6, 7, 8]);
  t.equal(first.p.buffer.byteLength, 4, 'not a view of the received chunk');
});

t.test('a header announcing more than the limit throws before the body arrives', async (t) => {
  const decoder = new FrameDecoder(1024);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(1025, 0);
  t.throws(() => decoder.pushAll(header), FrameTooLargeError);
  const exact = encodeFrame(new Uint8Array(1024 - 3)); // bin 16 header is 3 bytes: body of exactly 1024
  t.equal(exact.byteLength - frameHeaderBytes, 1024);
  t.same((new FrameDecoder(1024).pushAll(exact)[0] as Uint8Array).byteLength, 1021);
  const before: unknown[] = [];
  const oversize = Buffer.concat([encodeFrame('first'), header]);
  t.throws(() => new FrameDecoder(1024).push(oversize, (v) => before.push(v)), FrameTooLargeError);
  t.same(before, ['first'], 'the frames before the oversize one are delivered before the throw');
  const raised = new FrameDecoder(16);
  raised.setFrameBytesMax(2048);
  t.equal(raised.pushAll(exact).length, 1);
});

function transcript(): Transcript {
  return {
    dialerId: 1,
    acceptorId: 2,
    dialerInstance: freshInstance(),
    acceptorInstance: freshInstance(),
    dialerNonce: freshNonce(),
    acceptorNonce: freshNonce(),
    oneshot: false,
  };
}

t.test('a handshake proof verifies only for its role, transcript and secret', async (t) => {
  const key = secretKey(new Uint8Array(32).fill(1));
  const base = transcript();
  const dialer = handshakeProof(key, 'dialer', base);
  t.ok(proofMatches(handshakeProof(key, 'dialer', base), dialer), 'same inputs');
  t.notOk(proofMatches(handshakeProof(key, 'acceptor', base), dialer), 'reflected: the other role');
  t.notOk(proofMatches(handshakeProof(key, 'dialer', { ...base, acceptorNonce: freshNonce() }), dialer), 'replayed: another nonce');
  t.notOk(proofMatches(handshakeProof(key, 'dialer', { ...base, dialerId: 3 }), dialer), 'another node id');
  t.notOk(proofMatches(handshakeProof(key, 'dialer', { ...base, dialerId: 2, acceptorId: 1 }), dialer), 'ids swapped');
  t.notOk(proofMatches(handshakeProof(key, 'dialer', { ...base, oneshot: true }), dialer), 'oneshot flag');
  t.notOk(proofMatches(handshakeProof(secretKey(new Uint8Array(32).fill(2)), 'dialer', base), dialer), 'another secret');
  t.notOk(proofMatches(dialer, dialer.subarray(0, 31)), 'short proof');
  t.notOk(proofMatches(dialer, 'not bytes'), 'not bytes');
});

t.test('a hello from a stranger is parsed strictly', async (t) => {
  const good = { t: 'hello', v: transportVersion, nodeId: 4, instance: freshInstance(), nonce: freshNonce(), oneshot: false };
  t.ok(parseHello(good));
  t.equal(parseHello({ ...good, v: transportVersion + 1 }), null, 'another version');
  t.equal(parseHello({ ...good, nodeId: 0 }), null, 'node id 0');
  t.equal(parseHello({ ...good, nodeId: 1.5 }), null, 'fractional node id');
  t.equal(parseHello({ ...good, nonce: new Uint8Array(8) }), null, 'short nonce');
  t.equal(parseHello([good]), null, 'not an object');
});

t.test('the cluster secret must be at least 32 bytes', async (t) => {
  t.doesNotThrow(() => checkClusterSecret(new Uint8Array(32), 'test'));
  t.throws(() => checkClusterSecret(new Uint8Array(31), 'test'), /at least 32 bytes, got 31/);
});

t.test('readClusterSecretFile drops one trailing line ending and names the path on error', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'transport-secret-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const hex = 'a1'.repeat(32);
  const lf = join(dir, 'lf');
  await writeFile(lf, `${hex}\n`);
  t.equal(Buffer.from(await readClusterSecretFile(lf)).toString(), hex);
  const crlf = join(dir, 'crlf');
  await writeFile(crlf, `${hex}\r\n`);
  t.equal(Buffer.from(await readClusterSecretFile(crlf)).toString(), hex);
  const two = join(dir, 'two');
  await writeFile(two, `${hex}\n\n`);
  t.equal(Buffer.from(await readClusterSecretFile(two)).toString(), `${hex}\n`, 'only one line ending goes');
  const short = join(dir, 'short');
  await writeFile(short, `${'x'.repeat(31)}\n`);
  await t.rejects(readClusterSecretFile(short), { message: new RegExp(`${short}.*at least 32 bytes, got 31`) });
  const missing = join(dir, 'missing');
  await t.rejects(readClusterSecretFile(missing), { message: new RegExp(`${missing}.*cannot be read`) });
  const big = join(dir, 'big');
  await writeFile(big, Buffer.alloc(5000, 1));
  await t.rejects(readClusterSecretFile(big), { message: /at most 4096 bytes/ });
});
