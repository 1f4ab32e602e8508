// Goal: prove ack, extend and nack (spec 4 POST /v1/topics/{topic}/ack; spec 3 Lease of a message; spec 5.6, 7, 8;
// NOTES 10; decisions.md "Consume and ack"): an ack settles for good and a second one is 410; extend renews the
// lease for a full visibility timeout from the extend; nack makes the message deliverable at once under a new
// handle; an expired lease is redelivered under a new handle and its old handle is 410; the refusals (400, 410,
// 413, 415); batch ack with per-handle statuses in request order.
// Method: one node for the file; a fresh topic per case. A case about expiry uses a lease of a few seconds, long
// enough that the requests it makes inside the lease fit on a busy machine, and checks a point in the lease with
// seconds of room on both sides; a redelivery is awaited by a long poll (woken by the expiry), not by a sleep.
// Consumes that expect a message long-poll (wait=10s): the commit follows the 202 asynchronously.
import t, { type Test } from 'tap';
import { NodeWithClient, assertError, rawRequest, topicNamer, topicPath } from '../helpers/replay.js';
import {
  ack, batchAck, clientHeader, consume, consumeMessage, createTopicWith, place, produce, sleep, type ConsumedMessage,
} from '../helpers/consume.js';

const { node, client } = await NodeWithClient.start(t);
const nextTopic = topicNamer('ack');

/** A fresh topic with `count` messages, each leased once; returns the topic and the leased messages. */
async function leased(count: number, fields: Record<string, unknown> = {}): Promise<{ topic: string; messages: ConsumedMessage[] }> {
  const topic = nextTopic();
  await createTopicWith(client, topic, fields);
  for (let i = 0; i < count; i++) await produce(client, topic, JSON.stringify({ i }));
  const messages: ConsumedMessage[] = [];
  for (let i = 0; i < count; i++) messages.push(await consumeMessage(client, topic));
  return { topic, messages };
}

function assertNoContent(t: Test, answer: { status: number; text: string }, what: string): void {
  t.equal(answer.status, 204, `${what}: 204 (body ${answer.text.slice(0, 200)})`);
  t.equal(answer.text, '', `${what}: no body`);
}

t.test('ack settles: 204, never delivered again, a second ack of the handle is 410', async (t) => {
  const { topic, messages } = await leased(1);
  const message = messages[0]!;
  assertNoContent(t, await ack(client, topic, message.receipt_handle), 'ack');
  t.equal((await consume(client, topic, '?wait=0')).status, 204, 'not delivered again');
  assertError(t, await ack(client, topic, message.receipt_handle), 410, undefined);
  assertError(t, await ack(client, topic, message.receipt_handle, 'true'), 410, undefined);
  assertError(t, await ack(client, topic, message.receipt_handle, '0'), 410, undefined);
});

t.test('extend=false acks like the default', async (t) => {
  const { topic, messages } = await leased(1);
  assertNoContent(t, await ack(client, topic, messages[0]!.receipt_handle, 'false'), 'extend=false');
  assertError(t, await ack(client, topic, messages[0]!.receipt_handle), 410);
});

t.test('an acked message is not redelivered after the timeout; an unacked one is', async (t) => {
  const { topic, messages } = await leased(2, { visibility_timeout_ms: 5_000 });
  assertNoContent(t, await ack(client, topic, messages[0]!.receipt_handle), 'ack the first');
  // The first was leased before the second, so had the ack not settled it, its expiry would come first.
  const again = await consume(client, topic, '?wait=10s');
  t.equal(again.status, 200, 'the unacked one is redelivered');
  t.equal(again.message && place(again.message), place(messages[1]!), 'only the unacked message comes back');
  t.not(again.message?.receipt_handle, messages[1]!.receipt_handle, 'under a new handle');
  assertError(t, await ack(client, topic, messages[1]!.receipt_handle), 410, undefined);
  assertNoContent(t, await ack(client, topic, again.message!.receipt_handle), 'the new handle acks');
  t.equal((await consume(client, topic, '?wait=0')).status, 204, 'nothing more');
});

for (const value of ['true', '1']) {
  t.test(`extend=${value} renews the lease for a full visibility timeout from the extend`, async (t) => {
    // A 6 s lease extended 3 s in: the first timeout has surely passed 6.5 s after the lease's answer, and the
    // extended one (6 s from the extend) surely not; 2.5 s of room either way.
    const { topic, messages } = await leased(1, { visibility_timeout_ms: 6_000 });
    const message = messages[0]!;
    const leasedAt = Date.now();
    await sleep(3_000);
    const extendedAt = Date.now();
    assertNoContent(t, await ack(client, topic, message.receipt_handle, value), `extend=${value}`);
    await sleep(Math.max(0, leasedAt + 6_500 - Date.now()));
    const early = await consume(client, topic, '?wait=0');
    t.equal(early.status, 204, `not redelivered ${Date.now() - leasedAt} ms after the lease (its first timeout passed)`);
    const late = await consume(client, topic, '?wait=10s');
    const redeliveredAt = Date.now();
    t.equal(late.status, 200, 'redelivered once the extended lease ran out');
    t.ok(redeliveredAt - extendedAt >= 6_000, `not before a full timeout after the extend (${redeliveredAt - extendedAt} ms)`);
    t.equal(late.message && place(late.message), place(message), 'the same message');
    t.not(late.message?.receipt_handle, message.receipt_handle, 'under a new handle');
    assertError(t, await ack(client, topic, message.receipt_handle), 410);
    assertNoContent(t, await ack(client, topic, late.message!.receipt_handle), 'the new handle acks');
  });
}

t.test('extend keeps the handle valid and can be repeated', async (t) => {
  // Extends 2 s apart on a 4 s lease: each lands with 2 s of room, and the last leaves the handle leased past the
  // first timeout.
  const { topic, messages } = await leased(1, { visibility_timeout_ms: 4_000 });
  const handle = messages[0]!.receipt_handle;
  for (let i = 0; i < 3; i++) {
    await sleep(2_000);
    assertNoContent(t, await ack(client, topic, handle, 'true'), `extend ${i + 1}`);
  }
  t.equal((await consume(client, topic, '?wait=0')).status, 204, 'still leased 6 s after the consume');
  assertNoContent(t, await ack(client, topic, handle), 'the same handle acks');
});

t.test('extend=0 (nack) makes the message consumable at once under a new handle', async (t) => {
  const { topic, messages } = await leased(1);
  const message = messages[0]!;
  assertNoContent(t, await ack(client, topic, message.receipt_handle, '0'), 'nack');
  // Without the nack it would come back only after the default 30 s visibility timeout: this poll would end 204.
  const again = await consume(client, topic, '?wait=10s');
  t.equal(again.status, 200, 'deliverable again well before the default visibility of 30 s');
  t.equal(again.message && place(again.message), place(message), 'the same message');
  t.not(again.message?.receipt_handle, message.receipt_handle, 'under a new handle');
  assertError(t, await ack(client, topic, message.receipt_handle), 410);
  assertNoContent(t, await ack(client, topic, again.message!.receipt_handle), 'the new handle acks');
});

t.test('lease expiry: redelivered under a new handle, the old handle is 410', async (t) => {
  const { topic, messages } = await leased(1, { visibility_timeout_ms: 1000 });
  const message = messages[0]!;
  const again = await consume(client, topic, '?wait=10s');
  t.equal(again.status, 200, 'redelivered');
  t.equal(again.message && place(again.message), place(message), 'same (partition, offset)');
  t.not(again.message?.receipt_handle, message.receipt_handle, 'a different handle');
  assertError(t, await ack(client, topic, message.receipt_handle), 410);
  assertNoContent(t, await ack(client, topic, again.message!.receipt_handle), 'the new handle acks');
});

t.test('refusals of a single ack', async (t) => {
  const { topic, messages } = await leased(1);
  const message = messages[0]!;
  assertError(t, await ack(client, topic, message.receipt_handle, 'maybe'), 400, 'extend');
  assertError(t, await ack(client, topic, message.receipt_handle, 'TRUEISH'), 400, 'extend');
  const noHandle = await client.req(`${topicPath(topic)}/ack`, { method: 'POST', headers: clientHeader });
  assertError(t, noHandle, 400, 'receipt_handle');
  const noHandleJson = await client.req(`${topicPath(topic)}/ack`, { method: 'POST', headers: { 'content-type': 'application/json' } });
  assertError(t, noHandleJson, 400);
  for (const bad of ['abc', '1:2', '', 'x:0:0123456789ab', '0:y:0123456789ab']) {
    t.test(`undecodable handle ${JSON.stringify(bad)}`, async (t) => assertError(t, await ack(client, topic, bad), 400));
  }
  t.test('a partition the topic lacks: 410', async (t) => {
    assertError(t, await ack(client, topic, '99:0:0123456789ab'), 410);
    assertError(t, await ack(client, topic, '99:0:abcd'), 410);
  });
  t.test('the right partition and offset with another nonce: 410, and the lease stays', async (t) => {
    const [partition, offset, nonce] = message.receipt_handle.split(':');
    const otherNonce = nonce === '0123456789ab' ? 'ba9876543210' : '0123456789ab';
    assertError(t, await ack(client, topic, `${partition}:${offset}:${otherNonce}`), 410);
    assertError(t, await ack(client, topic, `${partition}:${offset}:${otherNonce}`, '0'), 410, undefined);
    t.equal((await consume(client, topic, '?wait=0')).status, 204, 'the message is still leased');
  });
  t.test('a handle of another topic: 410, and the lease stays', async (t) => {
    const other = nextTopic();
    await createTopicWith(client, other);
    assertError(t, await ack(client, other, message.receipt_handle), 410);
    t.equal((await consume(client, topic, '?wait=0')).status, 204, 'the message is still leased');
  });
  t.test('an unknown topic: 404', async (t) => assertError(t, await ack(client, `${topic}-missing`, message.receipt_handle), 404));
  t.test('no content type and no X-Svc-Client: 415', async (t) => {
    assertError(t, await ack(client, topic, message.receipt_handle, undefined, {}), 415);
  });
  t.test('no credentials: 401', async (t) => {
    const answer = await client.req(`${topicPath(topic)}/ack?receipt_handle=${message.receipt_handle}`, {
      method: 'POST', headers: clientHeader, noAuth: true,
    });
    t.equal(answer.status, 401);
  });
  t.test('after all refusals the lease acks', async (t) => assertNoContent(t, await ack(client, topic, message.receipt_handle), 'ack'));
});

t.test('batch ack: a status per handle in request order', async (t) => {
  const { topic, messages } = await leased(3);
  const [good, settled, third] = messages as [ConsumedMessage, ConsumedMessage, ConsumedMessage];
  assertNoContent(t, await ack(client, topic, settled.receipt_handle), 'settle one first');
  const answer = await batchAck(client, topic, [good.receipt_handle, settled.receipt_handle, 'garbage']);
  t.equal(answer.status, 200, `200 (body ${answer.text.slice(0, 300)})`);
  t.ok((answer.headers['content-type'] ?? '').startsWith('application/json'), 'JSON answer');
  const body = JSON.parse(answer.text) as { results?: { status: number; error?: unknown }[] };
  t.same(Object.keys(body), ['results'], 'an object with results');
  const results = body.results ?? [];
  t.equal(results.length, 3, 'one result per handle');
  t.same(results[0], { status: 204 }, 'settled: {"status":204}');
  t.equal(results[1]?.status, 410, 'already settled: 410');
  t.equal(typeof results[1]?.error, 'string', 'with an error');
  t.equal(results[2]?.status, 400, 'undecodable: 400 inside the 200 (NOTES 10)');
  t.equal(typeof results[2]?.error, 'string', 'with an error');
  t.same(Object.keys(results[1] ?? {}).sort(), ['error', 'status'], 'a failed result has status and error only');
  assertError(t, await ack(client, topic, good.receipt_handle), 410, undefined);
  t.equal((await consume(client, topic, '?wait=0')).status, 204, 'the third is still leased; nothing else is available');
  const handles = await batchAck(client, topic, [third.receipt_handle, third.receipt_handle]);
  const twice = JSON.parse(handles.text) as { results: { status: number }[] };
  t.same(twice.results.map((r) => r.status), [204, 410], 'the same handle twice: settled, then 410');
});

t.test('batch ack: undecodable handles first and between keep every status in its place', async (t) => {
  const { topic, messages } = await leased(2);
  const [good, settled] = messages as [ConsumedMessage, ConsumedMessage];
  assertNoContent(t, await ack(client, topic, settled.receipt_handle), 'settle one first');
  // A handle holding the separator the front uses to join handles for the worker must stay one bad handle.
  const answer = await batchAck(client, topic, ['garbage', good.receipt_handle, '99:0:ab', settled.receipt_handle, '0:0:ab,0:1:cd']);
  t.equal(answer.status, 200, `200 (body ${answer.text.slice(0, 300)})`);
  const results = (JSON.parse(answer.text) as { results: { status: number; error?: string }[] }).results;
  t.same(results.map((r) => r.status), [400, 204, 410, 410, 400], 'bad, settled, no such partition, already settled, bad');
  t.match(results[0]?.error, /receipt_handle/, 'the 400 names the field');
  t.match(results[4]?.error, /receipt_handle/);
  assertError(t, await ack(client, topic, good.receipt_handle), 410, undefined);
});

t.test('batch ack refusals of the whole request', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const path = `${topicPath(topic)}/ack`;
  assertError(t, await batchAck(client, topic, []), 400, 'receipt_handles');
  assertError(t, await batchAck(client, topic, Array.from({ length: 101 }, (_, i) => `0:${i}:0123456789ab`)), 400, 'receipt_handles');
  const hundred = await batchAck(client, topic, Array.from({ length: 100 }, (_, i) => `0:${i}:0123456789ab`));
  t.equal(hundred.status, 200, '100 handles are fine');
  t.equal((JSON.parse(hundred.text) as { results: unknown[] }).results.length, 100, '100 results');
  assertError(t, await client.postJson(path, '{"receipt_handles":'), 400, undefined);
  assertError(t, await client.postJson(path, { receipt_handles: ['0:0:0123456789ab'], extra: 1 }), 400, 'extra');
  assertError(t, await client.postJson(path, { receipt_handles: '0:0:0123456789ab' }), 400, 'receipt_handles');
  assertError(t, await client.postJson(path, { receipt_handles: [1] }), 400, 'receipt_handles');
  assertError(t, await client.postJson(path, [['0:0:0123456789ab']]), 400);
  assertError(t, await client.postJson(path, {}), 400, 'receipt_handles');
  assertError(t, await client.postJson(`${path}?extend=maybe`, { receipt_handles: ['0:0:0123456789ab'] }), 400, 'extend');
  // 100 handles of 700 characters: about 70 KiB, over the 64 KiB batch ack body limit (spec 8).
  const big = JSON.stringify({ receipt_handles: Array.from({ length: 100 }, (_, i) => `0:${i}:${'a'.repeat(690)}`) });
  t.ok(big.length > 64 * 1024, `body is ${big.length} bytes`);
  const tooBig = await rawRequest(node.url, path, {
    method: 'POST', headers: { authorization: node.auth, 'content-type': 'application/json' }, body: Buffer.from(big),
  });
  assertError(t, tooBig, 413);
  const justUnder = JSON.stringify({ receipt_handles: ['0:0:0123456789ab'] }) + ' '.repeat(60 * 1024);
  const fine = await client.postJson(path, justUnder);
  t.equal(fine.status, 200, `a 60 KiB body (whitespace) is within the limit (body ${fine.text.slice(0, 200)})`);
});

t.test('batch nack with extend=0 in the query', async (t) => {
  const { topic, messages } = await leased(2);
  const answer = await batchAck(client, topic, messages.map((m) => m.receipt_handle), '0');
  t.equal(answer.status, 200, `200 (body ${answer.text.slice(0, 200)})`);
  t.same(JSON.parse(answer.text), { results: [{ status: 204 }, { status: 204 }] }, 'both nacked');
  const again = [await consumeMessage(client, topic, '?wait=10s'), await consumeMessage(client, topic, '?wait=10s')];
  t.same(new Set(again.map(place)), new Set(messages.map(place)), 'both consumable again, not after the 30 s visibility');
  for (const message of again) t.notOk(messages.some((m) => m.receipt_handle === message.receipt_handle), 'under new handles');
  const extended = await batchAck(client, topic, again.map((m) => m.receipt_handle), 'true');
  t.same(JSON.parse(extended.text), { results: [{ status: 204 }, { status: 204 }] }, 'batch extend');
  const acked = await batchAck(client, topic, again.map((m) => m.receipt_handle));
  t.same(JSON.parse(acked.text), { results: [{ status: 204 }, { status: 204 }] }, 'batch ack');
  // The bench settles such answers by comparing bytes (bench/consume.ts allSettledAnswer, test/bench/ack_requests).
  t.equal(acked.text, '{"results":[{"status":204},{"status":204}]}', 'written compactly, as JSON.stringify writes it');
  t.equal((await consume(client, topic, '?wait=0')).status, 204, 'nothing left');
});
