// The crash scenario behind test/http/crash.test.ts and scripts/crash_loop.ts, the durability proof of spec 1.2
// (a 202 means the message is synced to the answering node's ingress log, so it survives a crash) and of at-most-
// once storage of each produce request. One trial: start a node, create a topic, run concurrent producers (half
// single produce, half batch produce of 1-20 messages, each message with a unique id in its JSON payload), SIGKILL
// the node at a random moment, restart it on the same data dir, read every partition back by replay, and count
// each id. Every id answered 202 must be present exactly once; an id never answered 202 may be absent, but no id
// may appear twice and no unknown id may appear. Imports nothing from src/.
import { startNode, removeDataDir, type StartedNode } from './node.js';
import { readBackVerdict } from './read_back_verdict.js';
import { Client, createTopic, readPartition, topicPath, type ReplayedMessage } from './replay.js';

export interface CrashTrialOptions {
  /** Seeds the PRNG that picks the run time, request kinds and batch sizes; printed so a trial can be rerun. */
  seed?: number;
  /** Concurrent producers; even-numbered ones send single produces, odd-numbered ones batches. */
  producers?: number;
  partitions?: number;
  runMsMin?: number;
  runMsMax?: number;
  batchSizeMax?: number;
  /** Producers stop issuing requests once this many ids were sent (bounds the read-back time); default no bound. */
  idsMax?: number;
  /** Bound on the read-back after the restart (the node hands its ingress log to the partitions after start). */
  readBackTimeoutMs?: number;
  /** Keep the data dir when the trial fails, for inspection (it is always removed on success). */
  keepDataOnFailure?: boolean;
  log?: (line: string) => void;
}

export interface CrashTrialResult {
  seed: number;
  ok: boolean;
  runMs: number;
  /** Ids whose request was answered 202. */
  ackedIds: number;
  /** Ids sent in requests that got no 202 (error status, connection error or cut by the kill). */
  unackedIds: number;
  requestsAcked: number;
  requestsNotAcked: number;
  /** Non-202 statuses seen before the kill, by status (an unexpected refusal shows here). */
  statusesBeforeKill: Record<string, number>;
  recordsRead: number;
  unackedPresent: number;
  missing: string[];
  duplicates: string[];
  unknown: string[];
  readBackMs: number;
  restartMs: number;
  dataDir: string;
  /** Set when the trial could not run to the end (node failed to start, read-back error, ...). */
  error?: string;
  nodeOutputTail?: string;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** mulberry32: a small seeded PRNG, so a seed reproduces the trial's choices (not the node's timing). */
function prng(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomSeed(): number {
  return (Date.now() ^ (process.pid << 16) ^ Math.floor(Math.random() * 0x7fffffff)) >>> 0;
}

interface ProducerState {
  stopping: boolean;
  idsMax: number;
  killed: boolean;
  acked: Set<string>;
  sent: Set<string>;
  requestsAcked: number;
  requestsNotAcked: number;
  statusesBeforeKill: Record<string, number>;
}

/** One producer loop: issues requests until `stopping`; bounded by count as well. */
async function producerLoop(client: Client, topic: string, index: number, state: ProducerState, random: () => number,
  batchSizeMax: number, tag: string): Promise<void> {
  const batchMode = index % 2 === 1;
  let seq = 0;
  for (let request = 0; request < 1_000_000 && !state.stopping && state.sent.size < state.idsMax; request++) {
    const count = batchMode ? 1 + Math.floor(random() * batchSizeMax) : 1;
    const ids: string[] = [];
    for (let i = 0; i < count; i++) ids.push(`${tag}-${index}-${seq++}`);
    for (const id of ids) state.sent.add(id);
    const pad = 'x'.repeat(Math.floor(random() * 200));
    let status = 0;
    try {
      const answer = batchMode
        ? await client.postJson(`${topicPath(topic)}/produce/batch`,
          JSON.stringify({ messages: ids.map((id) => ({ payload: { id, pad } })) }))
        : await client.postJson(`${topicPath(topic)}/produce`, JSON.stringify({ id: ids[0], pad }));
      status = answer.status;
    } catch {
      status = 0; // connection error: not acknowledged
    }
    if (status === 202) {
      for (const id of ids) state.acked.add(id);
      state.requestsAcked++;
      continue;
    }
    state.requestsNotAcked++;
    if (!state.killed) {
      const key = String(status);
      state.statusesBeforeKill[key] = (state.statusesBeforeKill[key] ?? 0) + 1;
      await sleep(5); // a refusal before the kill: do not spin
    }
  }
}

/** Sum of the svc_ingress_dispatch_backlog_records series, or undefined when the node does not export it. */
async function ingressBacklog(client: Client): Promise<number | undefined> {
  try {
    const answer = await client.req('/metrics');
    if (answer.status !== 200) return undefined;
    let found = false;
    let sum = 0;
    for (const line of answer.text.split('\n')) {
      if (!line.startsWith('svc_ingress_dispatch_backlog_records')) continue;
      const value = Number(line.trim().split(/\s+/).pop());
      if (Number.isFinite(value)) {
        found = true;
        sum += value;
      }
    }
    return found ? sum : undefined;
  } catch {
    return undefined;
  }
}

async function waitReady(client: Client, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 10_000 && Date.now() < deadline; attempt++) {
    try {
      if ((await client.req('/readyz', { noAuth: true })).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(50);
  }
  throw new Error(`node not ready within ${timeoutMs} ms`);
}

/**
 * Reads every partition by replay until every acknowledged id is found, then keeps reading until the read-back is
 * stable (no new record for 500 ms and, when exported, an empty ingress backlog), or until the timeout.
 */
async function readBack(client: Client, topic: string, partitions: number, acked: Set<string>, timeoutMs: number):
  Promise<ReplayedMessage[][]> {
  const deadline = Date.now() + timeoutMs;
  const byPartition: ReplayedMessage[][] = Array.from({ length: partitions }, () => []);
  const seen = new Set<string>();
  let lastNewAt = Date.now();
  let drained = false;
  for (let round = 0; round < 100_000; round++) {
    let fresh = 0;
    await Promise.all(byPartition.map(async (records, partition) => {
      const more = await readPartition(client, topic, partition, records.length, { window: 64, retryMs: timeoutMs });
      for (const record of more) {
        records.push(record);
        const id = (record.payload as { id?: unknown } | null)?.id;
        if (typeof id === 'string') seen.add(id);
      }
      fresh += more.length;
    }));
    if (fresh > 0) lastNewAt = Date.now();
    let allFound = true;
    for (const id of acked) {
      if (!seen.has(id)) {
        allFound = false;
        break;
      }
    }
    if (fresh > 0) drained = false;
    if (allFound && Date.now() - lastNewAt >= 500) {
      // Return only after one more empty pass that started after the backlog was seen drained, so a late
      // (duplicate) hand-off is counted too.
      if (drained) return byPartition;
      const backlog = await ingressBacklog(client);
      drained = backlog === undefined || backlog === 0;
    }
    if (Date.now() >= deadline) return byPartition;
    await sleep(allFound ? 100 : 50);
  }
  return byPartition;
}

/** Runs one crash trial; never throws: failures are in the result (ok false, error or missing/duplicates). */
export async function runCrashTrial(options: CrashTrialOptions = {}): Promise<CrashTrialResult> {
  const seed = options.seed ?? randomSeed();
  const random = prng(seed);
  const producers = options.producers ?? 32;
  const partitions = options.partitions ?? 6;
  const runMsMin = options.runMsMin ?? 300;
  const runMsMax = options.runMsMax ?? 1500;
  const runMs = runMsMin + Math.floor(random() * (runMsMax - runMsMin + 1));
  const log = options.log ?? (() => {});
  const tag = `s${seed.toString(36)}`;
  const state: ProducerState = {
    stopping: false, idsMax: options.idsMax ?? Number.POSITIVE_INFINITY, killed: false, acked: new Set(), sent: new Set(), requestsAcked: 0, requestsNotAcked: 0,
    statusesBeforeKill: {},
  };
  const result: CrashTrialResult = {
    seed, ok: false, runMs, ackedIds: 0, unackedIds: 0, requestsAcked: 0, requestsNotAcked: 0, statusesBeforeKill: {},
    recordsRead: 0, unackedPresent: 0, missing: [], duplicates: [], unknown: [], readBackMs: 0, restartMs: 0, dataDir: '',
  };
  let first: StartedNode | undefined;
  let second: StartedNode | undefined;
  let firstClient: Client | undefined;
  let secondClient: Client | undefined;
  try {
    first = await startNode();
    result.dataDir = first.dataDir;
    firstClient = new Client(first.url, first.auth, producers);
    const topic = `crash-${tag}`;
    await createTopic(firstClient, topic, partitions);
    log(`seed ${seed}: producing for ${runMs} ms with ${producers} producers`);
    const loops = Array.from({ length: producers }, (_, i) =>
      producerLoop(firstClient!, topic, i, state, prng(seed + 1 + i), options.batchSizeMax ?? 20, tag));
    await sleep(runMs);
    state.stopping = true; // no new request from here on
    state.killed = true;
    await first.kill();
    await Promise.all(loops);
    await firstClient.close();
    firstClient = undefined;

    const restartAt = Date.now();
    second = await startNode({ dataDir: result.dataDir });
    secondClient = new Client(second.url, second.auth, 64);
    await waitReady(secondClient, 20_000);
    result.restartMs = Date.now() - restartAt;

    const readAt = Date.now();
    const byPartition = await readBack(secondClient, topic, partitions, state.acked, options.readBackTimeoutMs ?? 20_000);
    result.readBackMs = Date.now() - readAt;

    Object.assign(result, readBackVerdict(byPartition, state.sent, state.acked));
    if (state.acked.size === 0) result.error = 'no request was acknowledged before the kill';
  } catch (error) {
    result.error = error instanceof Error ? error.message : String(error);
  } finally {
    state.stopping = true;
    result.ackedIds = state.acked.size;
    result.unackedIds = state.sent.size - state.acked.size;
    result.requestsAcked = state.requestsAcked;
    result.requestsNotAcked = state.requestsNotAcked;
    result.statusesBeforeKill = state.statusesBeforeKill;
    if (!result.ok) result.nodeOutputTail = ((first?.output() ?? '') + '\n--- after restart ---\n' + (second?.output() ?? '')).slice(-4000);
    await firstClient?.close().catch(() => {});
    await secondClient?.close().catch(() => {});
    await first?.kill().catch(() => {});
    await second?.kill().catch(() => {});
    if (result.dataDir !== '' && (result.ok || !(options.keepDataOnFailure ?? true))) await removeDataDir(result.dataDir);
  }
  return result;
}

/** One line per trial for logs. */
export function describeTrial(index: number, result: CrashTrialResult): string {
  const head = `trial ${index} seed ${result.seed} ${result.ok ? 'ok' : 'FAIL'}: run ${result.runMs} ms, ` +
    `acked ${result.ackedIds} ids in ${result.requestsAcked} requests, not acked ${result.unackedIds} ids in ` +
    `${result.requestsNotAcked} requests (${result.unackedPresent} of them present), read ${result.recordsRead} ` +
    `records in ${result.readBackMs} ms, restart ${result.restartMs} ms`;
  const problems: string[] = [];
  if (Object.keys(result.statusesBeforeKill).length > 0) problems.push(`statuses before kill ${JSON.stringify(result.statusesBeforeKill)}`);
  if (result.missing.length > 0) problems.push(`MISSING ${result.missing.length}: ${result.missing.slice(0, 10).join(', ')}`);
  if (result.duplicates.length > 0) problems.push(`DUPLICATES ${result.duplicates.length}: ${result.duplicates.slice(0, 10).join(', ')}`);
  if (result.unknown.length > 0) problems.push(`UNKNOWN ${result.unknown.length}: ${result.unknown.slice(0, 10).join(', ')}`);
  if (result.error !== undefined) problems.push(`error: ${result.error}`);
  if (!result.ok && result.dataDir !== '') problems.push(`data dir ${result.dataDir}`);
  return problems.length === 0 ? head : `${head}; ${problems.join('; ')}`;
}
