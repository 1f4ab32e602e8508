// Goal: prove batch produce (spec 4, POST /v1/topics/{topic}/produce/batch; spec 8 limits; NOTES 3; decisions.md):
// 202 {"accepted": n}, messages stored in order with every payload and key kind, all-or-none refusals whose error
// starts with "message <i>:", the body rules (count, strictness, query), compressed bodies and the size caps.
// Method: one node for the file, a fresh topic per case. Accepted batches are read back by replay with polling.
// "Nothing stored" is shown by producing a pinned sentinel after the refused batch, waiting until it is readable,
// and checking that the partitions' next_offset total grew by exactly one.
import t from 'tap';
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import {
  NodeWithClient, assertError, createTopic, nextOffsets, rawRefusedRequest, readAllUntil, readPartition, topicNamer, topicPath, waitReplay,
  type Answer, type Asserts,
} from '../helpers/replay.js';

const MiB = 1024 * 1024;
const { node, client } = await NodeWithClient.start(t);
const nextTopic = topicNamer('batch');

async function batch(topic: string, body: string | Uint8Array, query = '', headers: Record<string, string> = {}): Promise<Answer> {
  return client.req(`${topicPath(topic)}/produce/batch${query}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body,
  });
}

function assertAccepted(t: Asserts, answer: Answer, count: number): void {
  t.equal(answer.status, 202, `202 (body ${answer.text.slice(0, 200)})`);
  t.ok((answer.headers['content-type'] ?? '').startsWith('application/json'), 'JSON answer');
  t.equal(answer.text.length > 0 ? JSON.stringify(JSON.parse(answer.text)) : '', JSON.stringify({ accepted: count }));
}

/** After a refused batch: a sentinel produce becomes readable and the next_offset total grew by exactly one. */
async function assertNothingStored(t: Asserts, topic: string, before: number[]): Promise<void> {
  const sentinelOffset = before[0] ?? 0;
  const sentinel = await client.req(`${topicPath(topic)}/produce?partition=0`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"sentinel":true}',
  });
  t.equal(sentinel.status, 202, 'sentinel accepted');
  const replay = await waitReplay(client, topic, 0, sentinelOffset);
  t.same(replay.message?.payload, { sentinel: true }, 'the sentinel is the next record of partition 0');
  const after = await nextOffsets(client, topic);
  const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
  t.equal(sum(after), sum(before) + 1, `nothing of the refused batch stored (before ${before}, after ${after})`);
}

t.test('a mixed batch is accepted, stored in order and replayed with its keys and payloads', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const binary = Buffer.from([0xff, 0x00, 0x80, 0x01]);
  const binaryKey = Buffer.from([0xfe, 0xff, 0x00]);
  // Raw text so the big integer reaches the node digit for digit.
  const body = '{"messages":[' + [
    '{"payload":{"n":0,"nested":{"a":[1,2,3]}},"partition":1}',
    '{"payload":12345678901234567890,"partition":1}',
    '{"payload":"x","partition":1,"key":"k-text"}',
    `{"payload":"${binary.toString('base64')}","payload_encoding":"base64","partition":1}`,
    `{"payload":"${Buffer.from('[true,false]').toString('base64')}","payload_encoding":"base64","partition":1}`,
    `{"payload":[1,"two",null],"partition":1,"key":"${binaryKey.toString('base64')}","key_encoding":"base64"}`,
    '{"payload":{"empty_key":true},"partition":1,"key":""}',
    '{"payload":"pinned elsewhere","partition":2}',
  ].join(',') + ']}';
  assertAccepted(t, await batch(topic, body), 8);
  const byPartition = await readAllUntil(client, topic, 3, 8);
  t.same(byPartition.map((r) => r.length), [0, 7, 1], 'per-message partition pins');
  const p1 = byPartition[1] ?? [];
  t.same(p1.map((r) => r.offset), [0, 1, 2, 3, 4, 5, 6], 'in order, consecutive offsets');
  t.same(p1[0]?.payload, { n: 0, nested: { a: [1, 2, 3] } });
  const raw = await waitReplay(client, topic, 1, 1);
  t.match(raw.text, /"payload"\s*:\s*12345678901234567890(?![0-9.eE])/, `big integer kept digit for digit: ${raw.text}`);
  t.equal(p1[2]?.payload, 'x');
  t.equal(p1[2]?.key, 'k-text');
  t.equal(p1[3]?.payload_encoding, 'base64');
  t.same(Buffer.from(String(p1[3]?.payload), 'base64'), binary, 'binary payload decoded, stored, answered base64');
  t.same(p1[4]?.payload, [true, false], 'base64 payload whose bytes are JSON comes back as JSON');
  t.equal(p1[4]?.payload_encoding, undefined);
  t.same(p1[5]?.payload, [1, 'two', null]);
  t.equal(p1[5]?.key_encoding, 'base64');
  t.same(Buffer.from(String(p1[5]?.key), 'base64'), binaryKey, 'non-UTF-8 key answered base64');
  t.notOk('key' in (p1[6] ?? {}), 'an empty key means no key');
  t.notOk('key' in (p1[0] ?? {}), 'no key field without key');
  t.equal(byPartition[2]?.[0]?.payload, 'pinned elsewhere');
  for (const record of [...p1, ...(byPartition[2] ?? [])]) {
    t.equal(record.topic, topic);
    t.equal(record.receipt_handle, undefined, 'no receipt_handle in a replay');
  }
});

t.test('keyed messages of a batch share a partition; unpinned ones spread', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const messages = [
    ...Array.from({ length: 10 }, (_, i) => ({ payload: { keyed: i }, key: 'same-key' })),
    ...Array.from({ length: 30 }, (_, i) => ({ payload: { spread: i } })),
  ];
  assertAccepted(t, await batch(topic, JSON.stringify({ messages })), 40);
  const byPartition = await readAllUntil(client, topic, 3, 40);
  const keyed = byPartition.map((records) => records.filter((r) => r.key === 'same-key'));
  t.equal(keyed.filter((r) => r.length > 0).length, 1, 'one partition holds the keyed messages');
  t.same(keyed.flat().map((r) => (r.payload as { keyed: number }).keyed), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'in batch order');
  t.ok(byPartition.every((records) => records.some((r) => r.key === undefined)), 'unkeyed messages touch every partition');
});

t.test('all or none: a bad third message refuses the whole batch with "message 2:"', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const good = '{"payload":{"ok":1}}';
  const bad: [string, string, number][] = [
    ['partition out of range', '{"payload":1,"partition":3}', 400],
    ['negative partition', '{"payload":1,"partition":-1}', 400],
    ['partition not an integer', '{"payload":1,"partition":"1"}', 400],
    ['payload missing', '{"key":"k"}', 400],
    ['payload not base64', '{"payload":"%%%not base64%%%","payload_encoding":"base64"}', 400],
    ['empty payload', '{"payload":"","payload_encoding":"base64"}', 400],
    ['unknown payload_encoding', '{"payload":"aGk=","payload_encoding":"hex"}', 400],
    ['key not base64', '{"payload":1,"key":"%%%","key_encoding":"base64"}', 400],
    ['key not a string', '{"payload":1,"key":7}', 400],
    ['unknown field', '{"payload":1,"bogus":true}', 400],
    ['message not an object', '42', 400],
  ];
  for (const [name, message, status] of bad) {
    const before = await nextOffsets(client, topic);
    const answer = await batch(topic, `{"messages":[${good},${good},${message},${good}]}`);
    assertError(t, answer, status, 'message 2:', true);
    t.comment(`${name}: ${answer.text}`);
    await assertNothingStored(t, topic, before);
  }
});

t.test('body rules: empty list, over 1000, query key/partition, not JSON, unknown top-level field', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const before = await nextOffsets(client, topic);
  const one = JSON.stringify({ messages: [{ payload: 1 }] });
  assertError(t, await batch(topic, '{"messages":[]}'), 400, 'messages');
  assertError(t, await batch(topic, '{}'), 400, 'messages');
  assertError(t, await batch(topic, '{"messages":{}}'), 400, 'messages');
  const tooMany = JSON.stringify({ messages: Array.from({ length: 1001 }, (_, i) => ({ payload: i })) });
  assertError(t, await batch(topic, tooMany), 400, 'messages');
  assertError(t, await batch(topic, one, '?key=a'), 400, 'key');
  assertError(t, await batch(topic, one, '?partition=0'), 400, 'partition');
  assertError(t, await batch(topic, 'not json at all'), 400);
  assertError(t, await batch(topic, '{"messages":[{"payload":1}]'), 400);
  assertError(t, await batch(topic, '[{"payload":1}]'), 400);
  assertError(t, await batch(topic, new Uint8Array(0)), 400);
  assertError(t, await batch(topic, '{"messages":[{"payload":1}],"extra":true}'), 400, 'extra');
  await assertNothingStored(t, topic, before);
});

t.test('1000 messages are accepted and all stored', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const messages = Array.from({ length: 1000 }, (_, i) => ({ payload: { i } }));
  assertAccepted(t, await batch(topic, JSON.stringify({ messages })), 1000);
  const byPartition = await readAllUntil(client, topic, 3, 1000, 5_000);
  const seen = byPartition.flat().map((r) => (r.payload as { i: number }).i).sort((a, b) => a - b);
  t.same(seen, messages.map((_, i) => i), 'each of the 1000 stored exactly once');
});

t.test('gzip and zstd bodies are accepted; br is 415; undecodable gzip/zstd is 400', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const gzBody = gzipSync(Buffer.from(JSON.stringify({ messages: [{ payload: { enc: 'gzip' }, partition: 0 }] })));
  assertAccepted(t, await batch(topic, gzBody, '', { 'content-encoding': 'gzip' }), 1);
  t.same((await waitReplay(client, topic, 0, 0)).message?.payload, { enc: 'gzip' });
  const zBody = zstdCompress(Buffer.from(JSON.stringify({ messages: [{ payload: { enc: 'zstd' }, partition: 0 }] })));
  assertAccepted(t, await batch(topic, zBody, '', { 'content-encoding': 'zstd' }), 1);
  t.same((await waitReplay(client, topic, 0, 1)).message?.payload, { enc: 'zstd' });

  const before = await nextOffsets(client, topic);
  const plain = JSON.stringify({ messages: [{ payload: 1 }] });
  assertError(t, await batch(topic, plain, '', { 'content-encoding': 'br' }), 415);
  assertError(t, await batch(topic, Buffer.from('definitely not gzip'), '', { 'content-encoding': 'gzip' }), 400);
  assertError(t, await batch(topic, gzBody.subarray(0, gzBody.length - 6), '', { 'content-encoding': 'gzip' }), 400);
  assertError(t, await batch(topic, Buffer.from('definitely not zstd'), '', { 'content-encoding': 'zstd' }), 400);
  await assertNothingStored(t, topic, before);
});

t.test('a payload over 1 MiB inside a batch is 413 "message <i>:"; exactly 1 MiB is fine', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const before = await nextOffsets(client, topic);
  const tooBig = Buffer.alloc(MiB + 1, 0xab).toString('base64');
  const body = JSON.stringify({ messages: [{ payload: 1 }, { payload: tooBig, payload_encoding: 'base64' }] });
  assertError(t, await batch(topic, body), 413, 'message 1:', true);
  const bigJson = JSON.stringify({ messages: [{ payload: 1 }, { payload: 2 }, { payload: 'a'.repeat(MiB) }] });
  assertError(t, await batch(topic, bigJson), 413, 'message 2:', true); // 1 MiB + 2 quote bytes stored
  await assertNothingStored(t, topic, before);

  const exact = Buffer.alloc(MiB, 0xcd);
  const ok = JSON.stringify({ messages: [{ payload: exact.toString('base64'), payload_encoding: 'base64', partition: 1 }] });
  assertAccepted(t, await batch(topic, ok), 1);
  const replay = await waitReplay(client, topic, 1, 0, 3_000);
  t.equal(Buffer.from(String(replay.message?.payload), 'base64').length, MiB, 'the 1 MiB payload read back whole');
});

t.test('a body over 16 MiB, sent or decoded, is 413', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const before = await nextOffsets(client, topic);
  // 17 payloads of 1,000,000 bytes each: every payload fits, the body (about 17 MB) does not.
  const messages = Array.from({ length: 17 }, () => ({ payload: 'p'.repeat(1_000_000 - 2) }));
  const body = Buffer.from(JSON.stringify({ messages }));
  t.ok(body.length > 16 * MiB, `body is ${body.length} bytes`);
  // Raw socket: the node answers 413 and closes before reading the rest, which undici reports as EPIPE.
  const big = await rawRefusedRequest(node.url, `${topicPath(topic)}/produce/batch`, {
    method: 'POST', body, headers: { authorization: node.auth, 'content-type': 'application/json' },
  });
  assertError(t, big, 413);
  const gz = gzipSync(body);
  t.ok(gz.length < MiB, `gzip body is ${gz.length} bytes as sent`);
  assertError(t, await batch(topic, gz, '', { 'content-encoding': 'gzip' }), 413);
  await assertNothingStored(t, topic, before);
  // A body of about 15 MB is within the cap.
  const fits = Array.from({ length: 15 }, (_, i) => ({ payload: 'q'.repeat(1_000_000 - 2), partition: i % 3 }));
  assertAccepted(t, await batch(topic, JSON.stringify({ messages: fits })), 15);
  const stored = await readAllUntil(client, topic, 3, 16, 5_000);
  t.equal(stored.flat().length, 16, '15 big messages plus the sentinel');
});

t.test('415 without content type, 404 unknown topic, 401 without credentials', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const body = JSON.stringify({ messages: [{ payload: 1 }] });
  const noType = await client.req(`${topicPath(topic)}/produce/batch`, { method: 'POST', body: Buffer.from(body) });
  assertError(t, noType, 415);
  const svcClient = await client.req(`${topicPath(topic)}/produce/batch`, {
    method: 'POST', body: Buffer.from(body), headers: { 'x-svc-client': 'batch-test' },
  });
  assertAccepted(t, svcClient, 1);
  assertError(t, await batch('no-such-topic-' + process.pid, body), 404);
  const noAuth = await client.req(`${topicPath(topic)}/produce/batch`, {
    method: 'POST', noAuth: true, headers: { 'content-type': 'application/json' }, body,
  });
  assertError(t, noAuth, 401);
  const stored = (await readPartition(client, topic, 0)).length + (await readPartition(client, topic, 1)).length +
    (await readPartition(client, topic, 2)).length;
  t.ok(stored <= 1, `only the X-Svc-Client batch may be stored (${stored})`);
});
