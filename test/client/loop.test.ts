// Goal: the client's batching producer and consumer loop (issue 32 point 2) keep their contracts against a real node:
// the producer sends fewer requests than messages, cut by count and by bytes, stores each message once, and fails a
// refused batch whole; the loop handles N messages once each within its concurrency, redelivers a failing handler's
// message (nack), keeps a slow handler's lease alive past the visibility timeout without a second delivery, backs off
// on 429 and still delivers, and stops gracefully (the handler in flight finishes and is acked; nothing new is taken).
// Method: black box. Request counts come from the node's own svc_http_requests_total; "once" is checked by payload
// ids; "no second delivery" by a second consumer polling during the slow handler.
import t, { type Test } from 'tap';
import { Consumer, Producer, SvcClient, SvcError, type Message } from '../../src/client/index.js';
import { adminPassword, startNodeFor, type StartedNode } from '../helpers/node.js';
import { pollUntil, sleep } from '../helpers/http.js';

async function readyNode(t: Test, args: string[] = []): Promise<{ node: StartedNode; admin: SvcClient }> {
  const node = await startNodeFor(t, { args });
  const admin = new SvcClient({ url: node.url, user: 'admin', password: adminPassword });
  await pollUntil(async () => ((await fetch(`${node.url}/readyz`)).status === 200 ? true : undefined), 15_000, 100);
  return { node, admin };
}

/** Batch produce requests the node answered with a status (its own metrics). */
async function batchRequests(admin: SvcClient, status: number): Promise<number> {
  const line = (await admin.metrics()).split('\n')
    .find((l) => l.startsWith('svc_http_requests_total{') && l.includes('produce/batch') && l.includes(`status="${status}"`));
  return line === undefined ? 0 : Number(line.split(' ').pop());
}

/** Every message left in the topic, leased and acked, until a consume finds nothing (bounded). */
async function drain(admin: SvcClient, topic: string): Promise<Message[]> {
  const all: Message[] = [];
  for (let i = 0; i < 100; i++) {
    const got = await admin.consumeMany(topic, 100, { waitMs: 200 });
    if (got.length === 0) break;
    all.push(...got);
    await admin.ackBatch(topic, got.map((m) => m.receipt_handle!));
  }
  return all;
}

function until(probe: () => boolean, timeoutMs = 20_000): Promise<boolean | undefined> {
  return pollUntil(async () => (probe() ? true : undefined), timeoutMs, 20);
}

let admin: SvcClient;

t.before(async () => {
  ({ admin } = await readyNode(t));
});

t.test('producer: batches by count and by bytes, stores each message once', async (t) => {
  await admin.createTopic({ name: 'p' });
  const producer = new Producer(admin, 'p', { lingerMs: 50, maxBatchMessages: 100 });
  await Promise.all(Array.from({ length: 250 }, (_, i) => producer.send({ payload: { id: i } })));
  t.equal(await batchRequests(admin, 202), 3, '250 messages in 3 requests (100 + 100 + 50)');
  t.equal(producer.requestsSent, 3);
  const ids = (await drain(admin, 'p')).map((m) => (m.payload as { id: number }).id).sort((a, b) => a - b);
  t.same(ids, Array.from({ length: 250 }, (_, i) => i), 'each message stored once');
  const small = new Producer(admin, 'p', { lingerMs: 1000, maxBatchBytes: 2000 });
  const sends = Array.from({ length: 10 }, (_, i) => small.send({ payload: { id: i, pad: 'x'.repeat(400) } }));
  await small.close();
  await Promise.all(sends);
  t.equal(small.requestsSent, 3, 'about 430 bytes each, 2000 bytes a batch: 4 messages a batch at most, 3 batches');
  t.equal(await batchRequests(admin, 202), 3 + 3);
  t.equal((await drain(admin, 'p')).length, 10);
  await t.rejects(small.send({ payload: 1 }), /closed/);
});

t.test('producer: a refused batch fails every send of it and stores nothing', async (t) => {
  await admin.createTopic({ name: 'typed', schema: { type: 'object' } });
  const producer = new Producer(admin, 'typed', { lingerMs: 20 });
  const results = await Promise.allSettled([producer.send({ payload: { ok: 1 } }), producer.send({ payload: 'not an object' })]);
  t.same(results.map((r) => r.status), ['rejected', 'rejected']);
  const reason = (results[0] as PromiseRejectedResult).reason;
  t.type(reason, SvcError);
  t.equal(reason.status, 400);
  t.match(reason.error, /^message 1:/);
  t.same(await drain(admin, 'typed'), [], 'nothing stored');
});

t.test('producer: a batch answered 429 is sent again after Retry-After and stored once', async (t) => {
  const { admin: capped } = await readyNode(t, ['--set', 'http.max_produce_in_flight_per_identity=1']);
  await capped.createTopic({ name: 'busy' });
  const producer = new Producer(capped, 'busy', { lingerMs: 0, maxRetries: 20 });
  const sent: number[] = [];
  // The cap is one produce in flight per user: produces racing the producer's batches make some of them 429.
  for (let round = 0; round < 30 && producer.retries === 0; round++) {
    const noise = Array.from({ length: 20 }, () => capped.produce('busy', '{"noise":true}').catch(() => undefined));
    const ids = [round * 2, round * 2 + 1];
    await Promise.all([...ids.map((id) => producer.send({ payload: { id } })), ...noise]);
    sent.push(...ids);
  }
  t.ok(producer.retries >= 1, `some batch was answered 429 and sent again (${producer.retries} retries)`);
  const ids = (await drain(capped, 'busy')).map((m) => (m.payload as { id?: number }).id).filter((id) => id !== undefined);
  t.same(ids.sort((a, b) => a! - b!), sent, "each of the producer's messages stored once");
});

t.test('consumer: N messages handled once each, within the concurrency', async (t) => {
  await admin.createTopic({ name: 'work' });
  await admin.produceBatch('work', Array.from({ length: 60 }, (_, i) => ({ payload: { id: i } })));
  const seen = new Map<number, number>();
  let running = 0;
  let most = 0;
  const errors: unknown[] = [];
  const consumer = new Consumer(admin, 'work', async (m) => {
    running += 1;
    most = Math.max(most, running);
    const id = (m.payload as { id: number }).id;
    seen.set(id, (seen.get(id) ?? 0) + 1);
    await sleep(5);
    running -= 1;
  }, { concurrency: 4, waitMs: 500, onError: (e) => errors.push(e) });
  await consumer.start();
  t.ok(await until(() => consumer.stats.acked === 60), 'all 60 acked');
  await consumer.stop();
  t.equal(seen.size, 60);
  t.ok([...seen.values()].every((n) => n === 1), 'each handled once');
  t.ok(most <= 4 && most >= 1, `at most 4 handlers at once (saw ${most})`);
  t.same(errors, []);
  t.equal(await admin.consume('work'), null, 'nothing left: every message acked');
});

t.test('consumer: a failing handler is nacked and its message redelivered', async (t) => {
  await admin.createTopic({ name: 'flaky' });
  await admin.produce('flaky', '{"id":"x"}');
  let calls = 0;
  const errors: unknown[] = [];
  const consumer = new Consumer(admin, 'flaky', async () => {
    calls += 1;
    if (calls === 1) throw new Error('first attempt fails');
  }, { waitMs: 500, onError: (e) => errors.push(e) });
  await consumer.start();
  t.ok(await until(() => consumer.stats.acked === 1), 'acked on the second delivery');
  await consumer.stop();
  t.equal(calls, 2, 'delivered twice: once failed, once handled');
  t.equal(consumer.stats.nacked, 1);
  t.equal(consumer.stats.failed, 1);
  t.match(String(errors[0]), /first attempt fails/, 'the handler error is reported');
});

t.test('consumer: a slow handler keeps its lease past the visibility timeout', async (t) => {
  // A 3 s lease, extended every 1.5 s: each extend has 1.5 s to land, room for a busy machine.
  await admin.createTopic({ name: 'slow', visibility_timeout_ms: 3000 });
  await admin.produce('slow', '{"id":"slow"}');
  let deliveries = 0;
  const consumer = new Consumer(admin, 'slow', async () => {
    deliveries += 1;
    await sleep(7000);
  }, { concurrency: 2, waitMs: 300 });
  await consumer.start();
  t.ok(await until(() => deliveries === 1), 'delivered');
  const other = await admin.consume('slow', { waitMs: 6500 });
  t.equal(other, null, 'another consumer gets nothing while the handler works, over 2 leases long');
  t.ok(await until(() => consumer.stats.acked === 1), 'acked after the handler');
  await consumer.stop();
  t.equal(deliveries, 1, 'never delivered twice');
  // 7 s held on a 3 s lease needs at least two extends; how many more depends on the machine's pace.
  t.ok(consumer.stats.extended >= 2, `lease extended while the handler ran (${consumer.stats.extended} times)`);
});

t.test('consumer: stop() waits for the handler in flight, acks it, takes nothing new', async (t) => {
  await admin.createTopic({ name: 'stopping' });
  await admin.produceBatch('stopping', [{ payload: { id: 1 }, partition: 0 }, { payload: { id: 2 }, partition: 0 }]);
  let started = 0;
  let finished = 0;
  const consumer = new Consumer(admin, 'stopping', async () => {
    started += 1;
    await sleep(1000);
    finished += 1;
  }, { concurrency: 1, waitMs: 500 });
  await consumer.start();
  t.ok(await until(() => started === 1), 'first message taken');
  await consumer.stop();
  t.equal(finished, 1, 'stop resolved after the handler finished');
  t.equal(consumer.stats.acked, 1, 'and after its ack');
  t.equal(started, 1, 'nothing new taken');
  const left = await drain(admin, 'stopping');
  t.equal(left.length, 1, 'the other message is still there, not leased');
});

t.test('consumer: backs off on 429 with Retry-After and still delivers', async (t) => {
  const { admin: capped } = await readyNode(t, ['--set', 'http.max_consume_in_flight_per_identity=1']);
  await capped.createTopic({ name: 'q' });
  await capped.createTopic({ name: 'idle' });
  await capped.produce('q', '{"id":1}');
  const hold = capped.consume('idle', { waitMs: 5000 });
  // The cap is taken once the held poll reached the node: ask (without waiting) until a consume is refused.
  const taken = await pollUntil(async () => capped.consume('idle').then(() => undefined,
    (error: unknown) => (error instanceof SvcError && error.status === 429 ? true : undefined)), 10_000, 20);
  t.ok(taken, 'the held poll takes the one slot');
  let handled = 0;
  const errors: unknown[] = [];
  const consumer = new Consumer(capped, 'q', () => void (handled += 1), { waitMs: 500, onError: (e) => errors.push(e) });
  await consumer.start();
  t.ok(await until(() => consumer.stats.acked === 1), 'handled once the cap frees up');
  await consumer.stop();
  t.equal(await hold, null);
  t.ok(consumer.stats.throttled >= 1, `answered 429 first (${consumer.stats.throttled} times)`);
  t.equal(handled, 1);
  t.same(errors, [], 'a 429 is waited out, not reported');
});
