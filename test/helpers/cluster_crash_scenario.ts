// The cluster crash scenario behind test/cluster/crash_loop.test.ts and `npm run crash-loop -- --cluster`: the
// durability proof of produce through any node (spec 1.2, 1.6; issue 29) under node and link faults. One trial:
// start 3 nodes whose links pass the link proxy (test/helpers/link_proxy.ts), create a topic, produce through every
// node (single and batch, pinned to partitions and round-robin, a unique id in each payload) and consume through every
// node (without partition, batch ack through another node), then at a random moment kill -9 a random node and restart
// it on its data dir after a short random delay, or cut or blackhole (drop) a random node's links for a while and
// heal them, or (issue 41) move a partition or decommission a node under the load, maybe killing a node the change
// needs in the middle. Then the load stops, the cluster settles (bounded), and every partition is read back by replay through
// the nodes in turn. Every id answered 202 must be stored; an id never answered 202 may be absent; no id may be stored
// twice in one partition (a reroute may leave a second copy in another, spec 1.6) and no unknown id may appear. Imports nothing from src/.
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster } from './cluster.js';
import { Prng } from './prng.js';
import { idOf, readBackVerdict, type ReadBackVerdict } from './read_back_verdict.js';
import { Client, replayAt, topicPath, type ReplayedMessage } from './replay.js';

export type ClusterFaultKind = 'kill' | 'cut' | 'drop' | 'stall' | 'delay' | 'move' | 'decommission';

export interface ClusterTrialOptions {
  /** Seeds the choices (fault, victim, times, request kinds, partitions, batch sizes); printed so a trial can be
   *  rerun with the same choices (not the same timing). */
  seed?: number;
  /** Producers per node; by index mod 4: single round-robin, single pinned, batch round-robin, batch pinned. */
  producersPerNode?: number;
  consumersPerNode?: number;
  partitions?: number;
  /** Faults a trial picks from (default kill, cut and drop). */
  faults?: ClusterFaultKind[];
  /** Producers stop once this many ids were sent in all (bounds the read-back, one replay request a record). */
  idsMax?: number;
  /** Bound on the settle and read-back after the load (a 202 may reach its owner only after a restart). */
  settleTimeoutMs?: number;
  /** Copy the data dirs somewhere kept when the trial fails (the cluster's own are always removed). */
  keepDataOnFailure?: boolean;
  log?: (line: string) => void;
}

export interface ClusterFault {
  kind: ClusterFaultKind;
  node: number;
  /** From the start of the load to the fault. */
  atMs: number;
  /** Kill: until the restart began; cut, drop, stall, delay: until the heal. */
  forMs: number;
  /** The load's run after the restart or the heal. */
  afterMs: number;
  delayMs?: number;
  /** move: the partition moved (to the node after its owner); move and decommission: kill -9 this node (the move's
   *  source or destination, the draining node) forMs after the start and restart it. */
  partition?: number;
  killNode?: number;
  /** How long the killed node stays down. */
  killForMs?: number;
}

/** What the load counted, kept while it runs and reported with the trial. */
export interface LoadCounters {
  requestsAcked: number;
  requestsNotAcked: number;
  /** Answers other than 202 to produces, by "node:status" (0: no answer). */
  produceStatuses: Record<string, number>;
  consumed: number;
  ackedByConsumers: number;
  /** Answers to consumes and acks other than 200, 204, by "kind:status". */
  consumeStatuses: Record<string, number>;
}

export interface ClusterTrialResult extends LoadCounters, ReadBackVerdict {
  seed: number;
  fault?: ClusterFault;
  ackedIds: number;
  unackedIds: number;
  settleMs: number;
  /** Every node's svc_ingress_dispatch_backlog_records was 0 at the end (undefined: not read). */
  backlogDrained?: boolean;
  error?: string;
  nodeOutputTail?: string;
  keptData?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const consumerHeaders = { 'x-svc-client': 'cluster-crash-loop' };

export function randomClusterSeed(): number {
  return (Date.now() ^ (process.pid << 16) ^ Math.floor(Math.random() * 0x7fffffff)) >>> 0;
}

interface LoadState extends LoadCounters {
  stopping: boolean;
  idsMax: number;
  acked: Set<string>;
  sent: Set<string>;
}

function count(tally: Record<string, number>, key: string): void {
  tally[key] = (tally[key] ?? 0) + 1;
}

/** One produce request of the producer's kind; the ids it carried and its status (0 when no answer). */
async function produceOnce(client: Client, topic: string, kind: number, random: Prng, partitions: number, ids: string[]): Promise<number> {
  const pad = 'x'.repeat(random.int(0, 100));
  const pinned = kind === 1 || kind === 3;
  try {
    if (kind < 2) {
      const query = pinned ? `?partition=${random.int(0, partitions - 1)}` : '';
      return (await client.postJson(`${topicPath(topic)}/produce${query}`, JSON.stringify({ id: ids[0], pad }))).status;
    }
    // A pinned batch mixes pinned messages with messages left to round-robin.
    const messages = ids.map((id) => (pinned && random.chance(0.7) ? { partition: random.int(0, partitions - 1), payload: { id, pad } } : { payload: { id, pad } }));
    return (await client.postJson(`${topicPath(topic)}/produce/batch`, JSON.stringify({ messages }))).status;
  } catch {
    return 0;
  }
}

async function producerLoop(node: number, client: Client, topic: string, index: number, state: LoadState, random: Prng,
  partitions: number, tag: string): Promise<void> {
  const kind = index % 4;
  let seq = 0;
  for (let request = 0; request < 1_000_000 && !state.stopping && state.sent.size < state.idsMax; request++) {
    const size = kind < 2 ? 1 : random.int(1, 10);
    const ids = Array.from({ length: size }, () => `${tag}-${node}.${index}-${seq++}`);
    for (const id of ids) state.sent.add(id);
    const status = await produceOnce(client, topic, kind, random, partitions, ids);
    if (status === 202) {
      for (const id of ids) state.acked.add(id);
      state.requestsAcked++;
      // Paced so that the load spans the fault rather than using up idsMax before it.
      await sleep(random.int(0, 20));
      continue;
    }
    state.requestsNotAcked++;
    count(state.produceStatuses, `${node}:${status}`);
    await sleep(25);
  }
}

/** Consumes without a partition through `node`, acks each batch through `acker`. */
async function consumerLoop(node: number, client: Client, acker: Client, topic: string, state: LoadState): Promise<void> {
  for (let round = 0; round < 100_000 && !state.stopping; round++) {
    let status = 0;
    let text = '';
    try {
      ({ status, text } = await client.req(`${topicPath(topic)}/consume?max=10&wait=1s`, { headers: consumerHeaders, timeoutMs: 15_000 }));
    } catch {
      status = 0;
    }
    if (status !== 200) {
      if (status !== 204) {
        count(state.consumeStatuses, `consume@${node}:${status}`);
        await sleep(50);
      }
      continue;
    }
    const handles = (JSON.parse(text) as { messages: { receipt_handle: string }[] }).messages.map((m) => m.receipt_handle);
    state.consumed += handles.length;
    try {
      const answer = await acker.req(`${topicPath(topic)}/ack`, {
        method: 'POST', headers: { ...consumerHeaders, 'content-type': 'application/json' }, body: JSON.stringify({ receipt_handles: handles }), timeoutMs: 15_000,
      });
      if (answer.status === 200) {
        const results = (JSON.parse(answer.text) as { results: { status: number }[] }).results;
        state.ackedByConsumers += results.filter((r) => r.status === 204).length;
      } else {
        count(state.consumeStatuses, `ack:${answer.status}`);
      }
    } catch {
      count(state.consumeStatuses, 'ack:0');
    }
  }
}

/** Sum of svc_ingress_dispatch_backlog_records over the nodes; undefined when one does not answer. */
async function clusterBacklog(clients: Client[]): Promise<number | undefined> {
  let sum = 0;
  for (const client of clients) {
    try {
      const answer = await client.req('/metrics', { timeoutMs: 3_000 });
      if (answer.status !== 200) return undefined;
      for (const line of answer.text.split('\n')) {
        if (!line.startsWith('svc_ingress_dispatch_backlog_records')) continue;
        const value = Number(line.trim().split(/\s+/).pop());
        if (Number.isFinite(value)) sum += value;
      }
    } catch {
      return undefined;
    }
  }
  return sum;
}

/** Reads what is new in one partition through client, up to the first 204 or refusal; false on a refusal. */
async function readMore(client: Client, topic: string, partition: number, records: ReplayedMessage[]): Promise<boolean> {
  const window = 32;
  for (let round = 0; round < 100_000; round++) {
    const from = records.length;
    const answers = await Promise.all(Array.from({ length: window }, (_, i) => replayAt(client, topic, partition, from + i).catch(() => undefined)));
    for (const answer of answers) {
      if (answer?.status === 204) return true;
      if (answer?.status !== 200 || answer.message === undefined) return false;
      if (answer.message.offset !== records.length) throw new Error(`replay ${partition}@${records.length} answered offset ${answer.message.offset}`);
      records.push(answer.message);
    }
  }
  return true;
}

/**
 * Reads every partition by replay, through the nodes in turn, until every acknowledged id is found, no new record
 * came for a second, every node's ingress backlog is empty, and one more whole pass found nothing new (a late
 * re-sent hand-off would show as a duplicate); or until the timeout.
 */
async function settleAndRead(clients: Client[], topic: string, partitions: number, acked: Set<string>, timeoutMs: number):
  Promise<{ byPartition: ReplayedMessage[][]; drained: boolean | undefined }> {
  const deadline = Date.now() + timeoutMs;
  const byPartition: ReplayedMessage[][] = Array.from({ length: partitions }, () => []);
  const seen = new Set<string>();
  let lastNewAt = Date.now();
  let drained: boolean | undefined;
  let confirmed = false;
  for (let round = 0; round < 100_000; round++) {
    let fresh = 0;
    let refused = false;
    await Promise.all(byPartition.map(async (records, partition) => {
      const before = records.length;
      const whole = await readMore(clients[(round + partition) % clients.length]!, topic, partition, records);
      if (!whole) refused = true;
      for (const record of records.slice(before)) seen.add(idOf(record) ?? '');
      fresh += records.length - before;
    }));
    if (fresh > 0 || refused) {
      lastNewAt = Date.now();
      confirmed = false;
    }
    const allFound = [...acked].every((id) => seen.has(id));
    if (allFound && Date.now() - lastNewAt >= 1_000) {
      if (confirmed) return { byPartition, drained };
      const backlog = await clusterBacklog(clients);
      drained = backlog === undefined ? undefined : backlog === 0;
      confirmed = backlog === 0;
    }
    if (Date.now() >= deadline) return { byPartition, drained };
    await sleep(allFound ? 200 : 100);
  }
  return { byPartition, drained };
}

/** Picks the fault and its times from the trial's PRNG. */
function planFault(random: Prng, kinds: ClusterFaultKind[], nodes: number, partitions: number): ClusterFault {
  const kind = random.pick(kinds);
  const fault: ClusterFault = {
    kind,
    node: random.int(1, nodes),
    atMs: random.int(500, 2_500),
    forMs: kind === 'kill' ? random.int(100, 2_000) : random.int(1_000, 5_000),
    afterMs: random.int(500, 2_000),
  };
  if (kind === 'delay') fault.delayMs = random.int(20, 300);
  if (kind === 'move') fault.partition = random.int(0, partitions - 1);
  // Issue 41: half of the moves and decommissions see a kill -9 of a node they need, the source, the destination or
  // the draining node.
  if ((kind === 'move' || kind === 'decommission') && random.chance(0.5)) {
    fault.killNode = random.int(1, nodes);
    fault.killForMs = random.int(100, 1_500);
  }
  return fault;
}

/** Runs the fault on the cluster: kill and restart, or a link fault and its heal. */
async function runFault(cluster: TestCluster, fault: ClusterFault, topic: string, log: (line: string) => void): Promise<void> {
  const links = cluster.links!;
  log(`fault: ${fault.kind} node ${fault.node} for ${fault.forMs} ms`);
  if (fault.kind === 'move' || fault.kind === 'decommission') return reshape(cluster, fault, topic, log);
  if (fault.kind === 'kill') {
    await cluster.kill(fault.node);
    await sleep(fault.forMs);
    await cluster.start(fault.node);
    return;
  }
  if (fault.kind === 'cut') links.cut(fault.node);
  else if (fault.kind === 'drop') links.drop(fault.node);
  else if (fault.kind === 'stall') links.stall(fault.node);
  else links.delay(fault.node, fault.delayMs ?? 100);
  await sleep(fault.forMs);
  links.heal(fault.node);
}

/** Issue 41: a partition move or a decommission under the load, maybe with a kill -9 of a node it needs. A
 *  decommission is cancelled at the end, so the next steps find every node serving. */
async function reshape(cluster: TestCluster, fault: ClusterFault, topic: string, log: (line: string) => void): Promise<void> {
  const via = cluster.client(fault.node);
  if (fault.kind === 'move') {
    const owners = await cluster.ownersOf(fault.node, topic);
    const source = owners[fault.partition!]!;
    const destination = (source % cluster.specs.size) + 1;
    const res = await via.post('/v1/cluster/moves', { topic, partition: fault.partition, destination: String(destination) }, { timeoutMs: 10_000 });
    log(`move of partition ${fault.partition} from ${source} to ${destination}: ${res.status}`);
  } else {
    const res = await via.post(`/v1/cluster/members/${fault.node}/decommission`, {}, { timeoutMs: 10_000 });
    log(`decommission of node ${fault.node}: ${res.status} ${res.text.slice(0, 200)}`);
  }
  await sleep(fault.forMs);
  if (fault.killNode !== undefined) {
    log(`kill -9 node ${fault.killNode} in the middle`);
    await cluster.kill(fault.killNode);
    await sleep(fault.killForMs ?? 500);
    await cluster.start(fault.killNode);
  }
}

/** Waits (bounded) until no move runs, then cancels a decommission the trial started (it may have finished). */
async function reshapeSettled(cluster: TestCluster, fault: ClusterFault, timeoutMs: number): Promise<void> {
  if (fault.kind !== 'move' && fault.kind !== 'decommission') return;
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const answer = await cluster.client(cluster.running()[0]!).get('/v1/cluster/moves').catch(() => undefined);
    if (answer?.status === 200 && (answer.json() as { moves: unknown[] }).moves.length === 0) break;
    await sleep(250);
  }
  if (fault.kind === 'decommission') await cluster.client(cluster.running()[0]!).post(`/v1/cluster/members/${fault.node}/decommission/cancel`, {}).catch(() => undefined);
}

/** Teardown functions TestCluster registers, run in reverse at the end of the trial. */
class TrialTeardown {
  private readonly steps: (() => unknown)[] = [];
  teardown(fn: () => unknown): void {
    this.steps.push(fn);
  }
  async run(): Promise<void> {
    for (const step of this.steps.reverse()) await Promise.resolve(step()).catch(() => {});
  }
}

async function startTrialCluster(teardown: TrialTeardown, nodes: number, topic: string, partitions: number): Promise<TestCluster> {
  const cluster = await TestCluster.create(teardown, nodes, [], { linkProxy: true });
  await cluster.startAll();
  const leader = await cluster.agreedLeader(20_000);
  if (leader === undefined) throw new Error('no leader within 20 s');
  if (!(await cluster.allReady(20_000))) throw new Error('not every node ready within 20 s');
  if (!(await cluster.membersAlive(leader, 20_000))) throw new Error('not every member alive within 20 s');
  const created = await cluster.postUntilCreated(leader, '/v1/topics', () => ({ name: topic, partitions }), 20_000);
  if (created?.status !== 201) throw new Error(`create topic: ${created?.status} ${created?.text}`);
  if (!(await cluster.visibleOnAll(`/v1/topics/${topic}`, 10_000))) throw new Error('topic not visible on every node');
  return cluster;
}

/** Runs one cluster crash trial; never throws: failures are in the result (ok false, error or missing/duplicates). */
export async function runClusterCrashTrial(options: ClusterTrialOptions = {}): Promise<ClusterTrialResult> {
  const seed = options.seed ?? randomClusterSeed();
  const random = new Prng(seed);
  const nodes = 3;
  const partitions = options.partitions ?? 6;
  const log = options.log ?? (() => {});
  const tag = `c${seed.toString(36)}`;
  const topic = `ccrash-${tag}`;
  const fault = planFault(random, options.faults ?? ['kill', 'cut', 'drop'], nodes, partitions);
  const state: LoadState = {
    stopping: false, idsMax: options.idsMax ?? 20_000, acked: new Set(), sent: new Set(), requestsAcked: 0, requestsNotAcked: 0,
    produceStatuses: {}, consumed: 0, ackedByConsumers: 0, consumeStatuses: {},
  };
  const result: ClusterTrialResult = {
    seed, ok: false, fault, ackedIds: 0, unackedIds: 0, requestsAcked: 0, requestsNotAcked: 0, produceStatuses: {}, consumed: 0,
    ackedByConsumers: 0, consumeStatuses: {}, recordsRead: 0, unackedPresent: 0, missing: [], duplicates: [], partitionCopies: 0, unknown: [], settleMs: 0,
  };
  const teardown = new TrialTeardown();
  const clients: Client[] = [];
  let cluster: TestCluster | undefined;
  try {
    cluster = await startTrialCluster(teardown, nodes, topic, partitions);
    const producers = options.producersPerNode ?? 4;
    const consumers = options.consumersPerNode ?? 1;
    for (let id = 1; id <= nodes; id++) clients.push(new Client(`http://127.0.0.1:${cluster.specs.get(id)!.apiPort}`, cluster.auth, producers + consumers + 40));
    log(`seed ${seed}: ${JSON.stringify(fault)}`);
    const loops: Promise<void>[] = [];
    for (let id = 1; id <= nodes; id++) {
      for (let i = 0; i < producers; i++) loops.push(producerLoop(id, clients[id - 1]!, topic, i, state, new Prng(seed + id * 1000 + i), partitions, tag));
      for (let i = 0; i < consumers; i++) loops.push(consumerLoop(id, clients[id - 1]!, clients[id % nodes]!, topic, state));
    }
    await sleep(fault.atMs);
    await runFault(cluster, fault, topic, log);
    await sleep(fault.afterMs);
    state.stopping = true;
    await Promise.all(loops);
    if (!(await cluster.allReady(30_000))) throw new Error('not every node ready 30 s after the fault');
    await reshapeSettled(cluster, fault, options.settleTimeoutMs ?? 60_000);
    const settledAt = Date.now();
    const { byPartition, drained } = await settleAndRead(clients, topic, partitions, state.acked, options.settleTimeoutMs ?? 60_000);
    result.settleMs = Date.now() - settledAt;
    result.backlogDrained = drained;
    tally(result, state, byPartition);
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error);
  } finally {
    state.stopping = true;
    copyCounters(result, state);
    if (!result.ok && cluster !== undefined) {
      result.nodeOutputTail = [...cluster.specs.keys()].map((id) => `--- node ${id} ---\n${cluster!.output(id).split('\n').slice(-40).join('\n')}`).join('\n');
      if (options.keepDataOnFailure ?? true) result.keptData = await keepData(cluster, seed).catch(() => undefined);
    }
    for (const client of clients) await client.close().catch(() => {});
    await teardown.run();
  }
  return result;
}

/** Counts each id over every partition and judges the trial. */
function tally(result: ClusterTrialResult, state: LoadState, byPartition: ReplayedMessage[][]): void {
  // Spec 1.6: a record rerouted around an owner that had stored it may be in two partitions; never twice in one.
  Object.assign(result, readBackVerdict(byPartition, state.sent, state.acked, true));
  if (state.acked.size === 0) result.error = 'no produce was acknowledged';
}

function copyCounters(result: ClusterTrialResult, state: LoadState): void {
  const { stopping: _stopping, idsMax: _idsMax, acked, sent, ...counters } = state;
  Object.assign(result, counters, { ackedIds: acked.size, unackedIds: sent.size - acked.size });
}

/** Copies every node's data dir (the cluster's teardown removes them) and the node logs; returns where. */
async function keepData(cluster: TestCluster, seed: number): Promise<string> {
  const kept = await mkdtemp(join(tmpdir(), `svc-cluster-crash-${seed}-`));
  for (const [id, spec] of cluster.specs) await cp(spec.dataDir, join(kept, `node-${id}`), { recursive: true });
  return kept;
}

/** One line per trial for logs. */
export function describeClusterTrial(index: number, result: ClusterTrialResult): string {
  const f = result.fault;
  const faultText = f === undefined ? 'no fault' : `${f.kind} node ${f.node} at ${f.atMs} ms for ${f.forMs} ms${f.delayMs !== undefined ? ` (${f.delayMs} ms)` : ''}` +
    `${f.partition !== undefined ? ` partition ${f.partition}` : ''}${f.killNode !== undefined ? `, kill -9 node ${f.killNode}` : ''}`;
  const head = `trial ${index} seed ${result.seed} ${result.ok ? 'ok' : 'FAIL'}: ${faultText}; acked ${result.ackedIds} ids in ` +
    `${result.requestsAcked} requests, not acked ${result.unackedIds} ids in ${result.requestsNotAcked} requests ` +
    `(${result.unackedPresent} present); ${result.partitionCopies} rerouted copies; consumed ${result.consumed}, acked ${result.ackedByConsumers}; read ${result.recordsRead} ` +
    `records, settled in ${result.settleMs} ms`;
  const notes: string[] = [];
  if (Object.keys(result.produceStatuses).length > 0) notes.push(`produce refusals ${JSON.stringify(result.produceStatuses)}`);
  if (Object.keys(result.consumeStatuses).length > 0) notes.push(`consume/ack refusals ${JSON.stringify(result.consumeStatuses)}`);
  if (result.backlogDrained === false) notes.push('ingress backlog not drained');
  if (result.missing.length > 0) notes.push(`MISSING ${result.missing.length}: ${result.missing.slice(0, 10).join(', ')}`);
  if (result.duplicates.length > 0) notes.push(`DUPLICATES ${result.duplicates.length}: ${result.duplicates.slice(0, 10).join(', ')}`);
  if (result.unknown.length > 0) notes.push(`UNKNOWN ${result.unknown.length}: ${result.unknown.slice(0, 10).join(', ')}`);
  if (result.error !== undefined) notes.push(`error: ${result.error}`);
  if (result.keptData !== undefined) notes.push(`data kept in ${result.keptData}`);
  return notes.length === 0 ? head : `${head}; ${notes.join('; ')}`;
}
