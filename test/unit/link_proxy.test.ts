// Goal: the link fault harness (test/helpers/link_proxy.ts) does what the cluster crash loop relies on: forwards
// both ways byte for byte; holds bytes at least the delay; stall holds bytes and delivers them at the heal; drop forwards nothing and closes nothing, and a heal then
// closes what lost bytes; cut closes every connection of the node and refuses new ones until healed; a fault hits
// connections the node dialled into another node's front (attributed by the hello); a destination that does not
// read pauses the source instead of growing the proxy's buffers; transportHelloNodeId reads a transport hello.
// Method: real loopback sockets against small servers in this process; absence is checked after a bounded wait.
import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { Packr } from 'msgpackr';
import { LinkProxy, transportHelloNodeId } from '../helpers/link_proxy.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Upstream { server: Server; port: number; sockets: Socket[]; received: () => Buffer }

/** A server that echoes (or, with echo false, only records) what it reads. */
async function upstream(t: { teardown(fn: () => unknown): void }, echo = true): Promise<Upstream> {
  const sockets: Socket[] = [];
  const chunks: Buffer[] = [];
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on('error', () => {});
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      if (echo) socket.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { server, port: (server.address() as { port: number }).port, sockets, received: () => Buffer.concat(chunks) };
}

interface Dialer { socket: Socket; received: () => Buffer; closed: Promise<void>; isClosed: () => boolean }

async function dial(port: number): Promise<Dialer> {
  const socket = connect({ host: '127.0.0.1', port });
  const chunks: Buffer[] = [];
  let closedFlag = false;
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.on('error', () => {});
  const closed = new Promise<void>((resolve) => socket.once('close', () => {
    closedFlag = true;
    resolve();
  }));
  await new Promise<void>((resolve) => {
    socket.once('connect', () => resolve());
    socket.once('close', () => resolve());
  });
  return { socket, received: () => Buffer.concat(chunks), closed, isClosed: () => closedFlag };
}

async function until(probe: () => boolean, timeoutMs = 5_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (probe()) return true;
    await sleep(5);
  }
  return probe();
}

/** Test dialers name themselves in a first line "id\n". */
function lineIdentify(head: Buffer): number | undefined | null {
  const end = head.indexOf(10);
  if (end < 0) return null;
  const id = Number(head.subarray(0, end).toString());
  return Number.isInteger(id) ? id : undefined;
}

async function proxyFor(t: { teardown(fn: () => unknown): void }, identify = true, bufferBytes?: number): Promise<LinkProxy> {
  const proxy = new LinkProxy({ identify: identify ? lineIdentify : undefined, bufferBytes });
  t.teardown(() => proxy.close());
  return proxy;
}

/** An echoing upstream behind a proxy that fronts node 1 without identification. */
async function frontedNode1(t: { teardown(fn: () => unknown): void }): Promise<{ server: Upstream; proxy: LinkProxy; port: number }> {
  const server = await upstream(t);
  const proxy = await proxyFor(t, false);
  return { server, proxy, port: await proxy.front(1, server.port) };
}

/** A connection through port whose first bytes made the round trip. */
async function warmConnection(t: Pick<Test, 'ok'>, port: number, first: string): Promise<Dialer> {
  const client = await dial(port);
  client.socket.write(first);
  t.ok(await until(() => client.received().toString() === first), `${first}: forwarded both ways`);
  return client;
}

t.test('forwards both ways byte for byte', async (t) => {
  const { server, port } = await frontedNode1(t);
  const client = await dial(port);
  const payload = Buffer.alloc(3 * 1024 * 1024);
  for (let i = 0; i < payload.length; i++) payload[i] = (i * 31 + (i >> 10)) & 0xff;
  client.socket.write(payload);
  t.ok(await until(() => client.received().length >= payload.length, 10_000), 'the echo came back');
  t.ok(client.received().equals(payload), 'the same bytes, in order');
  t.ok(server.received().equals(payload), 'the upstream got them all');
  client.socket.destroy();
});

t.test('delay holds bytes at least that long, in order', async (t) => {
  const { proxy, port } = await frontedNode1(t);
  const client = await warmConnection(t, port, 'warm');
  proxy.delay(1, 200);
  const sentAt = Date.now();
  client.socket.write('a');
  client.socket.write('b');
  t.ok(await until(() => client.received().toString() === 'warmab'), 'delayed bytes arrive in order');
  // Up and down are each held 200 ms; timers never fire early.
  t.ok(Date.now() - sentAt >= 400 - 5, `the round trip took at least twice the delay (${Date.now() - sentAt} ms)`);
  proxy.heal(1);
  client.socket.write('c');
  t.ok(await until(() => client.received().toString() === 'warmabc'), 'healed: forwarded again on the same connection');
  t.notOk(client.isClosed(), 'a delay closes nothing');
  client.socket.destroy();
});

t.test('drop forwards nothing and closes nothing; heal closes what lost bytes', async (t) => {
  const { server, proxy, port } = await frontedNode1(t);
  const client = await warmConnection(t, port, 'one');
  proxy.drop(1);
  client.socket.write('two');
  const fresh = await dial(port);
  fresh.socket.write('three');
  await sleep(300);
  t.equal(server.received().toString(), 'one', 'nothing reached the upstream while dropped');
  t.equal(client.received().toString(), 'one', 'nothing came back');
  t.notOk(client.isClosed(), 'the old connection stays open');
  t.notOk(fresh.isClosed(), 'a new connection is accepted and stays open');
  proxy.heal(1);
  await Promise.all([client.closed, fresh.closed]);
  t.pass('both connections that lost bytes were closed at the heal');
  const after = await dial(port);
  after.socket.write('four');
  t.ok(await until(() => after.received().toString() === 'four'), 'a connection after the heal works');
  after.socket.destroy();
});

t.test('stall holds bytes, closes nothing, and delivers them in order at the heal', async (t) => {
  const { server, proxy, port } = await frontedNode1(t);
  const client = await warmConnection(t, port, 'one');
  proxy.stall(1);
  client.socket.write('two');
  client.socket.write('three');
  await sleep(300);
  t.equal(server.received().toString(), 'one', 'nothing reached the upstream while stalled');
  t.notOk(client.isClosed(), 'the connection stays open');
  proxy.heal(1);
  t.ok(await until(() => client.received().toString() === 'onetwothree'), 'the held bytes arrive at the heal, in order');
  t.notOk(client.isClosed(), 'and the connection carries on');
  client.socket.destroy();
});

t.test('cut closes every connection of the node and refuses new ones until healed', async (t) => {
  const { proxy, port } = await frontedNode1(t);
  const first = await dial(port);
  const second = await dial(port);
  first.socket.write('x');
  t.ok(await until(() => first.received().toString() === 'x'));
  proxy.cut(1);
  await Promise.all([first.closed, second.closed]);
  t.pass('open connections closed');
  const refused = await dial(port);
  await refused.closed;
  t.equal(refused.received().length, 0, 'a new connection is closed at once, nothing forwarded');
  t.ok(proxy.refused >= 1, 'counted as refused');
  proxy.heal(1);
  const healed = await dial(port);
  healed.socket.write('y');
  t.ok(await until(() => healed.received().toString() === 'y'), 'healed: new connections work');
  healed.socket.destroy();
});

t.test('a node\'s fault hits the connections it dialled into other fronts', async (t) => {
  const server = await upstream(t);
  const proxy = await proxyFor(t);
  const front2 = await proxy.front(2, server.port);
  await proxy.front(3, server.port);
  const from1 = await dial(front2);
  const from3 = await dial(front2);
  from1.socket.write('1\nhello');
  from3.socket.write('3\nhello');
  t.ok(await until(() => from1.received().toString() === '1\nhello' && from3.received().toString() === '3\nhello'), 'both forwarded');
  proxy.cut(1);
  await from1.closed;
  t.pass('node 1\'s connection into node 2\'s front closed');
  await sleep(100);
  t.notOk(from3.isClosed(), 'node 3\'s connection to node 2 stays');
  const again = await dial(front2);
  again.socket.write('1\nretry');
  await again.closed;
  t.pass('node 1 cannot dial node 2 while cut');
  proxy.heal(1);
  from3.socket.write('!');
  t.ok(await until(() => from3.received().toString() === '3\nhello!'), 'the other link still carries bytes');
  from3.socket.destroy();
});

t.test('a destination that does not read pauses the source; buffers stay bounded', async (t) => {
  let held: Socket | undefined;
  const digest = createHash('sha256');
  let receivedBytes = 0;
  const server = createServer((socket) => {
    held = socket;
    socket.pause();
    socket.on('data', (chunk: Buffer) => {
      digest.update(chunk);
      receivedBytes += chunk.length;
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  t.teardown(() => {
    held?.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const bufferBytes = 64 * 1024;
  const proxy = await proxyFor(t, false, bufferBytes);
  const port = await proxy.front(1, (server.address() as { port: number }).port);
  const client = await dial(port);
  const total = 32 * 1024 * 1024;
  const block = Buffer.alloc(1024 * 1024, 7);
  const sent = createHash('sha256');
  for (let i = 0; i < total / block.length; i++) {
    client.socket.write(block);
    sent.update(block);
  }
  await sleep(500);
  const buffered = proxy.bufferedBytes();
  // The pipe's bound, then the socket's write buffer (16 KiB high-water mark) plus the read chunk (64 KiB at most)
  // that filled it.
  t.ok(buffered <= bufferBytes + 16 * 1024 + 64 * 1024, `the proxy holds at most its bound plus a socket buffer (${buffered} bytes)`);
  t.ok(buffered > 0, 'bytes are held while the destination does not read');
  t.ok(client.socket.writableLength > total / 2, 'the rest waits in the sender, not in the proxy');
  held!.resume();
  t.ok(await until(() => receivedBytes === total, 30_000), 'every byte arrives once the destination reads');
  t.equal(digest.digest('hex'), sent.digest('hex'), 'intact');
  client.socket.destroy();
});

t.test('transportHelloNodeId reads the dialer id from a transport hello', async (t) => {
  const packr = new Packr({ useRecords: false });
  const body = packr.pack({ t: 'hello', v: 1, nodeId: 3, instance: new Uint8Array(16), nonce: new Uint8Array(32), oneshot: false });
  const frame = Buffer.alloc(4 + body.length);
  frame.writeUInt32BE(body.length, 0);
  frame.set(body, 4);
  t.equal(transportHelloNodeId(frame), 3);
  t.equal(transportHelloNodeId(frame.subarray(0, 10)), null, 'more bytes needed');
  t.equal(transportHelloNodeId(frame.subarray(0, 3)), null, 'no header yet');
  const other = packr.pack({ t: 'welcome' });
  const otherFrame = Buffer.concat([Buffer.from([0, 0, 0, other.length]), other]);
  t.equal(transportHelloNodeId(otherFrame), undefined, 'not a hello');
  t.equal(transportHelloNodeId(Buffer.from('GET / HTTP/1.1\r\n\r\n')), undefined, 'not a frame');
});
