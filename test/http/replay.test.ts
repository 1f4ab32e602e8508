// Goal: prove replay (spec 4, GET /v1/topics/{topic}/consume with partition and offset; spec 2 Message; spec 1.7):
// the exact Message fields without receipt_handle, 204 past the end, and the parameter refusals (400, 404, 401).
// Method: one node for the file; one topic with a few pinned messages, read back by offset with polling (the
// commit follows the 202 asynchronously); then each bad parameter combination on its own request.
import t from 'tap';
import { NodeWithClient, assertError, createTopic, readPartition, replayAt, topicNamer, topicPath, waitReplay } from '../helpers/replay.js';

const { client } = await NodeWithClient.start(t);
const nextTopic = topicNamer('replay');
const topic = nextTopic();
await createTopic(client, topic, 3);

async function produce(query: string, body: string): Promise<number> {
  const answer = await client.req(`${topicPath(topic)}/produce${query}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body,
  });
  return answer.status;
}

// Setup without assertions: a top-level assertion followed by an await lets tap end the root test early.
const producedAtSec = Math.floor(Date.now() / 1000);
for (const [query, body] of [['?partition=1&key=k1', '{"first":true}'], ['?partition=1', '{"second":true}']] as const) {
  const status = await produce(query, body);
  if (status !== 202) throw new Error(`setup produce ${query} answered ${status}`);
}

const consume = (query: string) => client.req(`${topicPath(topic)}/consume${query}`);

t.test('the Message fields exactly, without receipt_handle', async (t) => {
  const answer = await waitReplay(client, topic, 1, 0);
  t.equal(answer.status, 200);
  t.ok((answer.headers['content-type'] ?? '').startsWith('application/json'), 'JSON answer');
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ['key', 'offset', 'partition', 'payload', 'timestamp', 'topic'], `fields: ${answer.text}`);
  t.equal(body.topic, topic);
  t.equal(body.partition, 1);
  t.equal(body.offset, 0);
  t.equal(body.key, 'k1');
  t.same(body.payload, { first: true });
  t.ok(Number.isInteger(body.timestamp), 'timestamp is an integer');
  const timestamp = body.timestamp as number;
  t.ok(timestamp >= producedAtSec - 2 && timestamp <= Math.floor(Date.now() / 1000) + 2,
    `timestamp ${timestamp} is Unix seconds of the produce (~${producedAtSec})`);
  t.notOk('receipt_handle' in body, 'no receipt_handle');

  const second = await waitReplay(client, topic, 1, 1);
  const secondBody = JSON.parse(second.text) as Record<string, unknown>;
  t.same(Object.keys(secondBody).sort(), ['offset', 'partition', 'payload', 'timestamp', 'topic'], 'no key field without key');
  t.equal(secondBody.offset, 1);
});

t.test('replay is repeatable and takes no lease', async (t) => {
  const first = await replayAt(client, topic, 1, 0);
  const again = await replayAt(client, topic, 1, 0);
  t.equal(first.status, 200);
  t.equal(again.text, first.text, 'the same record twice');
  const all = await readPartition(client, topic, 1);
  t.same(all.map((m) => m.offset), [0, 1]);
});

t.test('offset past the end is 204 with no body', async (t) => {
  await waitReplay(client, topic, 1, 1);
  for (const query of ['?partition=1&offset=2', '?partition=1&offset=1000000', '?partition=0&offset=0']) {
    const answer = await consume(query);
    t.equal(answer.status, 204, `204 for ${query}`);
    t.equal(answer.text, '', 'empty body');
    const length = answer.headers['content-length'];
    t.ok(length === undefined || length === '0', `a 204 carries no Content-Length (or 0), got ${length}`);
  }
});

t.test('parameter refusals are 400', async (t) => {
  assertError(t, await consume('?offset=0'), 400, 'partition');
  assertError(t, await consume('?partition=3&offset=0'), 400, 'partition');
  assertError(t, await consume('?partition=-1&offset=0'), 400, 'partition');
  assertError(t, await consume('?partition=abc&offset=0'), 400, 'partition');
  assertError(t, await consume('?partition=1&offset=-1'), 400, 'offset');
  assertError(t, await consume('?partition=1&offset=abc'), 400, 'offset');
  assertError(t, await consume('?partition=1&offset=1.5'), 400, 'offset');
  assertError(t, await consume('?partition=1&offset=0&offset=1'), 400, 'offset');
  const withMax = await client.req(`${topicPath(topic)}/consume?partition=1&offset=0&max=5`, { headers: { 'x-svc-client': 'replay-test' } });
  assertError(t, withMax, 400, 'max');
});

t.test('unknown topic is 404; no credentials is 401', async (t) => {
  assertError(t, await client.req(`${topicPath('no-such-topic-' + process.pid)}/consume?partition=0&offset=0`), 404);
  const noAuth = await client.req(`${topicPath(topic)}/consume?partition=1&offset=0`, { noAuth: true });
  assertError(t, noAuth, 401);
  t.match(noAuth.headers['www-authenticate'] ?? '', /^Basic\b.*realm="svc"/i);
});
