// The one place that writes HTTP responses (front thread). Every write is corked so status, headers and body
// leave in one syscall, and skipped when the client went away. Error bodies are {"error": "..."} except the
// plain-text answers the spec names (404 unknown route, 405, 431).
import type { HttpResponse } from 'uWebSockets.js';
import { BrokerError } from '../errors.js';

const statusLines: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 202: '202 Accepted', 204: '204 No Content',
  400: '400 Bad Request', 401: '401 Unauthorized', 403: '403 Forbidden', 404: '404 Not Found',
  405: '405 Method Not Allowed', 409: '409 Conflict', 410: '410 Gone', 413: '413 Payload Too Large',
  415: '415 Unsupported Media Type', 421: '421 Misdirected Request', 429: '429 Too Many Requests', 431: '431 Request Header Fields Too Large',
  500: '500 Internal Server Error', 501: '501 Not Implemented', 502: '502 Bad Gateway', 503: '503 Service Unavailable',
};

export function statusLine(status: number): string {
  return statusLines[status] ?? String(status);
}

/** What a handler answers; the server writes it. */
export interface Reply {
  status: number;
  /** JSON text, raw bytes or plain text; absent for an empty body. */
  body?: string | Uint8Array;
  contentType?: string;
  headers?: Readonly<Record<string, string>>;
}

export const jsonType = 'application/json';
export const textType = 'text/plain; charset=utf-8';

export function jsonReply(status: number, value: unknown, headers?: Record<string, string>): Reply {
  return { status, body: JSON.stringify(value), contentType: jsonType, headers };
}

/** An error as the catalog says to answer it: plain text where spec §7 says so (404, 405, 431, a forwarded 502),
 *  else the JSON `{"error": ...}`. */
export function errorReply(error: BrokerError): Reply {
  if (error.plainText) return plainReply(error.status, error.message, error.headers);
  return { status: error.status, body: JSON.stringify({ error: error.message }), contentType: jsonType, headers: error.headers };
}

export function plainReply(status: number, text: string, headers?: Record<string, string>): Reply {
  return { status, body: text, contentType: textType, headers };
}

/** Writes a reply; must run inside res.cork when called after an await (the caller corks). The answer to a HEAD
 *  has no body and no Content-Length (RFC 9110 §8.6 lets it omit one): this uWS build writes nothing at all when
 *  endWithoutBody gets any argument, so the connection stays open even where another answer would close it; uWS's
 *  parser frames a HEAD's body by its own length whether or not it is read. */
export function writeReply(res: HttpResponse, reply: Reply, closeConnection = false, head = false): void {
  res.writeStatus(statusLine(reply.status));
  // On every answer, error and empty ones too: a browser must never run or style an answer by guessing its type
  // (a message payload read back as text/html, say).
  res.writeHeader('X-Content-Type-Options', 'nosniff');
  if (reply.contentType !== undefined && reply.body !== undefined) res.writeHeader('Content-Type', reply.contentType);
  if (reply.headers !== undefined) {
    for (const name in reply.headers) res.writeHeader(name, reply.headers[name]!);
  }
  if (head) {
    res.endWithoutBody();
  } else if (reply.body === undefined) {
    // An empty end() writes Content-Length: 0. endWithoutBody() is not used: this uWS build then writes a
    // garbage Content-Length on a 204, and clients wait for a body that never comes.
    res.end(undefined, closeConnection);
  } else {
    res.end(reply.body, closeConnection);
  }
}
