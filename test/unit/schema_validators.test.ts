// Goal: produce-time validators (spec §4 Produce, §8 Schema validation capacity, NOTES 1): 2020-12 and draft-07
// documents compile strictly, a refusal names ajv's keyword and location and is cut at 2 KiB, costly schemas are told
// apart, the front runs the pool's generated code, and the schema pool bounds slots (503 after the wait) and
// terminates a thread stuck on a catastrophic pattern. Method: the modules themselves, with a real piscina pool of
// the built task file and small slot, wait and time settings.
import t from 'tap';
import { errors } from '../../src/errors.js';
import { PayloadKind } from '../../src/protocol/ingress_frame.js';
import {
  batchRefusal, compileDocument, cutText, joinPayloads, splitJoined, LruCache, payloadRefusal, schemaCostOf,
} from '../../src/schema/validators.js';
import { SchemaValidation, validatorFromSource } from '../../src/front/schema_validation.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);
const person = JSON.stringify({
  type: 'object', properties: { id: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' } } },
  required: ['id'], additionalProperties: false,
});

t.test('2020-12: a refusal names the keyword and the instance location', async (t) => {
  const { validate } = compileDocument(person);
  t.equal(payloadRefusal(bytes('{"id": 7, "tags": ["a"]}'), validate), null);
  t.equal(payloadRefusal(bytes('{}'), validate), "schema: required at /: must have required property 'id'");
  t.equal(payloadRefusal(bytes('{"id": 7, "tags": ["a", 2]}'), validate), 'schema: type at /tags/1: must be string');
  t.equal(payloadRefusal(bytes('{"id": 1, "x": 0}'), validate), 'schema: additionalProperties at /: must NOT have additional properties');
  t.equal(payloadRefusal(bytes('{"id": 1}x'), validate)?.startsWith('payload: not one JSON text'), true, 'strict reading first');
  const tuple = compileDocument(JSON.stringify({ prefixItems: [{ type: 'integer' }], items: false }));
  t.equal(payloadRefusal(bytes('[1, 2]'), tuple.validate), 'schema: items at /: must NOT have more than 1 items', '2020-12 only keywords');
  t.equal(payloadRefusal(bytes('"anything"'), compileDocument('true').validate), null, 'the true schema');
});

t.test('a batch: the first refused payload by index, read at once or one by one', async (t) => {
  const { validate } = compileDocument(person);
  const json = (text: string) => ({ payload: bytes(text), payloadKind: PayloadKind.Json });
  t.equal(batchRefusal([json('{"id":1}'), json(' {"id":2} ')], validate), null);
  t.same(batchRefusal([json('{"id":1}'), json('{"id":2}'), json('{"id":"3"}'), json('{}')], validate),
    { index: 2, rule: 'schema: type at /id: must be integer' });
  const deep = '['.repeat(257) + ']'.repeat(257);
  t.same(batchRefusal([json('{"id":1}'), json(deep)], validate), { index: 1, rule: 'payload: nested deeper than 256 levels' });
  const atLimit = '['.repeat(256) + ']'.repeat(256);
  t.same(batchRefusal([json(atLimit)], validate), { index: 0, rule: 'schema: type at /: must be object' }, '256 levels are read');
  t.match(batchRefusal([json('{"id":1}'), { payload: bytes('{"id":1} x'), payloadKind: PayloadKind.Text }], validate),
    { index: 1, rule: /^payload: not one JSON text: / });
});

t.test('payloads joined as a JSON array split back into themselves', async (t) => {
  const payloads = [bytes('{"a":1}'), bytes(' 2 '), bytes('"x"')];
  const { joined, ends } = joinPayloads(payloads);
  t.equal(new TextDecoder().decode(joined), '[{"a":1}, 2 ,"x"]');
  t.same(splitJoined(joined, ends).map((p) => new TextDecoder().decode(p)), ['{"a":1}', ' 2 ', '"x"']);
  t.equal(new TextDecoder().decode(joinPayloads([]).joined), '[]');
});

t.test('draft-07 documents compile by $schema, with draft-07 meaning', async (t) => {
  const doc = JSON.stringify({ $schema: 'http://json-schema.org/draft-07/schema#', items: [{ type: 'integer' }], additionalItems: false });
  const { validate } = compileDocument(doc);
  t.equal(payloadRefusal(bytes('[1]'), validate), null);
  t.equal(payloadRefusal(bytes('[1, 2]'), validate), 'schema: additionalItems at /: must NOT have more than 1 items');
  t.throws(() => compileDocument(JSON.stringify({ type: 'object', bogus: 1 })), /strict mode: unknown keyword/);
});

t.test('two topics may use the same $id', async (t) => {
  const a = compileDocument(JSON.stringify({ $id: 'https://example.com/s', type: 'integer' }));
  const b = compileDocument(JSON.stringify({ $id: 'https://example.com/s', type: 'string' }));
  t.equal(payloadRefusal(bytes('1'), a.validate), null);
  t.equal(payloadRefusal(bytes('1'), b.validate), 'schema: type at /: must be string');
});

t.test('the front runs the generated code exactly as the compiled validator', async (t) => {
  const compiled = compileDocument(person);
  const validate = validatorFromSource(compiled.source());
  for (const text of ['{"id": 1}', '{}', '{"id": "x"}', '{"id": 1, "tags": [1]}', '[]']) {
    t.equal(payloadRefusal(bytes(text), validate), payloadRefusal(bytes(text), compiled.validate), text);
  }
});

t.test('costly schemas: regular expressions, formats, uniqueItems, or a document over 16 KiB', async (t) => {
  t.same(schemaCostOf(person), { costly: false, keyword: null });
  t.same(schemaCostOf('true'), { costly: false, keyword: null });
  t.same(schemaCostOf(JSON.stringify({ properties: { a: { items: { pattern: '^a' } } } })), { costly: true, keyword: 'pattern' });
  t.same(schemaCostOf(JSON.stringify({ patternProperties: { '^x': {} } })), { costly: true, keyword: 'patternProperties' });
  t.same(schemaCostOf(JSON.stringify({ anyOf: [{ uniqueItems: true }] })), { costly: true, keyword: 'uniqueItems' });
  t.same(schemaCostOf(JSON.stringify({ format: 'date' })), { costly: true, keyword: 'format' });
  const big = JSON.stringify({ enum: Array.from({ length: 3000 }, (_, i) => `value-${i}`) });
  t.same(schemaCostOf(big), { costly: true, keyword: null });
});

t.test('error texts are cut to fit 2 KiB with a batch prefix, never mid-character', async (t) => {
  const long = 'schema: enum at /: ' + 'é'.repeat(3000);
  const cut = cutText(long);
  t.ok(Buffer.byteLength(`message 999: ${cut}`) <= 2048, `${Buffer.byteLength(cut)} bytes`);
  t.ok(cut.endsWith('é...'), 'cut on a character boundary');
  t.equal(cutText('short'), 'short');
  t.ok(Buffer.byteLength(errors.schemaRefusal(cut).message) <= 2048);
});

t.test('the LRU cache drops the least recently used entry', async (t) => {
  const dropped: number[] = [];
  const cache = new LruCache<string, number>(2, (value) => dropped.push(value));
  cache.set('a', 1);
  cache.set('b', 2);
  cache.get('a');
  cache.set('c', 3);
  t.same(dropped, [2]);
  t.equal(cache.get('b'), undefined);
  t.equal(cache.size, 2);
});

const catastrophic = JSON.stringify({ type: 'string', pattern: '^(a+)+$' });
const evil = bytes(JSON.stringify('a'.repeat(40) + '!'));

t.test('the pool checks costly schemas and big payloads; the front takes over cheap ones', async (t) => {
  const schemas = new SchemaValidation({ slots: 2, waitMs: 5000, payloadTimeMs: 1000 });
  t.teardown(() => schemas.close());
  const guard = schemas.guardOf('topic-1', 1, person);
  t.equal(schemas.checkHere(guard, bytes('{"id": 1}')), undefined, 'nothing compiled on the front yet');
  t.same(await schemas.checkInPool('topic-1', guard, [bytes('{"id": 1}'), bytes('{"id": 2}'), bytes('{"id": "3"}')]),
    { index: 2, rule: 'schema: type at /id: must be integer' }, 'a batch stops at its first refused message');
  t.same(await schemas.checkInPool('topic-1', guard, [bytes('{"id": 1}'), bytes('{"id": false}')], true),
    { index: 1, rule: 'schema: type at /id: must be integer' }, 'JSON payloads read as one array in the pool');
  t.equal(schemas.checkHere(guard, bytes('{"id": 1}')), null, 'the pool handed its code to the front');
  t.equal(schemas.checkHere(guard, bytes('{"id": true}')), 'schema: type at /id: must be integer');
  t.equal(schemas.checkHere(guard, bytes(`{"id": 1, "tags": ["${'x'.repeat(17_000)}"]}`)), undefined, 'over 16 KiB: the pool');
  t.equal(schemas.guardOf('topic-1', 2, person).validate, null, 'a new version starts over');
  const patterned = schemas.guardOf('topic-2', 1, JSON.stringify({ type: 'string', pattern: '^a+$' }));
  t.same(await schemas.checkInPool('topic-2', patterned, [bytes('"aaa"')]), null);
  t.equal(patterned.validate, null, 'a costly schema is never run on the front');
  t.equal(schemas.inFlight, 0);
});

t.test('a catastrophic pattern is cut off, and the next check runs on a new thread', async (t) => {
  const schemas = new SchemaValidation({ slots: 1, waitMs: 5000, payloadTimeMs: 200 });
  t.teardown(() => schemas.close());
  const guard = schemas.guardOf('topic-1', 1, catastrophic);
  t.same(await schemas.checkInPool('topic-1', guard, [bytes('"aaa"'), evil]),
    { index: 1, rule: 'schema: pattern: validation took longer than 200 ms' });
  t.same(await schemas.checkInPool('topic-1', guard, [bytes('"aaa"')]), null);
  t.same(await schemas.checkInPool('topic-1', guard, [bytes('"ab"')]), { index: 0, rule: 'schema: pattern at /: must match pattern "^(a+)+$"' });
});

t.test('a wait for a slot past the limit is 503 and checks nothing', async (t) => {
  const schemas = new SchemaValidation({ slots: 1, waitMs: 100, payloadTimeMs: 1000 });
  t.teardown(() => schemas.close());
  const guard = schemas.guardOf('topic-1', 1, catastrophic);
  const busy = schemas.checkInPool('topic-1', guard, [evil]);
  t.equal(schemas.inFlight, 1, 'the slot is taken');
  await t.rejects(schemas.checkInPool('topic-1', guard, [bytes('"a"')]), errors.schemaValidationBusy(100));
  t.match(await busy, { index: 0, rule: /took longer than 1000 ms/ });
  t.equal(schemas.inFlight, 0, 'the slot came back');
});
