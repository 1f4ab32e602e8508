// Goal: several channels over one transport: the metadata and data channels share one listener and one connection
// pair without crossing (a frame of one channel never reaches the other's handlers, replies go back to the channel
// that asked); a frame for a channel not open on the receiver, or for an id no node knows, is refused cleanly (the
// message dropped with a log line, the request answered with a remote_error, the connection kept); each channel's
// queue is bounded on its own; closing a channel fails only its own requests, and the transport closes with its last
// channel. Method: transports on 127.0.0.1 port 0 and a raw socket speaking the handshake (transport_helpers.ts);
// every wait is bounded.
import t from 'tap';
import { connect } from 'node:net';
import { TransportError } from '../../src/transport/peer_transport.js';
import { loopback, rawDial, secretOf, sleep, startNode, waitFor, type Node } from './transport_helpers.js';

interface DataSide {
  received: [number, unknown][];
  requests: unknown[];
}

/** Opens the data channel on node beside its metadata channel; requests are echoed with the channel's name. */
function openData(node: Node): DataSide & { channel: ReturnType<Node['transport']['openChannel']> } {
  const side: DataSide = { received: [], requests: [] };
  const channel = node.transport.openChannel('data', {
    onMessage: (from, message) => side.received.push([from, message]),
    onRequest: async (_from, body) => {
      side.requests.push(body);
      return { channel: 'data', body };
    },
  });
  return { ...side, channel };
}

function connectionOpens(node: Node): number {
  return node.log.lines.filter((l) => l.msg === 'node-to-node connection open').length;
}

t.test('two channels share one listener and one connection pair without crossing', async (t) => {
  const metadataRequests: unknown[] = [];
  const a = await startNode(t, 1);
  const b = await startNode(t, 2, {
    onRequest: async (_from, body) => {
      metadataRequests.push(body);
      return { channel: 'metadata', body };
    },
  });
  const aData = openData(a);
  const bData = openData(b);
  a.channel.setPeer(2, b.address);
  for (let i = 0; i < 50; i++) {
    a.channel.send(2, { raft: i });
    aData.channel.send(2, { record: i });
  }
  const [metadataReply, dataReply] = await Promise.all([a.channel.request(2, 'm?', 2000), aData.channel.request(2, 'd?', 2000)]);
  t.same(metadataReply, { channel: 'metadata', body: 'm?' }, 'the metadata request answered by the metadata handler');
  t.same(dataReply, { channel: 'data', body: 'd?' }, 'the data request answered by the data handler');
  await waitFor(() => b.received.length === 50 && bData.received.length === 50, 'both channels delivered');
  t.same(b.received.map(([, m]) => m), [...Array(50).keys()].map((i) => ({ raft: i })), 'only metadata frames, in order');
  t.same(bData.received.map(([, m]) => m), [...Array(50).keys()].map((i) => ({ record: i })), 'only data frames, in order');
  t.same(metadataRequests, ['m?']);
  t.same(bData.requests, ['d?']);
  t.ok(bData.received.every(([from]) => from === 1) && b.received.every(([from]) => from === 1), 'sender is node 1');
  // B answers on the connection A dialled: both directions and both channels ride one authenticated connection.
  bData.channel.send(1, 'back on data');
  b.channel.send(1, 'back on metadata');
  await waitFor(() => aData.received.length === 1 && a.received.length === 1, 'replies the other way');
  t.same([aData.received, a.received], [[[2, 'back on data']], [[2, 'back on metadata']]]);
  t.equal(connectionOpens(a), 1, 'one connection opened on node 1');
  t.equal(connectionOpens(b), 1, 'one connection opened on node 2');
  t.same([a.transport.connectedPeers(), b.transport.connectedPeers()], [[2], [1]]);
});

t.test('a channel not open on the receiver is refused cleanly; the connection keeps serving', async (t) => {
  const a = await startNode(t, 1);
  const b = await startNode(t, 2, { onRequest: async (_from, body) => body });
  const aData = openData(a);
  a.channel.setPeer(2, b.address);
  aData.channel.send(2, 'nobody listens');
  const refused = await aData.channel.request(2, 'anyone?', 2000).catch((error: unknown) => error);
  t.ok(refused instanceof TransportError, 'a TransportError');
  t.match(refused, { code: 'remote_error', message: 'channel data is not open on node 2' });
  t.ok(b.log.find((l) => l.msg.includes('channel not open here') && l.obj['channel'] === 2), 'the drop is logged');
  t.equal(await a.channel.request(2, 'still there', 2000), 'still there', 'the metadata channel still answers');
  a.channel.send(2, 'after');
  await waitFor(() => b.received.length === 1, 'metadata message after the refusal');
  t.same(b.received, [[1, 'after']], 'the data message never reached the metadata handler');
  t.equal(connectionOpens(a), 1, 'no reconnect: the connection was kept');
});

t.test('a channel id no node knows, from a raw peer: dropped or refused, never a crash; the frames on the wire', async (t) => {
  const b = await startNode(t, 2);
  const { reader, verdict } = await rawDial({ port: b.address.port, nodeId: 1, secret: secretOf(7) });
  t.match(verdict, { t: 'welcome' });
  reader.write([4, 99, 'unknown channel message']);
  reader.write([5, 99, 7, 'unknown channel request']);
  t.same(await reader.next('the refusal of the request'), [3, 7, 'channel #99 is not open on node 2']);
  reader.write([0, 'known channel']);
  await waitFor(() => b.received.length === 1, 'the metadata message after');
  t.same(b.received, [[1, 'known channel']]);
  t.notOk(reader.closed, 'the connection is kept');
  // On the wire: the metadata channel's frames are version 1's (a node of that release still follows Raft), the
  // data channel's name their channel.
  const bData = openData(b);
  b.channel.send(1, 'raft');
  bData.channel.send(1, 'record');
  t.same([await reader.next('metadata frame'), await reader.next('data frame')], [[0, 'raft'], [4, 2, 'record']]);
  // A channel that is not a small integer is a broken frame: that connection goes, the node stays.
  reader.write([4, 'metadata', 'x']);
  await waitFor(() => reader.closed, 'close on a malformed channel');
  t.ok(b.log.find((l) => l.obj['reason'] === 'data frame without a channel'));
  reader.socket.destroy();
});

t.test('closing a channel fails only its requests; the transport closes with its last channel', async (t) => {
  const a = await startNode(t, 1);
  const b = await startNode(t, 2, { onRequest: () => new Promise(() => {}) });
  const aData = openData(a);
  b.transport.openChannel('data', { onMessage: () => {}, onRequest: () => new Promise(() => {}) });
  a.channel.setPeer(2, b.address);
  const metadataPending = a.channel.request(2, 'm', 300).catch((error: unknown) => error);
  const dataPending = aData.channel.request(2, 'd', 10_000).catch((error: unknown) => error);
  await waitFor(() => a.transport.connectedPeers().length === 1, 'connected');
  await aData.channel.close();
  t.match(await dataPending, { code: 'closed', message: 'channel data closed' });
  t.match(await metadataPending, { code: 'timeout' }, 'the metadata request ran its own course');
  await t.rejects(aData.channel.request(2, 'again', 500), { code: 'closed' }, 'a closed channel takes no request');
  t.throws(() => a.transport.openChannel('metadata', { onMessage: () => {} }), /already open/);
  await a.channel.close();
  // The listener's close completes in the background: dial until refused (bounded) rather than after a guessed while.
  const dialRefused = (): Promise<boolean> => new Promise<boolean>((resolve) => {
    const socket = connect({ host: loopback, port: a.address.port });
    socket.once('connect', () => (socket.destroy(), resolve(false)));
    socket.once('error', () => resolve(true));
  });
  let refused = await dialRefused();
  for (const deadline = Date.now() + 10_000; !refused && Date.now() < deadline; refused = await dialRefused()) await sleep(20);
  t.ok(refused, 'the listener closed with the last channel');
});

t.test('each channel has its own queue bound: a busy channel never pushes out another\'s frames', async (t) => {
  const sender = await startNode(t, 1, { maxQueuedMessages: 3 });
  const senderData = openData(sender);
  sender.channel.send(2, 'raft before');
  for (let i = 0; i < 10; i++) senderData.channel.send(2, i); // no address yet: queued, not dialled
  sender.channel.send(2, 'raft after');
  t.ok(sender.log.find((l) => l.msg.includes('queue full') && l.obj['channel'] === 2), 'the data channel drops its own oldest');
  const receiver = await startNode(t, 2);
  const receiverData = openData(receiver);
  sender.channel.setPeer(2, receiver.address);
  await waitFor(() => receiver.received.length === 2 && receiverData.received.length === 3, 'both queues flushed');
  t.same(receiver.received.map(([, m]) => m), ['raft before', 'raft after'], 'no metadata frame was dropped');
  t.same(receiverData.received.map(([, m]) => m), [7, 8, 9], 'the data channel kept its newest 3');
});
