// zstd decoding that stops at a byte cap with bounded memory and CPU, for batch produce bodies (spec §8: 16 MiB as
// decoded). Runs on a batch pool thread. zstd-napi's DecompressStream decodes a whole input chunk in one synchronous
// loop whatever the reader wants (a 2 KiB bomb became 64 MiB before the cap was checked), and each stream's
// context, window buffer included, was freed only when GC got to it: 300 bombs grew a node by 5.5 GiB (issue 27
// point 1). Here one context per thread is reset for each body, and output is counted chunk by chunk.
import zstdBinding from 'zstd-napi/binding.js';

// A CommonJS module whose native exports Node cannot list for a named ESM import.
const { DCtx, DParameter, ResetDirective } = zstdBinding;
type DCtx = InstanceType<typeof DCtx>;

/** Output is produced in chunks of this size; at most one chunk past the cap is ever held. */
const outputChunkBytes = 128 * 1024;
/** Largest window a body may ask for (2^24 = 16 MiB, the decoded cap): a frame asking more is refused before any
 *  window is allocated, instead of allocating up to zstd's default limit of 128 MiB. */
const windowLogMax = 24;

export class DecodedTooLarge extends Error {}

let context: DCtx | null = null;

function contextReset(): DCtx {
  if (context === null) {
    context = new DCtx();
  } else {
    context.reset(ResetDirective.sessionAndParameters);
  }
  context.setParameter(DParameter.windowLogMax, windowLogMax);
  return context;
}

/** The decoded bytes of body (one or more frames); throws DecodedTooLarge past bytesMax, or zstd's error. onDecoded
 *  hears the decoded size so far before each chunk is kept, and may throw to stop (the batch body budget). */
export function zstdDecodeBounded(body: Uint8Array, bytesMax: number, onDecoded?: (decodedBytes: number) => void): Uint8Array {
  const dctx = contextReset();
  const chunks: Buffer[] = [];
  let totalBytes = 0;
  let input = body;
  let frameOpen = false;
  // Bounded: each pass consumes input or produces output, and output stops at the cap.
  for (;;) {
    const output = Buffer.allocUnsafe(outputChunkBytes);
    const [remaining, produced, consumed] = dctx.decompressStream(output, input);
    totalBytes += produced;
    if (totalBytes > bytesMax) throw new DecodedTooLarge();
    if (produced > 0) {
      onDecoded?.(totalBytes);
      chunks.push(output.subarray(0, produced));
    }
    input = input.subarray(consumed);
    // A call with nothing left to read or write only probes for a next frame; its hint says nothing of the last one.
    if (produced > 0 || consumed > 0) frameOpen = remaining !== 0;
    if (produced === 0 && consumed === 0 && input.length > 0) throw new Error('zstd: no progress');
    if (input.length === 0 && produced < outputChunkBytes) break;
  }
  if (frameOpen) throw new Error('zstd: the body ends inside a frame');
  return Buffer.concat(chunks, totalBytes);
}
