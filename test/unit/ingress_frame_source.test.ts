// Goal: a fan-out copy's ingress entry carries its source (issue 30) as an optional fifth element that both decoders
// read back, while an entry without one keeps the four-element frame earlier releases wrote and read; and copy origins
// sit above every node id, one per (attach epoch, parent partition).
// Method: encode with writeIngressEntry (and one entry with msgpackr), decode with decodeIngressEntry; compare.
import t from 'tap';
import { Packr } from 'msgpackr';
import { decodeIngressEntry, fanoutOrigin, ingressEntryBytesMax, PayloadKind, writeIngressEntry, type IngressEntry } from '../../src/protocol/ingress_frame.js';

function encode(entry: IngressEntry): Uint8Array {
  const target = new Uint8Array(ingressEntryBytesMax(entry));
  return target.subarray(0, writeIngressEntry(entry, target, 0));
}

const records = [
  { partition: 2, key: new Uint8Array([1, 2]), payload: new Uint8Array([123, 125]), payloadKind: PayloadKind.Json },
  { partition: 2, key: null, payload: new Uint8Array([0xff]), payloadKind: PayloadKind.Binary },
];

t.test('an entry without source is the four-element frame; with source, five, and both read back', async (t) => {
  const plain: IngressEntry = { seq: 7, topicId: 'abc', timestampSec: 1_700_000_000, records };
  const plainBytes = encode(plain);
  t.equal(plainBytes[0], 0x94, 'a fixarray of 4');
  t.same(decodeIngressEntry(plainBytes), plain);
  t.notOk('source' in decodeIngressEntry(plainBytes), 'no source field on a plain entry');
  const source = { origin: fanoutOrigin('00112233deadbeef', 4095), firstSeq: 2 ** 40 };
  const copy: IngressEntry = { ...plain, source };
  const copyBytes = encode(copy);
  t.equal(copyBytes[0], 0x95, 'a fixarray of 5');
  t.same(decodeIngressEntry(copyBytes), copy, 'the hand reader');
  const packr = new Packr({ useRecords: false, moreTypes: false });
  const viaMsgpackr = packr.pack([7, 'abc', 1_700_000_000, records.map((r) => [r.partition, r.key, r.payload, r.payloadKind]), [source.origin, source.firstSeq]]);
  t.same(decodeIngressEntry(new Uint8Array(viaMsgpackr)).source, source, 'an entry msgpackr packed');
});

t.test('copy origins are above node ids and differ by epoch and partition', async (t) => {
  t.equal(fanoutOrigin('0000000000000000', 0), 65536);
  t.ok(fanoutOrigin('ffffffffffffffff', 4095) <= Number.MAX_SAFE_INTEGER);
  t.not(fanoutOrigin('aaaaaaaa00000001', 3), fanoutOrigin('aaaaaaaa00000002', 3), 'another epoch, another origin');
  t.not(fanoutOrigin('aaaaaaaa00000001', 3), fanoutOrigin('aaaaaaaa00000001', 4), 'another partition, another origin');
});
