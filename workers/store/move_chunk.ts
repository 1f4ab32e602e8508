// The records of a partition move's chunk (issue 41, MoveChunk in src/protocol/thread_messages.ts): the segment
// record frames of segment_record.ts, each with its origin set (a record the source stored as its own names the
// source), concatenated, and their crc32. Pure functions over bytes; the source's worker encodes
// (workers/move_source.ts), the destination's decodes and checks (incoming_copy.ts). Partition worker threads.
import { frameBodyBytesMax, frameHeaderBytes, crc32Range, scanFrames } from '../../src/util/frame.js';
import { unzeroedOwnBytes } from '../../src/util/owned_bytes.js';
import { recordDecode, recordFrameBytesMax, recordFrameWrite } from './segment_record.js';
import type { StoredRecord } from './segment_store.js';

/** The record with its origin named: a record without one is the node's own (selfId's). */
function withOriginOf(record: StoredRecord, selfId: number): StoredRecord {
  return record.origin === undefined || record.origin === 0 ? { ...record, origin: selfId } : record;
}

/** The chunk bytes of records (ascending offsets), in one buffer of their own (it is transferred). */
export function chunkRecordsEncode(records: readonly StoredRecord[], selfId: number): Uint8Array {
  const named = records.map((record) => withOriginOf(record, selfId));
  let bytes = 0;
  for (const record of named) bytes += recordFrameBytesMax(record.offset, record);
  const target = unzeroedOwnBytes(bytes);
  let at = 0;
  for (const record of named) at += recordFrameWrite(target, at, record.offset, record);
  return target.subarray(0, at);
}

/** The bytes one record takes in a chunk (to keep a chunk under its byte budget before encoding it). */
export function chunkRecordBytes(record: StoredRecord, selfId: number): number {
  return recordFrameBytesMax(record.offset, withOriginOf(record, selfId));
}

export function chunkCrc32(bytes: Uint8Array): number {
  return crc32Range(bytes, 0, bytes.byteLength);
}

/** The chunk's records, checked (every frame whole, count records at consecutive offsets from fromOffset, each
 *  naming its origin); a string says what is wrong. */
export function chunkRecordsDecode(bytes: Uint8Array, fromOffset: number, count: number): StoredRecord[] | string {
  const scan = scanFrames(bytes, frameBodyBytesMax);
  if (scan.validBytes !== bytes.byteLength) return `a frame at byte ${scan.validBytes} fails its length or crc check`;
  if (scan.bodies.length !== count) return `${scan.bodies.length} records where the chunk says ${count}`;
  const records: StoredRecord[] = [];
  for (let k = 0; k < scan.bodies.length; k++) {
    let record: StoredRecord;
    try {
      record = recordDecode(scan.bodies[k]!);
    } catch (err) {
      return `record ${k}: ${(err as Error).message}`;
    }
    if (record.offset !== fromOffset + k) return `record ${k} holds offset ${record.offset}, not ${fromOffset + k}`;
    if (record.origin === undefined) return `record at offset ${record.offset} names no origin`;
    records.push(record);
  }
  return records;
}

/** The chunk frame of each record, as views of bytes (for comparing what was read back). */
export function chunkFrames(bytes: Uint8Array): Uint8Array[] {
  const scan = scanFrames(bytes, frameBodyBytesMax);
  return scan.positions.map((at, k) => bytes.subarray(at, at + frameHeaderBytes + scan.bodies[k]!.byteLength));
}
