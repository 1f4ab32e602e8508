// Goal: who PeerTransport lets in, and what it does with bytes after the handshake: a wrong cluster secret is
// refused by both sides with a log line and nothing delivered; a short secret never starts; our own node id is
// refused; a silent socket is cut at the handshake deadline; frames split byte by byte or packed into one write
// after a real handshake are delivered in order; an oversize frame closes the connection. Method: transports on
// 127.0.0.1 port 0 and raw sockets speaking the handshake (transport_helpers.ts); every wait is bounded.
import t from 'tap';
import { encodeFrame } from '../../src/transport/frame_codec.js';
import { PeerTransport } from '../../src/transport/peer_transport.js';
import { loopback, rawConnect, rawDial, secretOf, sleep, startNode, waitFor } from './transport_helpers.js';

t.test('a short cluster secret or a bad node id is refused at listen', async (t) => {
  const base = { listen: { host: loopback, port: 0 } };
  await t.rejects(PeerTransport.listen({ ...base, nodeId: 1, clusterSecret: secretOf(1, 31) }), {
    message: /at least 32 bytes, got 31/,
  });
  await t.rejects(PeerTransport.listen({ ...base, nodeId: 0, clusterSecret: secretOf(1) }), { message: /nodeId/ });
});

t.test('a wrong secret is refused on both sides and nothing is delivered', async (t) => {
  const a = await startNode(t, 1, { clusterSecret: secretOf(1) });
  const b = await startNode(t, 2, { clusterSecret: secretOf(2) });
  a.transport.setPeer(2, b.address);
  b.transport.setPeer(1, a.address);
  const request = a.channel.request(2, 'r', 3000).catch((error: unknown) => error);
  a.channel.send(2, 'from a');
  b.channel.send(1, 'from b');
  // Each side dials and proves first; each acceptor refuses the other's proof, and each dialer logs the failed dial.
  for (const node of [a, b]) {
    await waitFor(() => node.log.lines.some((l) => l.level === 'warn' && l.obj['role'] === 'acceptor' && String(l.obj['reason']).includes('bad proof')), `node ${node.id} refusal`);
    await waitFor(() => node.log.lines.some((l) => l.msg === 'node-to-node dial failed'), `node ${node.id} dialer log`);
  }
  const dialFailure = a.log.find((l) => l.msg === 'node-to-node dial failed');
  t.equal(dialFailure?.obj['remote'], `${loopback}:${b.address.port}`, 'the dial failure names the address');
  t.match(await request, { code: 'unreachable' });
  await sleep(100);
  t.same(a.received, []);
  t.same(b.received, []);
  t.same(a.transport.connectedPeers(), []);
  t.same(b.transport.connectedPeers(), []);
});

t.test('an acceptor refuses a dialer whose answer is wrong, and reads nothing after', async (t) => {
  const b = await startNode(t, 2);
  const { reader, verdict } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7), forgeAnswer: new Uint8Array(32) });
  reader.write([0, 'smuggled']);
  t.equal(verdict, null, 'no welcome');
  await waitFor(() => reader.closed, 'close');
  await waitFor(() => b.log.lines.some((l) => String(l.obj['reason']).includes('bad proof')), 'log line');
  t.same(b.received, []);
});

t.test('a peer presenting our own node id is refused', async (t) => {
  const b = await startNode(t, 2);
  const reader = await rawConnect(b.address.port);
  const { freshInstance, freshNonce, transportVersion } = await import('../../src/transport/handshake.js');
  reader.write({ t: 'hello', v: transportVersion, nodeId: 2, instance: freshInstance(), nonce: freshNonce(), oneshot: false });
  await waitFor(() => reader.closed, 'close');
  t.same(reader.frames, [], 'no challenge');
  t.ok(b.log.find((l) => String(l.obj['reason']).includes('own node id')));
  t.throws(() => b.transport.setPeer(2, b.address), /not another node/);
});

t.test('data before the handshake, or a silent socket, is cut', async (t) => {
  const b = await startNode(t, 2, { handshakeTimeoutMs: 200 });
  const early = await rawConnect(b.address.port);
  early.write([0, 'no hello']);
  await waitFor(() => early.closed, 'close after a data frame first', 2000);
  const silent = await rawConnect(b.address.port);
  await waitFor(() => silent.closed, 'close at the handshake deadline', 2000);
  t.ok(b.log.find((l) => String(l.obj['reason']).includes('deadline')));
  // A stranger may not make us buffer a large frame: pre-handshake frames are capped small.
  const big = await rawConnect(b.address.port);
  const header = Buffer.alloc(4);
  header.writeUInt32BE(1 << 20, 0);
  big.socket.write(header);
  await waitFor(() => big.closed, 'close on a large pre-handshake frame', 2000);
  t.same(b.received, []);
});

t.test('after a real handshake, frames split byte by byte and many in one write arrive in order', async (t) => {
  const b = await startNode(t, 2);
  const { reader, verdict, peerId } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  t.match(verdict, { t: 'welcome' });
  t.equal(peerId, 2);
  const split = Buffer.concat([reader.seal(encodeFrame([0, 'one'])), reader.seal(encodeFrame([0, { two: new Uint8Array([2]) }]))]);
  for (let i = 0; i < split.byteLength; i++) {
    reader.socket.write(split.subarray(i, i + 1));
    await sleep(1);
  }
  await waitFor(() => b.received.length === 2, 'split frames');
  const many = Buffer.concat([...Array(100).keys()].map((i) => reader.seal(encodeFrame([0, i]))));
  reader.socket.write(many);
  await waitFor(() => b.received.length === 102, 'batched frames');
  t.same(b.received.slice(0, 2), [[1, 'one'], [1, { two: new Uint8Array([2]) }]]);
  t.same(b.received.slice(2).map(([, m]) => m), [...Array(100).keys()]);
  t.same(b.transport.connectedPeers(), [1]);
  // B may now send to 1 over the connection 1 opened.
  b.channel.send(1, 'back');
  await waitFor(() => reader.frames.length > 2, 'message back');
  t.same(reader.frames[2], [0, 'back']);
});

t.test('an oversize frame closes the connection with a log line', async (t) => {
  const b = await startNode(t, 2, { maxFrameBytes: 4096 });
  const { reader } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  reader.write([0, 'fits']);
  reader.write([0, new Uint8Array(5000)]);
  await waitFor(() => reader.closed, 'close');
  t.same(b.received, [[1, 'fits']]);
  const line = b.log.find((l) => l.obj['reason'] === 'frame too large');
  t.equal(line?.obj['peer'], 1);
  await waitFor(() => b.transport.connectedPeers().length === 0, 'peer gone');
  // The sender refuses to encode one too: send drops it with a log line, request rejects.
  const a = await startNode(t, 1, { maxFrameBytes: 4096 });
  a.transport.setPeer(2, b.address);
  a.channel.send(2, new Uint8Array(5000));
  t.ok(a.log.find((l) => l.msg.includes('dropped')));
  await t.rejects(a.channel.request(2, new Uint8Array(5000), 1000), RangeError);
});
