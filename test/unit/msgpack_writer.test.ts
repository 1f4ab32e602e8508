// Goal: the hand-written MessagePack of the hot records decodes with msgpackr to exactly what was written, at
// every size class boundary (integers up to 2^53, byte strings and strings past 255 and 65535 bytes), and an ingress
// entry never takes more than ingressEntryBytesMax (a typed array would drop the bytes past it). Pure.
import t from 'tap';
import { Packr } from 'msgpackr';
import { arrayHeaderBytes, binBytes, MsgpackWriter, strBytesMax, uintBytes } from '../../src/protocol/msgpack_writer.js';
import { decodeIngressEntry, ingressEntryBytesMax, writeIngressEntry, type IngressEntry } from '../../src/protocol/ingress_frame.js';
import { Prng } from '../helpers/prng.js';
import { encodeIngressEntry } from '../helpers/ingress_entries.js';

const packr = new Packr({ useRecords: false, moreTypes: false });

t.test('unsigned integers at every boundary decode as numbers', async (t) => {
  const values = [0, 1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER];
  const size = arrayHeaderBytes(values.length) + values.reduce((n, v) => n + uintBytes(v), 0);
  const writer = new MsgpackWriter(new Uint8Array(size));
  writer.arrayHeader(values.length);
  for (const v of values) writer.uint(v);
  t.equal(writer.at, size, 'sizes are exact');
  t.same(packr.unpack(writer.target), values);
  t.throws(() => writer.uint(-1));
});

t.test('byte strings, nil and strings of every length class', async (t) => {
  const bins = [null, new Uint8Array(0), new Uint8Array(255).fill(1), new Uint8Array(256).fill(2), new Uint8Array(70_000).fill(3)];
  const strs = ['', 'a'.repeat(31), 'b'.repeat(32), 'é'.repeat(200), 'c'.repeat(70_000)];
  const size = arrayHeaderBytes(bins.length + strs.length) + bins.reduce((n, b) => n + binBytes(b), 0) + strs.reduce((n, s) => n + strBytesMax(s), 0);
  const writer = new MsgpackWriter(new Uint8Array(size));
  writer.arrayHeader(bins.length + strs.length);
  for (const b of bins) writer.bin(b);
  for (const s of strs) writer.str(s);
  const decoded = packr.unpack(writer.target.subarray(0, writer.at)) as unknown[];
  t.equal(decoded[0], null);
  for (let i = 1; i < bins.length; i++) t.same([...(decoded[i] as Uint8Array)], [...bins[i]!], `bin ${i}`);
  strs.forEach((s, i) => t.equal(decoded[bins.length + i], s, `string of ${s.length}`));
});

t.test('short strings are written byte for byte as UTF-8 with the smallest header, ASCII or not', async (t) => {
  // The short-ASCII copy and the general path meet here: a non-ASCII char after an ASCII prefix, DEL (0x7f) and 0x80
  // on either side of the ASCII bound, a lone surrogate (encoded as U+FFFD), and 31 and 32 chars around fixstr's end.
  const strs = ['', 'a', '0123456789abcdef', 'ab\u00e9', '\u007f', '\u0080', 'x\ud800', '\u{1f600}', 'q'.repeat(31), 'q'.repeat(32),
    'z'.repeat(30) + '\u00e9'];
  for (const s of strs) {
    const writer = new MsgpackWriter(new Uint8Array(strBytesMax(s)).fill(0xee));
    writer.str(s);
    const utf8 = new TextEncoder().encode(s);
    const header = utf8.byteLength < 32 ? [0xa0 | utf8.byteLength] : [0xd9, utf8.byteLength];
    t.same([...writer.target.subarray(0, writer.at)], [...header, ...utf8], `string ${JSON.stringify(s)}`);
  }
});

t.test('an ingress entry round-trips', async (t) => {
  const entry = {
    seq: 2 ** 33, topicId: '0123456789abcdef', timestampSec: 1_795_000_000,
    records: [
      { partition: 0, key: null, payload: new TextEncoder().encode('{"a":1}'), payloadKind: 0 as const },
      { partition: 107, key: new Uint8Array([0xff]), payload: new Uint8Array(300).fill(9), payloadKind: 2 as const },
    ],
  };
  const decoded = decodeIngressEntry(encodeIngressEntry(entry));
  t.equal(decoded.seq, entry.seq);
  t.equal(decoded.topicId, entry.topicId);
  t.equal(decoded.timestampSec, entry.timestampSec);
  t.same(decoded.records.map((r) => [r.partition, r.key === null ? null : [...r.key], [...r.payload], r.payloadKind]),
    entry.records.map((r) => [r.partition, r.key === null ? null : [...r.key], [...r.payload], r.payloadKind]));
});

t.test('topic ids read in turn decode each to its own text, the same bytes as the same string', async (t) => {
  // The reader keeps the last short ASCII string it read and answers a repeat of its bytes with it: ids that differ
  // only in their last byte, a shorter id that is a prefix of the kept one, an empty one and non-ASCII text (never
  // kept: its chars are not its bytes) must each still come back as written.
  const ids = ['0123456789abcdef', '0123456789abcdef', '0123456789abcdee', '0123456789abcde', '', 'é0123456789abcde',
    'é0123456789abcde', '0123456789abcdef', 'x'.repeat(32), 'x'.repeat(33), 'x'.repeat(32)];
  const decoded = ids.map((topicId, seq) => decodeIngressEntry(encodeIngressEntry({
    seq: seq + 1, topicId, timestampSec: 1_795_000_000,
    records: [{ partition: 0, key: null, payload: new Uint8Array([0x31]), payloadKind: 0 }],
  })).topicId);
  t.same(decoded, ids);
});

t.test('ingressEntryBytesMax bounds every entry: written into exactly that many bytes it decodes back whole', async (t) => {
  const prng = new Prng(0x1b7e);
  const topicIds = ['0123456789abcdef', 'é'.repeat(16), '€😀x', '\ud800a'];
  const lengths = [0, 1, 255, 256, 65_535, 65_536];
  const uints = [0, 127, 128, 255, 256, 65_535, 65_536, 2 ** 32 - 1, 2 ** 32, Number.MAX_SAFE_INTEGER];
  let bigEntries = 0;
  let bin32Payloads = 0;
  let float64Seqs = 0;
  for (let i = 0; i < 300; i++) {
    const recordCount = prng.pick([0, 1, 15, 16, 1000]);
    const entry: IngressEntry = {
      seq: prng.pick(uints), topicId: prng.pick(topicIds), timestampSec: prng.pick(uints),
      records: Array.from({ length: recordCount }, () => ({
        partition: prng.pick(uints),
        key: prng.chance(0.3) ? null : new Uint8Array(prng.pick(recordCount > 16 ? [0, 1, 255, 256] : lengths)).fill(7),
        payload: new Uint8Array(prng.pick(recordCount > 16 ? [1, 255, 256] : lengths)).fill(9),
        payloadKind: prng.pick([0, 1, 2] as const),
      })),
    };
    const bound = ingressEntryBytesMax(entry);
    const exact = new Uint8Array(bound);
    const written = writeIngressEntry(entry, exact, 0);
    const roomy = new Uint8Array(bound + 64);
    if (written > bound || writeIngressEntry(entry, roomy, 7) !== written || Buffer.compare(exact.subarray(0, written), roomy.subarray(7, 7 + written)) !== 0) {
      t.fail(`entry ${i} (${recordCount} records, topic ${JSON.stringify(entry.topicId)}): ${written} bytes against a bound of ${bound}`);
      return;
    }
    const decoded = decodeIngressEntry(exact.subarray(0, written));
    // A lone surrogate in the topic id is written as U+FFFD, as TextEncoder writes it.
    const expected = { ...entry, topicId: new TextDecoder().decode(new TextEncoder().encode(entry.topicId)) };
    const flat = (e: IngressEntry): unknown => ({ ...e, records: e.records.map((r) => ({ ...r, key: r.key && [...r.key], payload: [...r.payload] })) });
    if (JSON.stringify(flat(decoded)) !== JSON.stringify(flat(expected))) {
      t.fail(`entry ${i} does not decode back`);
      return;
    }
    if (recordCount === 1000) bigEntries++;
    if (entry.records.some((r) => r.payload.byteLength >= 65_536)) bin32Payloads++;
    if (entry.seq > 2 ** 32) float64Seqs++;
  }
  t.ok(bigEntries > 10 && bin32Payloads > 10 && float64Seqs > 10, `edges came up: ${bigEntries} entries of 1,000 records, ` +
    `${bin32Payloads} with a payload past 64 KiB, ${float64Seqs} with a seq past 2^32`);
});
