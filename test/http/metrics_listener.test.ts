// Goal: where /metrics is served (spec §5.4 point 4): with http.metrics_addr set, that listener serves /metrics,
// /healthz and /readyz without credentials and nothing else, and /metrics on the API port answers 404 (401 without
// credentials); with http.metrics_unauthenticated true and no metrics_addr, /metrics on the API port needs no
// credentials while every other route still does.
// Method: black box on two started nodes; the metrics address is a free loopback port picked by the test.
import t from 'tap';
import { freePort } from '../helpers/cluster.js';
import { pollUntil } from '../helpers/http.js';
import { startNodeFor } from '../helpers/node.js';

t.test('http.metrics_addr: a separate listener without credentials', async (t) => {
  const metricsPort = await freePort();
  const node = await startNodeFor(t, { args: ['--set', `http.metrics_addr=127.0.0.1:${metricsPort}`] });
  const metricsUrl = `http://127.0.0.1:${metricsPort}`;
  const auth = { authorization: node.auth };

  const scrape = await fetch(`${metricsUrl}/metrics`);
  t.equal(scrape.status, 200, '/metrics on the metrics listener without credentials');
  t.match(scrape.headers.get('content-type') ?? '', /^text\/plain/);
  t.match(await scrape.text(), /\nsvc_topics_total \d+\n/);
  const withBadCredentials = await fetch(`${metricsUrl}/metrics`, { headers: { authorization: 'Basic bm9ib2R5Om5vcGU=' } });
  t.equal(withBadCredentials.status, 200, 'credentials are not checked there');
  await withBadCredentials.arrayBuffer();

  const healthz = await fetch(`${metricsUrl}/healthz`);
  t.equal(healthz.status, 200);
  t.same(await healthz.json(), { status: 'ok' });
  const ready = await pollUntil(async () => {
    const res = await fetch(`${metricsUrl}/readyz`);
    return res.status === 200 ? res.json() : (await res.arrayBuffer(), undefined);
  }, 20_000, 100);
  t.same(ready, { status: 'ready' }, '/readyz on the metrics listener');

  for (const path of ['/v1/topics', '/v1/cluster/members']) {
    const res = await fetch(`${metricsUrl}${path}`, { headers: auth });
    t.equal(res.status, 404, `${path} is not served on the metrics listener`);
    await res.arrayBuffer();
  }

  const onApi = await fetch(`${node.url}/metrics`, { headers: auth });
  t.equal(onApi.status, 404, '/metrics on the API port with credentials: 404');
  t.notMatch(await onApi.text(), /svc_topics_total/);
  const onApiNoCredentials = await fetch(`${node.url}/metrics`);
  t.equal(onApiNoCredentials.status, 401, '/metrics on the API port without credentials: 401');
  await onApiNoCredentials.arrayBuffer();
  const health = await fetch(`${node.url}/healthz`);
  t.equal(health.status, 200, 'the API port still serves /healthz');
  await health.arrayBuffer();
});

t.test('http.metrics_unauthenticated: /metrics on the API port without credentials, nothing else', async (t) => {
  const node = await startNodeFor(t, { args: ['--set', 'http.metrics_unauthenticated=true'] });
  const scrape = await fetch(`${node.url}/metrics`);
  t.equal(scrape.status, 200, '/metrics without credentials');
  t.match(await scrape.text(), /\nsvc_topics_total \d+\n/);
  for (const path of ['/v1/topics', '/v1/cluster/members']) {
    const res = await fetch(`${node.url}${path}`);
    t.equal(res.status, 401, `${path} still needs credentials`);
    await res.arrayBuffer();
  }
});
