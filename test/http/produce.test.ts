// Goal: prove the single produce route (spec 4, POST /v1/topics/{topic}/produce; NOTES 3 and 5; decisions.md
// "Produce and replay") end to end: the 202 answer, every payload and key kind read back by replay exactly as
// stored, partition choice (pin, key, spread) and every refusal (400, 401, 404, 413, 415) with its error shape.
// Method: one node for the file, a fresh topic per case; each accepted message is read back by replay
// (GET .../consume?partition&offset) with polling, since a commit follows the 202 asynchronously; after refusals the
// topic is read back whole (test/helpers/stored.ts) to show they stored nothing.
import t from 'tap';
import {
  NodeWithClient, assertError, createTopic, rawRefusedRequest, readAllUntil, topicNamer, topicPath, waitReplay, type Answer,
} from '../helpers/replay.js';
import { storedCounts, storedTotal } from '../helpers/stored.js';

const MiB = 1024 * 1024;
const { node, client } = await NodeWithClient.start(t);
const nextTopic = topicNamer('produce');

async function produce(topic: string, body: string | Uint8Array, query = '', headers: Record<string, string> =
  { 'content-type': 'application/octet-stream' }): Promise<Answer> {
  return client.req(`${topicPath(topic)}/produce${query}`, { method: 'POST', headers, body });
}

/** Produces one message pinned to partition 0 of a fresh topic and replays offset 0. */
async function roundTrip(body: string | Uint8Array, query = '', contentType = 'application/octet-stream') {
  const topic = nextTopic();
  await createTopic(client, topic);
  const accepted = await produce(topic, body, `?partition=0${query === '' ? '' : '&' + query}`, { 'content-type': contentType });
  const replay = await waitReplay(client, topic, 0, 0);
  return { topic, accepted, replay };
}

t.test('202 with an empty body and Content-Length 0', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic);
  const answer = await produce(topic, '{"a":1}', '', { 'content-type': 'application/json' });
  t.equal(answer.status, 202);
  t.equal(answer.text, '');
  t.equal(answer.headers['content-length'], '0');
});

t.test('JSON payloads come back as the JSON value', async (t) => {
  const cases: [string, unknown][] = [
    ['{"a":1,"b":[true,null,"s"]}', { a: 1, b: [true, null, 's'] }],
    ['42', 42],
    ['"x"', 'x'],
    ['[1,2,{"c":"d"}]', [1, 2, { c: 'd' }]],
    ['null', null],
  ];
  for (const [body, value] of cases) {
    const { accepted, replay } = await roundTrip(body, '', 'application/json');
    t.equal(accepted.status, 202, `202 for ${body}`);
    t.equal(replay.status, 200, `replayed ${body}`);
    t.same(replay.message?.payload, value, `payload of ${body}`);
    t.equal(replay.message?.payload_encoding, undefined, `no payload_encoding for ${body}`);
  }
});

t.test('a big integer keeps every digit', async (t) => {
  const { accepted, replay } = await roundTrip('12345678901234567890', '', 'application/json');
  t.equal(accepted.status, 202);
  t.equal(replay.status, 200);
  t.match(replay.text, /"payload"\s*:\s*12345678901234567890(?![0-9.eE])/, `raw answer keeps the digits: ${replay.text}`);
});

t.test('non-JSON UTF-8 comes back as a string', async (t) => {
  const text = 'hello, wörld ✓ {not json';
  const { accepted, replay } = await roundTrip(text);
  t.equal(accepted.status, 202);
  t.equal(replay.message?.payload, text);
  t.equal(replay.message?.payload_encoding, undefined);
});

t.test('invalid UTF-8 comes back base64 with payload_encoding', async (t) => {
  const bytes = Uint8Array.from([0xff, 0xfe, 0x00, 0x80, 0x41, 0xc3]);
  const { accepted, replay } = await roundTrip(bytes);
  t.equal(accepted.status, 202);
  t.equal(replay.message?.payload_encoding, 'base64');
  t.same(Buffer.from(String(replay.message?.payload), 'base64'), Buffer.from(bytes));
});

t.test('payload_encoding=base64 stores the decoded bytes', async (t) => {
  const binary = Buffer.from([0x00, 0xff, 0x10, 0x80]);
  const first = await roundTrip(binary.toString('base64'), 'payload_encoding=base64');
  t.equal(first.accepted.status, 202);
  t.equal(first.replay.message?.payload_encoding, 'base64');
  t.same(Buffer.from(String(first.replay.message?.payload), 'base64'), binary, 'binary bytes decoded and stored');

  const json = await roundTrip(Buffer.from('{"k":[1,2]}').toString('base64'), 'payload_encoding=base64');
  t.equal(json.accepted.status, 202);
  t.same(json.replay.message?.payload, { k: [1, 2] }, 'decoded bytes that are JSON come back as JSON');
  t.equal(json.replay.message?.payload_encoding, undefined);

  const text = await roundTrip(Buffer.from('plain text').toString('base64'), 'payload_encoding=base64');
  t.equal(text.replay.message?.payload, 'plain text', 'decoded UTF-8 text comes back as a string');
});

t.test('payload_encoding=base64 with a body that is not base64 is 400', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic);
  assertError(t, await produce(topic, '%%% not base64 %%%', '?payload_encoding=base64'), 400, 'payload');
  t.equal(await storedTotal(node, topic), 0, 'nothing stored');
});

t.test('an encoding other than base64, or a key that is not base64 under key_encoding, is 400', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic);
  assertError(t, await produce(topic, '{"a":1}', '?payload_encoding=hex'), 400, 'payload_encoding');
  assertError(t, await produce(topic, '{"a":1}', '?key=k&key_encoding=hex'), 400, 'key_encoding');
  assertError(t, await produce(topic, '{"a":1}', '?key=%25%25&key_encoding=base64'), 400, 'key');
  t.equal(await storedTotal(node, topic), 0, 'nothing stored');
});

t.test('key is stored and returned; no key means no key field', async (t) => {
  const keyed = await roundTrip('{"v":1}', 'key=order-17');
  t.equal(keyed.accepted.status, 202);
  t.equal(keyed.replay.message?.key, 'order-17');
  t.equal(keyed.replay.message?.key_encoding, undefined);

  const unkeyed = await roundTrip('{"v":2}');
  t.notOk('key' in (unkeyed.replay.message ?? {}), 'no key field without key');

  const emptyKey = await roundTrip('{"v":3}', 'key=');
  t.equal(emptyKey.accepted.status, 202);
  t.notOk('key' in (emptyKey.replay.message ?? {}), 'key= means no key (decisions.md)');

  const utf8 = await roundTrip('{"v":4}', `key=${encodeURIComponent('clé ✓')}`);
  t.equal(utf8.replay.message?.key, 'clé ✓', 'percent-encoded UTF-8 key');
});

t.test('key_encoding=base64 with a non-UTF-8 key comes back base64', async (t) => {
  const key = Buffer.from([0xff, 0x00, 0x80, 0x7f]);
  const { accepted, replay } = await roundTrip('{"v":1}', `key=${encodeURIComponent(key.toString('base64'))}&key_encoding=base64`);
  t.equal(accepted.status, 202);
  t.equal(replay.message?.key_encoding, 'base64');
  t.same(Buffer.from(String(replay.message?.key), 'base64'), key);

  const utf8Key = await roundTrip('{"v":2}', `key=${encodeURIComponent(Buffer.from('abc').toString('base64'))}&key_encoding=base64`);
  t.equal(utf8Key.replay.message?.key, 'abc', 'a base64 key whose bytes are UTF-8 comes back as text');
  t.equal(utf8Key.replay.message?.key_encoding, undefined);
});

t.test('the same key always lands on the same partition', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  for (let i = 0; i < 10; i++) {
    t.equal((await produce(topic, `{"i":${i}}`, '?key=customer-42')).status, 202);
  }
  const byPartition = await readAllUntil(client, topic, 3, 10);
  const counts = byPartition.map((records) => records.length);
  t.equal(counts.reduce((a, b) => a + b, 0), 10, `all 10 read back (${counts})`);
  t.equal(counts.filter((n) => n > 0).length, 1, `one partition holds them all (${counts})`);
  const records = byPartition.find((r) => r.length > 0) ?? [];
  t.same(records.map((r) => (r.payload as { i: number }).i), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 'in produce order');
  t.ok(records.every((r) => r.key === 'customer-42'), 'each carries the key');
});

t.test('partition=2 pins; key with partition: the partition wins and the key is stored', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  t.equal((await produce(topic, '{"p":2}', '?partition=2')).status, 202);
  const pinned = await waitReplay(client, topic, 2, 0);
  t.same(pinned.message?.payload, { p: 2 });
  t.equal(pinned.message?.partition, 2);
  for (const key of ['a', 'b', 'c', 'd', 'e']) {
    t.equal((await produce(topic, `{"k":"${key}"}`, `?partition=1&key=${key}`)).status, 202);
  }
  const byPartition = await readAllUntil(client, topic, 3, 6);
  t.same(byPartition.map((r) => r.length), [0, 5, 1], 'every keyed message pinned to partition 1');
  t.same(byPartition[1]?.map((r) => r.key), ['a', 'b', 'c', 'd', 'e']);
});

t.test('no key and no partition spreads over every partition', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  for (let i = 0; i < 30; i++) t.equal((await produce(topic, `{"i":${i}}`)).status, 202);
  const byPartition = await readAllUntil(client, topic, 3, 30);
  const counts = byPartition.map((records) => records.length);
  t.equal(counts.reduce((a, b) => a + b, 0), 30, `all 30 read back (${counts})`);
  t.ok(counts.every((n) => n > 0), `every partition touched (${counts})`);
});

t.test('bad partition values are 400', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  for (const value of ['3', '-1', 'abc', '1.5']) {
    assertError(t, await produce(topic, '{}', `?partition=${value}`), 400, 'partition');
  }
  t.equal(await storedTotal(node, topic), 0, 'nothing stored');
});

t.test('a parameter given twice is 400 (NOTES 5)', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  assertError(t, await produce(topic, '{}', '?key=a&key=b'), 400, 'key');
  assertError(t, await produce(topic, '{}', '?partition=0&partition=1'), 400, 'partition');
  assertError(t, await produce(topic, '{}', '?partition=1&partition=1'), 400, 'partition');
  t.equal(await storedTotal(node, topic), 0, 'nothing stored');
});

t.test('empty body is 400, body over 1 MiB is 413, exactly 1 MiB is accepted', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  assertError(t, await produce(topic, new Uint8Array(0)), 400, 'empty');
  assertError(t, await produce(topic, '  ', '?payload_encoding=base64'), 400, 'empty');
  // Raw socket: the node may answer 413 and close before reading the rest, which undici reports as EPIPE.
  const tooBig = await rawRefusedRequest(node.url, `${topicPath(topic)}/produce`, {
    method: 'POST', body: new Uint8Array(MiB + 1).fill(0x61),
    headers: { authorization: node.auth, 'content-type': 'application/octet-stream' },
  });
  assertError(t, tooBig, 413);
  const exact = await produce(topic, new Uint8Array(MiB).fill(0x62), '?partition=0');
  t.equal(exact.status, 202, `1 MiB body accepted (${exact.text})`);
  const replay = await waitReplay(client, topic, 0, 0);
  t.equal(typeof replay.message?.payload, 'string');
  t.equal(String(replay.message?.payload).length, MiB, 'the whole 1 MiB payload read back');
  t.same(await storedCounts(node, topic), [1, 0, 0], 'the refused bodies stored nothing');
});

t.test('binary payloads come back byte for byte whether they arrive in one chunk or in many', async (t) => {
  // A small body reaches the handler as uWS's own chunk (no copy); one of 600 KB arrives in many chunks and is
  // gathered first. Bytes that vary by position catch a chunk written at the wrong place or one left out.
  for (const bytes of [700, 600_000]) {
    const body = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i++) body[i] = (i * 131 + (i >> 8)) & 0xff;
    const { accepted, replay } = await roundTrip(body);
    t.equal(accepted.status, 202, `${bytes} bytes accepted`);
    t.equal(replay.message?.payload_encoding, 'base64', `${bytes} bytes: binary, so base64`);
    t.same(Buffer.from(String(replay.message?.payload), 'base64'), Buffer.from(body), `${bytes} bytes read back exactly`);
  }
});

t.test('unknown topic is 404', async (t) => {
  assertError(t, await produce('no-such-topic-' + process.pid, '{}'), 404);
});

t.test('415 without an accepted content type; X-Svc-Client or a charset parameter is fine', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  assertError(t, await produce(topic, Buffer.from('{}'), '', {}), 415);
  assertError(t, await produce(topic, Buffer.from('{}'), '', { 'content-type': 'text/plain' }), 415);
  t.equal((await produce(topic, Buffer.from('{}'), '', { 'x-svc-client': 'produce-test' })).status, 202, 'X-Svc-Client');
  t.equal((await produce(topic, '{}', '', { 'content-type': 'application/json; charset=utf-8' })).status, 202, 'charset');
  t.equal(await storedTotal(node, topic), 2, 'the two accepted stored, the two refused not');
});

t.test('401 without or with wrong credentials, with the Basic realm', async (t) => {
  const topic = nextTopic();
  await createTopic(client, topic, 3);
  const path = `${topicPath(topic)}/produce`;
  const none = await client.req(path, { method: 'POST', noAuth: true, headers: { 'content-type': 'application/json' }, body: '{}' });
  assertError(t, none, 401);
  t.match(none.headers['www-authenticate'] ?? '', /^Basic\b.*realm="svc"/i, 'WWW-Authenticate Basic realm="svc"');
  const wrong = await client.req(path, {
    method: 'POST', noAuth: true, body: '{}',
    headers: { 'content-type': 'application/json', authorization: 'Basic ' + Buffer.from('admin:wrong').toString('base64') },
  });
  assertError(t, wrong, 401);
  const noType = await client.req(path, { method: 'POST', noAuth: true, body: Buffer.from('{}') });
  t.equal(noType.status, 401, 'credentials are checked before the content type (spec 5.6)');
  t.equal(await storedTotal(node, topic), 0, 'nothing stored');
});
