// Goal: deploy/grafana/broker.json shows what issue 31 point 3 names (produce and consume rates, p99 request duration
// by route, consumer lag by topic, fan-out lag, ingress backlog, Raft applied index and leader, member liveness) and
// every PromQL expression in it reads only series a node exports (docs/metrics.md; or the page's state-dependent
// ones). test/deploy/prometheus.test.ts also runs each expression in a real Prometheus.
// Method: a started node is exercised and scraped (metrics_catalogue.ts); the dashboard JSON is parsed and metric
// names are pulled from each expression by a regex-based scan (promqlMetricNames).
import t from 'tap';
import {
  dashboardQueries, exerciseAndScrape, knownSeries, parseExposition, promqlMetricNames,
} from '../helpers/metrics_catalogue.js';
import { pollUntil } from '../helpers/http.js';
import { startNodeFor } from '../helpers/node.js';

const { dashboard, queries } = await dashboardQueries();

t.test('the dashboard is well formed for Grafana', async (t) => {
  t.equal(dashboard.uid, 'svc-broker');
  const panels = (dashboard.panels as any[]).filter((p) => p.type !== 'row');
  const ids = (dashboard.panels as any[]).map((p) => p.id);
  t.equal(new Set(ids).size, ids.length, 'panel ids are unique');
  t.ok(panels.length >= 12, `${panels.length} panels`);
  for (const panel of panels) {
    t.ok((panel.targets ?? []).length > 0, `${panel.title}: has a query`);
    t.equal(panel.datasource?.uid, '${datasource}', `${panel.title}: uses the data source variable`);
    t.ok(panel.gridPos.x + panel.gridPos.w <= 24, `${panel.title}: fits the 24-column grid`);
  }
  t.same((dashboard.templating.list as any[]).map((v) => v.name), ['datasource', 'job', 'instance', 'topic']);
});

t.test('the dashboard shows what the issue names', async (t) => {
  const all = queries.map((q) => q.expr).join('\n');
  for (const series of ['svc_messages_produced_total', 'svc_messages_consumed_total', 'svc_consumer_lag_messages', 'svc_fanout_lag_messages',
    'svc_ingress_dispatch_backlog_records', 'svc_raft_applied_index', 'svc_raft_leader', 'svc_cluster_members']) {
    t.ok(queries.some((q) => promqlMetricNames(q.expr).includes(series)), `a panel reads ${series}`);
  }
  t.match(all, /histogram_quantile\(0\.99, sum by \(le, route\) \(rate\(svc_http_request_duration_seconds_bucket/, 'p99 by route');
  t.match(all, /sum by \(topic\) \(svc_consumer_lag_messages/, 'consumer lag by topic');
  t.match(all, /max by \(liveness\) \(svc_cluster_members/, 'members by liveness');
});

t.test('every expression names only series the node exports', async (t) => {
  const node = await startNodeFor(t);
  await pollUntil(async () => ((await fetch(`${node.url}/readyz`)).status === 200 ? true : undefined), 20_000, 100);
  const exported = parseExposition(await exerciseAndScrape(node));
  t.ok(queries.length >= 20, `${queries.length} expressions`);
  for (const { where, expr } of queries) {
    const names = promqlMetricNames(expr);
    t.ok(names.length > 0, `${where}: names a series (${expr})`);
    for (const name of names) t.ok(knownSeries(exported, name), `${where}: ${name} is exported (or state-dependent, docs/metrics.md)`);
  }
});
