// Goal: /metrics (spec §4 Health and metrics, §5.4): needs credentials on the API port, answers Prometheus text
// with the svc_* series this node keeps, and consumer lag is high watermark minus the acked frontier.
// Method: black box on a started node; produce, consume and ack, then scrape.
import t from 'tap';
import { startNodeFor } from '../helpers/node.js';

const node = await startNodeFor(t);
const auth = { authorization: node.auth };
const json = { ...auth, 'content-type': 'application/json' };

async function scrape(): Promise<string> {
  const res = await fetch(`${node.url}/metrics`, { headers: auth });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  return res.text();
}

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

t.test('metrics need credentials on the API port', async (t) => {
  const res = await fetch(`${node.url}/metrics`);
  t.equal(res.status, 401);
  t.equal(res.headers.get('www-authenticate'), 'Basic realm="svc"');
});

t.test('produced counts, consumer lag and the ingress latch', async (t) => {
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'm1' }) })).status, 201);
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${node.url}/v1/topics/m1/produce?partition=1`, { method: 'POST', headers: json, body: `{"i":${i}}` });
    t.equal(res.status, 202);
  }
  // The hand-off to the partition is asynchronous: wait until the consume sees a message (bounded).
  let handle: string | undefined;
  for (let attempt = 0; attempt < 50 && handle === undefined; attempt++) {
    const res = await fetch(`${node.url}/v1/topics/m1/consume?wait=100ms`, { headers: auth });
    if (res.status === 200) handle = ((await res.json()) as { receipt_handle: string }).receipt_handle;
  }
  t.ok(handle, 'a message was consumed');
  const ack = await fetch(`${node.url}/v1/topics/m1/ack?receipt_handle=${handle}`, { method: 'POST', headers: { ...auth, 'x-svc-client': 't' } });
  t.equal(ack.status, 204);
  const text = await scrape();
  t.equal(sample(text, 'svc_messages_produced_total', 'topic="m1",partition="1"'), 3);
  t.equal(sample(text, 'svc_consumer_lag_messages', 'topic="m1",partition="1"'), 2, 'three committed, one acked');
  t.match(text, /\nsvc_ingress_wal_failed 0\n/);
  t.match(text, /\nsvc_topics_total 1\n/);
  t.match(text, /svc_http_requests_total\{route="\/v1\/topics\/\{topic\}\/produce",method="POST",status="202"\} 3/);
});
