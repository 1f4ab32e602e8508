// Goal: the Message objects a consume answer carries (spec §2 Message, NOTES 3) are exactly the JSON the spec names
// for every payload and key kind: a JSON payload byte for byte as stored, other UTF-8 text as a JSON string, other
// bytes as base64 with its encoding field; the receipt handle when given. Method: build Messages with messageJson and
// messageJsonText and compare them with the text built here from JSON.stringify of the same fields, and parse them
// back.
import t from 'tap';
import { messageJson, messageJsonPrefix, messageJsonText } from '../../src/body/message_json.js';
import { PayloadKind } from '../../src/protocol/ingress_frame.js';
import type { StoredRecordView } from '../../src/protocol/thread_messages.js';

const utf8 = new TextEncoder();

function record(offset: number, payload: Uint8Array, payloadKind: PayloadKind, key: Uint8Array | null = null): StoredRecordView {
  return { offset, timestampSec: 1_790_000_000 + offset, key, payload, payloadKind };
}

/** The same Message built from JSON.stringify of each field, in the spec's field order. */
function expected(topic: string, partition: number, r: StoredRecordView, handle?: string): string {
  let json = `{"topic":${JSON.stringify(topic)},"partition":${partition},"offset":${r.offset}`;
  if (r.key !== null) {
    const keyText = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
    let key: string | null = null;
    try {
      key = keyText.decode(r.key);
    } catch {
      key = null;
    }
    json += key !== null ? `,"key":${JSON.stringify(key)}` : `,"key":${JSON.stringify(Buffer.from(r.key).toString('base64'))},"key_encoding":"base64"`;
  }
  if (r.payloadKind === PayloadKind.Json) json += `,"payload":${Buffer.from(r.payload).toString('utf8')}`;
  else if (r.payloadKind === PayloadKind.Text) json += `,"payload":${JSON.stringify(new TextDecoder('utf-8', { ignoreBOM: true }).decode(r.payload))}`;
  else json += `,"payload":${JSON.stringify(Buffer.from(r.payload).toString('base64'))},"payload_encoding":"base64"`;
  json += `,"timestamp":${r.timestampSec}`;
  if (handle !== undefined) json += `,"receipt_handle":"${handle}"`;
  return json + '}';
}

t.test('each payload and key kind is written as the spec names it', async (t) => {
  const cases: { name: string; r: StoredRecordView; handle?: string }[] = [
    { name: 'JSON payload, kept byte for byte (spacing and key order too)', r: record(0, utf8.encode('{ "b":1,  "a":[1, 2.50, "x"] }'), PayloadKind.Json) },
    { name: 'text payload with quotes, a newline and non-ASCII', r: record(1, utf8.encode('say "hi"\nzoë ✓ 😀'), PayloadKind.Text) },
    { name: 'binary payload as base64', r: record(2, Uint8Array.from([0, 255, 128, 10, 13]), PayloadKind.Binary) },
    { name: 'text key', r: record(3, utf8.encode('1'), PayloadKind.Json, utf8.encode('user-ü')), handle: '3:12:0a1b2c3d' },
    { name: 'binary key as base64', r: record(4, utf8.encode('"s"'), PayloadKind.Json, Uint8Array.from([0xff, 0xfe])) },
    { name: 'a text payload with a byte-order mark keeps it', r: record(5, Uint8Array.from([0xef, 0xbb, 0xbf, 0x61]), PayloadKind.Text) },
  ];
  for (const { name, r, handle } of cases) {
    const json = messageJson('orders', 3, r, handle);
    t.equal(json, expected('orders', 3, r, handle), name);
    t.doesNotThrow(() => JSON.parse(json), `${name}: parses as JSON`);
    t.equal(messageJsonText(messageJsonPrefix('orders', 3), r, handle), json, `${name}: the same after a prefix built once`);
  }
});

t.test('a topic name with quotes and non-ASCII is escaped in the prefix; a large payload is kept whole', async (t) => {
  const big = utf8.encode(JSON.stringify({ blob: 'x'.repeat(100_000) }));
  const r = record(7, big, PayloadKind.Json);
  const json = messageJson('tópic "q"', 5, r, '5:7:cd');
  t.equal(json, expected('tópic "q"', 5, r, '5:7:cd'));
  const parsed = JSON.parse(json) as { topic: string; partition: number; payload: { blob: string } };
  t.same([parsed.topic, parsed.partition, parsed.payload.blob.length], ['tópic "q"', 5, 100_000]);
});
