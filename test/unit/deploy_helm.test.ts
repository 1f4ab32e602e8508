// Goal: the Helm chart in deploy/helm/svc-broker starts nodes the node's own loader accepts: the `config` block of
// values.yaml (copied verbatim into the ConfigMap) loads with --config, sets spec 8's 12-hour chart retention and the
// ports the pod exposes, and the pod's start script gives node id = ordinal + 1, the founders' bootstrap list of the
// DNS names Kubernetes gives the StatefulSet's pods under its headless Service, or a join through pod 0.
// Method: no helm binary here (Debian ships none), so test/helpers/go_template.ts executes the chart's own
// templates/_helpers.tpl: the StatefulSet's variable lines and start script are rendered with them for a release, the
// script is run by /bin/sh with a given POD_NAME (exec replaced by printing the arguments), and the arguments it
// prints are loaded with loadConfig. What they must say is derived apart from the helpers: Kubernetes names pod N of
// StatefulSet S with serviceName H `S-N.H.<namespace>.svc.<cluster domain>`, with S and H as the StatefulSet
// renders them and H the name the headless Service (clusterIP None) renders to.
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { loadConfig, parseBootstrap } from '../../src/config.js';
import { GoTemplates } from '../helpers/go_template.js';

const chart = fileURLToPath(new URL('../../../deploy/helm/svc-broker/', import.meta.url));
const run = promisify(execFile);

interface Values {
  replicas: number;
  config: string;
  cluster: { founders: number; clusterDomain: string };
  ports: { api: number; internal: number; metrics: number };
}

const values = parseYaml(await readFile(join(chart, 'values.yaml'), 'utf8')) as Values;
const chartYaml = parseYaml(await readFile(join(chart, 'Chart.yaml'), 'utf8')) as { name: string; version: string; appVersion: string };
const statefulSet = await readFile(join(chart, 'templates/statefulset.yaml'), 'utf8');
const services = await readFile(join(chart, 'templates/services.yaml'), 'utf8');
const helpers = new GoTemplates([await readFile(join(chart, 'templates/_helpers.tpl'), 'utf8')]);
const dir = await mkdtemp(join(tmpdir(), 'deploy-helm-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const configFile = join(dir, 'config.yaml');
await writeFile(configFile, values.config);

interface Release {
  name: string;
  namespace: string;
}

/** What Helm gives the templates for release in its namespace, with the chart's values. */
function renderData(release: Release): unknown {
  return {
    Values: values,
    Release: { Name: release.name, Namespace: release.namespace, Service: 'Helm' },
    Chart: { Name: chartYaml.name, Version: chartYaml.version, AppVersion: chartYaml.appVersion },
  };
}

/** The StatefulSet's leading variable lines ({{- $fullname := ... }}): the script uses them. */
const variableLines = (/^(?:\{\{- \$\w+ :=.*\}\}\n)+/.exec(statefulSet) ?? [''])[0];

/** Kubernetes' name of the StatefulSet's pod `ordinal` for release, from the names the chart renders. */
function podHostOf(release: Release, ordinal: number): string {
  const named = /\nmetadata:\n {2}name: (\{\{ \$fullname \}\})\n[\s\S]*?\n {2}serviceName: (\{\{ \$headless \}\})\n/.exec(statefulSet);
  if (named === null) throw new Error('statefulset.yaml: metadata.name or spec.serviceName changed form');
  const [name, serviceName] = helpers.render(`${variableLines}${named[1]}|${named[2]}`, renderData(release)).trim().split('|');
  const headless = /kind: Service\nmetadata:\n {2}name: (\{\{[^\n]*\}\})\n[\s\S]*?\n {2}clusterIP: None\n/.exec(services);
  if (headless === null) throw new Error('services.yaml: no headless Service');
  if (helpers.render(headless[1]!, renderData(release)) !== serviceName) throw new Error('the StatefulSet\'s serviceName is not the headless Service');
  return `${name}-${ordinal}.${serviceName}.${release.namespace}.svc.${values.cluster.clusterDomain}`;
}

/** The founders' bootstrap list as it must read: id = ordinal + 1, each at its pod's DNS name and internal port. */
function bootstrapOf(release: Release): string {
  return Array.from({ length: values.cluster.founders }, (_, o) => `${o + 1}=${podHostOf(release, o)}:${values.ports.internal}`).join(',');
}

/** The start script of the StatefulSet rendered for release, exec replaced by printing one argument per line. */
function startScript(release: Release): string {
  const block = /args:\n\s+- \|\n((?:\s{14}.*\n)+)/.exec(statefulSet);
  if (block === null) throw new Error('statefulset.yaml: no start script under args');
  const script = helpers.render(variableLines + block[1]!.replace(/^ {14}/gm, ''), renderData(release));
  return script.replace('exec node /opt/svc-broker/dist/src/main.js', "printf '%s\\n'");
}

const rel: Release = { name: 'rel', namespace: 'ns' };

/** The node's arguments in pod podName, its --config (the ConfigMap's mount) pointed at this test's copy. */
async function podArgs(t: Test, podName: string, release = rel): Promise<string[]> {
  const { stdout } = await run('/bin/sh', ['-c', startScript(release)], { env: { POD_NAME: podName, PATH: process.env['PATH'] } });
  const argv = stdout.split('\n').slice(0, -1);
  const at = argv.indexOf('--config');
  t.equal(argv[at + 1], '/etc/svc-broker/config.yaml', 'the node reads the ConfigMap where it is mounted');
  t.match(statefulSet, /mountPath: \/etc\/svc-broker\/config\.yaml\n\s+subPath: config\.yaml\n/);
  argv[at + 1] = configFile;
  return argv;
}

t.test('the config block loads and sets the chart retention and the pod ports', async (t) => {
  const { config } = await loadConfig({ argv: ['--config', configFile], env: {} });
  t.equal(config['topics.retention_ms_default'], 12 * 3600 * 1000, 'spec 8: 12 hours in the Helm chart');
  t.equal(config['node.port'], values.ports.api);
  t.equal(config['cluster.internal_port'], values.ports.internal);
  t.equal(config['http.metrics_addr'], `0.0.0.0:${values.ports.metrics}`, 'the probes and the scrape use the metrics port');
  t.equal(config['node.data_dir'], '/var/lib/svc-broker');
  t.match(statefulSet, /- name: data\n\s+mountPath: \/var\/lib\/svc-broker\n/, 'the PVC is mounted at the data dir');
  t.equal(config['cluster.secret_file'], '/etc/svc-broker/secret/cluster-secret');
  t.match(statefulSet, /mountPath: \/etc\/svc-broker\/secret\n/, 'the Secret is mounted where secret_file points');
  t.match(statefulSet, /path: \/healthz[\s\S]*path: \/readyz/, 'liveness on /healthz, readiness on /readyz');
});

t.test('a founding pod: node id is its ordinal + 1, bootstrap names every founder by headless DNS name', async (t) => {
  t.equal(podHostOf(rel, 0), 'rel-svc-broker-0.rel-svc-broker-nodes.ns.svc.cluster.local', 'release rel in ns: pod 0\'s name');
  for (const ordinal of [0, values.cluster.founders - 1]) {
    const argv = await podArgs(t, `rel-svc-broker-${ordinal}`);
    const { config } = await loadConfig({ argv, env: {} });
    t.equal(config['cluster.node_id'], ordinal + 1);
    t.equal(config['cluster.bootstrap'], bootstrapOf(rel));
    t.equal(config['cluster.join'], '');
    t.equal(config['cluster.advertise'], `${podHostOf(rel, ordinal)}:${values.ports.api},${podHostOf(rel, ordinal)}:${values.ports.internal}`);
    t.same([...parseBootstrap(config['cluster.bootstrap'])!.keys()], [1, 2, 3].slice(0, values.cluster.founders));
  }
});

t.test('a release named after the chart: names are not doubled, and still the pods\' DNS names', async (t) => {
  const release = { name: 'svc-broker-prod', namespace: 'queues' };
  t.equal(podHostOf(release, 1), 'svc-broker-prod-1.svc-broker-prod-nodes.queues.svc.cluster.local');
  const argv = await podArgs(t, 'svc-broker-prod-1', release);
  const { config } = await loadConfig({ argv, env: {} });
  t.equal(config['cluster.node_id'], 2);
  t.equal(config['cluster.bootstrap'], bootstrapOf(release));
  t.equal(config['cluster.advertise'], `${podHostOf(release, 1)}:${values.ports.api},${podHostOf(release, 1)}:${values.ports.internal}`);
});

t.test('a pod added after the founders joins through pod 0', async (t) => {
  const argv = await podArgs(t, `rel-svc-broker-${values.cluster.founders}`);
  const { config } = await loadConfig({ argv, env: {} });
  t.equal(config['cluster.node_id'], values.cluster.founders + 1);
  t.equal(config['cluster.bootstrap'], '');
  t.equal(config['cluster.join'], `${podHostOf(rel, 0)}:${values.ports.internal}`);
});

t.test('values: founders are pods of the StatefulSet, and the PDB lets one node go at a time', async (t) => {
  t.ok(values.cluster.founders <= values.replicas);
  const pdb = await readFile(join(chart, 'templates/pdb.yaml'), 'utf8');
  t.match(pdb, /maxUnavailable: \{\{ \.Values\.podDisruptionBudget\.maxUnavailable \}\}/);
  t.match(await readFile(join(chart, 'values.yaml'), 'utf8'), /podDisruptionBudget:\n\s+maxUnavailable: 1\n/);
});
