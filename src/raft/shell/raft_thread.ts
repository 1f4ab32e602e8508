// The metadata thread's entry (a worker_threads Worker started by the front with MetadataThreadData). At start it
// opens the SQLite log (writing the founding configuration on a first start), restores the state machine from the
// latest snapshot, takes the metadata channel the node-link thread bridges when the cluster has other nodes, and
// hands everything to the MetadataShell, which posts the 'snapshot' to the front and every partition worker and runs
// Raft from then on. Ends on 'shutdown' from the front, answered with 'closed'.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { bootstrapEntries, RaftNode, type LogEntry } from '../core/raft.js';
import { decodeMetadataSnapshot } from '../../metadata/snapshot.js';
import type { MetadataCommand } from '../../protocol/metadata_types.js';
import { emptyMetadataState } from '../../metadata/state.js';
import type { MetadataThreadData } from '../../protocol/thread_messages.js';
import { createLogger } from '../../util/log.js';
import { MetadataShell } from './metadata_shell.js';
import { SqliteRaftStorage } from './storage_sqlite.js';
import type { ChannelEndpoint } from '../../transport/channel.js';
import { PortChannel } from '../../transport/port_channel.js';

/** Every command type, so a stored entry is recognised before it is applied; the Record type makes the
 *  compiler demand a new variant here too. */
const metadataCommandTypes: Record<MetadataCommand['type'], true> = {
  'topic.create': true,
  'topic.update': true,
  'topic.delete': true,
  'user.create': true,
  'user.delete': true,
  'user.grants': true,
  'user.password': true,
  'member.add': true,
  'member.forget': true,
  'fanout.attach': true,
  'fanout.detach': true,
  'member.decommission': true,
  'member.decommissionCancel': true,
  'move.start': true,
  'move.freeze': true,
  'move.flip': true,
  'move.finish': true,
  'move.abort': true,
  'partition.reassign': true,
};

function storedEntry(entry: LogEntry): LogEntry<MetadataCommand> {
  if (entry.payload.kind === 'command') {
    const data = entry.payload.command as { type?: unknown } | null;
    assert.ok(typeof data === 'object' && data !== null, `stored entry ${entry.index} holds no object`);
    assert.ok(typeof data.type === 'string' && Object.hasOwn(metadataCommandTypes, data.type), `stored entry ${entry.index} holds no metadata command`);
  }
  return entry as LogEntry<MetadataCommand>;
}

async function start(): Promise<void> {
  const front = parentPort;
  assert.ok(front !== null, 'raft_thread.ts runs only as a worker thread');
  const data = workerData as MetadataThreadData;
  assert.equal(typeof data.dataDir, 'string', 'workerData.dataDir');
  assert.ok(Array.isArray(data.workerPorts), 'workerData.workerPorts');
  const config = data.cluster;
  const logger = createLogger(data.logLevel).child({ component: 'metadata', node: config.nodeId });
  const log = (level: 'info' | 'warn' | 'error', fields: object, msg: string): void => logger[level](fields, msg);

  const storage = await SqliteRaftStorage.open(join(data.dataDir, 'metadata', 'raft.sqlite'));
  let stored = await storage.load();
  const empty = stored.snapshot === null && stored.entries.length === 0;
  const joining = empty && config.join !== null;
  if (empty && !joining) {
    // Every founding node writes the same first entries, so their logs agree from index 1 (etcd's bootstrap).
    const voters = config.bootstrap.map(([id]) => id).sort((a, b) => a - b);
    const entries = bootstrapEntries(voters);
    await storage.save({ entries, hardState: { term: 1, vote: 0, commit: entries.length } });
    stored = await storage.load();
    log('info', { voters }, 'metadata: founded a new cluster');
  }
  const core = new RaftNode<MetadataCommand>(
    { id: config.nodeId, electionTicks: config.electionTicks, heartbeatTicks: 1, random: Math.random },
    { hardState: stored.hardState, snapshot: stored.snapshot, entries: stored.entries.map(storedEntry) },
  );
  const state = stored.snapshot === null ? emptyMetadataState() : decodeMetadataSnapshot(stored.snapshot.data);
  const snapshotIndex = stored.snapshot?.index ?? 0;

  let shell: MetadataShell | null = null;
  let channel: ChannelEndpoint | null = null;
  if (data.transportPort !== undefined) {
    channel = new PortChannel('metadata', data.transportPort, {
      // Raft tolerates lost messages, so anything arriving before the shell exists is dropped.
      onMessage: (from, message) => shell?.onPeerMessage(from, message),
      onRequest: (from, body) => (shell === null ? Promise.reject(new Error('metadata starting')) : shell.onPeerRequest(from, body)),
    });
    for (const [id, address] of config.bootstrap) if (id !== config.nodeId) channel.setPeer(id, address);
  }
  shell = new MetadataShell({
    core, storage, state, appliedIndex: snapshotIndex, snapshotIndex, startCommit: stored.hardState.commit, front, workerPorts: data.workerPorts, transport: channel, config, log, joining,
  });
  shell.start();
}

await start();
