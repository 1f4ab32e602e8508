// Goal: a compressed batch body counts against http.max_batch_body_bytes_in_flight by the size it decodes to, not
// only by its size as sent (spec §8, issue 27 point 1): when the budget cannot cover the decode, 503 with
// Retry-After: 1 and nothing stored; bodies that fit are answered 202 and stored; once the requests end the budget is
// whole again; a body of 1 MiB or less, as sent and decoded, never touches it.
// Method: black box, a node with the smallest budget (16 MiB). Part of it is held by an uncompressed body sent
// half-way on a raw socket (its share is taken from its Content-Length); compressed bodies of a few KiB that
// decode to several MiB are then sent; what is stored is read back by replay of partition 0, where every message
// is pinned.
import t, { type Test } from 'tap';
import { connect, type Socket } from 'node:net';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import { startNodeFor } from '../helpers/node.js';
import { assertError, Client, pollUntil, type HttpResponse } from '../helpers/http.js';

const MiB = 1024 * 1024;
const node = await startNodeFor(t, { args: ['--set', 'http.max_batch_body_bytes_in_flight=16MiB'] });
const api = new Client(node.url, node.auth);
const compressors: Record<string, (body: Buffer) => Buffer> = { zstd: zstdCompress, gzip: (body) => gzipSync(body) };

/** A batch of `count` messages pinned to partition 0, each a string payload of `payloadBytes` letters. */
function batch(count: number, payloadBytes: number): Buffer {
  const messages = Array.from({ length: count }, (_, i) => ({ payload: String.fromCharCode(97 + (i % 26)).repeat(payloadBytes), partition: 0 }));
  return Buffer.from(JSON.stringify({ messages }));
}

function produce(topic: string, encoding: string, plain: Buffer): Promise<HttpResponse> {
  const body = compressors[encoding]!(plain);
  const headers = { 'content-type': 'application/json', 'x-svc-client': 't', 'content-encoding': encoding };
  return api.post(`/v1/topics/${topic}/produce/batch`, body, { headers });
}

/** Sends a request line, headers and the first bytes of a body, and keeps the socket open. */
function holdRequest(path: string, contentLength: number, bodyStart: Buffer): Promise<{ socket: Socket; answer: Promise<string>; received: () => string }> {
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
      resolve({ socket, answer, received: () => text });
    });
    socket.once('error', reject);
  });
}

/** Holds `bytes` of the budget with a body being read; returns once a body of `probeBytes` is refused from its
 *  headers (503), so the hold is known to be in. */
async function holdBudget(topic: string, bytes: number, probeBytes: number): Promise<Socket | undefined> {
  const path = `/v1/topics/${topic}/produce/batch`;
  const held = await holdRequest(path, bytes, Buffer.from('{"messages":['));
  const refused = await pollUntil(async () => {
    const probe = await holdRequest(path, probeBytes, Buffer.from('{'));
    return (await probe.answer).startsWith('HTTP/1.1 503') ? true : undefined;
  }, 5000);
  // The hold itself must still be waiting for its body, not refused.
  if (refused === undefined || held.received() !== '') {
    held.socket.destroy();
    return undefined;
  }
  return held.socket;
}

/** Messages stored in partition 0: offsets 0..count-1 replay, count answers 204. Polls until `count` are in. */
async function assertStored(t: Test, topic: string, count: number): Promise<void> {
  const replay = (offset: number): Promise<HttpResponse> => api.get(`/v1/topics/${topic}/consume?partition=0&offset=${offset}`);
  if (count > 0) {
    const last = await pollUntil(async () => ((await replay(count - 1)).status === 200 ? true : undefined), 5000);
    t.ok(last, `offset ${count - 1} is stored`);
  }
  t.equal((await replay(count)).status, 204, `exactly ${count} messages stored`);
}

function assertBudgetFull(t: Test, res: HttpResponse, what: string): void {
  assertError(t, res, 503, 'budget', what);
  t.equal(res.headers['retry-after'], '1', `${what}: Retry-After: 1`);
}

for (const encoding of ['zstd', 'gzip']) {
  t.test(`${encoding}: a body whose decoded size the budget cannot cover is refused; the budget comes back whole`, async (t) => {
    const topic = `decoded-${encoding}`;
    t.equal((await api.post('/v1/topics', { name: topic, partitions: 3 })).status, 201);
    const six = batch(7, 900_000);
    t.ok(compressors[encoding]!(six).length < MiB && six.length > 6 * MiB, 'small as sent, over 6 MiB decoded');
    const twelve = await holdBudget(topic, 12 * MiB, 5 * MiB);
    t.ok(twelve, '12 MiB of the 16 MiB budget held by a body being read');
    if (twelve === undefined) return;
    assertBudgetFull(t, await produce(topic, encoding, six), 'decodes past the 4 MiB left');
    const three = batch(3, 900_000);
    t.equal((await produce(topic, encoding, three)).status, 202, 'a body decoding to 2.6 MiB fits the 4 MiB left');
    const four = await holdBudget(topic, 4 * MiB, 2 * MiB);
    t.ok(four, 'the rest held too: the budget is full');
    if (four === undefined) return;
    assertBudgetFull(t, await produce(topic, encoding, three), 'decodes to 2.6 MiB with the budget full');
    const small = await produce(topic, encoding, batch(1, 900_000));
    t.equal(small.status, 202, 'a body of 1 MiB or less, as sent and decoded, never touches the budget');
    twelve.destroy();
    four.destroy();
    // 15.9 MiB decoded needs all but 0.1 MiB of the budget: any share not given back refuses it.
    const full = batch(17, 980_000);
    t.ok(full.length > 15.8 * MiB && full.length < 16 * MiB);
    const accepted = await pollUntil(async () => {
      const res = await produce(topic, encoding, full);
      if (res.status !== 503) return res;
      assertBudgetFull(t, res, 'while the held body goes away');
      return undefined;
    }, 5000);
    t.equal(accepted?.status, 202, 'after the requests ended, a body decoding to nearly the whole budget is accepted');
    await assertStored(t, topic, 3 + 1 + 17);
  });
}

t.test('concurrent bodies: each is stored whole (202) or refused with 503 and Retry-After: 1, nothing else', async (t) => {
  const topic = 'decoded-burst';
  t.equal((await api.post('/v1/topics', { name: topic, partitions: 3 })).status, 201);
  const bodies = ['zstd', 'gzip', 'zstd', 'gzip', 'zstd', 'gzip', 'zstd', 'gzip'];
  const answers = await Promise.all(bodies.map((encoding) => produce(topic, encoding, batch(7, 900_000))));
  let stored = 0;
  answers.forEach((res, i) => {
    if (res.status === 202) {
      t.same(res.json(), { accepted: 7 }, `body ${i}: accepted whole`);
      stored += 7;
    } else {
      assertBudgetFull(t, res, `body ${i}`);
    }
  });
  t.ok(stored > 0, `${stored / 7} of ${bodies.length} accepted`);
  await assertStored(t, topic, stored);
  // Whatever the burst took is back: a body that needs nearly the whole budget fits at once.
  const full = await produce(topic, 'zstd', batch(17, 980_000));
  t.equal(full.status, 202, 'the budget is whole after the burst');
  await assertStored(t, topic, stored + 17);
});
