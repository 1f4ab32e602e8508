// Goal: a payload produced to a topic with a schema is read strictly (spec §4 Produce, §8 Payload nesting with a
// schema): one JSON text in valid UTF-8, no byte-order mark, no raw control character in a string, at most 256 levels;
// every refusal names its rule, and nesting is refused before any parse. Method: readPayloadJson on crafted bytes;
// a property test that any JSON.stringify output within the depth reads back as the same value.
import t from 'tap';
import fc from 'fast-check';
import { readPayloadJson } from '../../src/schema/payload_json.js';

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

function rule(input: Uint8Array | string, depthMax = 256): string {
  const read = readPayloadJson(typeof input === 'string' ? bytes(input) : input, depthMax);
  return read.ok ? 'ok' : read.rule;
}

t.test('one JSON text in valid UTF-8 reads as its value', async (t) => {
  t.same(readPayloadJson(bytes(' {"id": 1, "name": "é\\u0041"} \n'), 256), { ok: true, value: { id: 1, name: 'éA' } });
  t.same(readPayloadJson(bytes('true'), 256), { ok: true, value: true });
  t.same(readPayloadJson(bytes('"a\\"[[[["'), 1), { ok: true, value: 'a"[[[[' }, 'brackets inside strings do not nest');
});

t.test('each rule refuses with its own wording', async (t) => {
  t.equal(rule(''), 'payload: empty');
  t.equal(rule(new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d])), 'payload: invalid UTF-8');
  t.equal(rule(new Uint8Array([0xed, 0xa0, 0x80])), 'payload: invalid UTF-8', 'an encoded surrogate is not UTF-8');
  t.equal(rule(new Uint8Array([0xef, 0xbb, 0xbf, 0x31])), 'payload: starts with a byte-order mark');
  t.equal(rule('"a\tb"'), 'payload: raw control character 0x09 in a string at byte 2');
  t.equal(rule('{"k":"x\ny"}'), 'payload: raw control character 0x0a in a string at byte 7');
  t.match(rule('{"a":1} {"b":2}'), /^payload: not one JSON text: /, 'trailing data');
  t.match(rule('{"a":1}x'), /^payload: not one JSON text: /, 'trailing garbage');
  t.match(rule('hello'), /^payload: not one JSON text: /, 'not JSON');
  t.match(rule('   '), /^payload: not one JSON text: /, 'only space');
  t.match(rule("{'a':1}"), /^payload: not one JSON text: /, 'single quotes');
  t.match(rule('{"a":1,}'), /^payload: not one JSON text: /, 'trailing comma');
  t.match(rule('NaN'), /^payload: not one JSON text: /);
});

t.test('nesting: 256 levels pass, 257 are refused before any parse', async (t) => {
  t.equal(rule('['.repeat(256) + ']'.repeat(256)), 'ok');
  t.equal(rule('{"a":'.repeat(255) + '[]' + '}'.repeat(255)), 'ok', 'objects and arrays count alike');
  t.equal(rule('['.repeat(257) + ']'.repeat(257)), 'payload: nested deeper than 256 levels');
  t.equal(rule('{"a":'.repeat(256) + '[]' + '}'.repeat(256)), 'payload: nested deeper than 256 levels');
  // Unclosed and far too deep: refused for depth by the scan, not by a parse of 10 million levels.
  t.equal(rule('['.repeat(10_000_000)), 'payload: nested deeper than 256 levels');
  t.equal(rule('[' + Array(300).fill('"]]]]"').join(',') + ']', 1), 'ok', 'closing brackets in strings do not count');
  t.equal(rule('["\\"[[[["]', 1), 'ok', 'an escaped quote does not end the string');
});

t.test('property: any JSON value within the depth reads back as itself', async (t) => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 8 }), (value) => {
      const read = readPayloadJson(bytes(JSON.stringify(value)), 256);
      return read.ok && JSON.stringify(read.value) === JSON.stringify(value);
    }),
    { numRuns: 500 },
  );
  t.pass('500 drawn values');
});
