// Goal: deploy/prometheus works with a real Prometheus (issue 31 point 2): promtool accepts the rules and the scrape
// config and passes the rules' own unit tests (rules.test.yml: each alert fires when it should, not before); every
// series the rules read is one the node exports (docs/metrics.md), Prometheus's `up` or node_exporter's filesystem
// series; and Debian's Prometheus, run with the committed scrape config (targets and intervals replaced), scrapes a
// node on its http.metrics_addr, loads every rule, answers svc_messages_produced_total after a produce, and evaluates
// every expression of the Grafana dashboard (deploy/grafana/broker.json).
// Method: promtool on the committed files; a node started with a metrics listener on a free loopback port, exercised
// (metrics_catalogue.ts); Prometheus on another free loopback port with a temp config and data dir, asked through
// its HTTP API (/api/v1/query, /api/v1/targets, /api/v1/rules), every wait bounded.
// Fails, never skips, without prometheus or promtool: scripts/install-proxies.sh installs them.
import t, { type Test } from 'tap';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { eventually, freePort } from '../helpers/cluster.js';
import {
  dashboardQueries, exerciseAndScrape, knownSeries, onlyInSomeStates, parseExposition, promqlMetricNames, repoRoot, withVariables,
} from '../helpers/metrics_catalogue.js';
import { pollUntil } from '../helpers/http.js';
import { startNodeFor } from '../helpers/node.js';
import { requireCommand } from '../helpers/proxy.js';

const run = promisify(execFile);
const dir = join(repoRoot, 'deploy/prometheus');
const configFile = join(dir, 'prometheus.yml');
const rulesFile = join(dir, 'rules.yml');
const alertNames = ['SvcIngressLogFailed', 'SvcConsumerLagGrowing', 'SvcFanoutLagGrowing', 'SvcFanoutChildDropped', 'SvcNodeNotReady',
  'SvcNodeDown', 'SvcNoRaftLeader', 'SvcMemberDead', 'SvcDataDiskFilling'];
/** Series of other exporters the rules may read: Prometheus's own up, node_exporter's filesystem (disk space). */
const otherExporters = new Set(['up', 'node_filesystem_avail_bytes', 'node_filesystem_size_bytes']);

async function promtool(t: Test, args: string[]): Promise<void> {
  const promtoolPath = await requireCommand('promtool');
  const result = await run(promtoolPath, args, { cwd: dir, timeout: 60_000 }).then(
    (r) => ({ ok: true, out: r.stdout + r.stderr }),
    (e: { stdout?: string; stderr?: string }) => ({ ok: false, out: `${e.stdout ?? ''}${e.stderr ?? ''}` }));
  t.ok(result.ok, `promtool ${args.join(' ')}:\n${result.out}`);
  t.match(result.out, /SUCCESS/);
}

interface RuleGroups { groups: { name: string; rules: { alert?: string; expr: string }[] }[] }

t.test('promtool: rules, config and the rules\' unit tests', async (t) => {
  await promtool(t, ['check', 'rules', 'rules.yml']);
  await promtool(t, ['check', 'config', 'prometheus.yml']);
  await promtool(t, ['test', 'rules', 'rules.test.yml']);
  const rules = parseYaml(await readFile(rulesFile, 'utf8')) as RuleGroups;
  t.same(rules.groups.flatMap((g) => g.rules.map((r) => r.alert)), alertNames, 'the alerts the issue names, in order');
});

t.test('a real Prometheus scrapes a node with the committed config', async (t) => {
  const prometheusPath = await requireCommand('prometheus');
  const metricsPort = await freePort();
  const node = await startNodeFor(t, { args: ['--set', `http.metrics_addr=127.0.0.1:${metricsPort}`] });
  await pollUntil(async () => ((await fetch(`${node.url}/readyz`)).status === 200 ? true : undefined), 20_000, 100);
  const exported = parseExposition(await exerciseAndScrape(node, `http://127.0.0.1:${metricsPort}`));

  const rules = parseYaml(await readFile(rulesFile, 'utf8')) as RuleGroups;
  for (const rule of rules.groups.flatMap((g) => g.rules)) {
    const names = promqlMetricNames(rule.expr);
    t.ok(names.length > 0, `${rule.alert}: reads a series`);
    for (const name of names) {
      t.ok(knownSeries(exported, name) || otherExporters.has(name), `${rule.alert}: ${name} is a series the node (or up, node_exporter) exports`);
    }
  }

  const work = await mkdtemp(join(tmpdir(), 'svc-prometheus-'));
  t.teardown(() => rm(work, { recursive: true, force: true }));
  const config = parseYaml(await readFile(configFile, 'utf8')) as {
    global: Record<string, string>; rule_files: string[]; scrape_configs: { job_name: string; static_configs: { targets: string[] }[] }[];
  };
  config.global.scrape_interval = '1s';
  config.global.evaluation_interval = '1s';
  config.rule_files = [rulesFile];
  // Only the broker job: no node_exporter runs here.
  config.scrape_configs = config.scrape_configs.filter((job) => job.job_name === 'svc-broker');
  t.equal(config.scrape_configs.length, 1, 'the committed config has the svc-broker job');
  config.scrape_configs[0]!.static_configs = [{ targets: [`127.0.0.1:${metricsPort}`] }];
  await writeFile(join(work, 'prometheus.yml'), stringifyYaml(config));

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const child = spawn(prometheusPath, [`--config.file=${join(work, 'prometheus.yml')}`, `--storage.tsdb.path=${join(work, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (log = (log + chunk).slice(-20_000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  });

  const ready = await eventually(async () => (await fetch(`${base}/-/ready`)).status === 200, 30_000, 200);
  if (!ready) return t.fail(`Prometheus ready within 30 s:\n${log}`);
  const api = async (path: string): Promise<{ status: string; data: any }> => (await fetch(`${base}${path}`)).json() as Promise<any>;

  const up = await eventually(async () => {
    const targets = (await api('/api/v1/targets')).data.activeTargets as { health: string; labels: Record<string, string> }[];
    return targets.length === 1 && targets[0]!.health === 'up' && targets[0]!.labels.job === 'svc-broker';
  }, 30_000, 250);
  t.ok(up, 'the node\'s metrics listener is an up target of job svc-broker');

  // exerciseAndScrape produced 3 messages to cat-parent partition 0; 2 more now, after the first scrapes.
  for (let i = 0; i < 2; i++) {
    const res = await fetch(`${node.url}/v1/topics/cat-parent/produce?partition=0`, {
      method: 'POST', headers: { authorization: node.auth, 'content-type': 'application/json' }, body: `{"later":${i}}` });
    t.equal(res.status, 202);
  }
  const query = encodeURIComponent('svc_messages_produced_total{job="svc-broker",topic="cat-parent",partition="0"}');
  const produced = await pollUntil(async () => {
    const answer = await api(`/api/v1/query?query=${query}`);
    const value = Number((answer.data.result as { value: [number, string] }[])[0]?.value[1] ?? NaN);
    return value === 5 ? value : undefined;
  }, 30_000, 250);
  t.equal(produced, 5, 'Prometheus answers svc_messages_produced_total = 5 for the partition');

  const leader = await api(`/api/v1/query?query=${encodeURIComponent('sum(svc_raft_leader{job="svc-broker"})')}`);
  t.equal(leader.data.result[0]?.value[1], '1', 'the node leads, seen through Prometheus');

  // The Grafana dashboard's expressions, variables set: each is valid PromQL here, and has a result unless it reads
  // a series the node exports only in some states (fan-out, TLS).
  const { queries } = await dashboardQueries();
  const answers = await pollUntil(async () => {
    const results = await Promise.all(queries.map(async (q) => ({ q, answer: await api(`/api/v1/query?query=${encodeURIComponent(withVariables(q.expr, 'svc-broker'))}`) })));
    const waiting = results.filter(({ q, answer }) => answer.status === 'success' && answer.data.result.length === 0
      && !promqlMetricNames(q.expr).some((name) => onlyInSomeStates.has(name)));
    return waiting.length === 0 ? results : undefined;
  }, 15_000, 500);
  t.ok(answers !== undefined, 'every dashboard expression that reads always-exported series has a result within 15 s');
  for (const { q, answer } of answers ?? []) t.equal(answer.status, 'success', `${q.where}: ${q.expr}`);

  const evaluated = await pollUntil(async () => {
    const groups = (await api('/api/v1/rules')).data.groups as { rules: { name: string; health: string; lastError?: string }[] }[];
    const loaded = groups.flatMap((g) => g.rules);
    return loaded.length === alertNames.length && loaded.every((r) => r.health === 'ok') ? loaded : undefined;
  }, 30_000, 250);
  t.same(evaluated?.map((r) => r.name), alertNames, 'every rule loaded and evaluated without error');
  const firing = await api(`/api/v1/query?query=${encodeURIComponent('ALERTS{alertstate="firing"}')}`);
  t.same(firing.data.result, [], 'a healthy single node fires no alert');
});
