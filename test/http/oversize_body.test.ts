// Goal: a body over its route's cap is answered 413 (400 on user routes) in a way an ordinary client reads: Node's
// fetch sends the whole body before it reads, and got a broken pipe when the node closed at once (issue 27 point 6,
// spec §8). The node drops the rest of the body, then answers; nothing is stored.
// Method: black box with Node's fetch (undici), bodies just over the caps and well over them.
import t from 'tap';
import { startNodeFor } from '../helpers/node.js';
import { storedTotal } from '../helpers/stored.js';

const node = await startNodeFor(t);
const headers = { authorization: node.auth, 'content-type': 'application/json', 'x-svc-client': 't' };

async function post(path: string, body: Buffer): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${node.url}${path}`, { method: 'POST', headers, body });
  return { status: res.status, json: await res.json() };
}

t.test('batch produce over 16 MiB: 413 the client reads, nothing stored', async (t) => {
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers, body: '{"name":"big"}' })).status, 201);
  for (const bytes of [16 * 1024 * 1024 + 1, 40_000_000]) {
    const answer = await post('/v1/topics/big/produce/batch', Buffer.alloc(bytes, 0x20));
    t.same(answer, { status: 413, json: { error: 'body: larger than 16777216 bytes' } }, `${bytes} bytes`);
  }
  t.equal(await storedTotal(node, 'big'), 0, 'nothing stored');
});

t.test('single produce and user create over 1 MiB: 413 and 400 the client reads, nothing stored', async (t) => {
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers, body: '{"name":"big-single"}' })).status, 201);
  const over = Buffer.alloc(1024 * 1024 + 1, 0x20);
  t.same(await post('/v1/topics/big-single/produce', over), { status: 413, json: { error: 'body: larger than 1048576 bytes' } });
  t.equal(await storedTotal(node, 'big-single'), 0, 'nothing stored');
  t.same(await post('/v1/users', over), { status: 400, json: { error: 'body: larger than 1048576 bytes' } });
});
