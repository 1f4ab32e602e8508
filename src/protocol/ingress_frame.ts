// The body of one ingress-log frame: one produce request (single or batch), all or none.
// The front thread encodes it before the ingress write; partition workers decode the same bytes
// when the synced group is dispatched to them, and again when the ingress log is replayed after a
// crash. Shared by the front thread and the partition workers.
import { Packr } from 'msgpackr';
import { MsgpackReader, MsgpackShapeError } from './msgpack_reader.js';
import { arrayHeaderBytes, binBytes, MsgpackWriter, strBytesMax, uintBytes } from './msgpack_writer.js';

/** How a stored payload is answered (NOTES 3): JSON value, UTF-8 string, or base64 with a flag. */
export const enum PayloadKind {
  Json = 0,
  Text = 1,
  Binary = 2,
}

export interface IngressRecord {
  partition: number;
  /** Key bytes; null when the message has no key (absent or empty). */
  key: Uint8Array | null;
  payload: Uint8Array;
  payloadKind: PayloadKind;
}

export interface IngressEntry {
  /** Ingress sequence: one per frame, strictly increasing on this node across restarts. */
  seq: number;
  topicId: string;
  /** Unix seconds at the front when the request was accepted (spec §2 Message timestamp). */
  timestampSec: number;
  records: IngressRecord[];
  /** Only on a fan-out copy (issue 30): where its records came from. A worker then skips a record it holds by
   *  (origin, firstSeq + index) instead of by this entry's own seq, so a copy re-sent after a crash is stored once. */
  source?: IngressSource;
  /** Indices of the records placed by a `partition` the client gave (spec §1.6: they wait for their owner, where the
   *  others may be rerouted to a live partition, src/front/ingress/reroute.ts), in increasing order; absent when none
   *  was. A frame of an earlier release has no such mark, so its records read as unpinned. */
  pinned?: readonly number[];
}

/** A fan-out copy's source: origin names (parent partition, attach epoch), fanoutOrigin of workers/fanout/fanout_copier.ts;
 *  firstSeq is the first record's parent offset + 1. */
export interface IngressSource {
  origin: number;
  firstSeq: number;
}

/** Origins 1..65535 are nodes (issue 29). A copy's origin is above them and names the parent partition and the
 *  attach epoch (its last 32 bits): the child keeps one position per origin, and a re-attach, perhaps to another parent
 *  whose offsets start lower, must not find the positions of an earlier attachment. Partitions stay below 4096
 *  (topics.partitions_max). */
export function fanoutOrigin(epoch: string, parentPartition: number): number {
  return 65536 + Number.parseInt(epoch.slice(-8), 16) * 4096 + parentPartition;
}

// Records travel as positional arrays: smaller and faster than maps with repeated keys.
type WireRecord = [number, Uint8Array | null, Uint8Array, PayloadKind];
type WireEntry = [number, string, number, WireRecord[], ([number, number] | [])?, number[]?];

const packr = new Packr({ useRecords: false, moreTypes: false });

/** Most bytes writeIngressEntry can take for entry (the topic id's UTF-8 length is bounded, not measured). */
export function ingressEntryBytesMax(entry: IngressEntry): number {
  let bytes = arrayHeaderBytes(4) + uintBytes(entry.seq) + strBytesMax(entry.topicId) + uintBytes(entry.timestampSec) +
    arrayHeaderBytes(entry.records.length);
  for (const r of entry.records) bytes += 1 + uintBytes(r.partition) + binBytes(r.key) + binBytes(r.payload) + 1;
  if (entry.source !== undefined) bytes += 1 + uintBytes(entry.source.origin) + uintBytes(entry.source.firstSeq);
  const pinned = entry.pinned;
  if (pinned !== undefined && pinned.length > 0) {
    bytes += 1 + arrayHeaderBytes(pinned.length);
    for (const index of pinned) bytes += uintBytes(index);
  }
  return bytes;
}

/** Writes entry at target[at..] (room for ingressEntryBytesMax bytes) and returns the bytes written. By hand
 *  (msgpack_writer.ts) rather than packr.pack: no intermediate arrays per record on the produce hot path, and
 *  straight into the ingress log's group buffer. decodeIngressEntry reads it back with msgpack_reader.ts. */
export function writeIngressEntry(entry: IngressEntry, target: Uint8Array, at: number): number {
  const writer = new MsgpackWriter(target, at);
  const source = entry.source;
  const pinned = entry.pinned !== undefined && entry.pinned.length > 0 ? entry.pinned : null;
  // A fifth element only on a copy, a sixth only when a record is pinned (the fifth then empty unless a copy): every
  // other frame keeps the bytes earlier releases wrote.
  writer.arrayHeader(pinned !== null ? 6 : source === undefined ? 4 : 5);
  writer.uint(entry.seq);
  writer.str(entry.topicId);
  writer.uint(entry.timestampSec);
  writer.arrayHeader(entry.records.length);
  for (const r of entry.records) {
    writer.arrayHeader(4);
    writer.uint(r.partition);
    writer.bin(r.key);
    writer.bin(r.payload);
    writer.uint(r.payloadKind);
  }
  if (source !== undefined) {
    writer.arrayHeader(2);
    writer.uint(source.origin);
    writer.uint(source.firstSeq);
  } else if (pinned !== null) writer.arrayHeader(0);
  if (pinned !== null) {
    writer.arrayHeader(pinned.length);
    for (const index of pinned) writer.uint(index);
  }
  return writer.at - at;
}

/** Decodes in place (keys and payloads are views into body) with the hand reader; msgpackr takes any shape the
 *  reader does not (msgpack_reader.ts). */
export function decodeIngressEntry(body: Uint8Array): IngressEntry {
  try {
    const reader = new MsgpackReader(body, 0, body.byteLength);
    const fields = reader.arrayHeader();
    if (fields < 4 || fields > 6) throw new MsgpackShapeError('ingress entry: not 4 to 6 fields');
    const seq = reader.uint();
    const topicId = reader.str();
    const timestampSec = reader.uint();
    const count = reader.arrayHeader();
    const records: IngressRecord[] = new Array(count);
    for (let i = 0; i < count; i++) {
      if (reader.arrayHeader() !== 4) throw new MsgpackShapeError('ingress record: not 4 fields');
      const partition = reader.uint();
      const key = reader.binOrNil();
      const payload = reader.binOrNil();
      const payloadKind = reader.uint();
      if (payload === null) throw new MsgpackShapeError('ingress record: nil payload');
      records[i] = { partition, key, payload, payloadKind };
    }
    const entry: IngressEntry = { seq, topicId, timestampSec, records };
    if (fields >= 5) readSourceAndPins(reader, entry, fields);
    if (!reader.done) throw new MsgpackShapeError('ingress entry: bytes after the records');
    return entry;
  } catch (err) {
    if (!(err instanceof MsgpackShapeError)) throw err;
    return decodeIngressEntryMsgpackr(body);
  }
}

/** The fifth element (a copy's source, or empty before pins) and the sixth (the pinned indices). */
function readSourceAndPins(reader: MsgpackReader, entry: IngressEntry, fields: number): void {
  const sourceFields = reader.arrayHeader();
  if (sourceFields === 2) entry.source = { origin: reader.uint(), firstSeq: reader.uint() };
  else if (sourceFields !== 0 || fields === 5) throw new MsgpackShapeError('ingress entry: source not 2 fields');
  if (fields === 6) {
    const pinned: number[] = new Array(reader.arrayHeader());
    for (let i = 0; i < pinned.length; i++) pinned[i] = reader.uint();
    entry.pinned = pinned;
  }
}

function decodeIngressEntryMsgpackr(body: Uint8Array): IngressEntry {
  const wire = packr.unpack(body) as WireEntry;
  if (!Array.isArray(wire) || wire.length < 4 || wire.length > 6 || !Array.isArray(wire[3])) {
    throw new Error('ingress entry: malformed body');
  }
  const [seq, topicId, timestampSec, records, source, pinned] = wire;
  const entry: IngressEntry = {
    seq,
    topicId,
    timestampSec,
    records: records.map(([partition, key, payload, payloadKind]) => ({ partition, key, payload, payloadKind })),
  };
  if (source !== undefined) {
    if (!Array.isArray(source) || (source.length !== 2 && (source.length !== 0 || pinned === undefined))) {
      throw new Error('ingress entry: malformed source');
    }
    if (source.length === 2) entry.source = { origin: source[0], firstSeq: source[1] };
  }
  if (pinned !== undefined) {
    if (!Array.isArray(pinned)) throw new Error('ingress entry: malformed pins');
    entry.pinned = pinned;
  }
  return entry;
}
