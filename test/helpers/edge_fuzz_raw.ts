// Raw-byte requests for the edge fuzzer (test/helpers/edge_fuzz.ts): broken framing, odd request lines and header
// blocks that a client library would never send. Each names the class it belongs to; the classes uWebSockets.js
// 20.30's parser decides before the node's code runs (docs/decisions.md "What the HTTP parser decides") are marked
// `parser`, and the fuzz test counts their unanswered requests apart instead of failing on them.
import type { Prng } from './prng.js';

export interface RawFuzzRequest {
  /** Written in order, a short pause apart (more than one part splits the header block across reads). */
  parts: Buffer[];
  className: string;
  /** Decided by uWS's parser: the node's code never sees the request, and a direct client gets no answer. */
  parser: boolean;
  /** A 202 stores one message in the fuzzed topic. */
  produces: boolean;
  /** The status an answer must have, where the spec or decisions.md fixes one. */
  expect?: number;
}

type Lines = string[];

function request(requestLine: string, headerLines: Lines, body = '', eol = '\r\n'): string {
  return [requestLine, 'Host: 127.0.0.1', ...headerLines, '', body].join(eol);
}

function produceLine(prng: Prng): string {
  return `POST /v1/topics/fuzz/produce?partition=${prng.int(0, 2)} HTTP/1.1`;
}

const json = 'Content-Type: application/json';
const answered = (className: string, text: string, produces = false): RawFuzzRequest =>
  ({ parts: [Buffer.from(text, 'latin1')], className, parser: false, produces });
const byParser = (className: string, text: string, produces = false): RawFuzzRequest =>
  ({ parts: [Buffer.from(text, 'latin1')], className, parser: true, produces });

/** Requests the node's own code answers. */
function nodeAnswers(prng: Prng, auth: string): RawFuzzRequest {
  const body = `{"n":${prng.int(0, 999)}}`;
  const authorization = `Authorization: ${auth}`;
  switch (prng.int(0, 6)) {
    case 0: return answered('same Content-Length twice', request(produceLine(prng), [authorization, json,
      `Content-Length: ${body.length}`, `Content-Length: ${body.length}`], body), true);
    case 1: return { ...answered('conflicting Content-Length', request(produceLine(prng), [authorization, json,
      `Content-Length: ${body.length}`, `Content-Length: ${body.length + prng.int(1, 5)}`], body + '     '), true), expect: 400 };
    case 2: return answered('chunked body', request(produceLine(prng), [authorization, json, 'Transfer-Encoding: chunked'],
      `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`), true);
    // Sent in one write, yet under load even a 5 KiB block may reach uWS in two reads and be dropped: the parser's.
    case 3: return { ...byParser('header block over 4 KiB, under the limit', request('GET /v1/topics HTTP/1.1',
      [authorization, `X-Fill: ${'f'.repeat(prng.int(5, 60) * 1024)}`])), expect: 200 };
    case 4: return { ...answered('two Authorization fields', request(produceLine(prng), [authorization, authorization, json,
      `Content-Length: ${body.length}`], body), true), expect: 400 };
    case 5: return answered('HEAD', request(`HEAD ${prng.pick(['/healthz', '/readyz', '/v1/topics', '/nope'])} HTTP/1.1`, [authorization]));
    default: return answered('48 header fields', request('GET /v1/topics HTTP/1.1',
      [authorization, ...Array.from({ length: 46 }, (_, i) => `X-F${i}: ${i}`)]));
  }
}

/** Requests uWS's parser refuses or holds before any handler runs. */
function parserDecides(prng: Prng, auth: string): RawFuzzRequest {
  const body = `{"p":${prng.int(0, 999)}}`;
  const produce = [`Authorization: ${auth}`, json, `Content-Length: ${body.length}`];
  switch (prng.int(0, 8)) {
    case 0: return byParser('unknown or lowercase method', request(`${prng.pick(['PROPFIND', 'PURGE', 'get', 'post', 'BREW'])} /v1/topics HTTP/1.1`, []));
    case 1: return byParser('HTTP/1.0', request(produceLine(prng).replace('1.1', '1.0'), produce, body), true);
    case 2: return byParser('49 or more header fields', request(produceLine(prng),
      [...produce, ...Array.from({ length: prng.int(46, 80) }, (_, i) => `X-F${i}: ${i}`)], body), true);
    case 3: return byParser('space in the target', request('POST /v1/topics/fuzz/produce?key=a b HTTP/1.1', produce, body), true);
    case 4: return byParser('LF-only line ends', request(produceLine(prng), produce, body, '\n'), true);
    case 5: return byParser('Content-Length not a number', request(produceLine(prng),
      [`Authorization: ${auth}`, json, `Content-Length: ${prng.pick(['1x', '-1', '+5', '0x10', ' '])}`], body), true);
    case 6: return byParser('Content-Length beside chunked', request(produceLine(prng),
      [...produce, 'Transfer-Encoding: chunked'], `${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`), true);
    case 7: return prng.chance(0.5) ? splitHeaderBlock(prng, auth) : byParser('malformed last chunk', request(produceLine(prng),
      [`Authorization: ${auth}`, 'Content-Type: application/octet-stream', 'Transfer-Encoding: chunked'], '5\r\nab\r\n0\r\n\r\n'), true);
    // Past 64 KiB a block takes more than one loopback segment and may reach uWS in two reads; answered 431 when not.
    default: return { ...byParser('header block over the limit', request('GET /v1/topics HTTP/1.1',
      [`Authorization: ${auth}`, `X-Fill: ${'f'.repeat(prng.int(66, 200) * 1024)}`])), expect: 431 };
  }
}

/** A block over 4 KiB that reaches the node in two reads: this uWS build keeps only 4 KiB of an unfinished block. */
function splitHeaderBlock(prng: Prng, auth: string): RawFuzzRequest {
  const text = request('GET /v1/topics HTTP/1.1', [`Authorization: ${auth}`, `X-Fill: ${'f'.repeat(prng.int(5, 60) * 1024)}`]);
  const cut = prng.int(1024, 3000);
  return { parts: [Buffer.from(text.slice(0, cut)), Buffer.from(text.slice(cut))], className: 'header block over 4 KiB across reads', parser: true, produces: false };
}

export function rawFuzzRequest(prng: Prng, auth: string): RawFuzzRequest {
  return prng.chance(0.5) ? nodeAnswers(prng, auth) : parserDecides(prng, auth);
}
