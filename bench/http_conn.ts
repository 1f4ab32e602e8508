// One raw HTTP/1.1 keep-alive connection for request/response loops whose next request depends on the last answer
// (bench/consume.ts: consume, then ack the handles it returned). request() writes one pre-built request buffer and
// resolves with the status and the whole body; one request at a time. Connects on first use and again after a
// close. Responses are parsed by bench/http_response_parser.ts (shared with bench/load.ts's NetConnection), which
// keeps the bodies here. Bench process main thread.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { ResponseParser } from './http_response_parser.js';

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

/** Called once per request: with the reply, or with why none came. */
type ReplyCallback = (outcome: HttpReply | HttpFailure) => void;

export class HttpConnection {
  /** TCP connections opened so far (the first, plus reconnects). */
  opened = 0;
  private socket: net.Socket | null = null;
  private connected = false;
  private waiter: ReplyCallback | null = null;
  private destroyed = false;
  private lastError: string | null = null;
  private startedMs = 0;
  private readonly parser = new ResponseParser({
    awaitingResponse: () => this.waiter !== null,
    onResponse: (status, body, closeAfter) => this.onResponse(status, body, closeAfter),
    onProtocolError: (code) => this.protocolError(code),
  }, true);

  /** answeredAt stamps each reply's endedMs: performance.now() by default, turnNow (bench/turn_clock.ts) where answers
   *  read in one turn must not look later for being read later. */
  constructor(private readonly target: { host: string; port: number },
    private readonly answeredAt: () => number = () => performance.now()) {}

  static forUrl(url: string): { host: string; port: number } {
    const parsed = new URL(url);
    return { host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port || 80) };
  }

  get busy(): boolean {
    return this.waiter !== null;
  }

  /** Writes request (head and body, complete) and resolves with the response; rejects with HttpFailure. */
  request(request: Buffer): Promise<HttpReply> {
    return new Promise<HttpReply>((resolve, reject) => {
      this.send(request, (outcome) => (outcome instanceof HttpFailure ? reject(outcome) : resolve(outcome)));
    });
  }

  /** request() without a promise: for open-loop senders, whose per-request promises cost the client measurably. */
  send(request: Buffer, done: ReplyCallback): void {
    if (this.waiter !== null) throw new Error('HttpConnection: a request is already in flight');
    if (this.destroyed) {
      queueMicrotask(() => done(new HttpFailure('destroyed')));
      return;
    }
    this.waiter = done;
    this.parser.reset();
    if (this.socket === null) this.connect();
    const write = (): void => {
      this.startedMs = performance.now();
      this.socket!.write(request);
    };
    if (this.connected) write();
    else this.socket!.once('connect', write);
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
    socket.on('data', (chunk: Buffer) => this.parser.push(chunk));
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
    waiter?.(new HttpFailure(code));
  }

  private protocolError(code: string): void {
    this.lastError = code;
    this.socket?.destroy();
  }

  private onResponse(status: number, body: Buffer, closeAfter: boolean): void {
    const endedMs = this.answeredAt();
    const waiter = this.waiter!;
    this.waiter = null;
    if (closeAfter) {
      // The next request opens a new connection; this one's close must not reject it.
      const socket = this.socket;
      this.socket = null;
      this.connected = false;
      socket?.end();
    }
    waiter({ status, body, startedMs: this.startedMs, endedMs });
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
