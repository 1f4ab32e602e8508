// Entry and boot of one broker node (main thread = the front thread): load and check the config, lock the data dir,
// start the metadata thread and the partition workers, replay the ingress log, create the root admin on the
// first secured start, then serve HTTP. SIGTERM/SIGINT shut down gracefully; a dying thread stops the node
// (fail-stop: the restart recovers from the logs).
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import {
  ConfigError, formatHostPort, loadConfig, parseAdvertise, parseBootstrap, parseHostPort, parseListenAddress, type Config, type LoadedConfig,
} from './config.js';
import { ByteBudget } from './front/body.js';
import { PartitionWorkers } from './front/dispatch.js';
import type { NodeLifecycle } from './front/handlers/health.js';
import { IngressLog } from './front/ingress_log.js';
import { MetadataReplica } from './front/metadata_replica.js';
import { Metrics } from './front/metrics.js';
import { FrontServer, ListenRefused } from './front/server.js';
import type { FrontServices } from './front/services.js';
import type { BcryptTask } from './pool/bcrypt_task.js';
import { SchemaValidation } from './front/schema_validation.js';
import type { ClusterThreadConfig, MetadataThreadData, PartitionWorkerData, ToMetadata } from './protocol/thread_messages.js';
import { RemotePartitions } from './front/remote_partitions.js';
import { Handoff } from './front/handoff.js';
import { FanoutCopies } from './front/fanout_copies.js';
import type { PortChannel } from './transport/port_channel.js';
import { answerMemberReports, closeNodeLink, isMultiNode, NodeLinkListenFailed, startNodeLink, type NodeLink } from './node_link/node_link.js';
import { readClusterSecretFile } from './transport/cluster_secret.js';
import { readClusterTlsSettings } from './transport/cluster_tls.js';
import { DataDirLockedError, lockDataDir } from './util/data_dir_lock.js';
import { createLogger, type Logger } from './util/log.js';
import { BrokerError, refusalText } from './errors.js';
import type { ApplyResult } from './raft/metadata/state.js';
import type { MetadataCommand } from './protocol/metadata_types.js';

/** Owner-only modes for everything the node creates (docs/decisions.md "File modes"): sqlite gives its -wal and -shm
 *  files the database file's mode, and partition workers create files on their own threads, so one process-wide mask
 *  set before anything is created covers every file; a mode named below says the same again. */
const createdModeMask = 0o077;
const dataDirMode = 0o700;
const dataFileMode = 0o600;

async function main(): Promise<void> {
  process.umask(createdModeMask);
  const loaded = await configOrExit();
  if (loaded.help !== undefined) {
    process.stdout.write(loaded.help);
    return;
  }
  const config = loaded.config;
  const log = startLog(loaded);
  const { dataDir, lock, cluster, clusterTls } = await claimNode(config);
  const nodeId = cluster.nodeId;
  const uws = (await import('uWebSockets.js')).default;
  const lifecycle: NodeLifecycle = { startupDone: false, shuttingDown: false };
  // The internal listener binds before anything else starts, so a taken port ends the start at once (issue 27).
  const nodeLink = isMultiNode(cluster)
    ? await exitUnless(() => startNodeLink(cluster, config['log.level'], config['node.workers'], clusterTls?.material ?? null), (error) => error instanceof NodeLinkListenFailed, 1)
    : null;
  const { metadataThread, workerThreads } = startThreads(config, dataDir, log, lifecycle, cluster, nodeLink);
  const replica = new MetadataReplica(metadataThread);
  const workers = new PartitionWorkers(workerThreads);
  await Promise.all([replica.whenReady(), workers.whenReady()]);
  const { ingress, handoff } = await openIngress(config, dataDir, log, replica, workers, { channel: nodeLink?.dataChannel ?? null, nodeId });
  const { authPool, workPool, schemas } = startPools(config);
  const services: FrontServices = {
    config, log, nodeId, replica, workers, ingress, authPool, workPool, schemas, handoff,
    batchBudget: new ByteBudget(config['http.max_batch_body_bytes_in_flight']),
    metrics: new Metrics(replica, workers, schemas, handoff), remote: new RemotePartitions(nodeLink?.dataChannel ?? null),
  };
  if (clusterTls !== null) services.metrics.reportClusterTls(clusterTls.dates);
  workers.fanoutCopiesTo(FanoutCopies.handler(services));
  // A one-node cluster leads at once, so its root admin exists before it listens (the first screen shows how to
  // log in). A node of a larger cluster listens first: reads must answer even while no quorum exists.
  const loneNode = cluster.bootstrap.length <= 1 && cluster.join === null;
  // Partitions are placed on members only: a lone node listens once its own member record is in, so its first
  // topic create never finds no live member.
  if (loneNode) await replica.whenMember(nodeId);
  const rootAdmin = async (): Promise<string> => {
    if (!config['security.enabled']) return 'security is off: no credentials needed';
    await replica.whenCaughtUp();
    return ensureRootAdmin(services, authPool, loaded, dataDir, createsRootAdmin(cluster));
  };
  const loginHint = loneNode ? await rootAdmin() : null;

  const server = new FrontServer(uws, services, lifecycle, authPool);
  if (nodeLink !== null) answerMemberReports(nodeLink, () => server.memberReport());
  // A port another process holds ends the start here, before anything is answered (issue 27 point 2).
  const port = await exitUnless(() => server.listen(config['node.host'], config['node.port']), (error) => error instanceof ListenRefused, 1);
  lifecycle.startupDone = true;
  announceApiAddress(cluster, metadataThread, port);
  log.info({ port, host: config['node.host'], dataDir, nodeId, workers: workers.count }, 'listening');
  if (loginHint !== null) log.info(loginHint);
  else {
    rootAdmin().then(
      (hint) => log.info(hint),
      (error: unknown) => log.error({ err: error }, 'creating the root admin failed'),
    );
  }
  stopOnSignals(log, async () => {
    await server.shutdown();
    await ingress.close();
    handoff.close();
    await workers.shutdown();
    await closeMetadataThread(metadataThread);
    if (nodeLink !== null) await closeNodeLink(nodeLink);
    await Promise.all([authPool.destroy(), workPool.destroy(), schemas.close()]);
    await lock.release();
    log.info({ ingressSyncs: ingress.syncCount }, 'stopped');
  });
}

/** The data dir (locked: one process each), this node's cluster settings and id, and its TLS files when given; a
 *  problem with any ends the process (1: the dir is locked, 2: a bad id or TLS file). */
async function claimNode(config: Config) {
  const dataDir = resolve(config['node.data_dir']);
  // A directory that exists keeps its mode: an operator or a volume mount may have set it on purpose.
  await mkdir(dataDir, { recursive: true, mode: dataDirMode });
  const lock = await exitUnless(() => lockDataDir(dataDir), (error) => error instanceof DataDirLockedError, 1);
  const cluster = await exitUnless(async () => clusterThreadConfig(config, await loadNodeId(dataDir, config['cluster.node_id'])), () => true, 2);
  const clusterTls = await exitUnless(() => readClusterTlsSettings(config), () => true, 2);
  return { dataDir, lock, cluster, clusterTls };
}

/** The node's logger; its first line warns of a password given on the command line. */
function startLog(loaded: LoadedConfig): Logger {
  const log = createLogger(loaded.config['log.level']);
  if (loaded.adminPasswordSource === 'flag') {
    log.warn('--admin-password shows in ps and shell history: give the password with --admin-password-file FILE or SVC_ADMIN_PASSWORD instead');
  }
  return log;
}

/** The loaded config; a ConfigError ends the process with status 2 and its message on stderr. */
async function configOrExit(): Promise<LoadedConfig> {
  return exitUnless(() => loadConfig({ argv: process.argv.slice(2), env: process.env }), (error) => error instanceof ConfigError, 2);
}

/** run's result; an error `expected` accepts ends the process with `status` and the error's message on stderr. */
async function exitUnless<T>(run: () => Promise<T>, expected: (error: unknown) => boolean, status: number): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (!expected(error)) throw error;
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(status);
  }
}

/** Opens the ingress log, wires it to the workers and the owners it hands records to, and hands them what a crash
 *  left unstored. */
async function openIngress(config: Config, dataDir: string, log: Logger, replica: MetadataReplica, workers: PartitionWorkers,
  { channel, nodeId }: { channel: PortChannel | null; nodeId: number }): Promise<{ ingress: IngressLog; handoff: Handoff }> {
  const faults = new Set(config['test.fault_points'].split(',').map((point) => point.trim()));
  const injected = (point: string) => (faults.has(point) ? () => new Error(`fault point ${point}`) : undefined);
  const { log: ingress, replay, replayLastSeq } = await IngressLog.open({
    dir: join(dataDir, 'ingress'),
    segmentBytesMax: config['storage.ingress_segment_bytes'],
    faults: { write: injected('ingress.write'), sync: injected('ingress.sync') },
  });
  const handoff = new Handoff(channel, () => replica.appliedIndex, config['cluster.handoff_queue_bytes'], ingress);
  ingress.onSynced = (group, lastSeq) => {
    handoff.groupSynced(group, lastSeq);
    workers.dispatch(group, lastSeq, replica.appliedIndex);
  };
  workers.onAllDurable = (seqUpTo) => handoff.localDurable(seqUpTo);
  handoff.onDurable = (seqUpTo) => ingress.markDurable(seqUpTo);
  // Records answered 202 before a crash but not yet stored by their partition: the workers and other owners skip
  // what they hold.
  const otherMembers = [...replica.state.members.keys()].filter((id) => id !== nodeId);
  replay.forEach((chunk, i) => {
    handoff.replayed(chunk, (replayLastSeq[i - 1] ?? 0) + 1, replayLastSeq[i]!, otherMembers);
    workers.dispatch(chunk, replayLastSeq[i]!, replica.appliedIndex);
  });
  if (replay.length > 0) log.info({ chunks: replay.length, lastSeq: replayLastSeq[replayLastSeq.length - 1] }, 'ingress log replayed');
  return { ingress, handoff };
}

function startPools(config: Config): { authPool: Piscina; workPool: Piscina; schemas: SchemaValidation } {
  const authPool = new Piscina({
    filename: new URL('./pool/bcrypt_task.js', import.meta.url).href,
    minThreads: 1,
    maxThreads: config['auth.verify_slots'],
  });
  const workPool = new Piscina({
    filename: new URL('./pool/batch_task.js', import.meta.url).href,
    minThreads: 1,
    maxThreads: availableParallelism(),
  });
  // Schema checks of produce have a pool of their own: its slots are spec §8's bound, and a thread stuck on a
  // pattern is terminated without touching the work pool's tasks.
  const schemas = new SchemaValidation({
    slots: config['schema.validation_slots'] === 0 ? availableParallelism() : config['schema.validation_slots'],
    waitMs: config['schema.validation_wait'],
    payloadTimeMs: config['schema.validation_payload_time'],
  });
  return { authPool, workPool, schemas };
}

/** The API listener was started on port 0 with no --advertise: the metadata thread learns its address now. */
function announceApiAddress(cluster: ClusterThreadConfig, metadataThread: Worker, port: number): void {
  if (cluster.advertiseApi !== '') return;
  // clusterThreadConfig built advertiseInternal with formatHostPort: its host is the API's too when --advertise was
  // not given.
  const { host } = parseListenAddress(cluster.advertiseInternal)!;
  metadataThread.postMessage({ kind: 'apiAddress', address: formatHostPort(host, port) } satisfies ToMetadata);
}

/** SIGTERM and SIGINT run stop once, then end the process. */
function stopOnSignals(log: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = async (signal: string): Promise<void> => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    await stop();
    log.flush();
    process.exit(0);
  };
  process.on('SIGTERM', (s) => void onSignal(s));
  process.on('SIGINT', (s) => void onSignal(s));
}

function startThreads(config: Config, dataDir: string, log: Logger, lifecycle: NodeLifecycle, cluster: ClusterThreadConfig, nodeLink: NodeLink | null) {
  const workerCount = config['node.workers'];
  const channels = Array.from({ length: workerCount }, () => new MessageChannel());
  const workerThreads = channels.map((channel, workerIndex) => {
    const workerData: PartitionWorkerData = {
      nodeId: cluster.nodeId, workerIndex, workerCount, dataDir, segmentBytesMax: config['storage.segment_bytes'], metadataPort: channel.port2,
      retentionCheckIntervalMs: config['storage.retention_check_interval'], ackFlushIntervalMs: config['storage.ack_flush_interval'],
      flushIntervalMs: config['storage.partition_flush_interval'], syncIntervalMs: config['storage.partition_sync_interval'],
      logLevel: config['log.level'],
    };
    const linkPort = nodeLink?.workerLinkPorts[workerIndex];
    if (linkPort !== undefined) workerData.linkPort = linkPort;
    const transferList = linkPort === undefined ? [channel.port2] : [channel.port2, linkPort];
    return new Worker(new URL('../workers/partition_worker.js', import.meta.url), { workerData, transferList });
  });
  const metadataData: MetadataThreadData = { dataDir, workerPorts: channels.map((c) => c.port1), cluster, logLevel: config['log.level'] };
  if (nodeLink !== null) metadataData.transportPort = nodeLink.metadataPort;
  const metadataThread = new Worker(new URL('./raft/shell/raft_thread.js', import.meta.url), {
    workerData: metadataData,
    transferList: [...channels.map((c) => c.port1), ...(nodeLink === null ? [] : [nodeLink.metadataPort])],
  });
  const threads: (readonly [string, Worker])[] = [['metadata', metadataThread], ...workerThreads.map((w, i) => [`partition worker ${i}`, w] as const)];
  if (nodeLink !== null) threads.push(['node-link', nodeLink.thread]);
  for (const [name, thread] of threads) {
    thread.on('error', (error) => log.fatal({ err: error, thread: name }, 'thread failed'));
    thread.on('exit', (code) => {
      if (lifecycle.shuttingDown && code === 0) return;
      log.fatal({ thread: name, code }, 'thread exited: stopping the node (restart recovers from the logs)');
      log.flush();
      process.exit(1);
    });
  }
  return { metadataThread, workerThreads };
}

function closeMetadataThread(thread: Worker): Promise<void> {
  return new Promise((resolveClosed) => {
    thread.on('message', (message: { kind: string }) => {
      if (message.kind === 'closed') resolveClosed();
    });
    thread.once('exit', () => resolveClosed());
    thread.postMessage({ kind: 'shutdown' } satisfies ToMetadata);
  });
}

/** This node's cluster id, kept in the data dir: the data belongs to that node, so another id later is refused. */
async function loadNodeId(dataDir: string, configured: number): Promise<number> {
  const path = join(dataDir, 'node-id');
  const existing = (await readFile(path, 'utf8').catch(() => '')).trim();
  if (existing !== '') {
    const stored = /^\d{1,5}$/.test(existing) ? Number(existing) : NaN;
    if (!(stored >= 1 && stored <= 65535)) throw new Error(`config: ${path} holds "${existing}", not a node id; this data dir was written by an older build or another program`);
    if (configured !== 0 && configured !== stored) throw new Error(`config: cluster.node_id is ${configured} but ${dataDir} belongs to node ${stored}`);
    return stored;
  }
  const id = configured === 0 ? 1 : configured;
  await writeFile(path, `${id}\n`, { mode: dataFileMode });
  return id;
}

/** Resolves the cluster settings into what the metadata thread needs. */
async function clusterThreadConfig(config: Config, nodeId: number): Promise<ClusterThreadConfig> {
  const wildcard = (host: string): boolean => host === '' || host === '0.0.0.0' || host === '::';
  const host = wildcard(config['node.host']) ? '127.0.0.1' : config['node.host'];
  const advertised = config['cluster.advertise'] === '' ? null : parseAdvertise(config['cluster.advertise']);
  const internalPort = config['cluster.internal_port'];
  const listen = { host: config['node.host'], port: internalPort };
  // Port 0 is known only once the listener is bound: the front reports it then ('apiAddress').
  const advertiseApi = advertised !== null ? formatHostPort(advertised.api.host, advertised.api.port) : config['node.port'] === 0 ? '' : formatHostPort(host, config['node.port']);
  const advertiseInternal = advertised?.internal === undefined ? formatHostPort(advertised?.api.host ?? host, internalPort) : formatHostPort(advertised.internal.host, advertised.internal.port);
  const bootstrapMap = config['cluster.bootstrap'] === '' ? null : parseBootstrap(config['cluster.bootstrap']);
  const bootstrap: [number, { host: string; port: number }][] = bootstrapMap === null ? [[nodeId, { host, port: internalPort }]] : [...bootstrapMap];
  const join = config['cluster.join'] === '' ? null : parseHostPort(config['cluster.join']);
  const secret = config['cluster.secret_file'] === '' ? new Uint8Array(0) : await readClusterSecretFile(config['cluster.secret_file']);
  return {
    nodeId, bootstrap, join, listen, advertiseApi, advertiseInternal, secret,
    tickMs: config['cluster.tick_interval'],
    electionTicks: config['cluster.election_ticks'],
    deadAfterMs: config['cluster.member_dead_after'],
    snapshotEntries: config['cluster.snapshot_entries'],
  };
}

/** A new cluster's first minutes may see a leadership change or no leader (503: nothing applied); without its root
 *  admin nobody could log in, so the create is proposed again, the same user each time, until a root exists or a
 *  refusal other than 503 comes (at most a minute). */
async function proposeRetried(services: FrontServices, command: Extract<MetadataCommand, { type: 'user.create' }>): Promise<ApplyResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await services.replica.propose(command);
    } catch (error) {
      if (!(error instanceof BrokerError) || error.status !== 503 || attempt >= rootAdminAttempts) throw error;
      services.log.warn({ err: error, attempt }, 'creating the root admin: retrying');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const root = [...services.replica.state.users.values()].find((u) => u.root);
      if (root !== undefined) return { ok: true };
    }
  }
}

const rootAdminAttempts = 60;

/** The root admin of a secured cluster is created once, by the lowest founding id; joining nodes never do. */
function createsRootAdmin(cluster: ClusterThreadConfig): boolean {
  if (cluster.join !== null) return false;
  return Math.min(...cluster.bootstrap.map(([id]) => id)) === cluster.nodeId;
}

/** Spec §5: the root admin `admin` is created at the first start of a secured node. Returns the login hint. */
async function ensureRootAdmin(services: FrontServices, authPool: Piscina, loaded: LoadedConfig, dataDir: string, creates: boolean): Promise<string> {
  const passwordFile = join(dataDir, 'admin-password');
  const root = [...services.replica.state.users.values()].find((u) => u.root);
  if (root !== undefined) {
    return `log in as ${root.username} with its password (first generated into ${passwordFile} unless one was given)`;
  }
  if (!creates) return 'log in as admin with the password the founding node with the lowest id generated (its data dir admin-password) or was given';
  const generated = loaded.adminPassword === undefined;
  const password = loaded.adminPassword ?? randomBytes(18).toString('base64url');
  if (generated) {
    // Saved before the user is committed, so a crash in between never leaves a root nobody can log in as.
    await writeFile(passwordFile, `${password}\n`, { mode: dataFileMode });
  }
  const task: BcryptTask = { op: 'hash', password, cost: services.config['auth.bcrypt_cost'] };
  const passwordHash = (await authPool.run(task)) as string;
  const nowMs = Date.now();
  const result = await proposeRetried(services, {
    type: 'user.create',
    user: { username: 'admin', passwordHash, credentialVersion: 1, grants: [{ action: 'admin' }], root: true, createdAtMs: nowMs, updatedAtMs: nowMs },
  });
  if (!result.ok) throw new Error(`creating the root admin failed: ${refusalText(result.refusal)}`);
  if (generated) {
    // On stderr: stdout carries only the JSON log lines that log shippers parse.
    process.stderr.write(`\nRoot admin created. Log in as user "admin" with password: ${password}\n(saved to ${passwordFile}, mode 0600; this is the only time it is printed)\n\n`);
    return `log in as admin with the password saved in ${passwordFile}`;
  }
  return `log in as admin with the password given by ${loaded.adminPasswordSource === 'file' ? '--admin-password-file' : loaded.adminPasswordSource === 'env' ? 'SVC_ADMIN_PASSWORD' : '--admin-password'}`;
}

main().catch((error: unknown) => {
  process.stderr.write(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
