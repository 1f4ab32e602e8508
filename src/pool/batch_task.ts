// A piscina task: decode (gzip, zstd) and parse a batch produce body that is too big to parse on the front
// thread (over 1 MiB, or compressed). Runs on a pool thread; the front thread takes the records, or a refusal, back.
import { gunzip } from 'node:zlib';
import { DecodedTooLarge, zstdDecodeBounded } from './bounded_zstd.js';
import { parseBatchBody, type BatchLimits, type BatchParse } from '../protocol/batch_produce_body.js';

export type BodyEncoding = 'identity' | 'gzip' | 'zstd';

export interface BatchTask {
  body: Uint8Array;
  encoding: BodyEncoding;
  partitions: number;
  limits: BatchLimits;
  /** Spec §8: 16 MiB as sent and decoded. */
  decodedBytesMax: number;
}

export default async function runBatchTask(task: BatchTask): Promise<BatchParse> {
  let body: Uint8Array;
  try {
    body = await decode(task.body, task.encoding, task.decodedBytesMax);
  } catch (error) {
    if (error instanceof DecodedTooLarge) return { ok: false, refusal: { id: 'decodedTooLarge', args: [task.decodedBytesMax] } };
    return { ok: false, refusal: { id: 'undecodableBody', args: [task.encoding] } };
  }
  return parseBatchBody(body, task.partitions, task.limits);
}

async function decode(body: Uint8Array, encoding: BodyEncoding, bytesMax: number): Promise<Uint8Array> {
  if (encoding === 'identity') return body;
  if (encoding === 'gzip') {
    return new Promise((resolve, reject) => {
      gunzip(body, { maxOutputLength: bytesMax }, (error, result) => {
        if (error === null) resolve(result);
        else reject((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? new DecodedTooLarge() : error);
      });
    });
  }
  return zstdDecodeBounded(body, bytesMax);
}
