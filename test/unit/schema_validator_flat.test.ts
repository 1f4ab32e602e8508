// Goal: the byte-level fast path for flat closed object schemas (src/schema/validator_flat.ts) never answers "valid"
// where ajv refuses, covers only the schemas it understands, and does accept the common valid payload (or it would
// buy nothing). Method: drawn payload texts (valid, near-valid, wrong types, escapes, exponents, duplicate keys,
// unicode) against drawn-from-a-table schemas, each verdict compared with ajv's on JSON.parse of the same text; batch
// bodies of such payloads parsed with the plan as their check and without, the records and the payloads left unchecked
// compared with the plan's verdict on each payload alone.
import t from 'tap';
import fc from 'fast-check';
import { flatPlanAccepts, flatPlanOf } from '../../src/schema/validator_flat.js';
import { batchRefusal, compileDocument, joinedRefusal, joinPayloads } from '../../src/schema/validators.js';
import { PayloadKind } from '../../src/protocol/ingress_frame.js';
import { parseBatchBody } from '../../src/body/batch_produce_body.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

const schemas: Record<string, unknown>[] = [
  {
    type: 'object', additionalProperties: false, required: ['id', 'name'],
    properties: { id: { type: 'integer', minimum: 0, maximum: 1000 }, name: { type: 'string', minLength: 1, maxLength: 3 },
      score: { type: 'number', exclusiveMinimum: -1.5, exclusiveMaximum: 2 }, ok: { type: 'boolean' }, none: { type: 'null' } },
  },
  {
    $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', additionalProperties: false,
    properties: { 'é': { type: 'string', maxLength: 2 }, n: { type: 'number', minimum: -0 } },
  },
  { type: 'object', additionalProperties: false, properties: { s: { type: 'string', minLength: 2, maxLength: 5 } } },
];

t.test('plans exist only for the shapes the fast path understands', async (t) => {
  t.ok(flatPlanOf(schemas[0]));
  t.ok(flatPlanOf(schemas[1]));
  t.equal(flatPlanOf({ type: 'object', properties: { a: { type: 'string' } } }), null, 'open object');
  t.equal(flatPlanOf({ type: 'object', additionalProperties: false, properties: { a: { type: 'string', pattern: 'x' } } }), null);
  t.equal(flatPlanOf({ type: 'object', additionalProperties: false, properties: { a: { type: ['string', 'null'] } } }), null);
  t.equal(flatPlanOf({ type: 'object', additionalProperties: false, properties: { a: { type: 'object' } } }), null);
  t.equal(flatPlanOf({ type: 'object', additionalProperties: false, properties: {}, required: ['a'] }), null);
  t.equal(flatPlanOf({ type: 'object', additionalProperties: false, properties: { a: { type: 'integer' } }, minProperties: 1 }), null);
  t.equal(flatPlanOf(true), null);
});

t.test('the common valid payload is accepted without a parse', async (t) => {
  const plan = flatPlanOf(schemas[0])!;
  t.ok(flatPlanAccepts(plan, bytes(' {"id": 7, "name": "abc", "score": 1.5e-1, "ok": true, "none": null} ')));
  t.notOk(flatPlanAccepts(plan, bytes('{"id": 7}')), 'a required property missing');
  t.notOk(flatPlanAccepts(plan, bytes('{"id": 7, "name": "a\\u0062"}')), 'escapes are left to the full check');
  t.notOk(flatPlanAccepts(plan, bytes('{"id": 7, "name": "a", "id": 8}')), 'duplicate keys are left to the full check');
});

const token = fc.oneof(
  fc.constantFrom('0', '-0', '7', '1000', '1001', '-1', '1e2', '1.0', '2', '1.99', '-1.5', '-1.49', '1e400', '12345678901234567',
    '01', '-01', '-', '00', '123456789012345', '-123456789012345', '1234567890123456', '-1234567890123456',
    'true', 'false', 'null', '""', '"a"', '"abc"', '"abcd"', '"é"', '"éé"', '"ééé"', '"😀😀"', '"a\\"b"', '"\\u00e9"', '{}', '[]'),
  fc.integer({ min: -5, max: 1005 }).map(String),
  fc.double({ min: -3, max: 3, noNaN: true }).map((x) => JSON.stringify(x)),
  fc.string({ maxLength: 4 }).map((s) => JSON.stringify(s)),
);
const key = fc.constantFrom('id', 'name', 'score', 'ok', 'none', 'é', 'n', 's', 'other', 'i\\u0064');
const entry = fc.tuple(key, token, fc.constantFrom('', ' ', '\n'));
const objectText = (entries: [string, string, string][]): string => `{${entries.map(([k, v, space]) => `${space}"${k}"${space}:${space}${v}`).join(',')}}`;
/** Strings around the length bounds of schemas[2], counted in code points (UTF-8 bytes / 1, 2 or 4). */
const sized = fc.constantFrom('"a"', '"ab"', '"abcde"', '"abcdef"', '"é"', '"ééééé"', '"éééééé"', '"😀"', '"😀😀"', '"😀😀😀😀😀"', '"😀😀😀😀😀😀"');
/** Number texts at the edges of the one-pass integer read (leading zeros, 15 and 16 digits, signs, fractions). */
const numeric = fc.constantFrom('0', '-0', '00', '01', '-01', '-', '1.', '1.5', '1e1', '2E-1', '123456789012345', '-123456789012345',
  '1234567890123456', '-1234567890123456', '999', '1000', '1001', '-1', '0x1', '1-');
/** Random entries, or a valid start (both required properties) with random entries around it, or one sized string,
 *  or one number property of each schema. */
const payloadText = fc.oneof(
  sized.map((value) => `{"s":${value}}`),
  numeric.map((value) => `{"id":${value},"name":"a"}`),
  numeric.map((value) => `{"n":${value}}`),
  fc.array(entry, { maxLength: 7 }).map(objectText),
  fc.tuple(fc.array(entry, { maxLength: 2 }), fc.integer({ min: 0, max: 1000 }), fc.constantFrom('"a"', '"éé"', '"😀"'), fc.array(entry, { maxLength: 2 }))
    .map(([before, id, name, after]) => objectText([...before, ['id', String(id), ''], ['name', name, ' '], ...after])),
);

t.test('property: the fast path never accepts what ajv refuses', async (t) => {
  for (const schema of schemas) {
    const plan = flatPlanOf(schema)!;
    const { validate } = compileDocument(JSON.stringify(schema));
    let accepted = 0;
    fc.assert(
      fc.property(payloadText, (text) => {
        const fast = flatPlanAccepts(plan, bytes(text));
        if (fast) accepted++;
        return !fast || validate(JSON.parse(text)) === true;
      }),
      { numRuns: 3000 },
    );
    t.ok(accepted > 0, `${accepted} drawn payloads took the fast path`);
  }
});

t.test('property: a batch checked through the fast path answers exactly as the full check', async (t) => {
  const plan = flatPlanOf(schemas[0])!;
  const { validate } = compileDocument(JSON.stringify(schemas[0]));
  fc.assert(
    fc.property(fc.array(payloadText, { minLength: 1, maxLength: 6 }), (texts) => {
      const payloads = texts.map(bytes);
      const { joined, ends } = joinPayloads(payloads);
      const fast = joinedRefusal(joined, ends, validate, plan, () => {});
      const full = batchRefusal(payloads.map((payload) => ({ payload, payloadKind: PayloadKind.Json })), validate);
      return JSON.stringify(fast) === JSON.stringify(full);
    }),
    { numRuns: 1000 },
  );
  t.pass('1000 drawn batches');
});

t.test('property: a batch body scan with the plan as its check accepts exactly the payloads the plan does', async (t) => {
  const limits = { messagesMax: 10, payloadBytesMax: 1 << 20 };
  const space = fc.constantFrom('', ' ', '\n');
  const message = fc.tuple(payloadText, fc.boolean(), fc.boolean(), space).map(([text, base64, keyAfter, ws]) => {
    const payload = base64 ? `"${Buffer.from(text).toString('base64')}","payload_encoding":"base64"` : text;
    return `{${ws}"payload":${ws}${payload}${ws}${keyAfter ? ',"key":"k"' : ''}}`;
  });
  let checked = 0;
  for (const schema of schemas) {
    const plan = flatPlanOf(schema)!;
    fc.assert(
      fc.property(fc.array(message, { minLength: 1, maxLength: 6 }), fc.integer({ min: 2, max: 60 }), (messages, bytesMax) => {
        const body = bytes(`{"messages":[${messages.join(',')}]}`);
        const withCheck = parseBatchBody(body, 3, limits, { plan, bytesMax });
        const without = parseBatchBody(body, 3, limits);
        if (!withCheck.ok || !without.ok) return JSON.stringify(withCheck) === JSON.stringify(without);
        const expected = without.records.flatMap((record, i) =>
          !messages[i]!.includes('payload_encoding') && record.payload.length <= bytesMax && flatPlanAccepts(plan, record.payload) ? [] : [i]);
        checked += without.records.length - expected.length;
        return JSON.stringify(withCheck.records) === JSON.stringify(without.records) && JSON.stringify(withCheck.unchecked) === JSON.stringify(expected);
      }),
      { numRuns: 1000 },
    );
  }
  t.ok(checked > 0, `${checked} drawn payloads were accepted by the scan's check`);
});
