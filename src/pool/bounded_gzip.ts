// gzip decoding that stops at a byte cap, for batch produce bodies (spec §8: 16 MiB as decoded). Runs on a batch
// pool thread (batch_task.ts). zlib's one-call gunzip counts against maxOutputLength but tells nobody how far it
// got, so the batch body budget could not hear of the decoded bytes as they grow; here the stream's output is
// counted chunk by chunk, and a stop destroys the stream, which frees zlib's state at once.
import { createGunzip } from 'node:zlib';
import { DecodedTooLarge } from './bounded_zstd.js';

/** Output comes in chunks of this size (zlib's default is 16 KiB): a 16 MiB body is 128 chunks, not 1,024 small
 *  allocations, and at most one chunk past the cap is ever held. */
const outputChunkBytes = 128 * 1024;

/** The decoded bytes of body (gzip members one after another, as zlib's gunzip takes them); throws DecodedTooLarge
 *  past bytesMax, or zlib's error. onDecoded hears the decoded size so far before each chunk is kept, and may throw
 *  to stop. */
export async function gzipDecodeBounded(body: Uint8Array, bytesMax: number, onDecoded?: (decodedBytes: number) => void): Promise<Uint8Array> {
  const engine = createGunzip({ chunkSize: outputChunkBytes });
  engine.end(body);
  const chunks: Buffer[] = [];
  let totalBytes = 0;
  // Leaving the loop by a throw destroys the stream (the async iterator's return).
  for await (const chunk of engine as AsyncIterable<Buffer>) {
    totalBytes += chunk.byteLength;
    if (totalBytes > bytesMax) throw new DecodedTooLarge();
    onDecoded?.(totalBytes);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, totalBytes);
}
