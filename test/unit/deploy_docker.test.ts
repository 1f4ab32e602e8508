// Goal: deploy/Dockerfile starts a node the node's own loader accepts, and what the image declares agrees with that
// config: the volume is the data dir, the exposed ports are the API, internal and metrics ports, the health check
// asks the metrics listener's /healthz, and the process runs as a non-root user and stops on SIGTERM. Method: no
// docker daemon here, so the Dockerfile's JSON-form ENTRYPOINT and CMD are read and the CMD loaded with loadConfig.
import t from 'tap';
import { access, readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../src/config.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const dockerfile = (await readFile(`${root}deploy/Dockerfile`, 'utf8')).replace(/\\\n/g, ' ');
const instructions = dockerfile.split('\n').filter((line) => /^[A-Z]+ /.test(line));

/** The arguments of every instruction named so, in order. */
function all(name: string): string[] {
  return instructions.filter((line) => line.startsWith(`${name} `)).map((line) => line.slice(name.length + 1).trim());
}
function one(name: string): string {
  const found = all(name);
  if (found.length === 0) throw new Error(`Dockerfile: no ${name}`);
  return found.at(-1)!;
}
const json = (name: string): string[] => JSON.parse(one(name)) as string[];

t.test('CMD loads as a node configuration matching VOLUME, EXPOSE and HEALTHCHECK', async (t) => {
  const { config } = await loadConfig({ argv: json('CMD'), env: {} });
  t.same(json('VOLUME'), [config['node.data_dir']], 'the volume is the data dir');
  const metricsPort = Number(/:(\d+)$/.exec(config['http.metrics_addr'])?.[1]);
  t.same(one('EXPOSE').split(/\s+/).map(Number), [config['node.port'], config['cluster.internal_port'], metricsPort]);
  const health = one('HEALTHCHECK');
  t.match(health, new RegExp(`fetch\\('http://127\\.0\\.0\\.1:${metricsPort}/healthz'\\)`), 'node fetch, no curl');
  t.equal(config['node.host'], '0.0.0.0', 'reachable from outside the container');
});

t.test('ENTRYPOINT runs the built main with node; the runtime stage copies what it imports', async (t) => {
  const entry = json('ENTRYPOINT');
  t.same(entry, ['node', '/opt/svc-broker/dist/src/main.js']);
  await access(`${root}dist/src/main.js`);
  for (const copied of ['/src/node_modules', '/src/dist/src', '/src/dist/workers', '/src/package.json']) {
    t.ok(all('COPY').some((args) => args.startsWith(`--from=build ${copied} `)), `runtime copies ${copied}`);
  }
});

t.test('the runtime stage has every package the node imports: production dependencies only', async (t) => {
  const pkg = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as { dependencies: Record<string, string> };
  const imported = new Set<string>();
  for (const dir of ['dist/src', 'dist/workers']) {
    const files = (await readdir(`${root}${dir}`, { recursive: true })).filter((f) => f.endsWith('.js'));
    for (const file of files) {
      const text = await readFile(`${root}${dir}/${file}`, 'utf8');
      for (const m of text.matchAll(/(?:from |import\()'([^.'][^']*)'/g)) {
        const spec = m[1]!;
        if (spec.startsWith('node:')) continue;
        imported.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!);
      }
    }
  }
  t.ok(imported.has('uWebSockets.js') && imported.has('sqlite3'), 'the scan sees the native modules');
  for (const name of imported) t.ok(Object.hasOwn(pkg.dependencies, name), `${name} is a production dependency`);
});

t.test('two Node 20 stages, build with npm ci and npm run build, non-root user, SIGTERM', async (t) => {
  const from = all('FROM');
  t.equal(from.length, 2);
  t.match(from[0], /^node:20-\S+ AS build$/);
  t.match(from[1], /^node:20-\S+$/);
  const runs = all('RUN');
  t.match(runs[0], /npm ci/);
  t.match(runs[1], /npm run build/);
  t.match(runs[1], /npm prune --omit=dev/, 'production node_modules only');
  t.match(runs[1], /require\('uWebSockets\.js'\); require\('sqlite3'\); require\('zstd-napi'\)/, 'native modules load');
  t.match(one('USER'), /^[1-9]\d*:[1-9]\d*$/, 'a numeric non-root uid, so runAsNonRoot can check it');
  t.equal(one('STOPSIGNAL'), 'SIGTERM');
});

t.test('.dockerignore keeps the host node_modules and dist out of the build context', async (t) => {
  const ignored = (await readFile(`${root}.dockerignore`, 'utf8')).split('\n').filter((l) => l !== '' && !l.startsWith('#'));
  for (const entry of ['node_modules', 'dist', 'data', '.git']) t.ok(ignored.includes(entry), entry);
});
