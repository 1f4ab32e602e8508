// Goal: a channel used across a MessagePort behaves as the same channel used on the transport's thread: messages and
// requests both ways, a remote throw, a timeout and a refused body arrive as the same TransportError or RangeError,
// requestAt learns the peer's id, setPeer reaches the transport's peer table, close() fails what was pending and
// closes the channel on the transport; a channel served on the transport's thread lets the port side only send and
// ask, and outlives it. Method: two transports on 127.0.0.1 port 0, node 1's data channel bridged over a
// MessageChannel (the same code whether the other end is a thread or not; bench/forward_hop.ts runs it across a real
// worker thread). Every wait is bounded.
import t, { type Test } from 'tap';
import { MessageChannel } from 'node:worker_threads';
import { bridgeChannel, PortChannel } from '../../src/transport/port_channel.js';
import { TransportError } from '../../src/transport/peer_transport.js';
import { startNode, waitFor } from './transport_helpers.js';

async function bridged(t: Test) {
  const a = await startNode(t, 1);
  const b = await startNode(t, 2);
  const received: [number, unknown][] = [];
  const bReceived: [number, unknown][] = [];
  const { port1, port2 } = new MessageChannel();
  bridgeChannel(a.transport, 'data', port1);
  const channel = new PortChannel('data', port2, {
    onMessage: (from, message) => received.push([from, message]),
    onRequest: async (from, body) => {
      if (body === 'throw') throw new Error('not the owner');
      return { from, body, side: 'port' };
    },
  });
  t.teardown(() => channel.close());
  const bData = b.transport.openChannel('data', {
    onMessage: (from, message) => bReceived.push([from, message]),
    onRequest: async (_from, body) => (body === 'slow' ? new Promise(() => {}) : { echo: body }),
  });
  channel.setPeer(2, b.address);
  bData.setPeer(1, a.address);
  return { a, b, channel, bData, received, bReceived };
}

t.test('messages and requests both ways across the port', async (t) => {
  const { channel, bData, received, bReceived } = await bridged(t);
  channel.send(2, { record: new Uint8Array([1, 2, 3]) });
  await waitFor(() => bReceived.length === 1, 'message from the port side');
  t.same(bReceived, [[1, { record: new Uint8Array([1, 2, 3]) }]]);
  t.same(await channel.request(2, 'ping', 2000), { echo: 'ping' }, 'a request from the port side answered');
  bData.send(1, 'to the port side');
  await waitFor(() => received.length === 1, 'message to the port side');
  t.same(received, [[2, 'to the port side']]);
  t.same(await bData.request(1, 'hi', 2000), { from: 2, body: 'hi', side: 'port' }, 'the port side answers a request');
  await t.rejects(bData.request(1, 'throw', 2000), { code: 'remote_error', message: 'not the owner' });
});

t.test('failures cross the port as the transport made them', async (t) => {
  const { b, channel } = await bridged(t);
  const timeout = await channel.request(2, 'slow', 100).catch((error: unknown) => error);
  t.ok(timeout instanceof TransportError, 'a TransportError on the port side');
  t.match(timeout, { code: 'timeout' });
  await t.rejects(channel.request(2, 'x', 0), RangeError, 'a bad timeout is a RangeError');
  await t.rejects(channel.request(9, 'x', 1000), { code: 'unreachable' }, 'no address');
  t.same(await channel.requestAt(b.address, 'who?', 2000), { from: 2, reply: { echo: 'who?' } }, 'requestAt learns the id');
});

t.test('close fails pending requests and closes the channel on the transport', async (t) => {
  const { a, b, channel, bData } = await bridged(t);
  const pending = channel.request(2, 'slow', 10_000).catch((error: unknown) => error);
  await waitFor(() => a.transport.connectedPeers().length === 1, 'connected');
  await channel.close();
  t.match(await pending, { code: 'closed' });
  await t.rejects(channel.request(2, 'x', 1000), { code: 'closed' }, 'after close');
  channel.send(2, 'ignored'); // never throws
  await t.rejects(bData.request(1, 'anyone?', 2000), { message: 'channel data is not open on node 1' });
  a.channel.send(2, 'metadata still');
  await waitFor(() => b.received.length === 1, 'the metadata channel still serves');
  t.same(b.received, [[1, 'metadata still']]);
});

t.test('a channel served on the transport\'s thread: the port side only sends and asks, and may go', async (t) => {
  const a = await startNode(t, 1);
  const b = await startNode(t, 2);
  const servedHere: unknown[] = [];
  const portHandled: unknown[] = [];
  const { port1, port2 } = new MessageChannel();
  const local = bridgeChannel(a.transport, 'data', port1, {
    onMessage: (_from, message) => servedHere.push(message),
    onRequest: async (_from, body) => ({ servedHere: body }),
  });
  const front = new PortChannel('data', port2, {
    onMessage: (_from, message) => portHandled.push(message),
    onRequest: async () => 'never asked',
  });
  const bData = b.transport.openChannel('data', { onMessage: () => {}, onRequest: async (_from, body) => ({ echo: body }) });
  front.setPeer(2, b.address);
  bData.setPeer(1, a.address);
  t.same(await front.request(2, 'forwarded', 2000), { echo: 'forwarded' }, 'the port side asks a peer');
  t.same(await bData.request(1, 'to node 1', 2000), { servedHere: 'to node 1' }, 'served on the transport\'s thread');
  bData.send(1, 'message');
  await waitFor(() => servedHere.length === 1, 'message served here');
  await front.close();
  t.same(await bData.request(1, 'after the port went', 2000), { servedHere: 'after the port went' }, 'still served');
  t.same(portHandled, [], 'nothing reached the port side');
  await local.close();
});
