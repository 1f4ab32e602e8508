// Goal: the node-wide produce limits and failure latch of spec §7 and §8: the batch body budget (503 with
// Retry-After: 1, bodies of 1 MiB or less untouched, the share given back when the client goes away), the
// per-identity produce cap (429 with Retry-After), and the ingress log failure latch (500 for every produce until
// restart, consume and /readyz unaffected, svc_ingress_wal_failed 1).
// Method: black box; requests held half-sent on raw sockets keep work in flight; the latch uses the node's named
// fault point test.fault_points=ingress.write. After the refusals each topic is read back (test/helpers/stored.ts;
// under the latch nothing can be produced, so the partition statistics): only the accepted requests are stored.
import t from 'tap';
import { connect, type Socket } from 'node:net';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { assertError, Client, pollUntil } from '../helpers/http.js';
import { storedTotal } from '../helpers/stored.js';

const MiB = 1024 * 1024;

/** A node torn down with the file (the root t), whichever subtest starts it. */
function started(args: string[]): Promise<StartedNode> {
  return startNodeFor(t, { args });
}

/** Sends a request line, headers and the first bodyStart bytes of a body, and keeps the socket open. */
function holdRequest(node: StartedNode, path: string, contentLength: number, bodyStart: Buffer): Promise<{ socket: Socket; answer: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(node.port, '127.0.0.1', () => {
      socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${node.auth}\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`);
      socket.write(bodyStart);
      let text = '';
      const answer = new Promise<string>((done) => {
        socket.on('data', (chunk) => (text += chunk.toString('latin1')));
        socket.on('close', () => done(text));
        socket.on('error', () => done(text));
      });
      resolve({ socket, answer });
    });
    socket.once('error', reject);
  });
}

t.test('batch body budget: 503 with Retry-After 1 while full; small bodies pass; an abort gives the share back', async (t) => {
  const node = await started(['--set', 'http.max_batch_body_bytes_in_flight=16MiB']);
  const api = new Client(node.url, node.auth);
  t.equal((await api.post('/v1/topics', { name: 'budget' })).status, 201);
  const held = await holdRequest(node, '/v1/topics/budget/produce/batch', 12 * MiB, Buffer.from('{"messages":['));
  // A second big body is refused from its headers alone: the node answers and closes without reading it. The first
  // request's share is taken when its headers arrive, so poll (bounded) until that has happened.
  const refused = await pollUntil(async () => {
    const second = await holdRequest(node, '/v1/topics/budget/produce/batch', 5 * MiB, Buffer.from('{'));
    const text = await second.answer;
    return text.startsWith('HTTP/1.1 503') ? text : undefined;
  }, 3000);
  t.ok(refused, 'a second big body is refused while the first holds the budget');
  t.match(refused ?? '', /\r\nRetry-After: 1\r\n/i, 'Retry-After: 1');
  t.match(refused ?? '', /\{"error":"[^"]*budget[^"]*"\}/, 'the error names the budget');
  const small = await api.post('/v1/topics/budget/produce/batch', { messages: [{ payload: { ok: 1 } }] });
  t.equal(small.status, 202, 'a body of 1 MiB or less never touches the budget');
  held.socket.destroy();
  const payload = 'x'.repeat(1_000_000);
  const big = JSON.stringify({ messages: Array.from({ length: 6 }, () => ({ payload })) });
  t.ok(big.length > 5 * MiB);
  const accepted = await pollUntil(async () => {
    const res = await api.post('/v1/topics/budget/produce/batch', big);
    return res.status === 202 ? res : undefined;
  }, 3000);
  t.ok(accepted, 'after the client went away its share is back and a big body is accepted');
  if (accepted) t.same(accepted.json(), { accepted: 6 });
  t.equal(await storedTotal(node, 'budget'), 7, 'the small body and the big one stored; the refused and the abandoned not');
});

t.test('per-identity produce cap: 429 with Retry-After while at the cap', async (t) => {
  const node = await started(['--set', 'http.max_produce_in_flight_per_identity=1']);
  const api = new Client(node.url, node.auth);
  t.equal((await api.post('/v1/topics', { name: 'capped' })).status, 201);
  const held = await holdRequest(node, '/v1/topics/capped/produce', 12, Buffer.from('{"a":'));
  const refused = await pollUntil(async () => {
    const res = await api.post('/v1/topics/capped/produce', { b: 1 });
    return res.status === 429 ? res : undefined;
  }, 3000);
  t.ok(refused, 'a second produce of the same user is refused');
  if (refused) {
    assertError(t, refused, 429, 'produce');
    t.ok(Number(refused.headers['retry-after']) >= 1, 'Retry-After is set');
  }
  held.socket.write('1234567}');
  const answer = await held.answer;
  t.match(answer, /^HTTP\/1\.1 202/, 'the held produce completes with 202');
  const after = await api.post('/v1/topics/capped/produce', { c: 1 });
  t.equal(after.status, 202, 'below the cap again');
  t.equal(await storedTotal(node, 'capped'), 2, 'the held produce and the last one stored; the refused not');
});

t.test('an ingress log write failure latches 500 for produces; consume and readiness go on', async (t) => {
  const node = await started(['--set', 'test.fault_points=ingress.write']);
  const api = new Client(node.url, node.auth);
  t.equal((await api.post('/v1/topics', { name: 'latched' })).status, 201, 'metadata does not use the ingress log');
  assertError(t, await api.post('/v1/topics/latched/produce', { a: 1 }), 500, 'ingress');
  assertError(t, await api.post('/v1/topics/latched/produce', { a: 2 }), 500, 'ingress', 'still failing');
  assertError(t, await api.post('/v1/topics/latched/produce/batch', { messages: [{ payload: 1 }] }), 500, 'ingress', 'batch too');
  t.equal((await api.get('/v1/topics/latched/consume')).status, 204, 'consume is unaffected');
  t.equal((await api.get('/readyz', { auth: null })).status, 200, '/readyz is unaffected');
  const metrics = await api.get('/metrics');
  t.match(metrics.text, /\nsvc_ingress_wal_failed 1\n/);
  const stats = (await api.get('/v1/topics/latched')).json() as { partition_stats: { next_offset: number }[] };
  t.same(stats.partition_stats.map((p) => p.next_offset), stats.partition_stats.map(() => 0), 'nothing stored');
});
