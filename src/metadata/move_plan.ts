// Where partitions should go when a member drains or the cluster rebalances (issue 41, NOTES 16): pure plans over a
// metadata state and the live members, proposed as move.start by the leader's controller
// (src/front/cluster_controller.ts) or answered by a dry run. Placement: the receiver that is the target of the fewest
// partitions first (ties to the lowest id); a replica child's partitions keep off its parent's nodes where another
// receiver exists (spec §1.9). Runs on the front thread (the leader's controller and the routes).

import { moveKey, type MetadataState, type MoveReason, type PartitionMoveRecord, type TopicRecord } from '../protocol/metadata_types.js';

/** A partition no receiver can take. */
export interface UnplacedPartition {
  topic: string;
  partition: number;
}

export interface MovePlan {
  moves: PartitionMoveRecord[];
  unplaced: UnplacedPartition[];
}

/** Members that may receive partitions: alive, and not being decommissioned. */
export function receiversOf(state: MetadataState, liveIds: readonly number[]): number[] {
  return [...new Set(liveIds)].filter((id) => {
    const member = state.members.get(id);
    return member !== undefined && member.decommission === undefined;
  }).sort((a, b) => a - b);
}

/** Partitions each member is the target of (a moving partition weighs on its destination). */
export function targetCounts(state: MetadataState): Map<number, number> {
  const counts = new Map<number, number>();
  for (const id of state.members.keys()) counts.set(id, 0);
  for (const topic of state.topics.values()) {
    for (const owner of topic.targetOwners) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

/** The nodes a replica child's partitions keep off: its parent's owners (none for other topics). */
function avoidedFor(state: MetadataState, topic: TopicRecord): Set<number> {
  const parentId = state.fanoutParentOf.get(topic.id);
  if (parentId === undefined) return new Set();
  // The fan-out entry keeps the parent's name beside its id: no search by id.
  const parentName = state.fanout.get(parentId)?.parent;
  return new Set(parentName === undefined ? [] : state.topics.get(parentName)?.owners ?? []);
}

function fewest(candidates: readonly number[], counts: ReadonlyMap<number, number>): number {
  let best = candidates[0]!;
  for (const id of candidates) if ((counts.get(id) ?? 0) < (counts.get(best) ?? 0)) best = id;
  return best;
}

/** The receiver for one partition, counted in counts; undefined when there is none. */
function pickReceiver(state: MetadataState, topic: TopicRecord, receivers: readonly number[], counts: Map<number, number>, exclude: number): number | undefined {
  const allowed = receivers.filter((id) => id !== exclude);
  if (allowed.length === 0) return undefined;
  const avoided = avoidedFor(state, topic);
  const preferred = allowed.filter((id) => !avoided.has(id));
  const chosen = fewest(preferred.length > 0 ? preferred : allowed, counts);
  counts.set(chosen, (counts.get(chosen) ?? 0) + 1);
  return chosen;
}

function planned(topic: TopicRecord, partition: number, source: number, destination: number, nowMs: number, reason: MoveReason): PartitionMoveRecord {
  return { topicId: topic.id, topic: topic.name, partition, source, destination, startedAtMs: nowMs, reason, phase: 'copying' };
}

/** Moves for every partition member owns that is not moving yet. */
export function decommissionPlan(state: MetadataState, member: number, liveIds: readonly number[], nowMs: number): MovePlan {
  const receivers = receiversOf(state, liveIds);
  const counts = targetCounts(state);
  const plan: MovePlan = { moves: [], unplaced: [] };
  for (const topic of sortedTopics(state)) {
    for (let p = 0; p < topic.partitions; p++) {
      if (topic.owners[p] !== member || state.moves.has(moveKey(topic.id, p))) continue;
      const destination = pickReceiver(state, topic, receivers, counts, member);
      if (destination === undefined) plan.unplaced.push({ topic: topic.name, partition: p });
      else plan.moves.push(planned(topic, p, member, destination, nowMs, 'decommission'));
    }
  }
  return plan;
}

/** Where each partition of a lost member goes (partition.reassign): the same placement, no copy. */
export function reassignPlan(state: MetadataState, member: number, liveIds: readonly number[]): { topic: TopicRecord; partition: number; to: number }[] {
  const receivers = receiversOf(state, liveIds);
  const counts = targetCounts(state);
  const plan: { topic: TopicRecord; partition: number; to: number }[] = [];
  for (const topic of sortedTopics(state)) {
    for (let p = 0; p < topic.partitions; p++) {
      if (topic.owners[p] !== member) continue;
      const to = pickReceiver(state, topic, receivers, counts, member);
      if (to !== undefined) plan.push({ topic, partition: p, to });
    }
  }
  return plan;
}

/** Moves until every receiver is the target of within one partition of the mean: from the most loaded receiver
 *  (its partitions not moving, owned by it) to the least loaded, one at a time. Dead and draining members' partitions
 *  are not touched (a dead one cannot be copied from; a draining one moves off anyway). */
export function rebalancePlan(state: MetadataState, liveIds: readonly number[], nowMs: number): MovePlan {
  const receivers = receiversOf(state, liveIds);
  const plan: MovePlan = { moves: [], unplaced: [] };
  if (receivers.length < 2) return plan;
  const counts = targetCounts(state);
  const movable = new Map<number, { topic: TopicRecord; partition: number }[]>(receivers.map((id) => [id, []]));
  for (const topic of sortedTopics(state)) {
    for (let p = 0; p < topic.partitions; p++) {
      const owner = topic.owners[p]!;
      if (topic.targetOwners[p] === owner && !state.moves.has(moveKey(topic.id, p))) movable.get(owner)?.push({ topic, partition: p });
    }
  }
  let partitions = 0;
  for (const topic of state.topics.values()) partitions += topic.partitions;
  // Each step moves one partition closer to the mean: at most every partition once.
  for (let step = 0; step < partitions; step++) {
    const byLoad = [...receivers].sort((a, b) => (counts.get(a)! - counts.get(b)!) || a - b);
    const least = byLoad[0]!;
    const most = byLoad[byLoad.length - 1]!;
    if (counts.get(most)! - counts.get(least)! <= 1) break;
    const next = movable.get(most)!.pop();
    if (next === undefined) break;
    plan.moves.push(planned(next.topic, next.partition, most, least, nowMs, 'rebalance'));
    counts.set(most, counts.get(most)! - 1);
    counts.set(least, counts.get(least)! + 1);
  }
  return plan;
}

function sortedTopics(state: MetadataState): TopicRecord[] {
  return [...state.topics.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
