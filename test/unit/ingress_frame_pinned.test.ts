// Goal: an ingress entry marks the records placed by a client-given partition (issue 41 point 5: those wait for their
// owner, the others may be rerouted) in an optional sixth element both decoders read back, while an entry without
// pins keeps the frame earlier releases wrote and read (4 elements, or 5 for a copy), and such a frame reads as
// unpinned. The origin's hand-off then leaves out of what it sends an owner the frames a reroute moved elsewhere.
// Method: encode with writeIngressEntry (and with msgpackr), decode with decodeIngressEntry; owedFrames on frames
// of known seqs.
import t from 'tap';
import { Packr } from 'msgpackr';
import { decodeIngressEntry, PayloadKind, type IngressEntry } from '../../src/protocol/ingress_frame.js';
import { owedFrames } from '../../src/front/ingress/reroute.js';
import { checkedFrameBodies, encodeFrame } from '../../src/util/frame.js';
import { encodeIngressEntry as encode } from '../helpers/ingress_entries.js';

const records = [
  { partition: 2, key: new Uint8Array([1, 2]), payload: new Uint8Array([123, 125]), payloadKind: PayloadKind.Json },
  { partition: 0, key: null, payload: new Uint8Array([0xff]), payloadKind: PayloadKind.Binary },
  { partition: 1, key: null, payload: new Uint8Array([0x41]), payloadKind: PayloadKind.Text },
];

t.test('pins are a sixth element; without them the frame is as before', async (t) => {
  const plain: IngressEntry = { seq: 7, topicId: 'abc', timestampSec: 1_700_000_000, records };
  t.equal(encode(plain)[0], 0x94, 'no pins: a fixarray of 4');
  t.equal(encode({ ...plain, pinned: [] })[0], 0x94, 'an empty pin list writes nothing');
  t.notOk('pinned' in decodeIngressEntry(encode(plain)), 'a frame without pins reads as unpinned');
  const pinned: IngressEntry = { ...plain, pinned: [0, 2] };
  const pinnedBytes = encode(pinned);
  t.equal(pinnedBytes[0], 0x96, 'pins: a fixarray of 6');
  t.same(decodeIngressEntry(pinnedBytes), pinned, 'the hand reader');
  t.notOk('source' in decodeIngressEntry(pinnedBytes), 'the empty fifth element is no source');
  const copy: IngressEntry = { ...plain, source: { origin: 70_000, firstSeq: 2 ** 40 }, pinned: [1] };
  t.same(decodeIngressEntry(encode(copy)), copy, 'a source and pins');
  const packr = new Packr({ useRecords: false, moreTypes: false });
  const wire = [7, 'abc', 1_700_000_000, records.map((r) => [r.partition, r.key, r.payload, r.payloadKind])];
  t.same(decodeIngressEntry(new Uint8Array(packr.pack([...wire, [], [0, 2]]))).pinned, [0, 2], 'msgpackr packed pins');
  t.notOk('source' in decodeIngressEntry(new Uint8Array(packr.pack([...wire, [], [2]]))), 'msgpackr: empty source');
  t.throws(() => decodeIngressEntry(new Uint8Array(packr.pack([...wire, []]))), 'five elements with an empty source');
});

t.test('owedFrames leaves out the frames up to the mark that hold nothing still owed', async (t) => {
  const frameOf = (seq: number) => encodeFrame(encode({ seq, topicId: 'abc', timestampSec: 1, records }));
  const frames = Buffer.concat([1, 2, 3, 4, 5].map(frameOf));
  const seqs = (bytes: Uint8Array) => checkedFrameBodies(bytes).map((body) => decodeIngressEntry(body).seq);
  t.equal(owedFrames(frames, { upTo: 0, kept: [], pending: false }), frames, 'no reroute: the same bytes');
  t.same(seqs(owedFrames(frames, { upTo: 3, kept: [2], pending: false })), [2, 4, 5], 'past the mark, or kept');
  t.same(seqs(owedFrames(frames, { upTo: 5, kept: [], pending: false })), [], 'all rerouted: nothing');
});
