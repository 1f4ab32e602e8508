// Goal: one connection per peer pair and recovery from losses: when both ends dial at once the tie-break keeps
// one connection that serves both ways (and the other one is never used); a peer that closes and restarts on
// the same port is redialled with backoff (jitter from the injected random) and messages flow again; setPeer
// moves a peer to a new address, and an address answering with another id is refused; a new instance of a peer
// replaces a stale connection while a late dial of the same instance is refused; removePeer closes and forgets.
// Method: transports on 127.0.0.1 port 0 (raw handshaking sockets for the stale case), connection counts read
// from their 'connection open'/'lost' log lines; every wait is bounded.
import t from 'tap';
import { PeerTransport } from '../../src/transport/peer_transport.js';
import { freshInstance } from '../../src/transport/handshake.js';
import { loopback, rawDial, RecordingLog, secretOf, sleep, startNode, waitFor, type Node } from './transport_helpers.js';

function opened(node: Node): { role: unknown; peer: unknown }[] {
  return node.log.lines.filter((l) => l.msg === 'node-to-node connection open').map((l) => ({ role: l.obj['role'], peer: l.obj['peer'] }));
}

t.test('simultaneous dials end with one connection, dialled by the lower id, usable both ways', async (t) => {
  for (let round = 0; round < 10; round++) {
    const low = await startNode(t, 10 + 2 * round);
    const high = await startNode(t, 11 + 2 * round);
    low.transport.setPeer(high.id, high.address);
    high.transport.setPeer(low.id, low.address);
    // Same tick: both queue and both dial before either handshake can finish.
    low.channel.send(high.id, 'low 1');
    high.channel.send(low.id, 'high 1');
    await waitFor(() => low.received.length === 1 && high.received.length === 1, `round ${round} first messages`);
    low.channel.send(high.id, 'low 2');
    high.channel.send(low.id, 'high 2');
    await waitFor(() => low.received.length === 2 && high.received.length === 2, `round ${round} second messages`);
    await sleep(20);
    t.same(low.received.map(([, m]) => m), ['high 1', 'high 2'], `round ${round}: low's inbox`);
    t.same(high.received.map(([, m]) => m), ['low 1', 'low 2'], `round ${round}: high's inbox`);
    t.same(opened(low), [{ role: 'dialer', peer: high.id }], `round ${round}: low opened its own dial only`);
    t.same(opened(high), [{ role: 'acceptor', peer: low.id }], `round ${round}: high accepted low's dial only`);
    t.notOk(low.log.find((l) => l.msg.includes('lost')) ?? high.log.find((l) => l.msg.includes('lost')), 'no connection lost');
    await low.transport.close();
    await high.transport.close();
  }
});

t.test('a peer that closes and restarts on the same port is reconnected', async (t) => {
  let jitterDraws = 0;
  const a = await startNode(t, 1, {
    random: () => {
      jitterDraws += 1;
      return 0.5;
    },
  });
  const b = await startNode(t, 2);
  a.transport.setPeer(2, b.address);
  a.channel.send(2, 'before');
  await waitFor(() => b.received.length === 1, 'first message');
  await b.transport.close();
  await waitFor(() => a.transport.connectedPeers().length === 0, 'loss noticed');

  const log = new RecordingLog();
  const received: unknown[] = [];
  let restarted: PeerTransport | null = null;
  t.teardown(() => restarted?.close());
  // Down for a while: a's redials fail and back off (at most 200 ms apart here).
  await sleep(300);
  restarted = await PeerTransport.listen({
    nodeId: 2,
    clusterSecret: secretOf(7),
    listen: { host: loopback, port: b.address.port },
    log,
  });
  restarted.openChannel('metadata', { onMessage: (_from, message) => received.push(message) });
  await waitFor(() => a.transport.connectedPeers().length === 1, 'reconnected without a new send');
  for (let i = 0; i < 50; i++) a.channel.send(2, i);
  await waitFor(() => received.length === 50, 'messages after the restart');
  t.same(received, [...Array(50).keys()]);
  t.ok(a.log.find((l) => l.msg === 'node-to-node dial failed'), 'failed dials logged');
  t.ok(jitterDraws > 0, 'backoff jitter comes from the injected random');
});

t.test('setPeer with a new address redials there; an address answering with another id is refused', async (t) => {
  const a = await startNode(t, 1);
  const b = await startNode(t, 2);
  const c = await startNode(t, 3);
  // c's address given for node 2: the dialer refuses the connection once c proves it is node 3.
  a.transport.setPeer(2, c.address);
  a.channel.send(2, 'for b');
  await waitFor(() => a.log.lines.some((l) => String(l.obj['reason']).includes('another node id')), 'refusal');
  t.same(c.received, [], 'c got nothing meant for b');
  a.transport.setPeer(2, b.address);
  await waitFor(() => b.received.length === 1, 'delivered at the new address');
  t.same(b.received, [[1, 'for b']]);
  t.same(a.transport.connectedPeers(), [2]);
});

t.test('a new instance of a peer replaces a stale connection; a late dial of the same instance is refused', async (t) => {
  // The raw dialer has the higher id, so only the instance decides: the acceptor still holds the first connection
  // (the "stale" one, as if the peer had restarted without the close reaching us).
  const acceptor = await startNode(t, 2);
  const first = await rawDial({ port: acceptor.address.port, nodeId: 3, secret: secretOf(7) });
  t.match(first.verdict, { t: 'welcome' });
  const instance = freshInstance();
  const restarted = await rawDial({ port: acceptor.address.port, nodeId: 3, secret: secretOf(7), instance });
  t.match(restarted.verdict, { t: 'welcome' }, 'a new instance is admitted');
  await waitFor(() => first.reader.closed, 'the stale connection closed');
  const racer = await rawDial({ port: acceptor.address.port, nodeId: 3, secret: secretOf(7), instance });
  t.match(racer.verdict, { t: 'refused', reason: 'duplicate' }, 'the same instance again is a duplicate');
  await waitFor(() => racer.reader.closed, 'the duplicate closed');
  restarted.reader.write([0, 'still served']);
  await waitFor(() => acceptor.received.length === 1, 'message on the kept connection');
  t.same(acceptor.received, [[3, 'still served']]);
  t.same(acceptor.transport.connectedPeers(), [3]);
  for (const r of [first, restarted, racer]) r.reader.socket.destroy();
});

t.test('both ends of a restarted pair send at once: messages flow both ways again', async (t) => {
  const high = await startNode(t, 2);
  const low = await startNode(t, 1);
  low.transport.setPeer(2, high.address);
  high.transport.setPeer(1, low.address);
  low.channel.send(2, 'hello');
  await waitFor(() => high.received.length === 1, 'first');
  await low.transport.close();
  // Until high reads the close, a message to 1 goes into the dying socket and is lost (Raft tolerates loss).
  await waitFor(() => high.transport.connectedPeers().length === 0, 'loss noticed');
  const restarted = await startNode(t, 1, { listen: { host: loopback, port: low.address.port } });
  restarted.transport.setPeer(2, high.address);
  restarted.channel.send(2, 'again');
  high.channel.send(1, 'reply');
  await waitFor(() => high.received.length === 2 && restarted.received.length === 1, 'both ways after restart');
  t.same(high.received.map(([, m]) => m), ['hello', 'again']);
  t.same(restarted.received, [[2, 'reply']]);
});

t.test('removePeer closes the connection and forgets the peer', async (t) => {
  const a = await startNode(t, 1);
  const b = await startNode(t, 2, { onRequest: () => new Promise(() => {}) });
  a.transport.setPeer(2, b.address);
  const pending = a.channel.request(2, 'x', 5000).catch((error: unknown) => error);
  await waitFor(() => a.transport.connectedPeers().length === 1, 'connected');
  a.transport.removePeer(2);
  t.match(await pending, { code: 'closed' });
  t.same(a.transport.connectedPeers(), []);
  await waitFor(() => b.transport.connectedPeers().length === 0, 'b noticed');
  await sleep(100);
  t.same(b.transport.connectedPeers(), [], 'a does not redial a removed peer');
  await t.rejects(a.channel.request(2, 'y', 500), { code: 'unreachable' });
});
