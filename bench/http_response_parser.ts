// The one HTTP/1.1 response parser of the bench's raw keep-alive clients (bench/http_conn.ts's HttpConnection and
// bench/load.ts's NetConnection): status line, Content-Length or chunked body, Connection: close, heads up to
// responseHeadBytesMax. push() takes socket chunks as they arrive and calls the owner back on each whole response
// and on a protocol error; reset() forgets a partial response (a new request, a new socket). Optionally keeps the
// body. Bench process main thread; one parser per connection.

/** A response head larger than this is treated as a protocol error. */
const responseHeadBytesMax = 64 * 1024;

/** Where the parser is within the current response. */
const enum Parse {
  Head,
  Body,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailer,
}

export interface ResponseParserOwner {
  /** Whether a request is waiting for its answer; a head that arrives otherwise is 'unexpected_response'. */
  awaitingResponse(): boolean;
  /** A whole response; body is empty unless the parser keeps bodies. closeAfter: it said Connection: close. */
  onResponse(status: number, body: Buffer, closeAfter: boolean): void;
  /** The bytes are no HTTP/1.1 response (or a head is too large): the owner should drop the connection. */
  onProtocolError(code: string): void;
}

const emptyBody = Buffer.alloc(0);

export class ResponseParser {
  private pending: Buffer | null = null;
  private parse = Parse.Head;
  private status = 0;
  private remaining = 0;
  private closeAfter = false;
  private chunks: Buffer[] = [];

  /** keepBody: collect the body for onResponse (else it is skipped and onResponse gets an empty buffer). */
  constructor(private readonly owner: ResponseParserOwner, private readonly keepBody: boolean) {}

  /** Forgets any partial response: the next bytes start a new response head. */
  reset(): void {
    this.parse = Parse.Head;
    this.pending = null;
    this.chunks = [];
  }

  /** Parses as many response bytes as arrived; calls the owner back for each whole response. */
  push(chunk: Buffer): void {
    let buffer = chunk;
    if (this.pending !== null) {
      buffer = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    let offset = 0;
    while (offset < buffer.length) {
      const next = this.step(buffer, offset);
      if (next < 0) {
        this.pending = buffer.subarray(offset);
        if (this.pending.length > responseHeadBytesMax) this.owner.onProtocolError('response_head_too_large');
        return;
      }
      offset = next;
    }
  }

  /** Advances the parser from offset; returns the new offset, or -1 when more bytes are needed. */
  private step(buffer: Buffer, offset: number): number {
    switch (this.parse) {
      case Parse.Head:
        return this.stepHead(buffer, offset);
      case Parse.Body:
      case Parse.ChunkData: {
        const take = Math.min(this.remaining, buffer.length - offset);
        if (this.keepBody) this.chunks.push(buffer.subarray(offset, offset + take));
        this.remaining -= take;
        if (this.remaining === 0) {
          if (this.parse === Parse.Body) this.finish();
          else [this.parse, this.remaining] = [Parse.ChunkEnd, 2];
        }
        return offset + take;
      }
      case Parse.ChunkEnd: {
        const take = Math.min(this.remaining, buffer.length - offset);
        this.remaining -= take;
        if (this.remaining === 0) this.parse = Parse.ChunkSize;
        return offset + take;
      }
      case Parse.ChunkSize: {
        const end = buffer.indexOf('\r\n', offset, 'latin1');
        if (end < 0) return -1;
        const size = parseInt(buffer.toString('latin1', offset, end), 16);
        if (!Number.isFinite(size) || size < 0) {
          this.owner.onProtocolError('bad_chunk_size');
          return buffer.length;
        }
        this.parse = size === 0 ? Parse.Trailer : Parse.ChunkData;
        this.remaining = size;
        return end + 2;
      }
      case Parse.Trailer: {
        const end = buffer.indexOf('\r\n', offset, 'latin1');
        if (end < 0) return -1;
        if (end === offset) this.finish();
        return end + 2;
      }
    }
  }

  private stepHead(buffer: Buffer, offset: number): number {
    const end = buffer.indexOf('\r\n\r\n', offset, 'latin1');
    if (end < 0) return -1;
    const head = buffer.toString('latin1', offset, end);
    this.status = Number(head.slice(9, 12));
    const awaiting = this.owner.awaitingResponse();
    if (!awaiting || !head.startsWith('HTTP/1.') || !Number.isInteger(this.status)) {
      this.owner.onProtocolError(awaiting ? 'bad_response' : 'unexpected_response');
      return buffer.length;
    }
    this.closeAfter = /\r\nconnection:[^\r]*close/i.test(head);
    if (/\r\ntransfer-encoding:[^\r]*chunked/i.test(head)) {
      this.parse = Parse.ChunkSize;
      return end + 4;
    }
    const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
    this.remaining = length ? Number(length[1]) : 0;
    this.parse = Parse.Body;
    if (this.remaining === 0) this.finish();
    return end + 4;
  }

  private finish(): void {
    let body: Buffer = emptyBody;
    if (this.chunks.length === 1) body = this.chunks[0]!;
    else if (this.chunks.length > 1) body = Buffer.concat(this.chunks);
    this.chunks = [];
    this.parse = Parse.Head;
    this.owner.onResponse(this.status, body, this.closeAfter);
  }
}
