// Goal: the Helm chart in deploy/helm/svc-broker starts nodes the node's own loader accepts: the `config` block of
// values.yaml (copied verbatim into the ConfigMap) loads with --config, sets spec 8's 12-hour chart retention and the
// ports the pod exposes, and the pod's start script gives node id = ordinal + 1, the founders' bootstrap list of
// headless DNS names, or a join. Method: no helm binary here, so the start script is taken from the StatefulSet
// template with its placeholders filled as the chart's helpers render them, run by /bin/sh with a given POD_NAME (exec
// replaced by printing the arguments), and the arguments it prints are loaded with loadConfig.
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { loadConfig, parseBootstrap } from '../../src/config.js';

const chart = fileURLToPath(new URL('../../../deploy/helm/svc-broker/', import.meta.url));
const run = promisify(execFile);

interface Values {
  replicas: number;
  config: string;
  cluster: { founders: number; clusterDomain: string };
  ports: { api: number; internal: number; metrics: number };
}

const values = parseYaml(await readFile(join(chart, 'values.yaml'), 'utf8')) as Values;
const statefulSet = await readFile(join(chart, 'templates/statefulset.yaml'), 'utf8');
const helpers = await readFile(join(chart, 'templates/_helpers.tpl'), 'utf8');
const dir = await mkdtemp(join(tmpdir(), 'deploy-helm-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const configFile = join(dir, 'config.yaml');
await writeFile(configFile, values.config);

// What the helpers render for release "rel" in namespace "ns" (fullname rel-svc-broker, headless rel-svc-broker-nodes).
const podDomain = `rel-svc-broker-nodes.ns.svc.${values.cluster.clusterDomain}`;
const podHost = (ordinal: number): string => `rel-svc-broker-${ordinal}.${podDomain}`;
const bootstrap = Array.from({ length: values.cluster.founders }, (_, o) => `${o + 1}=${podHost(o)}:${values.ports.internal}`).join(',');

/** The start script of the StatefulSet, placeholders filled, exec replaced by printing one argument per line. */
function startScript(): string {
  const block = /args:\n\s+- \|\n((?:\s{14}.*\n)+)/.exec(statefulSet);
  if (block === null) throw new Error('statefulset.yaml: no start script under args');
  const fills: Record<string, string> = {
    '{{ int .Values.cluster.founders }}': String(values.cluster.founders),
    '{{ include "svc-broker.bootstrap" . }}': bootstrap,
    '{{ include "svc-broker.podHost" (list . 0) }}': podHost(0),
    '{{ $podDomain }}': podDomain,
    '{{ .Values.ports.api }}': String(values.ports.api),
    '{{ .Values.ports.internal }}': String(values.ports.internal),
  };
  let script = block[1]!.replace(/^ {14}/gm, '');
  for (const [placeholder, value] of Object.entries(fills)) script = script.replaceAll(placeholder, value);
  if (script.includes('{{')) throw new Error(`start script has a placeholder this test does not fill:\n${script}`);
  return script.replace('exec node /opt/svc-broker/dist/src/main.js', "printf '%s\\n'");
}

/** The node's arguments in pod podName, its --config (the ConfigMap's mount) pointed at this test's copy. */
async function podArgs(t: Test, podName: string): Promise<string[]> {
  const { stdout } = await run('/bin/sh', ['-c', startScript()], { env: { POD_NAME: podName, PATH: process.env['PATH'] } });
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
  t.match(helpers, /add1 \$ordinal/, 'the bootstrap helper numbers founders from 1');
  for (const ordinal of [0, values.cluster.founders - 1]) {
    const argv = await podArgs(t, `rel-svc-broker-${ordinal}`);
    const { config } = await loadConfig({ argv, env: {} });
    t.equal(config['cluster.node_id'], ordinal + 1);
    t.equal(config['cluster.bootstrap'], bootstrap);
    t.equal(config['cluster.join'], '');
    t.equal(config['cluster.advertise'], `${podHost(ordinal)}:${values.ports.api},${podHost(ordinal)}:${values.ports.internal}`);
    t.same([...parseBootstrap(config['cluster.bootstrap'])!.keys()], [1, 2, 3].slice(0, values.cluster.founders));
  }
});

t.test('a pod added after the founders joins through pod 0', async (t) => {
  const argv = await podArgs(t, `rel-svc-broker-${values.cluster.founders}`);
  const { config } = await loadConfig({ argv, env: {} });
  t.equal(config['cluster.node_id'], values.cluster.founders + 1);
  t.equal(config['cluster.bootstrap'], '');
  t.equal(config['cluster.join'], `${podHost(0)}:${values.ports.internal}`);
});

t.test('values: founders are pods of the StatefulSet, and the PDB lets one node go at a time', async (t) => {
  t.ok(values.cluster.founders <= values.replicas);
  const pdb = await readFile(join(chart, 'templates/pdb.yaml'), 'utf8');
  t.match(pdb, /maxUnavailable: \{\{ \.Values\.podDisruptionBudget\.maxUnavailable \}\}/);
  t.match(await readFile(join(chart, 'values.yaml'), 'utf8'), /podDisruptionBudget:\n\s+maxUnavailable: 1\n/);
});
