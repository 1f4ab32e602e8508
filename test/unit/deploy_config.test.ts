// Goal: the example configuration shipped in deploy/ is valid for the node's own loader (no unknown key, every value
// in bounds), so operators can start from it. Method: loadConfig with --config on the file itself.
import t from 'tap';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';

const example = fileURLToPath(new URL('../../../deploy/config.example.yaml', import.meta.url));

t.test('deploy/config.example.yaml loads and sets what it says', async (t) => {
  const { config } = await loadConfig({ argv: ['--config', example], env: {} });
  t.equal(config['node.data_dir'], '/var/lib/svc-broker');
  t.equal(config['http.max_consume_wait'], 20_000);
  t.equal(config['http.max_batch_body_bytes_in_flight'], 256 * 1024 * 1024);
});
