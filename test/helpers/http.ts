// Small request helpers for the black-box HTTP tests: a request over node:http with full control of the headers
// (fetch would add a Content-Type of its own), a raw request over node:net for cases a client library refuses to
// send, and assertions for the spec's error shape (spec §7: a JSON object whose only field is error).
// Imports nothing from src/; every request uses its own connection so a test never leaks sockets.
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import type { Test } from 'tap';

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  text: string;
  /** The body parsed as JSON; throws with the text when it does not parse. */
  json(): any;
}

export interface RequestOptions {
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string or Buffer is sent as is. */
  body?: unknown;
  /** Authorization header value; null sends none. Defaults to the client's auth. */
  auth?: string | null;
  /** Content-Type; null sends none. Defaults to application/json when a body is given. */
  contentType?: string | null;
  timeoutMs?: number;
}

/** One request on a fresh connection. Content-Length is always sent (0 without body), never chunked encoding. */
export function send(baseUrl: string, method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
  const url = new URL(path, baseUrl);
  let body: Buffer | undefined;
  if (options.body !== undefined) {
    body = Buffer.isBuffer(options.body)
      ? options.body
      : Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
  }
  const headers: Record<string, string> = { connection: 'close', 'content-length': String(body?.length ?? 0) };
  if (options.auth) headers['authorization'] = options.auth;
  const contentType = options.contentType === undefined ? (body ? 'application/json' : null) : options.contentType;
  if (contentType !== null) headers['content-type'] = contentType;
  Object.assign(headers, options.headers ?? {});
  const timeoutMs = options.timeoutMs ?? 15_000;
  return new Promise<HttpResponse>((resolve, reject) => {
    let answered = false;
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path: url.pathname + url.search, headers, agent: false },
      (res) => {
        answered = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          clearTimeout(timer);
          const all = Buffer.concat(chunks);
          const text = all.toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: all,
            text,
            json() {
              try {
                return JSON.parse(text);
              } catch {
                throw new Error(`${method} ${path}: body is not JSON (status ${res.statusCode}): ${text.slice(0, 300)}`);
              }
            },
          });
        });
      },
    );
    const timer = setTimeout(() => {
      req.destroy(new Error(`${method} ${path}: no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    // A server may answer (413, 431) and close before the whole body is written: errors after the answer are noise.
    req.on('error', (error) => {
      if (!answered) {
        clearTimeout(timer);
        reject(error);
      }
    });
    if (body) req.write(body);
    req.end();
  });
}

/** A client bound to one node and one Authorization value. */
export class Client {
  constructor(
    readonly baseUrl: string,
    readonly auth: string | null,
  ) {}

  request(method: string, path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    return send(this.baseUrl, method, path, { ...options, auth: options.auth === undefined ? this.auth : options.auth });
  }
  get(path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('GET', path, options);
  }
  post(path: string, body?: unknown, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('POST', path, { ...options, body });
  }
  patch(path: string, body?: unknown, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('PATCH', path, { ...options, body });
  }
  delete(path: string, options: RequestOptions = {}): Promise<HttpResponse> {
    return this.request('DELETE', path, options);
  }
}

export interface RawResponse {
  status: number;
  /** Header names lowercased; a repeated header keeps its last value. */
  headers: Record<string, string>;
  raw: string;
  body: string;
}

/**
 * Writes `text` as is to a fresh TCP connection and reads until the server closes it, the answer's Content-Length
 * is complete (with untilClose: only the close), or the timeout. For requests a client library will not produce
 * (malformed lines or headers, pipelining). `raw` holds everything read.
 */
export function rawRequest(port: number, text: string | Buffer, timeoutMs = 10_000, untilClose = false): Promise<RawResponse> {
  return new Promise<RawResponse>((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    const chunks: Buffer[] = [];
    let settled = false;
    const timer = setTimeout(() => finish(), timeoutMs);
    socket.on('connect', () => socket.write(text));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const parsed = parse();
      if (parsed && parsed.complete && !untilClose) finish();
    });
    socket.on('error', () => finish());
    socket.on('close', () => finish());

    function parse(): (RawResponse & { complete: boolean }) | null {
      const raw = Buffer.concat(chunks).toString('latin1');
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const lines = raw.slice(0, end).split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const body = raw.slice(end + 4);
      const length = headers['content-length'];
      const complete = length !== undefined && Buffer.byteLength(body, 'latin1') >= Number(length);
      return { status, headers, raw, body, complete };
    }
    function finish(): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const parsed = parse();
      if (parsed) resolve({ status: parsed.status, headers: parsed.headers, raw: parsed.raw, body: parsed.body });
      else reject(new Error(`no HTTP answer; got ${JSON.stringify(Buffer.concat(chunks).toString('latin1').slice(0, 200))}`));
    }
  });
}

/** What a raw exchange read: the bytes (latin1) and when the peer closed, if it did before the end. */
export interface RawExchange { bytes: string; closedAfterMs: number | null }

/**
 * Writes parts to a loopback port 20 ms apart (then half-closes, if asked) and reads until `done(bytes)` says the
 * answer is whole, the peer closes, or timeoutMs passes. For requests a client library would never send, and for
 * the ones a server may leave unanswered (rawRequest parses one answer; this only reads).
 */
export function rawExchange(port: number, parts: readonly (string | Buffer)[], options: { timeoutMs: number; halfClose?: boolean;
  done?: (bytes: string) => boolean }): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const startedMs = Date.now();
    let bytes = '';
    let settled = false;
    const settle = (closed: boolean): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ bytes, closedAfterMs: closed ? Date.now() - startedMs : null });
    };
    const timer = setTimeout(() => settle(false), options.timeoutMs);
    socket.on('connect', async () => {
      for (const [i, part] of parts.entries()) {
        if (i > 0) await sleep(20);
        if (!socket.destroyed) socket.write(part);
      }
      if (options.halfClose === true && !socket.destroyed) socket.end();
    });
    socket.on('data', (chunk: Buffer) => {
      bytes += chunk.toString('latin1');
      if (options.done?.(bytes) === true) settle(false);
    });
    socket.on('close', () => settle(true));
    socket.on('error', () => settle(true));
  });
}

/**
 * Asserts a JSON error answer (spec §7): the status, a JSON content type, a body that is an object whose only field
 * is error (a string), and, when given, that the message contains `mentions` (case-insensitive for strings).
 */
export function assertError(t: Test, res: HttpResponse, status: number, mentions?: string | RegExp, what = ''): void {
  const label = what ? `${what}: ` : '';
  t.equal(res.status, status, `${label}status ${status} (body ${res.text.slice(0, 200)})`);
  t.match(String(res.headers['content-type'] ?? ''), /^application\/json/, `${label}JSON content type`);
  let body: unknown;
  try {
    body = JSON.parse(res.text);
  } catch {
    t.ok(false, `${label}error body is JSON: ${res.text.slice(0, 200)}`);
    return;
  }
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  t.ok(isObject, `${label}error body is an object`);
  if (!isObject) return;
  t.same(Object.keys(body as object), ['error'], `${label}error body has only the field error`);
  const message = (body as { error?: unknown }).error;
  t.equal(typeof message, 'string', `${label}error is a string`);
  if (mentions !== undefined && typeof message === 'string') {
    if (typeof mentions === 'string') {
      t.ok(message.toLowerCase().includes(mentions.toLowerCase()), `${label}error "${message}" mentions "${mentions}"`);
    } else {
      t.match(message, mentions, `${label}error "${message}" matches ${mentions}`);
    }
  }
}

/** Asserts a plain-text answer (404, 405, 431 per spec §7 and docs/decisions.md). */
export function assertPlainText(t: Test, res: { status: number; headers: Record<string, unknown> }, status: number, what = ''): void {
  const label = what ? `${what}: ` : '';
  t.equal(res.status, status, `${label}status ${status}`);
  t.match(String(res.headers['content-type'] ?? ''), /^text\/plain/, `${label}plain-text content type`);
}

/** Polls `probe` every `intervalMs` until it returns a value that is not undefined, or the deadline passes. */
export async function pollUntil<T>(probe: () => Promise<T | undefined>, timeoutMs: number, intervalMs = 50): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 10_000; attempt++) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() >= deadline) return undefined;
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  return undefined;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
