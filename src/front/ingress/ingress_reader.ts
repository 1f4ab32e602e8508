// Reads a seq range of the ingress log back from its segment files: the hand-off backlog of an owner whose queue
// outgrew its memory bound (handoff.ts), so a slow owner grows the origin's disk use, never its memory. Front thread;
// reads are async (libuv's pool); a cursor keeps the place in the segment, so a long backlog is read once, in order.
import { open, type FileHandle } from 'node:fs/promises';
import { MsgpackReader } from '../../protocol/msgpack_reader.js';
import { frameHeaderBytes, frameWhole, u32le } from '../../util/frame.js';

export interface IngressSegments {
  segmentsFrom(seq: number): { path: string; baseSeq: number }[];
}

interface Cursor {
  baseSeq: number;
  handle: FileHandle;
  position: number;
  /** The seq the frame at position holds, when known. */
  nextSeq: number;
}

export class IngressReader {
  private cursor: Cursor | null = null;

  constructor(private readonly segments: IngressSegments) {}

  /** The frames of seqs fromSeq..toSeq from the first one, up to about maxBytes (one frame at least), and the last seq
   *  they hold; null when none of them is on disk (it was deleted, or nothing is). */
  async read(fromSeq: number, toSeq: number, maxBytes: number): Promise<{ frames: Uint8Array; lastSeq: number } | null> {
    const candidates = this.segments.segmentsFrom(fromSeq);
    for (let k = Math.max(0, candidates.findLastIndex((s) => s.baseSeq <= fromSeq)); k < candidates.length; k++) {
      const segment = candidates[k]!;
      if (segment.baseSeq > toSeq) break;
      const found = await this.readIn(segment, fromSeq, toSeq, maxBytes);
      if (found !== null) return found;
    }
    return null;
  }

  async close(): Promise<void> {
    await this.cursor?.handle.close();
    this.cursor = null;
  }

  private async readIn(segment: { path: string; baseSeq: number }, fromSeq: number, toSeq: number, maxBytes: number) {
    const cursor = await this.cursorFor(segment, fromSeq);
    const pieces: Uint8Array[] = [];
    let bytes = 0;
    let lastSeq = -1;
    for (let rounds = 0; rounds < 1024 && bytes < maxBytes; rounds++) {
      const parsed = await framesAt(cursor.handle, cursor.position, Math.max(maxBytes - bytes, 64 * 1024));
      if (parsed.length === 0) break;
      let ended = false;
      for (const frame of parsed) {
        if (frame.seq > toSeq) {
          ended = true;
          break;
        }
        cursor.position += frame.bytes.byteLength;
        cursor.nextSeq = frame.seq + 1;
        if (frame.seq < fromSeq) continue;
        pieces.push(frame.bytes);
        bytes += frame.bytes.byteLength;
        lastSeq = frame.seq;
      }
      if (ended) break;
    }
    return lastSeq < 0 ? null : { frames: Buffer.concat(pieces), lastSeq };
  }

  private async cursorFor(segment: { path: string; baseSeq: number }, fromSeq: number): Promise<Cursor> {
    const known = this.cursor;
    if (known !== null && known.baseSeq === segment.baseSeq && known.nextSeq <= fromSeq) return known;
    await this.close();
    this.cursor = { baseSeq: segment.baseSeq, handle: await open(segment.path, 'r'), position: 0, nextSeq: segment.baseSeq };
    return this.cursor;
  }
}

/** The whole frames from position, reading length bytes, or the first frame whole when it is longer. */
async function framesAt(handle: FileHandle, position: number, length: number): Promise<{ seq: number; bytes: Uint8Array }[]> {
  const chunk = await readAt(handle, position, length);
  const frames = framesIn(chunk);
  if (frames.length > 0 || chunk.byteLength < length || chunk.byteLength < frameHeaderBytes) return frames;
  const frameBytes = frameHeaderBytes + u32le(chunk, 0);
  return frameBytes > length ? framesIn(await readAt(handle, position, frameBytes)) : frames;
}

async function readAt(handle: FileHandle, position: number, length: number): Promise<Uint8Array> {
  const buffer = Buffer.allocUnsafe(length);
  const { bytesRead } = await handle.read(buffer, 0, length, position);
  return buffer.subarray(0, bytesRead);
}

/** The whole frames at the start of chunk with their seqs: a zero length (the zeros ahead of the active segment's
 *  end), a torn frame or the chunk's end stops the walk; a frame longer than the chunk is read whole next time. */
function framesIn(chunk: Uint8Array): { seq: number; bytes: Uint8Array }[] {
  const frames: { seq: number; bytes: Uint8Array }[] = [];
  let at = 0;
  while (at + frameHeaderBytes <= chunk.byteLength) {
    const bodyBytes = u32le(chunk, at);
    const end = at + frameHeaderBytes + bodyBytes;
    if (bodyBytes === 0 || end > chunk.byteLength || !frameWhole(chunk, at, end)) break;
    const reader = new MsgpackReader(chunk, at + frameHeaderBytes, end);
    reader.arrayHeader();
    frames.push({ seq: reader.uint(), bytes: chunk.subarray(at, end) });
    at = end;
  }
  return frames;
}
