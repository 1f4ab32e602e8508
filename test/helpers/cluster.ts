// Starts a cluster of real broker node processes on loopback for test/cluster: each with its own data dir, API
// port 0 (logged), an internal port picked free beforehand outside the ephemeral range (the bootstrap list must name
// it), one shared cluster secret file. Nodes are started, SIGKILLed and restarted for real; the test's teardown kills
// every process and removes every dir. Imports nothing from src/.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Client, pollUntil, type HttpResponse } from './http.js';
import { LinkProxy, transportHelloNodeId } from './link_proxy.js';
import { adminPassword, basicAuth, makeDataDir, removeDataDir, startNode, type StartedNode, type Teardown } from './node.js';

/** Ports handed out below the kernel's ephemeral range (ip_local_port_range, 32768 and up by default): a port taken
 *  with listen(0) and released could be given to any other socket (another test's node binding port 0, an outgoing
 *  connection) before the node binds it, which made a cluster start fail with EADDRINUSE under parallel tests. Each
 *  test process walks a block of 1,000 ports of its own (by pid) from 10,000, and checks every candidate. */
const portBlockPorts = 1000;
const portBlocks = Math.max(1, Math.floor((ephemeralPortsFirst() - 10_000) / portBlockPorts));
const portBlockFirst = 10_000 + (process.pid % portBlocks) * portBlockPorts;
// Two processes whose pids share a block still start at different places in it.
let portCursor = (process.pid * 7) % portBlockPorts;

function ephemeralPortsFirst(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A loopback TCP port that was free just now and that the kernel does not hand out by itself. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    portCursor = (portCursor + 1) % portBlockPorts;
    const port = portBlockFirst + portCursor;
    if (await portFree(port)) return port;
  }
  throw new Error('freePort: no free port in 200 tries');
}

export interface ClusterNodeSpec {
  id: number;
  internalPort: number;
  dataDir: string;
  /** With the linkProxy option: the node's front on the link proxy (what other nodes dial) and its fixed API port
   *  (--advertise must name one; it also keeps the node's URL across restarts). */
  linkPort?: number;
  apiPort?: number;
}

export interface TestClusterOptions {
  /** Put a LinkProxy (test/helpers/link_proxy.ts) in front of every node's internal port: the bootstrap list and
   *  each node's advertised internal address name its front, so every node-to-node connection passes the proxy and
   *  `cluster.links` can delay, drop or cut a node's links. */
  linkProxy?: boolean;
  /** Arguments for node id only (its own TLS certificate, say). */
  argsOf?: (id: number) => string[];
}

/** Flags every cluster test node gets: fast ticks so elections take well under a second. */
const fastRaft = ['--set', 'cluster.tick_interval=50ms', '--set', 'cluster.member_dead_after=2s'];

export class TestCluster {
  readonly nodes = new Map<number, StartedNode>();
  readonly specs = new Map<number, ClusterNodeSpec>();
  readonly auth = basicAuth('admin', adminPassword);
  private readonly pastOutput = new Map<number, string>();

  private constructor(
    readonly secretFile: string,
    private readonly bootstrap: string,
    private readonly extraArgs: string[],
    private readonly argsOf: (id: number) => string[],
    /** The link fault harness, with the linkProxy option. */
    readonly links: LinkProxy | undefined,
  ) {}

  /** Makes dirs, ports and the secret for `count` founding nodes and registers cleanup with t; starts nothing.
   *  extraArgs go to every node; options.argsOf(id) to node id only (its own TLS certificate, say). */
  static async create(t: Teardown & { passing?(): boolean }, count: number, extraArgs: string[] = [], options: TestClusterOptions = {}): Promise<TestCluster> {
    const secretDir = await makeDataDir();
    const secretFile = join(secretDir, 'cluster-secret');
    await writeFile(secretFile, randomBytes(48).toString('base64'), { mode: 0o600 });
    const links = options.linkProxy === true ? new LinkProxy({ identify: transportHelloNodeId }) : undefined;
    const specs: ClusterNodeSpec[] = [];
    for (let id = 1; id <= count; id++) specs.push(await newSpec(id, links));
    const dialled = (s: ClusterNodeSpec): number => s.linkPort ?? s.internalPort;
    const cluster = new TestCluster(secretFile, specs.map((s) => `${s.id}=127.0.0.1:${dialled(s)}`).join(','), extraArgs,
      options.argsOf ?? (() => []), links);
    for (const spec of specs) cluster.specs.set(spec.id, spec);
    t.teardown(async () => {
      await Promise.all([...cluster.specs.keys()].filter((id) => cluster.nodes.has(id)).map((id) => cluster.kill(id)));
      await links?.close();
      // A failed test shows the tail of every node's log, which is where the reason usually is.
      if (t.passing !== undefined && !t.passing()) {
        for (const id of cluster.specs.keys()) process.stderr.write(`--- node ${id} log tail ---\n${cluster.output(id).split('\n').slice(-40).join('\n')}\n`);
      }
      for (const spec of cluster.specs.values()) await removeDataDir(spec.dataDir);
      await removeDataDir(secretDir);
    });
    return cluster;
  }

  /** create, start every node, and wait (30 s each: a busy machine is slow to elect) for an agreed leader and every
   *  node ready; throws otherwise. */
  static async started(t: Teardown & { passing?(): boolean }, count: number, extraArgs: string[] = []): Promise<{ cluster: TestCluster; leader: number }> {
    const cluster = await TestCluster.create(t, count, extraArgs);
    await cluster.startAll();
    const leader = await cluster.agreedLeader(30_000);
    if (leader === undefined) throw new Error(`the ${count} nodes agree on no leader within 30 s`);
    if (!(await cluster.allReady(30_000))) throw new Error(`not all ${count} nodes ready within 30 s`);
    await cluster.settled();
    return { cluster, leader };
  }

  /** Waits until every node lists every member alive. A follower's liveness comes from the leader's view, sent once a
   *  second: until its copy lists every member, it refuses produce to owners it cannot yet call alive (503,
   *  Retry-After). Tests start from a settled cluster. */
  async settled(): Promise<void> {
    for (const id of this.nodes.keys()) {
      if (!(await this.membersAlive(id, 20_000))) throw new Error(`node ${id} does not list all ${this.nodes.size} members alive within 20 s`);
    }
  }

  /** The owner node id of each partition of topic, as node id answers. */
  async ownersOf(id: number, topic: string): Promise<number[]> {
    const body = (await this.client(id).get(`/v1/topics/${topic}`)).json() as { partition_stats: { owner_node: string }[] };
    return body.partition_stats.map((p) => Number(p.owner_node));
  }

  /** Starts a founding node (again, on its data dir, after a kill or stop). */
  async start(id: number): Promise<StartedNode> {
    const spec = this.specs.get(id)!;
    const node = await startNode({
      dataDir: spec.dataDir,
      args: ['--node-id', String(id), '--internal-port', String(spec.internalPort), '--bootstrap', this.bootstrap,
        '--cluster-secret-file', this.secretFile, ...fastRaft, ...proxiedArgs(spec), ...this.extraArgs, ...this.argsOf(id)],
    });
    this.nodes.set(id, node);
    return node;
  }

  async startAll(): Promise<void> {
    await Promise.all([...this.specs.keys()].map((id) => this.start(id)));
  }

  /** Starts a new node that joins through node `via`'s internal port. */
  async join(id: number, via: number, extraArgs: string[] = []): Promise<StartedNode> {
    const spec: ClusterNodeSpec = this.specs.get(id) ?? (await newSpec(id, this.links));
    this.specs.set(id, spec);
    const viaSpec = this.specs.get(via)!;
    const node = await startNode({
      dataDir: spec.dataDir,
      args: ['--node-id', String(id), '--internal-port', String(spec.internalPort), '--join', `127.0.0.1:${viaSpec.linkPort ?? viaSpec.internalPort}`,
        '--cluster-secret-file', this.secretFile, ...fastRaft, ...proxiedArgs(spec), ...this.extraArgs, ...this.argsOf(id), ...extraArgs],
    });
    this.nodes.set(id, node);
    return node;
  }

  /** SIGKILL node id and wait for its exit. */
  async kill(id: number): Promise<void> {
    const node = this.nodes.get(id);
    await node?.kill();
    this.forget(id, node);
  }

  /** SIGTERM and wait for the exit (graceful stop); resolves to the exit code. */
  async stop(id: number): Promise<number | null | undefined> {
    const node = this.nodes.get(id);
    const code = await node?.stop();
    this.forget(id, node);
    return code;
  }

  private forget(id: number, node: StartedNode | undefined): void {
    if (node === undefined) return;
    this.pastOutput.set(id, (this.pastOutput.get(id) ?? '') + node.output());
    this.nodes.delete(id);
  }

  /** Ids of the running nodes, ascending. */
  running(): number[] {
    return [...this.nodes.keys()].sort((a, b) => a - b);
  }

  /** Everything node `id` logged so far, over all its processes (killed ones included). */
  output(id: number): string {
    return (this.pastOutput.get(id) ?? '') + (this.nodes.get(id)?.output() ?? '');
  }

  /** GET /readyz on node id: its status (0 when it does not answer) and its body. */
  async readyz(id: number): Promise<{ status: number; body: Record<string, unknown> | undefined; res: HttpResponse | undefined }> {
    const node = this.nodes.get(id);
    if (node === undefined) throw new Error(`node ${id} is not running`);
    const res = await new Client(node.url, null).get('/readyz', { timeoutMs: 3_000 }).catch(() => undefined);
    let body: Record<string, unknown> | undefined;
    try {
      body = res === undefined ? undefined : (res.json() as Record<string, unknown>);
    } catch {
      body = undefined;
    }
    return { status: res?.status ?? 0, body, res };
  }

  /** Polls node id's /readyz until it answers `status`; the last answer (with elapsed ms), or undefined on timeout. */
  async readyzBecomes(id: number, status: number, timeoutMs: number): Promise<{ body: Record<string, unknown> | undefined; res: HttpResponse; elapsedMs: number } | undefined> {
    const startedMs = Date.now();
    return pollUntil(async () => {
      const answer = await this.readyz(id);
      return answer.status === status && answer.res !== undefined ? { body: answer.body, res: answer.res, elapsedMs: Date.now() - startedMs } : undefined;
    }, timeoutMs, 100);
  }

  /** Polls until GET path answers 200 on every running node (or on `ids`); true when it did within timeoutMs. */
  async visibleOnAll(path: string, timeoutMs = 10_000, ids: number[] = this.running()): Promise<boolean> {
    const seen = await pollUntil(async () => {
      const statuses = await Promise.all(ids.map((id) => this.client(id).get(path).then((r) => r.status, () => 0)));
      return statuses.every((status) => status === 200) ? true : undefined;
    }, timeoutMs, 100);
    return seen === true;
  }

  /** Polls until GET path answers `status` on every running node (or on `ids`). */
  async statusOnAll(path: string, status: number, timeoutMs = 10_000, ids: number[] = this.running()): Promise<boolean> {
    const seen = await pollUntil(async () => {
      const statuses = await Promise.all(ids.map((id) => this.client(id).get(path).then((r) => r.status, () => 0)));
      return statuses.every((s) => s === status) ? true : undefined;
    }, timeoutMs, 100);
    return seen === true;
  }

  /** The member record of `memberId` as node `id` answers it (undefined when not listed or no answer). */
  async member(id: number, memberId: number): Promise<Record<string, unknown> | undefined> {
    return (await this.members(id))?.find((m) => m.id === String(memberId));
  }

  /** The leader node `id` reports in its members list (undefined when none). */
  async leaderSeenBy(id: number): Promise<number | undefined> {
    const leader = (await this.members(id))?.find((m) => m.raft_leader === true)?.id;
    return leader === undefined ? undefined : Number(leader);
  }

  /** A running node other than `leader` (the lowest id). */
  follower(leader: number): number {
    const id = this.running().find((candidate) => candidate !== leader);
    if (id === undefined) throw new Error('no running follower');
    return id;
  }

  /** Retries POST path on node id until it answers 201: a 503 or no answer is retried every 50 ms, anything else
   *  ends the wait. The body is made per attempt: give each attempt a fresh name, since a 503 "committed but
   *  unconfirmed" may have created the resource and the same name would then answer 409. */
  async postUntilCreated(id: number, path: string, body: (attempt: number) => unknown, timeoutMs: number): Promise<HttpResponse | undefined> {
    let last: HttpResponse | undefined;
    let attempt = 0;
    const created = await pollUntil(async () => {
      last = await this.client(id).post(path, body(attempt++), { timeoutMs: 8_000 }).catch(() => undefined);
      if (last === undefined || last.status === 503) return undefined;
      return last;
    }, timeoutMs, 50);
    return created ?? last;
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

  /** Resolves once `leader` lists every running node alive with its member record, which placement needs before it
   *  puts partitions on a node (false on timeout). */
  async membersAlive(leader: number, timeoutMs = 10_000): Promise<boolean> {
    const count = this.nodes.size;
    return eventually(async () => (await this.members(leader))?.filter((m) => m.liveness === 'alive' && m.api_address !== '').length === count, timeoutMs);
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

/** Ports and data dir of a node; with the link proxy, its front (forwarding to the internal port) and API port. */
async function newSpec(id: number, links: LinkProxy | undefined): Promise<ClusterNodeSpec> {
  const spec: ClusterNodeSpec = { id, internalPort: await freePort(), dataDir: await makeDataDir() };
  if (links === undefined) return spec;
  spec.linkPort = await links.front(id, spec.internalPort);
  spec.apiPort = await freePort();
  return spec;
}

/** The flags that make a node tell others its proxy front rather than its internal port (none without a proxy). */
function proxiedArgs(spec: ClusterNodeSpec): string[] {
  if (spec.linkPort === undefined || spec.apiPort === undefined) return [];
  return ['--port', String(spec.apiPort), '--advertise', `127.0.0.1:${spec.apiPort},127.0.0.1:${spec.linkPort}`];
}

/** Polls a yes/no probe every intervalMs until it says yes (true) or timeoutMs passes (false). A probe that throws
 *  counts as no. */
export async function eventually(probe: () => Promise<boolean>, timeoutMs: number, intervalMs = 100): Promise<boolean> {
  const yes = await pollUntil(async () => ((await probe().catch(() => false)) ? true : undefined), timeoutMs, intervalMs);
  return yes === true;
}
