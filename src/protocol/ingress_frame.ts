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
}

// Records travel as positional arrays: smaller and faster than maps with repeated keys.
type WireRecord = [number, Uint8Array | null, Uint8Array, PayloadKind];
type WireEntry = [number, string, number, WireRecord[]];

const packr = new Packr({ useRecords: false, moreTypes: false });

/** Most bytes writeIngressEntry can take for entry (the topic id's UTF-8 length is bounded, not measured). */
export function ingressEntryBytesMax(entry: IngressEntry): number {
  let bytes = arrayHeaderBytes(4) + uintBytes(entry.seq) + strBytesMax(entry.topicId) + uintBytes(entry.timestampSec) +
    arrayHeaderBytes(entry.records.length);
  for (const r of entry.records) bytes += 1 + uintBytes(r.partition) + binBytes(r.key) + binBytes(r.payload) + 1;
  return bytes;
}

/** Writes entry at target[at..] (room for ingressEntryBytesMax bytes) and returns the bytes written. By hand
 *  (msgpack_writer.ts) rather than packr.pack: no intermediate arrays per record on the produce hot path, and
 *  straight into the ingress log's group buffer. decodeIngressEntry reads it back with msgpack_reader.ts. */
export function writeIngressEntry(entry: IngressEntry, target: Uint8Array, at: number): number {
  const writer = new MsgpackWriter(target, at);
  writer.arrayHeader(4);
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
  return writer.at - at;
}

/** Decodes in place (keys and payloads are views into body) with the hand reader; msgpackr takes any shape the
 *  reader does not (msgpack_reader.ts). */
export function decodeIngressEntry(body: Uint8Array): IngressEntry {
  try {
    const reader = new MsgpackReader(body, 0, body.byteLength);
    if (reader.arrayHeader() !== 4) throw new MsgpackShapeError('ingress entry: not 4 fields');
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
    if (!reader.done) throw new MsgpackShapeError('ingress entry: bytes after the records');
    return { seq, topicId, timestampSec, records };
  } catch (err) {
    if (!(err instanceof MsgpackShapeError)) throw err;
    return decodeIngressEntryMsgpackr(body);
  }
}

function decodeIngressEntryMsgpackr(body: Uint8Array): IngressEntry {
  const wire = packr.unpack(body) as WireEntry;
  if (!Array.isArray(wire) || wire.length !== 4 || !Array.isArray(wire[3])) {
    throw new Error('ingress entry: malformed body');
  }
  const [seq, topicId, timestampSec, records] = wire;
  return {
    seq,
    topicId,
    timestampSec,
    records: records.map(([partition, key, payload, payloadKind]) => ({ partition, key, payload, payloadKind })),
  };
}
