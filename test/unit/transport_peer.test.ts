// Goal: PeerTransport's delivery and requests between real transports: messages in order among three nodes,
// request/response with a remote throw, a timeout and an unreachable peer, requestAt learning a peer's id,
// close() failing pending requests, the per-peer queue bound dropping the oldest, and backpressure against a
// peer that stops reading. Method: transports on 127.0.0.1 port 0 (a raw socket where a peer must misbehave);
// every wait is bounded.
import t from 'tap';
import { createServer } from 'node:net';
import { TransportError } from '../../src/transport/peer_transport.js';
import { createLogger } from '../../src/util/log.js';
import { loopback, meshOf, rawStallingAcceptor, secretOf, sleep, startNode, waitFor } from './transport_helpers.js';

async function rejection(promise: Promise<unknown>): Promise<TransportError> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TransportError) return error;
    throw error;
  }
  throw new Error('expected a rejection');
}

t.test('messages between three transports arrive in order per sender', async (t) => {
  const nodes = [await startNode(t, 1), await startNode(t, 2), await startNode(t, 3)];
  meshOf(nodes);
  const perPeer = 200;
  for (let i = 0; i < perPeer; i++) {
    for (const from of nodes) {
      for (const to of nodes) {
        if (from !== to) from.channel.send(to.id, { seq: i, from: from.id, bytes: new Uint8Array([i & 0xff]) });
      }
    }
  }
  for (const node of nodes) await waitFor(() => node.received.length === 2 * perPeer, `node ${node.id} inbox`);
  for (const node of nodes) {
    for (const from of nodes) {
      if (from === node) continue;
      const seqs = node.received.filter(([sender]) => sender === from.id).map(([, m]) => (m as { seq: number }).seq);
      t.same(seqs, [...Array(perPeer).keys()], `node ${node.id} got node ${from.id}'s messages in order`);
    }
    const first = node.received[0]?.[1] as { bytes: Uint8Array };
    t.equal(first.bytes.constructor, Uint8Array, 'byte strings arrive as Uint8Array');
    t.same(node.transport.connectedPeers(), nodes.filter((n) => n !== node).map((n) => n.id));
  }
});

t.test('request/response: a reply, a remote throw, a timeout, an unreachable peer', async (t) => {
  const server = await startNode(t, 2, {
    onRequest: async (from, body) => {
      const b = body as { op: string };
      if (b.op === 'echo') return { from, body };
      if (b.op === 'throw') throw new Error('not the leader');
      if (b.op === 'slow') return new Promise(() => {});
      return null;
    },
  });
  const client = await startNode(t, 1);
  client.transport.setPeer(2, server.address);
  t.same(await client.channel.request(2, { op: 'echo', data: new Uint8Array([1, 2]) }, 2000), {
    from: 1,
    body: { op: 'echo', data: new Uint8Array([1, 2]) },
  });
  const thrown = await rejection(client.channel.request(2, { op: 'throw' }, 2000));
  t.equal(thrown.code, 'remote_error');
  t.equal(thrown.message, 'not the leader');
  const slow = await rejection(client.channel.request(2, { op: 'slow' }, 100));
  t.equal(slow.code, 'timeout');
  t.equal(await client.channel.request(2, { op: 'other' }, 2000), null, 'the connection still serves after a timeout');

  t.equal((await rejection(client.channel.request(9, {}, 1000))).code, 'unreachable', 'no address known');
  // A port that was just free: the dial is refused, and the request fails at once, not at its timeout.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, loopback, resolve));
  const deadPort = (probe.address() as { port: number }).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  client.transport.setPeer(5, { host: loopback, port: deadPort });
  // A long timeout, so that failing well before it means "at once" even on a busy machine.
  const started = Date.now();
  const unreachable = await rejection(client.channel.request(5, {}, 20_000));
  t.equal(unreachable.code, 'unreachable');
  t.ok(Date.now() - started < 15_000, `failed before its 20 s timeout (${Date.now() - started} ms)`);

  const noHandler = await startNode(t, 3);
  client.transport.setPeer(3, noHandler.address);
  t.equal((await rejection(client.channel.request(3, {}, 2000))).code, 'remote_error', 'no onRequest');
});

t.test('requestAt reaches an address and learns the peer id, on a connection of its own', async (t) => {
  const seen: number[] = [];
  const leader = await startNode(t, 1, {
    onRequest: async (from, body) => {
      seen.push(from);
      return { welcome: body };
    },
  });
  // A pino logger is what the node passes; this also checks that it fits the log option's type.
  const joiner = await startNode(t, 4, { log: createLogger('silent') });
  t.same(await joiner.channel.requestAt(leader.address, 'join', 2000), { from: 1, reply: { welcome: 'join' } });
  t.same(seen, [4]);
  t.same(leader.transport.connectedPeers(), [], 'not a peer connection');
  const thrower = await startNode(t, 5, { onRequest: async () => Promise.reject(new Error('no')) });
  t.equal((await rejection(joiner.channel.requestAt(thrower.address, 'join', 2000))).code, 'remote_error');
  const stranger = await startNode(t, 6, { clusterSecret: secretOf(8) });
  t.equal((await rejection(joiner.channel.requestAt(stranger.address, 'join', 2000))).code, 'unreachable', 'wrong secret');
});

t.test('close() rejects pending requests with closed', async (t) => {
  const server = await startNode(t, 2, { onRequest: () => new Promise(() => {}) });
  const client = await startNode(t, 1);
  client.transport.setPeer(2, server.address);
  const pending = client.channel.request(2, {}, 10_000);
  const pendingAt = client.channel.requestAt(server.address, {}, 10_000);
  await waitFor(() => client.transport.connectedPeers().length === 1, 'connection');
  await client.transport.close();
  t.equal((await rejection(pending)).code, 'closed');
  t.equal((await rejection(pendingAt)).code, 'closed');
  t.equal((await rejection(client.channel.request(2, {}, 1000))).code, 'closed', 'after close');
  client.channel.send(2, 'ignored'); // never throws
});

t.test('the queue keeps the newest maxQueuedMessages while no connection serves', async (t) => {
  const sender = await startNode(t, 1, { maxQueuedMessages: 3 });
  for (let i = 0; i < 10; i++) sender.channel.send(2, i); // no address yet: queued, not dialled
  t.ok(sender.log.find((l) => l.msg.includes('queue full')), 'drops are logged');
  const receiver = await startNode(t, 2);
  sender.transport.setPeer(2, receiver.address);
  sender.channel.send(2, 'end');
  await waitFor(() => receiver.received.some(([, m]) => m === 'end'), 'end marker');
  t.same(receiver.received.map(([, m]) => m), [8, 9, 'end']);
});

t.test('a request dropped from a full queue fails at once with unreachable', async (t) => {
  // A listener that accepts and says nothing: the dial stays in its handshake, so frames stay queued.
  const silent = createServer(() => {});
  const sockets: import('node:net').Socket[] = [];
  silent.on('connection', (s) => sockets.push(s));
  await new Promise<void>((resolve) => silent.listen(0, loopback, resolve));
  t.teardown(async () => {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => silent.close(() => resolve()));
  });
  const sender = await startNode(t, 1, { maxQueuedMessages: 2 });
  sender.transport.setPeer(2, { host: loopback, port: (silent.address() as { port: number }).port });
  const request = sender.channel.request(2, 'q', 10_000);
  sender.channel.send(2, 'a');
  sender.channel.send(2, 'b');
  const error = await rejection(request);
  t.equal(error.code, 'unreachable');
  t.match(error.message, /queue full/);
});

t.test('a peer that stops reading: writes wait for drain and the queue stays bounded', async (t) => {
  const stalled = await rawStallingAcceptor(t, 2, secretOf(7));
  const sender = await startNode(t, 1, { maxQueuedMessages: 4 });
  sender.transport.setPeer(2, { host: loopback, port: stalled.port });
  sender.channel.send(2, 'first');
  await waitFor(() => sender.transport.connectedPeers().length === 1, 'connection to the stalled peer');
  const big = new Uint8Array(1024 * 1024);
  for (let i = 0; i < 200; i++) {
    sender.channel.send(2, big);
    if (i % 20 === 0) await sleep(5);
  }
  // 200 MiB were offered; the kernel buffers a few MiB and the socket's own buffer one frame, so only the
  // bounded queue can have taken the rest: most must have been dropped.
  await waitFor(() => sender.log.lines.some((l) => l.msg.includes('queue full') && (l.obj['droppedFrames'] as number) >= 128), 'drops');
  t.pass('oldest dropped while the socket pushed back');
});
