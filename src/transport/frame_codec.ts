// The node-to-node frame: [u32 big-endian body length][msgpackr body]. encodeFrame packs one value; FrameDecoder
// turns a TCP byte stream (chunks split anywhere) back into values, refusing a length above its limit before it
// buffers the body. Pure over bytes, no I/O; one decoder per connection, on the thread that owns the PeerTransport
// (the metadata thread now; the dedicated node-link thread once the data plane runs there).
import { Packr, Unpackr } from 'msgpackr';

export const frameHeaderBytes = 4;

/** A frame longer than the decoder's limit: the stream cannot be resynchronised, so the connection must go. */
export class FrameTooLargeError extends Error {
  override name = 'FrameTooLargeError';
  constructor(
    readonly frameBytes: number,
    readonly frameBytesMax: number,
  ) {
    super(`frame of ${frameBytes} bytes exceeds the limit of ${frameBytesMax} bytes`);
  }
}

// useRecords false: a record structure would make a frame's bytes depend on what this packer sent before, and
// the two ends of a connection share no history. copyBuffers: every decoded Uint8Array gets its own
// ArrayBuffer, so a message holds no chunk alive and can be transferred to another thread.
const packr = new Packr({ useRecords: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, copyBuffers: true });

/** One whole frame for value: a fresh buffer the caller may hand to socket.write and forget. */
export function encodeFrame(value: unknown): Buffer {
  const body = packr.pack(value);
  // Copied out: the packer's result is a view of a buffer it reuses for later packs.
  const frame = Buffer.allocUnsafe(frameHeaderBytes + body.byteLength);
  frame.writeUInt32BE(body.byteLength, 0);
  frame.set(body, frameHeaderBytes);
  return frame;
}

/** The body length of an encoded frame (for queue accounting and limit checks before the write). */
export function frameBodyBytes(frame: Uint8Array): number {
  return frame.byteLength - frameHeaderBytes;
}

export function decodeBody(body: Uint8Array): unknown {
  // Read through a plain Uint8Array view: msgpackr copies byte strings with the source's own slice, so a Buffer
  // source would hand out Buffers where the sender wrote Uint8Arrays.
  const plain = body instanceof Buffer ? new Uint8Array(body.buffer, body.byteOffset, body.byteLength) : body;
  return unpackr.unpack(plain);
}

/**
 * Reassembles frames from a byte stream. push() hands the decoded value of every frame the chunk completes to
 * onValue, in order, then throws FrameTooLargeError as soon as a header announces more than frameBytesMax (or
 * msgpackr's error for a body that does not decode): the frames before the bad one are still delivered. After a
 * throw the decoder is unusable and the caller closes the stream. Once trailerBytes is set, every frame is followed
 * by that many bytes the length does not count (a connection's MAC); pushFrames hands them over with the raw body.
 */
export class FrameDecoder {
  /** Received bytes not yet part of a delivered frame; chunks are kept whole and copied only when a frame spans
   *  several of them. */
  private chunks: Buffer[] = [];
  private bufferedBytes = 0;
  /** Body length of the frame being received, once its header is complete; -1 while waiting for a header. */
  private bodyBytes = -1;
  private header: Buffer = Buffer.alloc(frameHeaderBytes);
  private trailerBytes = 0;

  constructor(private frameBytesMax: number) {}

  /** Raised once the peer is authenticated (a stranger may not make us buffer a large frame). */
  setFrameBytesMax(frameBytesMax: number): void {
    this.frameBytesMax = frameBytesMax;
  }

  /** From the next frame on, each frame is followed by n trailer bytes. Set from inside an onFrame callback, it
   *  applies to the frames after that one in the same chunk. */
  setTrailerBytes(n: number): void {
    this.trailerBytes = n;
  }

  push(chunk: Buffer, onValue: (value: unknown) => void): void {
    this.pushFrames(chunk, (_header, body) => onValue(decodeBody(body)));
  }

  /** Like push, but hands over each frame undecoded: its 4-byte header, its body and its trailer (empty while
   *  trailerBytes is 0). The views are valid only during the call. */
  pushFrames(chunk: Buffer, onFrame: (header: Buffer, body: Buffer, trailer: Buffer) => void): void {
    if (chunk.byteLength === 0) return;
    this.chunks.push(chunk);
    this.bufferedBytes += chunk.byteLength;
    for (;;) {
      if (this.bodyBytes < 0) {
        if (this.bufferedBytes < frameHeaderBytes) return;
        this.header = this.take(frameHeaderBytes);
        const length = this.header.readUInt32BE(0);
        if (length > this.frameBytesMax) throw new FrameTooLargeError(length, this.frameBytesMax);
        this.bodyBytes = length;
      }
      const trailerBytes = this.trailerBytes;
      if (this.bufferedBytes < this.bodyBytes + trailerBytes) return;
      const body = this.take(this.bodyBytes);
      const trailer = this.take(trailerBytes);
      this.bodyBytes = -1;
      onFrame(this.header, body, trailer);
    }
  }

  /** push() collecting the values, for callers that want them all at once (tests, tools). */
  pushAll(chunk: Buffer): unknown[] {
    const values: unknown[] = [];
    this.push(chunk, (value) => values.push(value));
    return values;
  }

  /** Removes the next n buffered bytes (n <= bufferedBytes): a view when they lie in one chunk, else a copy. */
  private take(n: number): Buffer {
    const first = this.chunks[0];
    if (first === undefined) return Buffer.alloc(0);
    let out: Buffer;
    if (first.byteLength >= n) {
      out = first.subarray(0, n);
      if (first.byteLength === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
    } else {
      out = Buffer.allocUnsafe(n);
      let filled = 0;
      while (filled < n) {
        const chunk = this.chunks[0];
        if (chunk === undefined) throw new Error('frame decoder: fewer bytes buffered than counted');
        const used = Math.min(chunk.byteLength, n - filled);
        chunk.copy(out, filled, 0, used);
        filled += used;
        if (used === chunk.byteLength) this.chunks.shift();
        else this.chunks[0] = chunk.subarray(used);
      }
    }
    this.bufferedBytes -= n;
    return out;
  }
}
