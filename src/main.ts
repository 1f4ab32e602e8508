// Entry of one broker node: load and check the config, lock the data dir, start the threads (node link, metadata,
// partition workers, pools), then hand the main thread to the front (src/front/server/front_start.ts). SIGTERM and
// SIGINT shut down gracefully; a dying thread stops the node (fail-stop: the restart recovers from the logs).
import { mkdir } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { MessageChannel, Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { clusterThreadConfig, loadNodeId } from './cluster_settings.js';
import { ConfigError, loadConfig, type Config, type LoadedConfig } from './config.js';
import { ListenRefused } from './front/server/server.js';
import { startFront } from './front/server/front_start.js';
import type { NodeLifecycle } from './front/services.js';
import { SchemaValidation } from './front/schema_validation.js';
import { closeNodeLink, isMultiNode, NodeLinkListenFailed, startNodeLink, type NodeLink } from './node_link/node_link.js';
import type { ClusterThreadConfig, MetadataThreadData, PartitionWorkerData, ToMetadata } from './protocol/thread_messages.js';
import { readClusterTlsSettings } from './transport/cluster_tls.js';
import { DataDirLockedError, lockDataDir } from './util/data_dir_lock.js';
import { createLogger, type Logger } from './util/log.js';

/** Owner-only modes for everything the node creates (docs/decisions.md "File modes"): sqlite gives its -wal and -shm
 *  files the database file's mode, and partition workers create files on their own threads, so one process-wide mask
 *  set before anything is created covers every file; a mode named where a file is made says the same again. */
const createdModeMask = 0o077;
const dataDirMode = 0o700;

async function main(): Promise<void> {
  process.umask(createdModeMask);
  const loaded = await configOrExit();
  if (loaded.help !== undefined) {
    process.stdout.write(loaded.help);
    return;
  }
  const config = loaded.config;
  const log = createLogger(config['log.level']);
  const { dataDir, lock, cluster, clusterTls } = await claimNode(config);
  warnOfPasswordFlag(loaded, log);
  const lifecycle: NodeLifecycle = { startupDone: false, shuttingDown: false };
  // The internal listener binds before anything else starts, so a taken port ends the start at once (issue 27).
  const nodeLink = isMultiNode(cluster)
    ? await exitUnless(() => startNodeLink(cluster, config['log.level'], config['node.workers'], clusterTls?.material ?? null), (error) => error instanceof NodeLinkListenFailed, 1)
    : null;
  const { metadataThread, workerThreads } = startThreads(config, dataDir, log, lifecycle, cluster, nodeLink);
  const pools = startPools(config);
  // A port another process holds ends the start here, before anything is answered (issue 27 point 2).
  const front = await exitUnless(
    () => startFront({ loaded, log, dataDir, cluster, clusterTls, nodeLink, metadataThread, workerThreads, pools, lifecycle }),
    (error) => error instanceof ListenRefused, 1);
  stopOnSignals(log, async () => {
    const { ingressSyncs } = await front.stop();
    await closeMetadataThread(metadataThread);
    if (nodeLink !== null) await closeNodeLink(nodeLink);
    await Promise.all([pools.authPool.destroy(), pools.workPool.destroy(), pools.schemas.close()]);
    await lock.release();
    log.info({ ingressSyncs }, 'stopped');
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

/** A password given on the command line shows in ps and shell history: said once the data dir is claimed, so a start
 *  that fails earlier shows only its reason. */
function warnOfPasswordFlag(loaded: LoadedConfig, log: Logger): void {
  if (loaded.adminPasswordSource === 'flag') {
    log.warn('--admin-password shows in ps and shell history: give the password with --admin-password-file FILE or SVC_ADMIN_PASSWORD instead');
  }
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

main().catch((error: unknown) => {
  process.stderr.write(`fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
