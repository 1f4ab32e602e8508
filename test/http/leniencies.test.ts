// Goal: header and query values are read as the RFCs and the spec write them, not decoded into something acceptable
// (issue 27 point 7): bytes after Basic credentials' base64 padding are not the same credentials (401), `-0` is no
// integer (400), and a second Authorization field makes the request malformed (400). Each refused produce stores
// nothing. (A non-ASCII byte after a media type never reaches the node: uWS's parser drops it; see decisions.md.)
// Method: black box; raw sockets where a client library would clean the bytes; the topic read back afterwards
// (test/helpers/stored.ts) shows what a request stored.
import t from 'tap';
import { Client, assertError, rawRequest } from '../helpers/http.js';
import { adminPassword, basicAuth, startNodeFor } from '../helpers/node.js';
import { storedTotal } from '../helpers/stored.js';

const node = await startNodeFor(t);
const client = new Client(node.url, node.auth);

async function topic(name: string): Promise<string> {
  t.equal((await client.post('/v1/topics', { name })).status, 201);
  return name;
}


function rawProduce(path: string, headerLines: string[], body: Buffer): Buffer {
  const head = [`POST ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...headerLines, `Content-Length: ${body.length}`, '', ''].join('\r\n');
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

t.test('bytes after the base64 padding of Basic credentials: 401', async (t) => {
  const name = await topic('len-basic');
  const padded = basicAuth('admin', adminPassword);
  t.match(padded, /=$/, 'these credentials end in padding');
  const res = await client.post(`/v1/topics/${name}/produce?partition=0`, { a: 1 }, { auth: `${padded}QUFB` });
  assertError(t, res, 401);
  t.equal(res.headers['www-authenticate'], 'Basic realm="svc"');
  t.equal(await storedTotal(node, name), 0, 'nothing stored');
  t.equal((await client.get(`/v1/topics/${name}`, { auth: padded })).status, 200, 'the credentials alone still log in');
});

t.test('partition=-0 is not an integer: 400 naming partition', async (t) => {
  const name = await topic('len-minus-zero');
  assertError(t, await client.post(`/v1/topics/${name}/produce?partition=-0`, { a: 1 }), 400, 'partition');
  assertError(t, await client.get(`/v1/topics/${name}/consume?partition=-0&offset=0`), 400, 'partition');
  t.equal(await storedTotal(node, name), 0, 'nothing stored');
});

t.test('two Authorization fields: 400, whichever would have won', async (t) => {
  const name = await topic('len-two-auth');
  const answer = await rawRequest(node.port, rawProduce(`/v1/topics/${name}/produce?partition=0`,
    ['Authorization: Basic bm9ib2R5Om5vcGU=', `Authorization: ${node.auth}`, 'Content-Type: application/json'], Buffer.from('{"a":1}')));
  t.equal(answer.status, 400);
  t.same(JSON.parse(answer.body), { error: 'Authorization: given more than once' });
  t.equal(await storedTotal(node, name), 0, 'nothing stored');
});
