// Goal: what the transport trusts after the handshake (issue 40): every data frame carries a MAC over the
// connection's direction key, its sequence number and its bytes, so a frame altered on the way, a frame without a
// MAC, a frame replayed from an earlier connection or repeated on the same one closes the connection unread; the
// dialer proves first, so an unauthenticated hello gets no value computed from the secret, and a dialer never trusts
// an acceptor's verdict without its proof; a flood of unauthenticated connections from one address holds a bounded
// number of sockets and writes a bounded number of log lines; a channel opened membersOnly serves members only.
// Method: transports on 127.0.0.1 port 0 against raw sockets speaking the handshake (transport_helpers.ts); every
// wait is bounded.
import t from 'tap';
import { createServer } from 'node:net';
import { encodeFrame } from '../../src/transport/frame_codec.js';
import { freshInstance, freshNonce, handshakeProof, parseHello, proofMatches, secretKey, transportVersion } from '../../src/transport/handshake.js';
import { FrameReader, loopback, rawConnect, rawDial, secretOf, startNode, waitFor } from './transport_helpers.js';

const refusedFor = (reason: string) => (l: { obj: Record<string, unknown> }): boolean => l.obj['reason'] === reason;

t.test('a frame altered after the handshake closes the connection, and nothing after it is read', async (t) => {
  const b = await startNode(t, 2);
  const { reader } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  reader.write([0, 'sound']);
  await waitFor(() => b.received.length === 1, 'the sound frame');
  const altered = reader.seal(encodeFrame([0, 'sound']));
  const at = altered.byteLength - 20; // a byte of the body, before the 16-byte MAC
  altered.writeUInt8(altered.readUInt8(at) ^ 0x01, at);
  reader.socket.write(Buffer.concat([altered, reader.seal(encodeFrame([0, 'after']))]));
  await waitFor(() => reader.closed, 'close on the altered frame');
  t.same(b.received, [[1, 'sound']], 'neither the altered frame nor the one after it was delivered');
  const line = b.log.find(refusedFor('data frame failed authentication'));
  t.equal(line?.obj['peer'], 1, 'the refusal names the peer');
  t.equal(line?.obj['frame'], 1, 'and which frame failed');
  await waitFor(() => b.transport.connectedPeers().length === 0, 'peer gone');
});

t.test('a frame without its MAC closes the connection', async (t) => {
  const b = await startNode(t, 2);
  const { reader } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  // What an injector without the keys can send: a well-formed frame and 16 bytes of its choice.
  reader.socket.write(Buffer.concat([encodeFrame([1, 9, { kind: 'propose' }]), Buffer.alloc(16)]));
  await waitFor(() => reader.closed, 'close');
  t.same(b.received, []);
  t.ok(b.log.find(refusedFor('data frame failed authentication')));
});

t.test('a frame replayed from an earlier connection, or repeated on the same one, is refused', async (t) => {
  const b = await startNode(t, 2);
  const instance = freshInstance();
  const first = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7), instance });
  const recorded = first.reader.seal(encodeFrame([0, 'once']));
  first.reader.socket.write(recorded);
  await waitFor(() => b.received.length === 1, 'the recorded frame delivered once');
  first.reader.socket.destroy();
  await waitFor(() => b.transport.connectedPeers().length === 0, 'the first connection gone');
  // The same node and instance again, as a replaying attacker with the recorded bytes would appear at best.
  const second = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7), instance });
  t.match(second.verdict, { t: 'welcome' });
  second.reader.socket.write(recorded);
  await waitFor(() => second.reader.closed, 'close on the replayed frame');
  t.same(b.received, [[1, 'once']], 'the replay was not delivered');
  const third = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  const frame = third.reader.seal(encodeFrame([0, 'twice?']));
  third.reader.socket.write(frame);
  third.reader.socket.write(frame);
  await waitFor(() => third.reader.closed, 'close on the repeated frame');
  t.same(b.received, [[1, 'once'], [1, 'twice?']], 'the repeat was not delivered');
  t.equal(b.log.lines.filter(refusedFor('data frame failed authentication')).length, 2);
});

t.test('frames the transport sends carry MACs the raw peer verifies, in order', async (t) => {
  const b = await startNode(t, 2);
  const { reader } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  for (let i = 0; i < 5; i++) b.channel.send(1, i);
  await waitFor(() => reader.frames.length === 7, 'five frames after the challenge and the welcome');
  t.same(reader.frames.slice(2), [0, 1, 2, 3, 4].map((i) => [0, i]));
  t.equal(reader.badFrames, 0);
});

t.test('the acceptor gives nothing derived from the secret to a dialer that has not proven it', async (t) => {
  const b = await startNode(t, 2);
  const reader = await rawConnect(b.address.port);
  reader.write({ t: 'hello', v: transportVersion, nodeId: 1, instance: freshInstance(), nonce: freshNonce(), oneshot: false });
  const challenge = await reader.next('challenge');
  t.same(Object.keys(challenge as object).sort(), ['instance', 'nodeId', 'nonce', 't'], 'the challenge holds no proof');
  reader.write({ t: 'answer', proof: new Uint8Array(32) });
  await waitFor(() => reader.closed, 'close on the wrong proof');
  t.equal(reader.frames.length, 1, 'no frame after the challenge: no verdict, no proof');
  t.ok(b.log.find((l) => String(l.obj['reason']).includes('bad proof')));
  // With the right proof the welcome proves the acceptor in turn, over the same transcript.
  const { verdict, transcript } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  const proof = (verdict as { proof?: unknown }).proof;
  t.ok(proofMatches(handshakeProof(secretKey(secretOf(7)), 'acceptor', transcript), proof), 'the welcome carries the acceptor proof');
  t.notOk(proofMatches(handshakeProof(secretKey(secretOf(7)), 'dialer', transcript), proof), 'not a reflected dialer proof');
});

t.test('a dialer refuses a verdict whose proof is wrong and sends nothing on it', async (t) => {
  /** Per connection (the dialer retries), the frames the impostor read by the time it closed. */
  const seen: unknown[][] = [];
  const server = createServer((socket) => {
    const reader = new FrameReader(socket);
    void (async () => {
      const hello = parseHello(await reader.next('hello'));
      if (hello === null) return socket.destroy();
      reader.write({ t: 'challenge', nodeId: 2, instance: freshInstance(), nonce: freshNonce() });
      await reader.next('answer');
      reader.write({ t: 'welcome', proof: new Uint8Array(32) });
      await waitFor(() => reader.closed, 'the dialer closing');
      seen.push(reader.frames.map((frame) => (frame as { t?: unknown }).t));
    })().catch(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, loopback, resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const a = await startNode(t, 1);
  a.transport.setPeer(2, { host: loopback, port: (server.address() as { port: number }).port });
  a.channel.send(2, 'secret business');
  await waitFor(() => a.log.lines.some((l) => l.obj['role'] === 'dialer' && String(l.obj['reason']).includes('bad proof')), 'the dialer refusal');
  await waitFor(() => seen.length > 0, 'the impostor\'s connection closed');
  t.same(seen[0], ['hello', 'answer'], 'the impostor got the answer and nothing else');
  t.same(a.transport.connectedPeers(), []);
});

t.test('unauthenticated connections from one address: a bounded number wait, and few lines are written', async (t) => {
  const b = await startNode(t, 2, { maxPendingHandshakesPerAddress: 4, handshakeTimeoutMs: 300 });
  const readers = await Promise.all(Array.from({ length: 60 }, () => rawConnect(b.address.port)));
  await waitFor(() => readers.filter((r) => r.closed).length >= 56, 'the connections over the cap closed', 3000);
  await waitFor(() => readers.every((r) => r.closed), 'the pending ones cut at the deadline', 3000);
  const lines = b.log.lines.length;
  t.ok(lines <= 20, `at most the budget of 20 lines (got ${lines})`);
  t.ok(b.log.find((l) => l.msg === 'node-to-node connection refused: too many handshakes pending from its address'));
  // The slots are free again: a real dialer from the same address gets in.
  const { verdict } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  t.match(verdict, { t: 'welcome' });
});

t.test('a membersOnly channel serves members only: others get a refusal, their messages are dropped', async (t) => {
  const served: [number, unknown][] = [];
  const b = await startNode(t, 2);
  b.transport.openChannel('data', {
    onMessage: (from, message) => served.push([from, message]),
    onRequest: async (from, body) => {
      served.push([from, body]);
      return 'served';
    },
    membersOnly: true,
  });
  const stranger = await rawDial({ port: b.address.port, nodeId: 77, secret: secretOf(7) });
  stranger.reader.write([5, 2, 1, { kind: 'read' }]);
  t.same(await stranger.reader.next('the refusal'), [3, 1, 'node 77 is not a member of this cluster'], 'before any member list');
  b.transport.setMembers([1, 2, 3]);
  stranger.reader.write([4, 2, { kind: 'release' }]);
  stranger.reader.write([5, 2, 2, { kind: 'take' }]);
  t.same(await stranger.reader.next('the refusal'), [3, 2, 'node 77 is not a member of this cluster']);
  t.same(served, [], 'nothing reached the handlers');
  t.ok(b.log.find((l) => l.msg === 'node-to-node frame from a node that is not a member refused' && l.obj['peer'] === 77));
  t.notOk(stranger.reader.closed, 'the connection stays: the other channels are the metadata layer\'s to judge');
  const member = await rawDial({ port: b.address.port, nodeId: 3, secret: secretOf(7) });
  member.reader.write([5, 2, 1, { kind: 'read' }]);
  t.same(await member.reader.next('the answer'), [2, 1, 'served']);
  t.same(served, [[3, { kind: 'read' }]]);
});
