// Goal: the one-pass batch body scan (the fast path of parseBatchBody) answers exactly what the JSON.parse path
// answers, for valid bodies of every shape and for broken ones, and the byte JSON validator judges payloads as
// JSON.parse does. Method: differential, seeded: random bodies (random fields, values, escapes, numbers, nesting,
// space) and single-byte mutations of them, each parsed both ways and compared; classifyPayload against JSON.parse;
// scanString (which skips plain runs four bytes at a time) against a byte-by-byte reference, with every kind of stop
// byte at every position of a word and strings of every length up to 40, at every alignment.
import t from 'tap';
import { parseBatchBody, parseBatchBodyParsed, scanBatchBody, type BatchParse } from '../../src/body/batch_produce_body.js';
import { isJsonText, scanString } from '../../src/util/json_scan.js';
import { Prng } from '../helpers/prng.js';

const limits = { messagesMax: 8, payloadBytesMax: 256 };
const enc = (s: string) => new TextEncoder().encode(s);

function comparable(parse: BatchParse): unknown {
  if (!parse.ok) return parse;
  return parse.records.map((r) => ({
    partition: r.partition,
    key: r.key === null ? null : Buffer.from(r.key).toString('hex'),
    payload: Buffer.from(r.payload).toString('hex'),
    payloadKind: r.payloadKind,
  }));
}

const space = ['', ' ', '\n', '\t ', '\r\n'];
const strings = ['', 'a', 'QUJD', 'base64', 'x"y', 'back\\slash', 'é', '😀', '\u0001', 'tab\t', '\ud800', 'k'.repeat(70)];

function ws(r: Prng): string {
  return r.chance(0.7) ? '' : r.pick(space);
}

function jsonString(r: Prng): string {
  const value = r.pick(strings);
  // JSON.stringify escapes what must be; sometimes spell a letter as \u0061 or a slash as \/ instead.
  let text = JSON.stringify(value);
  if (r.chance(0.2)) text = text.replace('a', '\\u0061');
  if (r.chance(0.1)) text = `"\\/${text.slice(1)}`;
  return text;
}

function jsonNumber(r: Prng): string {
  return r.pick(['0', '-0', '1', '2', '-3', '2.0', '1e0', '1E+1', '0.5', '12345678901234567890', '-1.5e-3', '7']);
}

function jsonValue(r: Prng, depth: number): string {
  const kind = r.int(0, depth > 2 ? 3 : 5);
  if (kind === 0) return jsonString(r);
  if (kind === 1) return jsonNumber(r);
  if (kind === 2) return r.pick(['true', 'false', 'null']);
  if (kind === 3) return jsonString(r);
  if (kind === 4) return `[${ws(r)}${Array.from({ length: r.int(0, 3) }, () => jsonValue(r, depth + 1)).join(`${ws(r)},${ws(r)}`)}${ws(r)}]`;
  return `{${ws(r)}${Array.from({ length: r.int(0, 3) }, () => `${jsonString(r)}${ws(r)}:${ws(r)}${jsonValue(r, depth + 1)}`).join(',')}${ws(r)}}`;
}

function message(r: Prng): string {
  // Most messages are well formed, as most bodies are; the rest try every field with values of every type.
  if (r.chance(0.7)) {
    const key = r.chance(0.5) ? `,${ws(r)}"key":${jsonString(r)}` : '';
    const pin = r.chance(0.3) ? `,"partition":${ws(r)}${r.pick(['0', '-0', '1', '3.0', '1e0', '2E+0', '1e400'])}` : '';
    if (r.chance(0.2)) {
      // base64, its encoding before or after it, the text sometimes with an escaped slash
      let payload = JSON.stringify(Buffer.from(r.pick(strings)).toString('base64'));
      if (r.chance(0.3)) payload = payload.replace('/', '\\/');
      const fields = [`"payload":${payload}`, '"payload_encoding":"base64"'];
      if (r.chance(0.5)) fields.reverse();
      return `{${fields.join(`,${ws(r)}`)}${key}${pin}}`;
    }
    return `{${ws(r)}"payload"${ws(r)}:${ws(r)}${jsonValue(r, 0)}${key}${pin}${ws(r)}}`;
  }
  const fields: string[] = [];
  const add = (name: string, value: string) => fields.push(`${ws(r)}"${name}"${ws(r)}:${ws(r)}${value}${ws(r)}`);
  if (r.chance(0.9)) add('payload', r.chance(0.3) ? JSON.stringify(Buffer.from(r.pick(strings)).toString('base64')) : jsonValue(r, 0));
  if (r.chance(0.2)) add('payload_encoding', r.chance(0.8) ? '"base64"' : jsonValue(r, 1));
  if (r.chance(0.3)) add('key', r.chance(0.8) ? jsonString(r) : jsonValue(r, 1));
  if (r.chance(0.1)) add('key_encoding', r.chance(0.8) ? '"base64"' : jsonValue(r, 1));
  if (r.chance(0.3)) add('partition', r.chance(0.8) ? jsonNumber(r) : jsonValue(r, 1));
  if (r.chance(0.03)) add(r.pick(['extra', 'payload', 'partition', 'pay\\u006coad']), jsonValue(r, 1));
  for (let i = fields.length - 1; i > 0; i--) {
    const j = r.int(0, i);
    [fields[i], fields[j]] = [fields[j]!, fields[i]!];
  }
  return `{${fields.join(',')}}`;
}

function body(r: Prng): string {
  const count = r.chance(0.05) ? r.pick([0, 9]) : r.int(1, 8);
  const messages = Array.from({ length: count }, () => (r.chance(0.02) ? jsonValue(r, 1) : message(r)));
  const extra = r.chance(0.03) ? `,${ws(r)}"other"${ws(r)}:${ws(r)}1` : '';
  return `${ws(r)}{${ws(r)}"messages"${ws(r)}:${ws(r)}[${ws(r)}${messages.join(`${ws(r)},${ws(r)}`)}${ws(r)}]${extra}${ws(r)}}${ws(r)}`;
}

function mutate(r: Prng, bytes: Uint8Array): Uint8Array {
  const at = r.int(0, bytes.length - 1);
  const kind = r.int(0, 2);
  const junk = r.pick([0x22, 0x5c, 0x2c, 0x7b, 0x7d, 0x5b, 0x5d, 0x3a, 0x20, 0x30, 0x2d, 0x2e, 0x65, 0x00, 0x09, 0x1f, 0xff, 0xc3, 0x61]);
  if (kind === 0) return Uint8Array.from([...bytes.subarray(0, at), ...bytes.subarray(at + 1)]);
  if (kind === 1) return Uint8Array.from([...bytes.subarray(0, at), junk, ...bytes.subarray(at)]);
  const copy = bytes.slice();
  copy[at] = junk;
  return copy;
}

t.test('the scanned path answers as the JSON.parse path on random and mutated bodies', async (t) => {
  const r = new Prng(20261122);
  let mismatches = 0;
  let accepted = 0;
  let scanned = 0;
  const cases = 4000;
  for (let i = 0; i < cases; i++) {
    let bytes: Uint8Array = enc(body(r));
    if (r.chance(0.4)) bytes = mutate(r, bytes);
    const partitions = r.int(1, 8);
    const fast = comparable(parseBatchBody(bytes, partitions, limits));
    const parsed = comparable(parseBatchBodyParsed(bytes, partitions, limits));
    if (Array.isArray(parsed)) accepted += 1;
    if (Array.isArray(parsed) && scanBatchBody(bytes, limits.messagesMax) !== null) scanned += 1;
    if (JSON.stringify(fast) !== JSON.stringify(parsed)) {
      mismatches += 1;
      if (mismatches <= 3) t.fail(`case ${i}: ${Buffer.from(bytes).toString()}\nscanned ${JSON.stringify(fast)}\nparsed  ${JSON.stringify(parsed)}`);
    }
  }
  t.equal(mismatches, 0, `${cases} bodies, both paths agree`);
  t.ok(accepted > cases / 4 && accepted < cases, `a mix of accepted (${accepted}) and refused bodies`);
  t.ok(scanned > accepted / 2, `the one-pass scan took most accepted bodies (${scanned} of ${accepted}), not only JSON.parse`);
});

t.test('edge cases: byte-order mark, trailing text, deep nesting, the message limit, invalid UTF-8', async (t) => {
  const same = (text: string | Uint8Array, what: string) => {
    const bytes = typeof text === 'string' ? enc(text) : text;
    t.same(comparable(parseBatchBody(bytes, 3, limits)), comparable(parseBatchBodyParsed(bytes, 3, limits)), what);
  };
  same('\ufeff{"messages":[{"payload":1}]}', 'a leading byte-order mark is not JSON');
  same('{"messages":[{"payload":1}]} x', 'text after the object');
  same(`{"messages":[{"payload":${'['.repeat(20000)}${']'.repeat(20000)}}]}`, 'nesting deeper than the scan recurses');
  same(`{"messages":[${Array(8).fill('{"payload":1}').join(',')}]}`, 'exactly messagesMax messages');
  same(`{"messages":[${Array(9).fill('{"payload":1}').join(',')}]}`, 'one message over messagesMax');
  same(Uint8Array.from([...enc('{"messages":[{"payload":"'), 0xc3, 0x28, ...enc('"}]}')]), 'invalid UTF-8');
  same('{"messages":[{"payload":"\\ud83d\\ude00","key":"\\u00e9"}]}', 'escaped surrogate pair and key');
  same('{"messages":[{"payload":01}]}', 'a number with a leading zero');
  same('{"messages":[{"payload":1.}]}', 'a number ending in a dot');
  same('{"messages":[{"payload":"a\tb"}]}', 'a raw tab inside a string');
});

t.test('isJsonText judges as JSON.parse does', async (t) => {
  const texts = ['1', ' 1 ', '"s"', '{"a":[1,2]}', '{"a":1,}', '[1 2]', '01', '-', '1e', 'tru', 'true', 'null ', '"\\x"', '"\\u12"',
    '"\\u12ab"', '{}', '[]', '{"a" 1}', '', ' ', '1 2', '[1,]', '{"a":"b"', '-0.0e+00', '"\u0001"'];
  for (const text of texts) {
    let expected: boolean;
    try {
      JSON.parse(text);
      expected = true;
    } catch {
      expected = false;
    }
    t.equal(isJsonText(enc(text)), expected, JSON.stringify(text));
  }
  t.equal(isJsonText(enc('['.repeat(100000) + ']'.repeat(100000))), null, 'too deep to tell: null');
});

t.test('scanString ends every string where a byte-by-byte scan does, whatever the stop\'s place in a word', async (t) => {
  // The reference: the closing quote's index + 1, or -1 at a control byte, a bad escape or the end of the bytes.
  const reference = (bytes: Uint8Array, at: number): number => {
    for (let i = at + 1; i < bytes.length; i++) {
      const b = bytes[i]!;
      if (b === 0x22) return i + 1;
      if (b < 0x20) return -1;
      if (b === 0x5c) {
        if (!'"\\/bfnrt'.includes(String.fromCharCode(bytes[i + 1] ?? 0))) return -1;
        i += 1;
      }
    }
    return -1;
  };
  // Stops and near-stops: control bytes, the quote, the backslash (escaping a quote), and bytes next to them or high.
  const specials = [0x00, 0x01, 0x1f, 0x20, 0x21, 0x22, 0x23, 0x5b, 0x5c, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xff];
  const wrong: string[] = [];
  let checked = 0;
  for (let lead = 0; lead < 4; lead++) {
    for (let length = 0; length <= 40; length++) {
      for (const special of specials) {
        for (const place of [-1, 0, 1, 2, 3, Math.floor(length / 2), length - 1]) {
          if (place >= length) continue;
          const bytes = new Uint8Array(lead + 1 + length + 1).fill(0x61);
          bytes[lead] = 0x22;
          if (place >= 0) {
            bytes[lead + 1 + place] = special;
            if (special === 0x5c) bytes[lead + 2 + place] = 0x22;
          }
          bytes[lead + 1 + length] = 0x22;
          // A view at an odd offset of a larger buffer, as a batch body carved from a slab is.
          const view = new Uint8Array(new ArrayBuffer(bytes.length + 3), 3, bytes.length);
          view.set(bytes);
          checked += 1;
          const got = scanString(view, lead);
          const want = reference(view, lead);
          if (got !== want) wrong.push(`lead ${lead}, length ${length}, 0x${special.toString(16)} at ${place}: ${got}, want ${want}`);
        }
      }
    }
  }
  t.same(wrong.slice(0, 10), [], `${checked} strings end where the byte-by-byte scan ends them`);
});
