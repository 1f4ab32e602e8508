// A seeded generator of malformed and unusual requests over the broker's routes (issue 27 "Shown by"): bad JSON,
// numbers out of range, wrong types and encodings, bad query values and receipt handles, unknown routes and methods,
// compressed garbage. Each request is made from the seed alone, so SEED=<n> replays a run. Used by
// test/http/edge_fuzz.test.ts; it only builds requests, the test sends them.
import { gzipSync } from 'node:zlib';
import { compress as zstdCompress } from 'zstd-napi';
import type { Prng } from './prng.js';

export interface FuzzRequest {
  method: string;
  path: string;
  body?: Buffer;
  contentType?: string | null;
  headers?: Record<string, string>;
  /** Messages a 202 to this request stores in the fuzzed topic: 1 for a single produce, the batch size else. */
  produces?: 'single' | 'batch';
}

const odd = ['', '-0', '-1', '0', '1', '2', '99', '1e3', '1.5', 'abc', '%00', '%ff', '9007199254740993', '  1', '0x1', 'NaN'];
const oddJson = [null, true, 0, -1, 1.5, 1e308, '', 'x', [], {}, [1, 2], { a: 1 }, 2 ** 53, -(2 ** 31), '3', 'ünï'];
const durations = ['0', '1ms', '250ms', '1s', '-1s', '10h', '1.5s', 'abc', '', '1', '1m', '9999999999s', '1s1s'];

function pickValue(prng: Prng): unknown {
  return prng.pick(oddJson);
}

function jsonOrGarbage(prng: Prng, value: unknown): Buffer {
  const text = JSON.stringify(value);
  switch (prng.int(0, 5)) {
    case 0: return Buffer.from(text.slice(0, prng.int(0, text.length)));
    case 1: return Buffer.from(text + prng.pick([',', '}', ' x', '\u0000']));
    case 2: return Buffer.from([0xff, 0xfe, 0x00, 0x7b]);
    default: return Buffer.from(text);
  }
}

function topicCreate(prng: Prng): FuzzRequest {
  const body: Record<string, unknown> = {};
  if (prng.chance(0.8)) body.name = prng.chance(0.5) ? `fz${prng.int(0, 40)}` : pickValue(prng);
  for (const field of ['partitions', 'retention_ms', 'visibility_timeout_ms', 'max_in_flight_per_partition', 'parent', 'bogus']) {
    if (prng.chance(0.3)) body[field] = pickValue(prng);
  }
  return { method: 'POST', path: '/v1/topics', body: jsonOrGarbage(prng, body) };
}

function produceSingle(prng: Prng): FuzzRequest {
  const query = new URLSearchParams();
  if (prng.chance(0.5)) query.append('partition', prng.pick(odd));
  if (prng.chance(0.2)) query.append('partition', prng.pick(odd));
  if (prng.chance(0.3)) query.append('key', prng.pick(['k', '', '%', 'ü'.repeat(prng.int(1, 300))]));
  if (prng.chance(0.2)) query.append('payload_encoding', prng.pick(['base64', 'hex', '']));
  const body = prng.chance(0.5) ? jsonOrGarbage(prng, { v: pickValue(prng) }) : Buffer.from(prng.pick(['', '!!!', 'QUJD', '{']));
  const contentType = prng.pick(['application/json', 'application/octet-stream', 'text/plain', 'application/json; charset=x', null]);
  return { method: 'POST', path: `/v1/topics/fuzz/produce?${query}`, body, contentType, produces: 'single' };
}

function produceBatch(prng: Prng): FuzzRequest {
  const count = prng.pick([0, 1, 3, 1001]);
  const messages = Array.from({ length: count }, () =>
    prng.chance(0.7) ? { payload: pickValue(prng), partition: prng.chance(0.5) ? prng.int(-1, 4) : undefined } : pickValue(prng));
  let body = jsonOrGarbage(prng, prng.chance(0.9) ? { messages } : { messages, extra: 1 });
  const headers: Record<string, string> = { 'x-svc-client': 'fuzz' };
  const encoding = prng.pick(['', '', 'gzip', 'zstd', 'br', 'gzip']);
  if (encoding !== '') {
    headers['content-encoding'] = encoding;
    if (encoding === 'gzip' && prng.chance(0.6)) body = gzipSync(body);
    else if (encoding === 'zstd' && prng.chance(0.6)) body = zstdCompress(body);
  }
  return { method: 'POST', path: '/v1/topics/fuzz/produce/batch', body, headers, produces: 'batch' };
}

function consume(prng: Prng): FuzzRequest {
  const query = new URLSearchParams();
  for (const name of ['partition', 'offset', 'max']) if (prng.chance(0.35)) query.append(name, prng.pick(odd));
  if (prng.chance(0.5)) query.append('wait', prng.pick(durations.filter((d) => !/^(10h|1m|9999999999s|1s)$/.test(d))));
  const headers: Record<string, string> = prng.chance(0.5) ? { 'x-svc-client': 'fuzz' } : {};
  return { method: 'GET', path: `/v1/topics/${prng.pick(['fuzz', 'nope', '%2e%2e'])}/consume?${query}`, headers };
}

function ack(prng: Prng): FuzzRequest {
  const handle = prng.pick(['0:0:abcdefabcdef', '1:2', 'x', '', '99:0:000000000000', '-1:0:aaaaaaaaaaaa', '0:-0:aaaaaaaaaaaa']);
  const query = prng.chance(0.6) ? `?receipt_handle=${encodeURIComponent(handle)}` : '';
  const extend = prng.chance(0.3) ? `${query === '' ? '?' : '&'}extend=${prng.pick(['true', '0', '1', 'maybe'])}` : '';
  const body = query === '' ? jsonOrGarbage(prng, { receipt_handles: prng.chance(0.8) ? [handle, pickValue(prng)] : pickValue(prng) }) : undefined;
  return { method: 'POST', path: `/v1/topics/fuzz/ack${query}${extend}`, body, headers: { 'x-svc-client': 'fuzz' } };
}

function users(prng: Prng): FuzzRequest {
  const body = { username: prng.chance(0.5) ? `u${prng.int(0, 20)}` : pickValue(prng), password: pickValue(prng), grants: pickValue(prng) };
  return { method: 'POST', path: '/v1/users', body: jsonOrGarbage(prng, body) };
}

function stray(prng: Prng): FuzzRequest {
  // Never DELETE (the topic must outlive the run) nor POST (a stray produce would store uncounted messages).
  const method = prng.pick(['PUT', 'PATCH', 'GET', 'OPTIONS']);
  const path = prng.pick(['/v1/topics/fuzz/produce', '/v1/nothing', '/v1/topics/fuzz', '/v1/topics/%zz', '/', '/v1/users/%00']);
  return { method, path, body: prng.chance(0.5) ? jsonOrGarbage(prng, { retention_ms: pickValue(prng) }) : undefined };
}

const makers = [topicCreate, produceSingle, produceSingle, produceBatch, produceBatch, consume, ack, users, stray];

export function fuzzRequest(prng: Prng): FuzzRequest {
  return prng.pick(makers)(prng);
}
