// Partition statistics for the topic routes (get topic, children's attach point and lag): local partitions from this
// node's workers, the others from their owners over the data channel. Front thread.
import { groupBy } from '../protocol/ownership.js';
import type { TopicRecord } from '../protocol/metadata_types.js';
import type { PartitionStatsView } from '../protocol/thread_messages.js';
import { workerFailure } from './ingress/dispatch.js';
import { isMoved, retryMoved } from './moved_retry.js';
import type { RouteServices } from './services.js';

/** Statistics of the partitions asked: local ones from this node's workers, the others from their owners (an owner
 *  that does not answer in time leaves its partitions out: complete is false). Also read by children.ts (attach
 *  point, lag). */
export function statsByPartition(s: RouteServices, topic: TopicRecord, partitions: number[]): Promise<{ stats: Map<number, PartitionStatsView>; complete: boolean }> {
  // A partition that moved on the way: its old owner here answers 421 and the whole read is asked again.
  return retryMoved(s, topic, (t) => statsOnce(s, t, partitions));
}

async function statsOnce(s: RouteServices, topic: TopicRecord, partitions: number[]): Promise<{ stats: Map<number, PartitionStatsView>; complete: boolean }> {
  const local = partitions.filter((p) => topic.owners[p] === s.nodeId);
  const remote = partitions.filter((p) => topic.owners[p] !== s.nodeId);
  const [localStats, remoteStats] = await Promise.all([partitionStats(s, topic, local), remotePartitionStats(s, topic, remote)]);
  const stats = new Map([...localStats, ...remoteStats].map((stat) => [stat.index, stat]));
  return { stats, complete: partitions.every((p) => stats.has(p)) };
}

/** Statistics of partitions other nodes own, one request per owner node, all within ownerStatsMs (spec §4 get-topic):
 *  an owner that does not answer in time leaves its partitions out, to be shown as placeholders. */
async function remotePartitionStats(s: RouteServices, topic: TopicRecord, partitions: number[]): Promise<PartitionStatsView[]> {
  const byOwner = groupBy(partitions, (p) => topic.owners[p]!);
  const answers = await Promise.all([...byOwner.values()].map((ps) =>
    s.remote.ask(topic, ps[0]!, { kind: 'stats', topicId: topic.id, partitions: ps }, 'statsResult', ownerStatsMs).then((reply) => reply.stats, (error: unknown) => {
      if (isMoved(error)) throw error;
      return [];
    })));
  return answers.flat();
}

const ownerStatsMs = 2_000;

async function partitionStats(s: RouteServices, topic: TopicRecord, partitions: number[]): Promise<PartitionStatsView[]> {
  const byWorker = s.workers.groupByOwner(topic.id, partitions, (p) => p);
  const replies = await Promise.all(
    [...byWorker].map(([worker, ps]) => s.workers.request(worker, { kind: 'stats', topicId: topic.id, partitions: ps })),
  );
  const all: PartitionStatsView[] = [];
  for (const reply of replies) {
    const failure = workerFailure(reply);
    if (failure !== null) throw failure;
    if (reply.kind === 'statsResult') all.push(...reply.stats);
  }
  return all.sort((a, b) => a.index - b.index);
}
