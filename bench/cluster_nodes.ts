// A 3-node broker cluster on loopback for the forwarded benches (bench/forwarded.ts): fresh data dirs, a shared
// secret, free internal ports, security off (the direct and forwarded runs pay the same), every node ready before
// it returns. Bench process main thread; every node is stopped and its data removed by run.ts's cleanup.
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { cleanups, sleep, type BrokerTarget } from './common.js';
import { startChildServer } from './node_process.js';
import type { BenchOptions } from './options.js';

const readyTimeoutMs = 30_000;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });
}

/** Node ids 1..3, each its own target (index i is node i + 1). */
export async function startCluster(options: BenchOptions, env: Record<string, string> = {}): Promise<BrokerTarget[]> {
  if (!existsSync(options.nodeScript)) throw new Error(`${options.nodeScript} does not exist: build the broker first`);
  const dir = await mkdtemp(join(os.tmpdir(), 'svc-bench-cluster-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const secret = join(dir, 'cluster-secret');
  await writeFile(secret, randomBytes(48).toString('base64'), { mode: 0o600 });
  const ports = [await freePort(), await freePort(), await freePort()];
  const bootstrap = ports.map((port, i) => `${i + 1}=127.0.0.1:${port}`).join(',');
  const nodes = await Promise.all(ports.map((port, i) => startChildServer({
    name: `broker node ${i + 1}`, script: options.nodeScript, env,
    args: ['--port', '0', '--host', '127.0.0.1', '--data-dir', join(dir, `node${i + 1}`), '--security', 'off',
      '--node-id', String(i + 1), '--internal-port', String(port), '--bootstrap', bootstrap,
      '--cluster-secret-file', secret, ...options.nodeArgs],
  })));
  for (const node of nodes) cleanups.push(async () => void (await node.stop()));
  const targets = nodes.map((server) => ({ url: server.url, authorization: null, server, serverPid: server.pid }));
  await Promise.all(targets.map((target) => readyOrThrow(target)));
  return targets;
}

async function readyOrThrow(target: BrokerTarget): Promise<void> {
  const deadline = Date.now() + readyTimeoutMs;
  while (Date.now() < deadline) {
    const status = await fetch(`${target.url}/readyz`).then((r) => r.status, () => 0);
    if (status === 200) return;
    await sleep(200);
  }
  throw new Error(`${target.url} not ready within ${readyTimeoutMs} ms; output:\n${target.server?.outputTail() ?? ''}`);
}

/** The owner node (1-based) of each partition of topic, as the node at target answers. */
export async function ownersOf(target: BrokerTarget, topic: string): Promise<number[]> {
  const body = (await (await fetch(`${target.url}/v1/topics/${encodeURIComponent(topic)}`)).json()) as { partition_stats: { owner_node: string }[] };
  return body.partition_stats.map((p) => Number(p.owner_node));
}
