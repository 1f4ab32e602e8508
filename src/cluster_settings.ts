// This node's cluster identity and settings as the threads need them: the node id kept in the data dir, and the
// resolved listen, advertise, bootstrap and join addresses and the cluster secret. Main thread, at start.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { formatHostPort, parseAdvertise, parseBootstrap, parseHostPort, type Config } from './config.js';
import type { ClusterThreadConfig } from './protocol/thread_messages.js';
import { readClusterSecretFile } from './transport/cluster_secret.js';

/** This node's cluster id, kept in the data dir: the data belongs to that node, so another id later is refused. */
export async function loadNodeId(dataDir: string, configured: number): Promise<number> {
  const path = join(dataDir, 'node-id');
  const existing = (await readFile(path, 'utf8').catch(() => '')).trim();
  if (existing !== '') {
    const stored = /^\d{1,5}$/.test(existing) ? Number(existing) : NaN;
    if (!(stored >= 1 && stored <= 65535)) throw new Error(`config: ${path} holds "${existing}", not a node id; this data dir was written by an older build or another program`);
    if (configured !== 0 && configured !== stored) throw new Error(`config: cluster.node_id is ${configured} but ${dataDir} belongs to node ${stored}`);
    return stored;
  }
  const id = configured === 0 ? 1 : configured;
  await writeFile(path, `${id}\n`, { mode: 0o600 });
  return id;
}

/** Resolves the cluster settings into what the metadata thread needs. */
export async function clusterThreadConfig(config: Config, nodeId: number): Promise<ClusterThreadConfig> {
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
