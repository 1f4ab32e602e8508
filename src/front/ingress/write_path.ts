// The front's write path, wired in one place: the ingress log (every produce syncs here before its 202), dispatch of
// each synced group to the partition workers, hand-off of other owners' records over the data channel, and the
// fan-out copies workers post for child partitions they do not own, and the reroute of what an unreachable owner is
// owed. Opening it replays what a crash left unstored.
// Front thread; opened once at start (front_start.ts) after the workers and the metadata replica are ready.
import { join } from 'node:path';
import type { Config } from '../../config.js';
import type { MetadataCommand, MetadataState } from '../../protocol/metadata_types.js';
import type { PortChannel } from '../../transport/port_channel.js';
import type { Logger } from '../../util/log.js';
import type { PartitionWorkers } from './dispatch.js';
import { AppliedIndex } from './applied_index.js';
import { FanoutCopies } from './fanout_copies.js';
import { Handoff } from './handoff.js';
import { IngressLog } from './ingress_log.js';
import { Reroute, type ReroutePlacement } from './reroute.js';

/** What the write path reads of the front's metadata copy (MetadataReplica satisfies it). */
export interface MetadataView {
  readonly state: MetadataState;
  readonly appliedIndex: number;
  /** The liveness view and the leader it comes from: records of a member it marks dead are rerouted (reroute.ts). */
  readonly clusterStatus?: { readonly deadMembers: readonly number[]; readonly leader: number } | null;
  onApplied(listener: (command: MetadataCommand, result: { ok: boolean }) => void): void;
  onAppliedIndex(listener: () => void): void;
}

export interface WritePathParts {
  config: Config;
  dataDir: string;
  log: Logger;
  replica: MetadataView;
  workers: PartitionWorkers;
  /** The data channel to other nodes; null on a node without peers. */
  channel: PortChannel | null;
  nodeId: number;
  /** Where records of an unreachable owner go (partition_owners.ts). */
  placement: ReroutePlacement;
}

export interface WritePath {
  ingress: IngressLog;
  handoff: Handoff;
  reroute: Reroute;
}

/** Opens the ingress log, wires it to the workers and the owners it hands records to, takes the workers' fan-out
 *  copies, and hands them what a crash left unstored. */
export async function openWritePath(parts: WritePathParts): Promise<WritePath> {
  const { config, dataDir, log, replica, workers, channel, nodeId, placement } = parts;
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
  followOwnerChanges(replica, workers, handoff, nodeId);
  handoff.onDurable = (seqUpTo) => ingress.markDurable(seqUpTo);
  // Records answered 202 before a crash but not yet stored by their partition: the workers and other owners skip
  // what they hold.
  const otherMembers = [...replica.state.members.keys()].filter((id) => id !== nodeId);
  replay.forEach((chunk, i) => {
    handoff.replayed(chunk, (replayLastSeq[i - 1] ?? 0) + 1, replayLastSeq[i]!, otherMembers);
    workers.dispatch(chunk, replayLastSeq[i]!, replica.appliedIndex);
  });
  // Copies the workers posted while the log opened come after the replay, as any later append does.
  workers.fanoutCopiesTo(FanoutCopies.handler({ nodeId, replica, workers, ingress, handoff }));
  if (replay.length > 0) log.info({ chunks: replay.length, lastSeq: replayLastSeq[replayLastSeq.length - 1] }, 'ingress log replayed');
  const reroute = new Reroute({ nodeId, placement, replica, ingress, handoff, log });
  reroute.start();
  return { ingress, handoff, reroute };
}

/** Issue 41 (MOVES.md "Records accepted elsewhere"): confirmations count once this replica applied what the
 *  confirmer had, and a partition given to another owner (move.flip, partition.reassign) has every retained ingress
 *  group sent to that owner again (to this node's own workers when it is this node). */
function followOwnerChanges(replica: MetadataView, workers: PartitionWorkers, handoff: Handoff, nodeId: number): void {
  const applied = new AppliedIndex(() => replica.appliedIndex);
  replica.onAppliedIndex(() => applied.advanced());
  workers.appliedIndex = applied;
  handoff.appliedIndex = applied;
  // The reader's frames may share a buffer the hand-off keeps; the workers take theirs.
  handoff.localResend = { selfId: nodeId, dispatch: (frames, lastSeq) => workers.dispatch(frames.slice(), lastSeq, replica.appliedIndex) };
  replica.onApplied((command, result) => {
    if (!result.ok) return;
    if (command.type === 'move.flip') handoff.resendRetained(command.destination);
    else if (command.type === 'partition.reassign') handoff.resendRetained(command.to);
  });
}

/** Graceful stop: the reroute ends its batch, the ingress log closes (every pending group synced or failed), then
 *  hand-offs stop. */
export async function closeWritePath({ ingress, handoff, reroute }: WritePath): Promise<void> {
  await reroute.close();
  await ingress.close();
  handoff.close();
}
