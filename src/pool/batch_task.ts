// A piscina task: decode (gzip, zstd) and parse a batch produce body that is too big to parse on the front
// thread (over 1 MiB, or compressed). Runs on a pool thread; the front thread takes the records, or a refusal, back.
import { gunzip } from 'node:zlib';
import { DecompressStream } from 'zstd-napi';
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

/** Compressed input is fed to zstd in slices so a small bomb cannot inflate far past the cap at once. */
const zstdSliceBytes = 4096;

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

class DecodedTooLarge extends Error {}

function decode(body: Uint8Array, encoding: BodyEncoding, bytesMax: number): Promise<Uint8Array> {
  if (encoding === 'identity') return Promise.resolve(body);
  if (encoding === 'gzip') {
    return new Promise((resolve, reject) => {
      gunzip(body, { maxOutputLength: bytesMax }, (error, result) => {
        if (error === null) resolve(result);
        else reject((error as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE' ? new DecodedTooLarge() : error);
      });
    });
  }
  return zstdDecode(body, bytesMax);
}

function zstdDecode(body: Uint8Array, bytesMax: number): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const stream = new DecompressStream();
    const chunks: Buffer[] = [];
    let totalBytes = 0;
    let settled = false;
    const settle = (error: Error | null): void => {
      if (settled) return;
      settled = true;
      if (error !== null) {
        stream.destroy();
        reject(error);
      } else {
        resolve(Buffer.concat(chunks, totalBytes));
      }
    };
    stream.on('data', (chunk: Buffer) => {
      totalBytes += chunk.byteLength;
      if (totalBytes > bytesMax) settle(new DecodedTooLarge());
      else chunks.push(chunk);
    });
    stream.on('end', () => settle(null));
    stream.on('error', (error: Error) => settle(error));
    let at = 0;
    const feed = (): void => {
      while (!settled && at < body.byteLength) {
        const slice = body.subarray(at, at + zstdSliceBytes);
        at += slice.byteLength;
        if (!stream.write(slice)) {
          stream.once('drain', feed);
          return;
        }
      }
      if (!settled) stream.end();
    };
    feed();
  });
}
