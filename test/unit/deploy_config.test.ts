// Goal: the example configurations shipped in deploy/ are valid for the node's own loader (no unknown key, every value
// in bounds), so operators can start from them, and the single-node one makes no cluster. Method: loadConfig with
// --config on each file itself.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';

const example = fileURLToPath(new URL('../../../deploy/config.example.yaml', import.meta.url));
const clusterExample = fileURLToPath(new URL('../../../deploy/cluster.example.yaml', import.meta.url));

t.test('deploy/config.example.yaml loads and sets what it says', async (t) => {
  const { config } = await loadConfig({ argv: ['--config', example], env: {} });
  t.equal(config['node.data_dir'], '/var/lib/svc-broker');
  t.equal(config['http.max_consume_wait'], 20_000);
  t.equal(config['http.max_batch_body_bytes_in_flight'], 256 * 1024 * 1024);
  t.equal(config['cluster.bootstrap'], '', 'a node started from it is a one-node cluster of itself');
  t.equal(config['cluster.join'], '');
});

t.test('deploy/cluster.example.yaml loads and names a founding node of three', async (t) => {
  const { config } = await loadConfig({ argv: ['--config', clusterExample], env: {} });
  t.equal(config['cluster.node_id'], 1);
  t.equal(config['cluster.bootstrap'], '1=10.0.0.1:7943,2=10.0.0.2:7943,3=10.0.0.3:7943');
  t.equal(config['cluster.secret_file'], '/etc/svc-broker/cluster-secret');
});
