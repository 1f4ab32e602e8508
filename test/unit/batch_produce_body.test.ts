// Goal: the batch produce body rules of spec §4 (all or none, `message <i>:` errors, limits) and that JSON
// payloads are kept byte for byte. Method: the pure parser on hand-written bodies; no node, no disk.
import t from 'tap';
import { parseBatchBody, partitionUnassigned, partitionForKey } from '../../src/body/batch_produce_body.js';
import { refusalError } from '../../src/errors.js';
import { findPayloadSpans } from '../../src/body/json_spans.js';
import { PayloadKind } from '../../src/protocol/ingress_frame.js';
import { classifyPayload, decodeBase64 } from '../../src/body/payload.js';

const limits = { messagesMax: 1000, payloadBytesMax: 1024 * 1024 };
const enc = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array) => Buffer.from(b).toString('utf8');

t.test('JSON payloads are stored exactly as written', async (t) => {
  const body = '{ "messages" : [ {"payload": 12345678901234567890}, {"key":"k","payload" : {"a": [1, 2.50, "x\\"y"]} }, {"payload":"s"} ] }';
  const parsed = parseBatchBody(enc(body), 3, limits);
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  t.same(parsed.records.map((r) => text(r.payload)), ['12345678901234567890', '{"a": [1, 2.50, "x\\"y"]}', '"s"']);
  t.same(parsed.records.map((r) => r.payloadKind), [PayloadKind.Json, PayloadKind.Json, PayloadKind.Json]);
  t.equal(parsed.records[0]!.partition, partitionUnassigned, 'no key and no pin: the node chooses');
  t.equal(parsed.records[1]!.partition, partitionForKey(enc('k'), 3), 'a key picks its partition');
  t.equal(text(parsed.records[1]!.key!), 'k');
});

t.test('span scanner follows JSON.parse on escaped and duplicate keys', async (t) => {
  const spans = findPayloadSpans(enc('{"messages":[{"pay\\u006coad":[1,{"b":"]"}]}],"x":{"messages":1}}'));
  t.equal(spans.length, 1);
  const body = enc('{"messages":[{"payload":1,"payload":"last"}]}');
  const parsed = parseBatchBody(body, 3, limits);
  t.ok(parsed.ok && text(parsed.records[0]!.payload) === '"last"', 'the last duplicate wins, as in JSON.parse');
});

t.test('encodings, keys and pins', async (t) => {
  const body = JSON.stringify({ messages: [
    { payload: Buffer.from([0xff, 0x00]).toString('base64'), payload_encoding: 'base64', key: Buffer.from([0xfe]).toString('base64'), key_encoding: 'base64', partition: 2 },
    { payload: Buffer.from('plain text').toString('base64'), payload_encoding: 'base64', key: '' },
  ] });
  const parsed = parseBatchBody(enc(body), 3, limits);
  t.ok(parsed.ok);
  if (!parsed.ok) return;
  t.same([...parsed.records[0]!.payload], [0xff, 0x00]);
  t.equal(parsed.records[0]!.payloadKind, PayloadKind.Binary);
  t.same([...parsed.records[0]!.key!], [0xfe]);
  t.equal(parsed.records[0]!.partition, 2);
  t.equal(parsed.records[1]!.payloadKind, PayloadKind.Text);
  t.equal(parsed.records[1]!.key, null, 'an empty key is no key');
});

t.test('every failure names its message and nothing is returned', async (t) => {
  const cases: [unknown, number, RegExp][] = [
    [{ messages: [{ payload: 1 }, { payload: 2, partition: 3 }] }, 400, /^message 1: partition: /],
    [{ messages: [{ payload: 1 }, {}] }, 400, /^message 1: payload: required/],
    [{ messages: [{ payload: '!!', payload_encoding: 'base64' }] }, 400, /^message 0: payload: invalid base64/],
    [{ messages: [{ payload: '', payload_encoding: 'base64' }] }, 400, /^message 0: payload: must not be empty/],
    [{ messages: [{ payload: 1, extra: true }] }, 400, /^message 0: extra: unknown field/],
    [{ messages: [{ payload: 1, payload_encoding: 'hex' }] }, 400, /^message 0: payload_encoding: must be base64/],
    [{ messages: [{ payload: 1, key: 5 }] }, 400, /^message 0: key: must be a string/],
    [{ messages: [{ payload: 1, partition: 1.5 }] }, 400, /^message 0: partition: /],
    [{ messages: [] }, 400, /^messages: must hold at least 1/],
    [{ messages: Array.from({ length: 1001 }, () => ({ payload: 1 })) }, 400, /^messages: at most 1000/],
    [{ messages: [{ payload: 1 }], other: 1 }, 400, /^other: unknown field/],
    [{}, 400, /^messages: required/],
    [[1], 400, /^body: must be a JSON object/],
  ];
  for (const [body, status, error] of cases) {
    const parsed = parseBatchBody(enc(JSON.stringify(body)), 3, limits);
    t.notOk(parsed.ok, JSON.stringify(body).slice(0, 80));
    if (!parsed.ok) {
      const answered = refusalError(parsed.refusal);
      t.equal(answered.status, status);
      t.match(answered.message, error);
    }
  }
  const big = parseBatchBody(enc(JSON.stringify({ messages: [{ payload: 1 }, { payload: 'x'.repeat(2000) }] })), 3, { messagesMax: 1000, payloadBytesMax: 1000 });
  t.same(big, { ok: false, refusal: { id: 'messageTooLarge', args: [1] } });
  if (!big.ok) t.same([refusalError(big.refusal).status, refusalError(big.refusal).message], [413, 'message 1: message too large']);
  const notJson = parseBatchBody(enc('{"messages":'), 3, limits);
  t.same(notJson, { ok: false, refusal: { id: 'invalidJson', args: [] } });
  if (!notJson.ok) t.equal(refusalError(notJson.refusal).message, 'body: invalid JSON');
});

t.test('payload classification and base64', async (t) => {
  t.equal(classifyPayload(enc('{"a":1}')), PayloadKind.Json);
  t.equal(classifyPayload(enc(' 12 ')), PayloadKind.Json);
  t.equal(classifyPayload(enc('\uFEFF{}')), PayloadKind.Text, 'a byte-order mark is not JSON');
  t.equal(classifyPayload(enc('hello')), PayloadKind.Text);
  t.equal(classifyPayload(new Uint8Array([0xc3, 0x28])), PayloadKind.Binary);
  t.same(decodeBase64('aGk='), enc('hi'));
  t.same(decodeBase64('aGk'), enc('hi'), 'padding is optional');
  t.equal(decodeBase64('a*b='), null);
  t.equal(decodeBase64('a'), null);
});

t.test('strings ending in escaped backslashes and holding escaped quotes keep their exact bytes', async (t) => {
  const payloads = ['"a\\\\"', '"a\\"b"', '"\\\\\\""', '{"k":"}\\\\","l":"\\"{"}'];
  const body = `{"messages":[${payloads.map((p) => `{"payload":${p},"key":"x"}`).join(',')}]}`;
  const parsed = parseBatchBody(enc(body), 3, limits);
  t.ok(parsed.ok, 'valid JSON');
  if (!parsed.ok) return;
  t.same(parsed.records.map((r) => text(r.payload)), payloads);
  t.same(parsed.records.map((r) => text(r.key!)), ['x', 'x', 'x', 'x'], 'fields after the payload are still found');
});
