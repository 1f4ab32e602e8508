// One raw HTTP/1.1 keep-alive connection for request/response loops whose next request depends on the last answer
// (bench/consume.ts: consume, then ack the handles it returned). request() writes one pre-built request buffer and
// resolves with the status and the whole body; one request at a time. Connects on first use and again after a
// close. The parser is the one of bench/load.ts's NetConnection (status, Content-Length or chunked, Connection:
// close) plus body collection. Bench process main thread.
import net from 'node:net';
import { performance } from 'node:perf_hooks';

export interface HttpReply {
  status: number;
  body: Buffer;
  /** performance.now() when the request was written, and when its last response byte was parsed. */
  startedMs: number;
  endedMs: number;
}

/** A request that got no response: code is the socket error code, or connection_closed, bad_response, ... */
export class HttpFailure extends Error {
  constructor(readonly code: string) {
    super(code);
  }
}

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

interface Waiter {
  resolve: (reply: HttpReply) => void;
  reject: (error: HttpFailure) => void;
}

export class HttpConnection {
  /** TCP connections opened so far (the first, plus reconnects). */
  opened = 0;
  private socket: net.Socket | null = null;
  private connected = false;
  private waiter: Waiter | null = null;
  private destroyed = false;
  private lastError: string | null = null;
  private pending: Buffer | null = null;
  private parse = Parse.Head;
  private status = 0;
  private remaining = 0;
  private closeAfter = false;
  private chunks: Buffer[] = [];
  private startedMs = 0;

  constructor(private readonly target: { host: string; port: number }) {}

  static forUrl(url: string): { host: string; port: number } {
    const parsed = new URL(url);
    return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 80) };
  }

  get busy(): boolean {
    return this.waiter !== null;
  }

  /** Writes request (head and body, complete) and resolves with the response; rejects with HttpFailure. */
  request(request: Buffer): Promise<HttpReply> {
    if (this.waiter !== null) return Promise.reject(new Error('HttpConnection: a request is already in flight'));
    if (this.destroyed) return Promise.reject(new HttpFailure('destroyed'));
    return new Promise<HttpReply>((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.parse = Parse.Head;
      this.pending = null;
      this.chunks = [];
      if (this.socket === null) this.connect();
      const write = (): void => {
        this.startedMs = performance.now();
        this.socket!.write(request);
      };
      if (this.connected) write();
      else this.socket!.once('connect', write);
    });
  }

  /** Closes the socket; a request in flight rejects with 'destroyed'. */
  destroy(): void {
    this.destroyed = true;
    this.lastError ??= 'destroyed';
    this.socket?.destroy();
  }

  private connect(): void {
    const socket = net.connect(this.target);
    this.socket = socket;
    this.connected = false;
    socket.setNoDelay(true);
    socket.on('connect', () => {
      this.connected = true;
      this.opened++;
    });
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.lastError = error.code ?? 'socket_error';
    });
    socket.on('close', () => this.onClose(socket));
  }

  private onClose(socket: net.Socket): void {
    if (socket !== this.socket) return;
    this.socket = null;
    this.connected = false;
    const waiter = this.waiter;
    this.waiter = null;
    const code = this.lastError ?? 'connection_closed';
    this.lastError = null;
    waiter?.reject(new HttpFailure(code));
  }

  private protocolError(code: string): void {
    this.lastError = code;
    this.socket?.destroy();
  }

  private onData(chunk: Buffer): void {
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
        if (this.pending.length > responseHeadBytesMax) this.protocolError('response_head_too_large');
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
        this.chunks.push(buffer.subarray(offset, offset + take));
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
          this.protocolError('bad_chunk_size');
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
    if (this.waiter === null || !head.startsWith('HTTP/1.') || !Number.isInteger(this.status)) {
      this.protocolError(this.waiter === null ? 'unexpected_response' : 'bad_response');
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
    const endedMs = performance.now();
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    this.chunks = [];
    this.parse = Parse.Head;
    const waiter = this.waiter!;
    this.waiter = null;
    if (this.closeAfter) {
      // The next request opens a new connection; this one's close must not reject it.
      const socket = this.socket;
      this.socket = null;
      this.connected = false;
      socket?.end();
    }
    waiter.resolve({ status: this.status, body, startedMs: this.startedMs, endedMs });
  }
}

/** One request as bytes: head with host and content-length (none on a GET without body), then the body. */
export function requestBuffer(url: string, method: string, path: string, headers: Record<string, string>,
  body: Buffer = Buffer.alloc(0)): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, `host: ${new URL(url).host}`];
  for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
  if (method !== 'GET' || body.length > 0) lines.push(`content-length: ${body.length}`);
  lines.push('', '');
  return Buffer.concat([Buffer.from(lines.join('\r\n'), 'latin1'), body]);
}
