// The front thread's own start, after main.ts started the other threads: its metadata copy, the workers' link, the
// write path, the services handlers share, the root admin on a lone node, then the HTTP listener. Returns how to stop
// what it started, in the order that keeps every 202 stored (listener, write path, workers). Front thread.
import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { formatHostPort, parseListenAddress, type LoadedConfig } from '../../config.js';
import { answerMemberReports, type NodeLink } from '../../node_link/node_link.js';
import type { ClusterThreadConfig, ToMetadata } from '../../protocol/thread_messages.js';
import type { LoadedClusterTls } from '../../transport/cluster_tls.js';
import type { Logger } from '../../util/log.js';
import { ByteBudget } from '../body.js';
import { PartitionWorkers } from '../ingress/dispatch.js';
import { closeWritePath, openWritePath } from '../ingress/write_path.js';
import { MetadataReplica } from '../metadata_replica.js';
import { Metrics } from '../metrics.js';
import { reroutePartition } from '../partition_owners.js';
import { NodeMoves } from '../moves/node_moves.js';
import { RemotePartitions } from '../remote_partitions.js';
import { rootAdminHint } from '../root_admin.js';
import type { SchemaValidation } from '../schema_validation.js';
import type { FrontServices, NodeLifecycle } from '../services.js';
import { FrontServer } from './server.js';

export interface FrontStart {
  loaded: LoadedConfig;
  log: Logger;
  dataDir: string;
  cluster: ClusterThreadConfig;
  clusterTls: LoadedClusterTls | null;
  nodeLink: NodeLink | null;
  metadataThread: Worker;
  workerThreads: Worker[];
  pools: { authPool: Piscina; workPool: Piscina; schemas: SchemaValidation };
  lifecycle: NodeLifecycle;
}

/** Starts the front and listens; a taken port throws ListenRefused before anything is answered (issue 27). */
export async function startFront(start: FrontStart): Promise<{ stop: () => Promise<{ ingressSyncs: number }> }> {
  const { loaded, log, dataDir, cluster, clusterTls, nodeLink, metadataThread, pools, lifecycle } = start;
  const config = loaded.config;
  const nodeId = cluster.nodeId;
  const uws = (await import('uWebSockets.js')).default;
  const replica = new MetadataReplica(metadataThread);
  const workers = new PartitionWorkers(start.workerThreads);
  await Promise.all([replica.whenReady(), workers.whenReady()]);
  const placement = { partition: reroutePartition };
  const writePath = await openWritePath({ config, dataDir, log, replica, workers, channel: nodeLink?.dataChannel ?? null, nodeId, placement });
  const remote = new RemotePartitions(nodeLink?.dataChannel ?? null);
  const moves = new NodeMoves({ nodeId, config, log, replica, workers, remote }, dataDir);
  const services: FrontServices = {
    config, log, nodeId, replica, workers, ...writePath, ...pools, remote, moves,
    batchBudget: new ByteBudget(config['http.max_batch_body_bytes_in_flight']),
    metrics: new Metrics(replica, workers, pools.schemas, writePath.handoff, writePath.reroute),
  };
  moves.start();
  if (clusterTls !== null) services.metrics.reportClusterTls(clusterTls.dates);
  // A one-node cluster leads at once, so its root admin exists before it listens (the first screen shows how to
  // log in). A node of a larger cluster listens first: reads must answer even while no quorum exists.
  const loneNode = cluster.bootstrap.length <= 1 && cluster.join === null;
  // Partitions are placed on members only: a lone node listens once its own member record is in, so its first
  // topic create never finds no live member.
  if (loneNode) await replica.whenMember(nodeId);
  const loginHint = loneNode ? await rootAdminHint(services, loaded, dataDir, cluster) : null;

  const server = new FrontServer(uws, services, lifecycle, pools.authPool);
  if (nodeLink !== null) answerMemberReports(nodeLink, () => server.memberReport());
  const port = await server.listen(config['node.host'], config['node.port']);
  lifecycle.startupDone = true;
  announceApiAddress(cluster, metadataThread, port);
  log.info({ port, host: config['node.host'], dataDir, nodeId, workers: workers.count }, 'listening');
  if (loginHint !== null) log.info(loginHint);
  else {
    rootAdminHint(services, loaded, dataDir, cluster).then(
      (hint) => log.info(hint),
      (error: unknown) => log.error({ err: error }, 'creating the root admin failed'),
    );
  }
  return {
    stop: async () => {
      await server.shutdown();
      moves.close();
      await closeWritePath(writePath);
      await workers.shutdown();
      return { ingressSyncs: writePath.ingress.syncCount };
    },
  };
}

/** The API listener was started on port 0 with no --advertise: the metadata thread learns its address now. */
function announceApiAddress(cluster: ClusterThreadConfig, metadataThread: Worker, port: number): void {
  if (cluster.advertiseApi !== '') return;
  // clusterThreadConfig built advertiseInternal with formatHostPort: its host is the API's too when --advertise was
  // not given.
  const { host } = parseListenAddress(cluster.advertiseInternal)!;
  metadataThread.postMessage({ kind: 'apiAddress', address: formatHostPort(host, port) } satisfies ToMetadata);
}
