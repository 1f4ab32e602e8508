// Goal: /healthz and /readyz (spec §4 Health and metrics, §5.3: no credentials) and graceful shutdown: SIGTERM ends
// the process with exit code 0, and messages answered 202 before it (or before a SIGKILL: spec §1.2, a 202 means
// synced to the ingress log) are readable by replay after a restart on the same data dir.
// Method: black box. One secured node for the health routes; separate nodes for the shutdown cases, restarted on
// their own data dir with the helper; replay is GET /v1/topics/{t}/consume?partition=P&offset=O polled until 200.
// /healthz answering 503 during shutdown is sampled over one kept-alive connection opened before SIGTERM.
import t from 'tap';
import { Agent, get as httpGet } from 'node:http';
import { RestartableNode, startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, assertError, pollUntil, type HttpResponse } from '../helpers/http.js';

let node: StartedNode;
let anon: Client;

t.before(async () => {
  node = await startNodeFor(t);
  anon = new Client(node.url, null);
});

t.test('GET /healthz: 200 {"status":"ok"} without credentials', async (t) => {
  const res = await anon.get('/healthz');
  t.equal(res.status, 200);
  t.match(String(res.headers['content-type']), /^application\/json/);
  t.same(res.json(), { status: 'ok' });
  t.notOk('www-authenticate' in res.headers);
  const withAuth = await anon.get('/healthz', { auth: node.auth });
  t.equal(withAuth.status, 200, 'with credentials too');
});

t.test('GET /readyz: 200 {"status":"ready"} without credentials', async (t) => {
  // A lone node elects itself; give it a few seconds after "listening".
  const res = await pollUntil(async () => {
    const got = await anon.get('/readyz');
    return got.status === 200 ? got : undefined;
  }, 10_000, 100);
  t.ok(res, '/readyz reaches 200 within 10 s');
  if (!res) {
    const last = await anon.get('/readyz');
    assertError(t, last, 503, undefined, 'a not-ready answer says why');
    return;
  }
  t.match(String(res.headers['content-type']), /^application\/json/);
  t.equal(res.json().status, 'ready');
  t.notOk('error' in res.json());
});

t.test('/healthz and /readyz ignore the query and are not under /v1', async (t) => {
  t.equal((await anon.get('/healthz?x=1')).status, 200);
  t.equal((await anon.get('/v1/healthz')).status, 404, '/v1/healthz is no route');
});

async function produce(client: Client, topic: string, body: string, partition: number): Promise<HttpResponse> {
  return client.post(`/v1/topics/${topic}/produce?partition=${partition}`, body, { contentType: 'application/json' });
}

/** Polls a replay of one offset until it answers 200 (the hand-off after restart is asynchronous). */
async function replay(client: Client, topic: string, partition: number, offset: number, timeoutMs: number): Promise<HttpResponse> {
  const path = `/v1/topics/${topic}/consume?partition=${partition}&offset=${offset}`;
  const got = await pollUntil(async () => {
    const res = await client.get(path);
    return res.status === 200 ? res : undefined;
  }, timeoutMs, 100);
  return got ?? client.get(path);
}

/**
 * Sends GET /healthz in a loop over one kept-alive connection (a listener closed at SIGTERM would hide the 503 from
 * new connections) until a request fails (the process is gone); returns the statuses seen.
 * `started` resolves after the first answer so the caller can send SIGTERM while the loop runs.
 */
function sampleHealth(port: number): { started: Promise<void>; statuses: Promise<number[]> } {
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const statuses = (async () => {
    const seen: number[] = [];
    for (let i = 0; i < 5000; i++) {
      try {
        const status = await new Promise<number>((resolve, reject) => {
          const req = httpGet({ host: '127.0.0.1', port, path: '/healthz', agent, timeout: 2000 }, (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          });
          req.on('timeout', () => req.destroy(new Error('timeout')));
          req.on('error', reject);
        });
        seen.push(status);
        markStarted();
      } catch {
        break;
      }
    }
    markStarted();
    agent.destroy();
    return seen;
  })();
  return { started, statuses };
}

t.test('SIGTERM: exit code 0; messages produced before it are readable after a restart', async (t) => {
  const restartable = await RestartableNode.create(t);
  let current = await restartable.start();
  let api = new Client(current.url, current.auth);
  t.equal((await api.post('/v1/topics', { name: 'hl-term' })).status, 201, 'create');
  t.equal((await produce(api, 'hl-term', '{"a":1}', 1)).status, 202, 'produce to partition 1');
  const committed = await pollUntil(async () => {
    const res = await api.get('/v1/topics/hl-term?partition=1');
    return res.status === 200 && res.json().partition_stats[0]?.high_watermark === 1 ? true : undefined;
  }, 2000);
  t.ok(committed, 'partition 1 high_watermark reaches 1 within 2 s');
  const before = await api.get('/v1/topics/hl-term/consume?partition=1&offset=0');
  t.equal(before.status, 200, 'replay before the restart');
  // This one is answered 202 but SIGTERM follows at once: it may still be in the ingress log only.
  t.equal((await produce(api, 'hl-term', '{"b":2}', 2)).status, 202, 'produce to partition 2 right before SIGTERM');

  const sampling = sampleHealth(current.port);
  await sampling.started;
  const code = await current.stop();
  t.equal(code, 0, 'exit code 0 after SIGTERM');
  const statuses = await sampling.statuses;
  const count503 = statuses.filter((s) => s === 503).length;
  t.comment(`/healthz around shutdown: ${statuses.length} answers, ${count503} of them 503`);
  t.ok(statuses.every((s) => s === 200 || s === 503), '/healthz answered only 200 or 503 while stopping');
  t.ok(count503 > 0, '/healthz answered 503 once graceful shutdown began (kept-alive connection)');
  const first503 = statuses.indexOf(503);
  t.ok(first503 < 0 || statuses.slice(first503).every((s) => s === 503), 'no 200 after the first 503');
  t.notMatch(current.output(), /uncaught|unhandled/i, 'no uncaught errors logged');

  current = await restartable.start();
  api = new Client(current.url, current.auth);
  const topic = await api.get('/v1/topics/hl-term');
  t.equal(topic.status, 200, 'the topic survives the restart');

  const first = await replay(api, 'hl-term', 1, 0, 10_000);
  t.equal(first.status, 200, `replay partition 1 offset 0 after restart (got ${first.status} ${first.text.slice(0, 200)})`);
  if (first.status === 200) {
    const message = first.json();
    t.match(message, { topic: 'hl-term', partition: 1, offset: 0 });
    t.same(message.payload, { a: 1 }, 'payload returned as JSON');
    t.notOk('receipt_handle' in message, 'no receipt_handle in a replay');
    t.notOk('key' in message, 'no key');
    t.ok(Number.isInteger(message.timestamp) && Math.abs(message.timestamp - Date.now() / 1000) < 120, 'timestamp in Unix seconds');
  }
  const second = await replay(api, 'hl-term', 2, 0, 10_000);
  t.equal(second.status, 200, `replay partition 2 offset 0 after restart (got ${second.status} ${second.text.slice(0, 200)})`);
  if (second.status === 200) t.same(second.json().payload, { b: 2 });
  const past = await api.get('/v1/topics/hl-term/consume?partition=1&offset=1');
  t.equal(past.status, 204, 'replay past the end: 204');
  t.equal(await current.stop(), 0, 'second stop also exits 0');
});

t.test('SIGKILL right after a 202: the message is readable after a restart', async (t) => {
  const restartable = await RestartableNode.create(t);
  let current = await restartable.start();
  let api = new Client(current.url, current.auth);
  t.equal((await api.post('/v1/topics', { name: 'hl-kill' })).status, 201, 'create');
  t.equal((await produce(api, 'hl-kill', '{"c":3}', 0)).status, 202, 'produce');
  await current.kill();

  current = await restartable.start();
  api = new Client(current.url, current.auth);
  const res = await replay(api, 'hl-kill', 0, 0, 10_000);
  t.equal(res.status, 200, `replay after kill -9 and restart (got ${res.status} ${res.text.slice(0, 200)})`);
  if (res.status === 200) t.same(res.json().payload, { c: 3 });
});
