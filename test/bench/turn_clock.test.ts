// Goal: end-to-end's stamps (bench/turn_clock.ts): every answer read in one event-loop turn gets the same time, the
// turn's first reading, and a later turn a later time; a connection stamps its replies with the clock it was given.
// Method: busy-wait inside one turn, then yield past the check phase; a loopback server answering a raw HttpConnection.
import { createServer, type AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { HttpConnection, requestBuffer } from '../../bench/http_conn.js';
import { turnNow } from '../../bench/turn_clock.js';

function busyWaitMs(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

t.test('one turn, one stamp; the next turn, a later one', async (t) => {
  const first = turnNow();
  busyWaitMs(3);
  t.equal(turnNow(), first, 'the same turn keeps its first stamp, however long it runs');
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  const next = turnNow();
  t.ok(next >= first + 3, `a later turn is stamped anew (${(next - first).toFixed(2)} ms later)`);
  t.ok(next <= performance.now(), 'never ahead of the clock');
});

t.test('a connection stamps its replies with the clock it was given, performance.now() by default', async (t) => {
  const server = createServer((socket) => {
    socket.on('data', () => socket.write('HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = { host: '127.0.0.1', port: (server.address() as AddressInfo).port };
  const request = requestBuffer(`http://127.0.0.1:${address.port}`, 'POST', '/p', {}, Buffer.from('x'));
  const fixedClock = new HttpConnection(address, () => 12_345);
  const ownClock = new HttpConnection(address);
  t.teardown(() => {
    fixedClock.destroy();
    ownClock.destroy();
  });
  const stamped = await fixedClock.request(request);
  t.equal(stamped.status, 202);
  t.equal(stamped.endedMs, 12_345, 'endedMs from the given clock');
  const before = performance.now();
  const plain = await ownClock.request(request);
  t.equal(plain.status, 202);
  t.ok(plain.endedMs >= before && plain.endedMs <= performance.now(), 'endedMs is performance.now() at the answer');
});
