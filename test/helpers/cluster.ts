// Starts a cluster of real broker node processes on loopback for test/cluster: each with its own data dir, API
// port 0 (logged), an internal port picked free beforehand (the bootstrap list must name it), one shared cluster
// secret file. Nodes are started, SIGKILLed and restarted for real; the test's teardown kills every process and
// removes every dir. Imports nothing from src/.
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client, pollUntil } from './http.js';
import { adminPassword, basicAuth, makeDataDir, removeDataDir, startNode, type StartedNode, type Teardown } from './node.js';

/** A free loopback TCP port (closed again before it is returned; the test binds it right after). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export interface ClusterNodeSpec {
  id: number;
  internalPort: number;
  dataDir: string;
}

/** Flags every cluster test node gets: fast ticks so elections take well under a second. */
const fastRaft = ['--set', 'cluster.tick_interval=50ms', '--set', 'cluster.member_dead_after=2s'];

export class TestCluster {
  readonly nodes = new Map<number, StartedNode>();
  readonly specs = new Map<number, ClusterNodeSpec>();
  readonly auth = basicAuth('admin', adminPassword);

  private constructor(
    private readonly secretFile: string,
    private readonly bootstrap: string,
    private readonly extraArgs: string[],
  ) {}

  /** Makes dirs, ports and the secret for `count` founding nodes and registers cleanup with t; starts nothing. */
  static async create(t: Teardown, count: number, extraArgs: string[] = []): Promise<TestCluster> {
    const secretDir = await makeDataDir();
    const secretFile = join(secretDir, 'cluster-secret');
    await writeFile(secretFile, randomBytes(48).toString('base64'), { mode: 0o600 });
    const specs: ClusterNodeSpec[] = [];
    for (let id = 1; id <= count; id++) specs.push({ id, internalPort: await freePort(), dataDir: await makeDataDir() });
    const cluster = new TestCluster(secretFile, specs.map((s) => `${s.id}=127.0.0.1:${s.internalPort}`).join(','), extraArgs);
    for (const spec of specs) cluster.specs.set(spec.id, spec);
    t.teardown(async () => {
      await Promise.all([...cluster.nodes.values()].map((node) => node.kill()));
      for (const spec of cluster.specs.values()) await removeDataDir(spec.dataDir);
      await removeDataDir(secretDir);
    });
    return cluster;
  }

  /** Starts a founding node (again, on its data dir, after a kill or stop). */
  async start(id: number): Promise<StartedNode> {
    const spec = this.specs.get(id)!;
    const node = await startNode({
      dataDir: spec.dataDir,
      args: ['--node-id', String(id), '--internal-port', String(spec.internalPort), '--bootstrap', this.bootstrap,
        '--cluster-secret-file', this.secretFile, ...fastRaft, ...this.extraArgs],
    });
    this.nodes.set(id, node);
    return node;
  }

  async startAll(): Promise<void> {
    await Promise.all([...this.specs.keys()].map((id) => this.start(id)));
  }

  /** Starts a new node that joins through node `via`'s internal port. */
  async join(id: number, via: number, extraArgs: string[] = []): Promise<StartedNode> {
    const spec: ClusterNodeSpec = this.specs.get(id) ?? { id, internalPort: await freePort(), dataDir: await makeDataDir() };
    this.specs.set(id, spec);
    const node = await startNode({
      dataDir: spec.dataDir,
      args: ['--node-id', String(id), '--internal-port', String(spec.internalPort), '--join', `127.0.0.1:${this.specs.get(via)!.internalPort}`,
        '--cluster-secret-file', this.secretFile, ...fastRaft, ...this.extraArgs, ...extraArgs],
    });
    this.nodes.set(id, node);
    return node;
  }

  async kill(id: number): Promise<void> {
    await this.nodes.get(id)?.kill();
    this.nodes.delete(id);
  }

  client(id: number): Client {
    const node = this.nodes.get(id);
    if (node === undefined) throw new Error(`node ${id} is not running`);
    return new Client(node.url, this.auth);
  }

  /** The members list as node `id` answers it; undefined when it does not answer 200. */
  async members(id: number): Promise<Record<string, unknown>[] | undefined> {
    const res = await this.client(id).get('/v1/cluster/members').catch(() => undefined);
    if (res?.status !== 200) return undefined;
    return (res.json() as { members: Record<string, unknown>[] }).members;
  }

  /** The id of the leader every running node agrees on, once they do (within timeoutMs). */
  async agreedLeader(timeoutMs = 10_000): Promise<number | undefined> {
    return pollUntil(async () => {
      const views = await Promise.all([...this.nodes.keys()].map((id) => this.members(id)));
      const leaders = views.map((members) => members?.find((m) => m.raft_leader === true)?.id);
      const first = leaders[0];
      return first !== undefined && leaders.every((leader) => leader === first) ? Number(first) : undefined;
    }, timeoutMs, 100);
  }

  /** Resolves once every running node answers /readyz 200 (false on timeout). */
  async allReady(timeoutMs = 15_000): Promise<boolean> {
    const ready = await pollUntil(async () => {
      const statuses = await Promise.all([...this.nodes.values()].map((node) => new Client(node.url, null).get('/readyz').then((r) => r.status, () => 0)));
      return statuses.every((status) => status === 200) ? true : undefined;
    }, timeoutMs, 100);
    return ready === true;
  }
}
