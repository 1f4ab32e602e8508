// The record frame both segment stores keep: [u32 len][u32 crc32][msgpack [offset, timestampSec, key, payload,
// payloadKind, ingressSeq, ingressIndex(, origin)]], the origin node only on a record another node handed over (its
// own node's records keep seven fields, as every earlier release wrote them), written in place (no encode, no copy) and checked after reading (length,
// crc, then the offset inside). Pure functions over bytes; run on the partition worker thread by segment_log.ts
// (the .log files) and memory_segment_store.ts (the same bytes in memory, so sizes and rolls match).
import assert from 'node:assert/strict';
import { Packr } from 'msgpackr';
import type { PayloadKind } from '../../src/protocol/ingress_frame.js';
import { frameBodyBytesMax, frameHeaderBytes, frameWhole, sealFrame } from '../../src/util/frame.js';
import { MsgpackReader, MsgpackShapeError } from '../../src/protocol/msgpack_reader.js';
import { arrayHeaderBytes, binBytes, MsgpackWriter, uintBytes } from '../../src/protocol/msgpack_writer.js';
import type { StoredRecord } from './segment_store.js';

// Positional like the ingress frame: smaller and faster to pack than a map with repeated keys.
type WireRecord = [number, number, Uint8Array | null, Uint8Array, PayloadKind, number, number, number?];

const packr = new Packr({ useRecords: false, moreTypes: false });

/** The bytes record r's frame at offset takes at most (exactly, with these field encodings). */
export function recordFrameBytesMax(offset: number, r: Omit<StoredRecord, 'offset'>): number {
  const bodyBytesMax = arrayHeaderBytes(8) + uintBytes(offset) + uintBytes(r.timestampSec) + binBytes(r.key) +
    binBytes(r.payload) + 1 + uintBytes(r.ingressSeq) + uintBytes(r.ingressIndex) +
    (r.origin === undefined || r.origin === 0 ? 0 : uintBytes(r.origin));
  if (bodyBytesMax > frameBodyBytesMax) assert.fail(`record of ${bodyBytesMax} bytes would read back as torn`);
  return frameHeaderBytes + bodyBytesMax;
}

/** Writes record r's frame at target[at..] (room for recordFrameBytesMax checked by the caller); returns the frame's
 *  bytes. words, when given, is wordsOf(target). */
export function recordFrameWrite(target: Uint8Array, at: number, offset: number, r: Omit<StoredRecord, 'offset'>, words?: DataView): number {
  const writer = new MsgpackWriter(target, at + frameHeaderBytes);
  const foreign = r.origin !== undefined && r.origin !== 0;
  writer.arrayHeader(foreign ? 8 : 7);
  writer.uint(offset);
  writer.uint(r.timestampSec);
  writer.bin(r.key);
  writer.bin(r.payload);
  writer.uint(r.payloadKind);
  writer.uint(r.ingressSeq);
  writer.uint(r.ingressIndex);
  if (foreign) writer.uint(r.origin!);
  return sealFrame(target, at, writer.at - at - frameHeaderBytes, words);
}

/** The checks stage makes of a record's fields, per record on the hot path: messages are built only on failure. */
export function recordFieldsAssert(r: Omit<StoredRecord, 'offset'>): void {
  if (!(Number.isSafeInteger(r.timestampSec) && r.timestampSec >= 0)) assert.fail(`timestampSec ${r.timestampSec} invalid`);
  if (!(r.payloadKind === 0 || r.payloadKind === 1 || r.payloadKind === 2)) assert.fail(`payloadKind ${r.payloadKind}`);
  if (!Number.isSafeInteger(r.ingressSeq)) assert.fail(`ingressSeq ${r.ingressSeq}`);
  if (!(Number.isSafeInteger(r.ingressIndex) && r.ingressIndex >= 0)) assert.fail(`ingressIndex ${r.ingressIndex}`);
  if (r.origin !== undefined && !(Number.isSafeInteger(r.origin) && r.origin >= 0)) assert.fail(`origin ${r.origin}`);
}

/** Checks the frame at bytes[start..end) of a run read for offset (length, crc, then the offset inside): the read
 *  half of the paired check, with no view or scan per record on the consume path. The caller adds where the bytes
 *  came from to a failure's message. */
export function recordFromFrameAt(bytes: Uint8Array, start: number, end: number, offset: number): StoredRecord {
  if (!frameWhole(bytes, start, end)) throw new Error(`frame of offset ${offset} fails its length or crc check`);
  const record = recordDecodeAt(bytes, start + frameHeaderBytes, end);
  if (record.offset !== offset) throw new Error(`frame read for offset ${offset} holds offset ${record.offset}`);
  return record;
}

/** The record body at bytes[start..end), read in place (key and payload are views); msgpackr decodes any shape
 *  the hand reader does not take. */
function recordDecodeAt(bytes: Uint8Array, start: number, end: number): StoredRecord {
  try {
    const reader = new MsgpackReader(bytes, start, end);
    const fields = reader.arrayHeader();
    if (fields !== 7 && fields !== 8) throw new MsgpackShapeError('segment record: not 7 or 8 fields');
    const offset = reader.uint();
    const timestampSec = reader.uint();
    const key = reader.binOrNil();
    const payload = reader.binOrNil();
    const payloadKind = reader.uint();
    const ingressSeq = reader.uint();
    const ingressIndex = reader.uint();
    const origin = fields === 8 ? reader.uint() : 0;
    if (payload === null || !reader.done || !(payloadKind === 0 || payloadKind === 1 || payloadKind === 2)) {
      throw new Error('segment record: malformed fields');
    }
    return withOrigin({ offset, timestampSec, key, payload, payloadKind, ingressSeq, ingressIndex }, origin);
  } catch (err) {
    if (!(err instanceof MsgpackShapeError)) throw err;
    return recordDecode(bytes.subarray(start, end));
  }
}

export function recordDecode(body: Uint8Array): StoredRecord {
  const wire = packr.unpack(body) as unknown;
  if (!Array.isArray(wire) || (wire.length !== 7 && wire.length !== 8)) throw new Error('segment record: malformed body');
  const [offset, timestampSec, key, payload, payloadKind, ingressSeq, ingressIndex, origin = 0] = wire as WireRecord;
  const wellFormed =
    Number.isSafeInteger(offset) &&
    Number.isSafeInteger(timestampSec) &&
    (key === null || key instanceof Uint8Array) &&
    payload instanceof Uint8Array &&
    (payloadKind === 0 || payloadKind === 1 || payloadKind === 2) &&
    Number.isSafeInteger(ingressSeq) &&
    Number.isSafeInteger(ingressIndex) &&
    Number.isSafeInteger(origin);
  if (!wellFormed) throw new Error('segment record: malformed fields');
  return withOrigin({ offset, timestampSec, key, payload, payloadKind, ingressSeq, ingressIndex }, origin);
}

/** A local record has no origin field, so records read back compare equal to what was staged. */
function withOrigin(record: StoredRecord, origin: number): StoredRecord {
  if (origin !== 0) record.origin = origin;
  return record;
}
