// Goal: the HTTP rules every route shares: 404/405/431 plain-text answers (spec §7, decisions "Plain-text bodies"),
// the 1 MiB body limit (§8, 413), the content-type rule (§5.6, 415) and its order after credentials (401 first),
// query-parameter rules (decisions: unknown ignored, known given twice 400), 501 for routes of later work, and what
// a pipelining client gets (decisions: "HTTP pipelining").
// Method: black box. One secured node started with http.max_header_bytes=8192; requests over node:http, and raw
// TCP for the oversized header block. Topics used here have names starting with hr-.
import { connect } from 'node:net';
import t from 'tap';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, assertError, assertPlainText, rawRequest, send } from '../helpers/http.js';

let node: StartedNode;
let api: Client;
let anon: Client;

t.before(async () => {
  node = await startNodeFor(t, { args: ['--set', 'http.max_header_bytes=8192'] });
  api = new Client(node.url, node.auth);
  anon = new Client(node.url, null);
  const res = await api.post('/v1/topics', { name: 'hr-topic' });
  if (res.status !== 201) throw new Error(`setup: create hr-topic answered ${res.status} ${res.text}`);
});

t.test('unknown route: 404 plain text, before credentials', async (t) => {
  for (const [method, path] of [
    ['GET', '/v1/nope'],
    ['GET', '/nope'],
    ['GET', '/v2/topics'],
    ['POST', '/v1/topicz'],
    ['GET', '/v1/topics/hr-topic/nope'],
    ['GET', '/v1/topics/hr-topic/produce/batch/x'],
  ] as const) {
    const withAuth = await api.request(method, path);
    assertPlainText(t, withAuth, 404, `${method} ${path}`);
    t.equal(withAuth.text.trim(), 'not found', `${method} ${path}: body`);
    const withoutAuth = await anon.request(method, path);
    assertPlainText(t, withoutAuth, 404, `${method} ${path} without credentials`);
  }
});

t.test('wrong method: 405 plain text with Allow', async (t) => {
  const cases: Array<[string, string, string[]]> = [
    ['DELETE', '/v1/topics', ['GET', 'POST']],
    ['PUT', '/v1/topics', ['GET', 'POST']],
    ['PUT', '/v1/topics/hr-topic', ['GET', 'PATCH', 'DELETE']],
    ['POST', '/v1/topics/hr-topic', ['GET', 'PATCH', 'DELETE']],
    ['GET', '/v1/topics/hr-topic/produce', ['POST']],
    ['DELETE', '/v1/topics/hr-topic/produce/batch', ['POST']],
    ['POST', '/v1/topics/hr-topic/consume', ['GET']],
    ['GET', '/v1/topics/hr-topic/ack', ['POST']],
    ['POST', '/healthz', ['GET']],
    ['DELETE', '/readyz', ['GET']],
  ];
  for (const [method, path, allowed] of cases) {
    const res = await api.request(method, path, method === 'GET' || method === 'DELETE' ? {} : { body: '{}' });
    assertPlainText(t, res, 405, `${method} ${path}`);
    t.equal(res.text.trim(), 'method not allowed', `${method} ${path}: body`);
    const allow = String(res.headers['allow'] ?? '');
    const listed = allow.split(',').map((m) => m.trim()).filter((m) => m !== '' && m !== 'HEAD' && m !== 'OPTIONS');
    t.same([...listed].sort(), [...allowed].sort(), `${method} ${path}: Allow "${allow}" lists ${allowed.join(', ')}`);
  }
  const noAuth = await anon.request('DELETE', '/v1/topics');
  assertPlainText(t, noAuth, 405, 'method is checked before credentials');
});

t.test('header block over http.max_header_bytes: 431', async (t) => {
  const big = 'x'.repeat(10 * 1024);
  const raw = await rawRequest(
    node.port,
    `GET /v1/topics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${node.auth}\r\nX-Big: ${big}\r\nConnection: close\r\n\r\n`,
  );
  assertPlainText(t, raw, 431, '10 KB header');
  // Spread over many headers counts the same: the block, not one line, is limited.
  const many = Array.from({ length: 40 }, (_, i) => `X-Part-${i}: ${'y'.repeat(256)}\r\n`).join('');
  const rawMany = await rawRequest(
    node.port,
    `GET /v1/topics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${node.auth}\r\n${many}Connection: close\r\n\r\n`,
  );
  assertPlainText(t, rawMany, 431, '40 headers of 256 bytes');
  // Under the limit is served normally.
  const small = await api.get('/v1/topics', { headers: { 'x-small': 'z'.repeat(4 * 1024) } });
  t.equal(small.status, 200, '4 KB header is fine');
  // The node still serves after refusing.
  t.equal((await api.get('/v1/topics')).status, 200, 'node still serves');
});

/** Writes `text` (several requests) in one write and watches the connection for waitMs: the status lines read, and
 *  whether the node closed it. */
function pipelined(port: number, text: string, waitMs: number): Promise<{ statuses: number[]; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    let read = '';
    const finish = (closed: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ statuses: [...read.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), closed });
    };
    const timer = setTimeout(() => finish(false), waitMs);
    socket.on('connect', () => socket.write(text));
    socket.on('data', (chunk: Buffer) => (read += chunk.toString('latin1')));
    socket.on('error', () => undefined);
    socket.on('close', () => finish(true));
  });
}

t.test('pipelined requests: answered in order when each is answered at once, the connection closed when one waits', async (t) => {
  const health = 'GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
  const quick = await pipelined(node.port, health + health, 1000);
  t.same(quick, { statuses: [200, 200], closed: false }, 'two health checks in one write: both answered, connection kept');

  const created = await api.post('/v1/topics', { name: 'hr-pipelined', partitions: 3 });
  t.equal(created.status, 201, 'topic created');
  const body = '{"n":1}';
  const produce = `POST /v1/topics/hr-pipelined/produce HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${node.auth}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  // A produce is answered after its ingress sync: uWS closes a connection whose next request arrives before that.
  const waiting = await pipelined(node.port, produce + produce, 5000);
  t.same(waiting, { statuses: [], closed: true }, 'two produces in one write: closed, neither answered');
  // The first had its whole body when the second arrived, so it was stored, as a produce whose answer was lost is.
  const stored = await api.get('/v1/topics/hr-pipelined/consume?max=10&wait=5s', { headers: { 'x-svc-client': 'hr' } });
  t.equal(stored.status, 200, 'consume answers');
  t.equal((stored.json() as { messages: unknown[] }).messages.length, 1, 'the first produce was stored');
  const more = await api.get('/v1/topics/hr-pipelined/consume?max=10&wait=1s', { headers: { 'x-svc-client': 'hr' } });
  t.equal(more.status, 204, 'the second was not');
  t.equal((await api.get('/v1/topics')).status, 200, 'node still serves');
});

t.test('body over 1 MiB on POST /v1/topics: 413 JSON error', async (t) => {
  const over = Buffer.alloc(1_048_577, 0x20);
  over.write('{"name":"hr-big","pad":"');
  over.write('"}', over.length - 2);
  const res = await api.post('/v1/topics', over);
  assertError(t, res, 413, undefined, '1 MiB + 1 byte');
  t.equal((await api.get('/v1/topics/hr-big')).status, 404, 'not created');

  // Exactly 1 MiB is read and judged on its content: here an unknown field, 400.
  const exact = Buffer.alloc(1_048_576, 0x61);
  exact.write('{"name":"hr-big","pad":"');
  exact.write('"}', exact.length - 2);
  assertError(t, await api.post('/v1/topics', exact), 400, 'pad', 'exactly 1 MiB is under the limit');

  const patchOver = await api.patch('/v1/topics/hr-topic', over);
  assertError(t, patchOver, 413, undefined, 'PATCH over 1 MiB');
  t.equal((await api.get('/v1/topics')).status, 200, 'node still serves');
});

t.test('content-type rule (spec §5.6)', async (t) => {
  const body = (name: string) => JSON.stringify({ name });
  assertError(t, await api.post('/v1/topics', body('hr-ct-none'), { contentType: null }), 415, undefined, 'no content type');
  assertError(t, await api.post('/v1/topics', body('hr-ct-text'), { contentType: 'text/plain' }), 415, undefined, 'text/plain');
  assertError(t, await api.post('/v1/topics', body('hr-ct-form'), { contentType: 'application/x-www-form-urlencoded' }), 415);
  assertError(t, await api.post('/v1/topics', body('hr-ct-jsonx'), { contentType: 'application/jsonx' }), 415, undefined, 'application/jsonx');

  const withClient = await api.post('/v1/topics', body('hr-ct-client'), { contentType: null, headers: { 'x-svc-client': 'tests' } });
  t.equal(withClient.status, 201, `X-Svc-Client without content type is accepted (got ${withClient.text.slice(0, 200)})`);
  const charset = await api.post('/v1/topics', body('hr-ct-charset'), { contentType: 'application/json; charset=utf-8' });
  t.equal(charset.status, 201, 'application/json; charset=utf-8 is accepted');
  const upper = await api.post('/v1/topics', body('hr-ct-upper'), { contentType: 'Application/JSON' });
  t.equal(upper.status, 201, 'media type is case-insensitive');
  const octet = await api.post('/v1/topics/hr-topic/produce', 'bytes', { contentType: 'application/octet-stream' });
  t.equal(octet.status, 202, 'application/octet-stream is accepted on produce');
  const produceNone = await api.post('/v1/topics/hr-topic/produce', 'bytes', { contentType: null });
  assertError(t, produceNone, 415, undefined, 'produce without content type');
  const produceClient = await api.post('/v1/topics/hr-topic/produce', 'bytes', { contentType: null, headers: { 'x-svc-client': 'x' } });
  t.equal(produceClient.status, 202, 'produce with X-Svc-Client only');

  // GET and DELETE are not checked.
  t.equal((await api.get('/v1/topics', { contentType: 'text/plain' })).status, 200, 'GET is not checked');

  for (const name of ['hr-ct-none', 'hr-ct-text', 'hr-ct-form', 'hr-ct-jsonx']) {
    t.equal((await api.get(`/v1/topics/${name}`)).status, 404, `${name} not created`);
  }
});

t.test('security on: 401 comes before 415', async (t) => {
  const res = await anon.post('/v1/topics', JSON.stringify({ name: 'hr-401' }), { contentType: null });
  assertError(t, res, 401, undefined, 'no credentials, no content type');
  t.equal(res.headers['www-authenticate'], 'Basic realm="svc"');
  const patch = await anon.patch('/v1/topics/hr-topic', JSON.stringify({ retention_ms: 0 }), { contentType: 'text/plain' });
  assertError(t, patch, 401, undefined, 'PATCH, no credentials, text/plain');
});

t.test('query parameters: unknown ignored, known given twice 400', async (t) => {
  const unknown = await api.get('/v1/topics?colour=red');
  t.equal(unknown.status, 200, 'unknown query parameter ignored');
  assertError(t, await api.get('/v1/topics?limit=2&limit=2'), 400, 'limit', 'limit twice');
  assertError(t, await api.get('/v1/topics/hr-topic?partition=0&partition=0'), 400, 'partition', 'partition twice');
});

t.test('routes of later work answer 501 when authenticated, 401 otherwise', async (t) => {
  const json = { contentType: 'application/json' };
  const cases: Array<[string, string, string | undefined]> = [
    ['POST', '/v1/topics/hr-topic/children', '{"child":"x","remote":"r1"}'],
    ['POST', '/v1/topics/hr-topic/children/x/pause', '{}'],
    ['GET', '/v1/remotes', undefined],
  ];
  for (const [method, path, body] of cases) {
    const res = await api.request(method, path, body === undefined ? {} : { body, ...json });
    t.equal(res.status, 501, `${method} ${path}: 501 (got ${res.status} ${res.text.slice(0, 200)})`);
    t.match(String(res.headers['content-type'] ?? ''), /^application\/json/, `${method} ${path}: JSON`);
    if (res.status === 501) t.same(res.json(), { error: 'not implemented' }, `${method} ${path}: body`);
    const anonymous = await anon.request(method, path, body === undefined ? {} : { body, ...json });
    assertError(t, anonymous, 401, undefined, `${method} ${path} without credentials`);
  }
});

t.test('HTTP/1.1 keep-alive: two requests on one connection', async (t) => {
  // A pipelined pair on one socket: both answered, in order (the server keeps the connection open).
  const pair =
    `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n` +
    `GET /v1/topics/hr-topic HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${node.auth}\r\nConnection: close\r\n\r\n`;
  const raw = await rawRequest(node.port, pair, 10_000, true);
  t.equal(raw.status, 200, 'first answered');
  const statuses = [...raw.raw.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => m[1]);
  t.same(statuses, ['200', '200'], 'both answered');
  // Sanity: send() works against the same node (used by every other subtest).
  t.equal((await send(node.url, 'GET', '/healthz')).status, 200);
});

t.test('chunked request bodies are read and capped like sized ones', async (t) => {
  const head = `POST /v1/topics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${node.auth}\r\n` +
    `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n`;
  const parts = ['{"nam', 'e":"hr-', 'chunked"}'];
  const chunked = parts.map((p) => `${p.length.toString(16)}\r\n${p}\r\n`).join('') + '0\r\n\r\n';
  const created = await rawRequest(node.port, head + chunked);
  t.equal(created.status, 201, `chunked create (got ${created.status} ${created.body.slice(0, 200)})`);
  t.equal((await api.get('/v1/topics/hr-chunked')).status, 200, 'created');

  // 17 chunks of 64 KiB: 1 MiB + 64 KiB in total, no Content-Length to refuse early.
  const chunk = 'a'.repeat(64 * 1024);
  const big = '{"name":"hr-chunked-big","pad":"' ;
  let stream = `${big.length.toString(16)}\r\n${big}\r\n`;
  for (let i = 0; i < 17; i++) stream += `${chunk.length.toString(16)}\r\n${chunk}\r\n`;
  stream += `2\r\n"}\r\n0\r\n\r\n`;
  const refused = await rawRequest(node.port, head + stream);
  t.equal(refused.status, 413, 'chunked body over 1 MiB: 413');
  t.match(refused.headers['content-type'] ?? '', /^application\/json/);
  t.match(refused.body, /^\{"error":"[^"]*"\}$/, 'JSON error body');
  t.equal((await api.get('/v1/topics/hr-chunked-big')).status, 404, 'not created');
});

t.test('default http.max_header_bytes is 64 KiB', async (t) => {
  const plain = await startNodeFor(t);
  const client = new Client(plain.url, plain.auth);
  t.equal((await client.get('/v1/topics', { headers: { 'x-big': 'x'.repeat(10 * 1024) } })).status, 200, '10 KB header is fine');
  // uWS closes a block over 4 KiB that reached it in more than one read, with no answer, on either side of the limit
  // (docs/decisions.md "Header blocks and uWS"): such an attempt is tried again after a pause, so that the retries do
  // not fall in the same busy moment of the machine; any answer must be the right one.
  const attemptsMax = 4;
  const answered = async (label: string, xBigBytes: number): Promise<Awaited<ReturnType<typeof rawRequest>> | undefined> => {
    const request = `GET /v1/topics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${plain.auth}\r\nX-Big: ${'x'.repeat(xBigBytes)}\r\nConnection: close\r\n\r\n`;
    for (let attempt = 1; attempt <= attemptsMax; attempt++) {
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, 250 * (attempt - 1)));
      const raw = await rawRequest(plain.port, request).catch((error: unknown) => {
        t.comment(`${label}, attempt ${attempt}: ${String(error)}`);
        return undefined;
      });
      if (raw !== undefined) return raw;
    }
    t.fail(`${label}: no answer in ${attemptsMax} attempts`);
    return undefined;
  };
  const below = await answered('60 KB header', 60 * 1024);
  if (below !== undefined) t.equal(below.status, 200, '60 KB header is fine');
  const above = await answered('66 KB header', 66 * 1024);
  if (above !== undefined) assertPlainText(t, above, 431, '66 KB header');
});
