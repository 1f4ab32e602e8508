// The series a running node exports, for the tests that hold docs/metrics.md and deploy/ (Prometheus rules, the
// Grafana dashboard) to the code: a node is exercised so its labelled series have samples, then /metrics is parsed
// into name -> type and label names. Test process only; used by test/http/metrics_page.test.ts and test/deploy.
// Imports nothing from src/.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StartedNode } from './node.js';

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** Series on docs/metrics.md that a node exports only in some states, or once their feature lands on main: a page row
 *  may name them without the node exporting them; when the node does export one, its type and labels are checked
 *  like any other. The merger drops a name from here once the test node exports it. */
export const onlyInSomeStates: ReadonlyMap<string, string> = new Map([
  ['svc_fanout_lag_messages', 'with fan-out copying'],
  ['svc_fanout_committed_total', 'with fan-out copying'],
  ['svc_fanout_child_dropped_messages', 'with fan-out copying'],
  ['svc_raft_tls_cert_not_after_seconds', 'with TLS between nodes'],
]);

export interface SeriesInfo {
  type: string;
  /** Label names seen on samples (le and quantile left out); empty when the series had no labelled sample. */
  labels: Set<string>;
  samples: number;
}

/** Prometheus text exposition -> series by the name its TYPE line gives. */
export function parseExposition(text: string): Map<string, SeriesInfo> {
  const series = new Map<string, SeriesInfo>();
  for (const line of text.split('\n')) {
    const type = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (type !== null) series.set(type[1]!, { type: type[2]!, labels: new Set(), samples: 0 });
  }
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
    const base = series.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    const info = series.get(base);
    if (info === undefined) throw new Error(`a sample without a TYPE line: ${line}`);
    info.samples++;
    const braces = line.indexOf('{');
    if (braces < 0) continue;
    for (const label of line.slice(braces).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g)) {
      if (label[1] !== 'le' && label[1] !== 'quantile') info.labels.add(label[1]!);
    }
  }
  return series;
}

async function call(node: StartedNode, method: string, path: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = { authorization: node.auth, 'x-svc-client': 'metrics-catalogue' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  return fetch(`${node.url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

async function expect(node: StartedNode, method: string, path: string, status: number, body?: unknown): Promise<Response> {
  const res = await call(node, method, path, body);
  if (res.status !== status) throw new Error(`${method} ${path}: ${res.status}, expected ${status}: ${await res.text()}`);
  return res;
}

/** Uses what every labelled series counts: produce (to a parent with children, so fan-out copies), a produce refused
 *  (direct produce to a delay child), a consume under a lease and its ack; then returns one scrape's text, from the
 *  API port or, when given, the node's http.metrics_addr listener. */
export async function exerciseAndScrape(node: StartedNode, metricsUrl?: string): Promise<string> {
  const hourMs = 3_600_000;
  await expect(node, 'POST', '/v1/topics', 201, { name: 'cat-parent', retention_ms: 3 * hourMs });
  await expect(node, 'POST', '/v1/topics', 201, { name: 'cat-child', parent: 'cat-parent' });
  await expect(node, 'POST', '/v1/topics', 201, { name: 'cat-delayed', parent: 'cat-parent', fanout_delay_ms: 2 * hourMs });
  for (let i = 0; i < 3; i++) await expect(node, 'POST', '/v1/topics/cat-parent/produce?partition=0', 202, { i });
  await expect(node, 'POST', '/v1/topics/cat-delayed/produce', 409, { refused: true });
  // The hand-off to the partition is asynchronous: a long poll waits for it (bounded).
  let handle: string | undefined;
  for (let attempt = 0; attempt < 20 && handle === undefined; attempt++) {
    const res = await call(node, 'GET', '/v1/topics/cat-parent/consume?partition=0&wait=500ms');
    if (res.status === 200) handle = ((await res.json()) as { receipt_handle: string }).receipt_handle;
    else await res.arrayBuffer();
  }
  if (handle === undefined) throw new Error('no message was consumed from cat-parent within 20 long polls');
  await expect(node, 'POST', `/v1/topics/cat-parent/ack?receipt_handle=${encodeURIComponent(handle)}`, 204);
  if (metricsUrl !== undefined) return (await fetch(`${metricsUrl}/metrics`)).text();
  return (await expect(node, 'GET', '/metrics', 200)).text();
}

export interface PageRow {
  name: string;
  type: string;
  labels: Set<string>;
}

/** The series table rows of docs/metrics.md: | `name` | type | labels (comma-separated, or — for none) | meaning |. */
export async function readMetricsPage(): Promise<PageRow[]> {
  const text = await readFile(join(repoRoot, 'docs/metrics.md'), 'utf8');
  const rows: PageRow[] = [];
  for (const line of text.split('\n')) {
    const row = /^\| `([a-zA-Z_:][a-zA-Z0-9_:]*)` \| (counter|gauge|histogram|summary) \| ([^|]*) \|/.exec(line);
    if (row === null) continue;
    const labels = row[3]!.trim();
    rows.push({ name: row[1]!, type: row[2]!, labels: new Set(labels === '—' ? [] : labels.split(',').map((l) => l.trim())) });
  }
  return rows;
}

/** Metric names a PromQL expression reads: identifiers not followed by '(' (functions), not inside braces or quotes
 *  (label matchers and values), not after by/without/on/ignoring (label lists), and not PromQL keywords. */
export function promqlMetricNames(expr: string): string[] {
  const keywords = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset',
    'sum', 'min', 'max', 'avg', 'count', 'stddev', 'stdvar', 'topk', 'bottomk', 'quantile', 'count_values', 'group', 'inf', 'nan']);
  const stripped = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, '')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '')
    .replace(/\[[^\]]*\]/g, '');
  const names: string[] = [];
  for (const match of stripped.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*(?!\s*\()/g)) {
    const after = stripped.slice(match.index! + match[0].length);
    if (/^[a-zA-Z0-9_:]/.test(after) || /^\s*\(/.test(after)) continue;
    const before = stripped[match.index! - 1];
    if (before !== undefined && /[0-9.]/.test(before)) continue;
    if (keywords.has(match[0].toLowerCase())) continue;
    names.push(match[0]);
  }
  return names;
}

/** A name an expression may read: an exported series, a histogram's _bucket/_sum/_count, or a page-only series. */
export function knownSeries(exported: Map<string, SeriesInfo>, name: string): boolean {
  if (exported.has(name) || onlyInSomeStates.has(name)) return true;
  const histogram = /^(.*)_(bucket|sum|count)$/.exec(name);
  return histogram !== null && ['histogram', 'summary'].includes(exported.get(histogram[1]!)?.type ?? '');
}

export interface DashboardQuery {
  /** Panel title, or `variable <name>`. */
  where: string;
  expr: string;
}

/** Every PromQL expression of deploy/grafana/broker.json: panel targets (rows' nested panels too) and the series
 *  of the template variables' label_values(series, label) queries. */
export async function dashboardQueries(): Promise<{ dashboard: any; queries: DashboardQuery[] }> {
  const dashboard = JSON.parse(await readFile(join(repoRoot, 'deploy/grafana/broker.json'), 'utf8'));
  const queries: DashboardQuery[] = [];
  const visit = (panels: any[]): void => {
    for (const panel of panels) {
      for (const target of panel.targets ?? []) queries.push({ where: panel.title, expr: target.expr });
      visit(panel.panels ?? []);
    }
  };
  visit(dashboard.panels);
  for (const variable of dashboard.templating.list) {
    if (variable.type !== 'query') continue;
    const text: string = typeof variable.query === 'string' ? variable.query : variable.query.query;
    const labelValues = /^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$/.exec(text);
    queries.push({ where: `variable ${variable.name}`, expr: labelValues === null ? text : labelValues[1]! });
  }
  return { dashboard, queries };
}

/** A dashboard expression with its Grafana variables set for a plain Prometheus query. */
export function withVariables(expr: string, job: string): string {
  return expr.replaceAll('$job', job).replaceAll('$instance', '.*').replaceAll('$topic', '.*').replaceAll('$__rate_interval', '1m');
}
