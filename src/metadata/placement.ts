// Partition placement: each topic's owners (current: serves the partition, every route reads it) and targetOwners
// (where placement wants it; Redpanda's shard_placement_table), equal until partition moves exist. The leader's half
// (placePartitions, fillOwners) places new partitions before the shell proposes, so replicas never place; the apply
// half (from partitionsOwnedBy on) stores and checks owners for topics.ts and members.ts.
// Runs on: the metadata thread (both halves); the front and the workers (the apply half, as replicas).

import type { MetadataCommand, MetadataState, TopicCreateRecord, TopicRecord } from '../protocol/metadata_types.js';
import type { ApplyResult } from './state.js';

/** No live member can take a partition: the shell answers the request 503 (nothing was proposed). */
export class PlacementError extends Error {
  override name = 'PlacementError';
}

/** Partitions placed per member id, over every topic. Counts the target owners: placement balances where
 *  partitions are meant to be, so a partition moving off a member no longer weighs on it. O(total partitions). */
function targetCounts(state: MetadataState): Map<number, number> {
  const counts = new Map<number, number>();
  for (const topic of state.topics.values()) {
    for (const owner of topic.targetOwners) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  return counts;
}

/**
 * Owners for `count` new partitions. Each goes to the live member that is the target of the fewest partitions
 * cluster-wide (counting the ones placed by this call), ties to the lowest id. Members in `avoid` (a replica
 * child's parent nodes, spec 1.9) are skipped while another live member exists. Live ids without a member record,
 * and members being decommissioned, are ignored.
 * Throws PlacementError when no live member is left.
 */
export function placePartitions(state: MetadataState, liveMemberIds: readonly number[], count: number, avoid: readonly number[] = []): number[] {
  if (!Number.isSafeInteger(count) || count < 0) throw new Error(`placePartitions: count ${count} is not a non-negative integer`);
  if (count === 0) return [];
  // A member being decommissioned takes no new partition (spec §7 503: every live node being decommissioned).
  const live = [...new Set(liveMemberIds)].filter((id) => state.members.has(id) && state.members.get(id)!.decommission === undefined).sort((a, b) => a - b);
  if (live.length === 0) {
    throw new PlacementError(`no live cluster member to place ${count} partitions on (live: [${liveMemberIds.join(', ')}], members: [${[...state.members.keys()].join(', ')}])`);
  }
  const avoided = new Set(avoid);
  const preferred = live.filter((id) => !avoided.has(id));
  const candidates = preferred.length > 0 ? preferred : live;
  const counts = targetCounts(state);
  const owners: number[] = [];
  for (let i = 0; i < count; i++) {
    let best = candidates[0]!;
    let bestCount = counts.get(best) ?? 0;
    for (const id of candidates) {
      const owned = counts.get(id) ?? 0;
      if (owned < bestCount) {
        best = id;
        bestCount = owned;
      }
    }
    owners.push(best);
    counts.set(best, bestCount + 1);
  }
  return owners;
}

/**
 * The command with its partition owners placed: a topic.create gets `owners` for all its partitions, a topic.update
 * whose `changes.partitions` grows the topic gets `changes.newOwners` for the added ones. Other commands (and an
 * update that does not grow the topic, or names a topic this state does not hold) come back unchanged; applyCommand
 * answers those. Never mutates the command. Throws PlacementError when no live member can take a partition.
 * `avoid`: member ids to keep the new partitions off where possible (a replica child's parent nodes, spec 1.9).
 */
export function fillOwners(state: MetadataState, command: MetadataCommand, liveMemberIds: readonly number[], avoid: readonly number[] = []): MetadataCommand {
  switch (command.type) {
    case 'topic.create': {
      // Spec §4 POST /v1/topics with parent: the child's partitions go to other nodes than the parent's where possible.
      const parent = command.attach === undefined ? undefined : state.topics.get(command.attach.parent);
      const avoided = parent === undefined ? avoid : [...avoid, ...parent.owners];
      const owners = placePartitions(state, liveMemberIds, command.topic.partitions, avoided);
      return { ...command, topic: { ...command.topic, owners } };
    }
    case 'topic.update': {
      const target = command.changes.partitions;
      const topic = state.topics.get(command.name);
      if (target === undefined || topic === undefined || topic.id !== command.id || target <= topic.partitions) return command;
      const newOwners = placePartitions(state, liveMemberIds, target - topic.partitions, avoid);
      return { ...command, changes: { ...command.changes, newOwners } };
    }
    default:
      return command;
  }
}

// The apply half. Seam (issue 26): partition moves add their command here, setting targetOwners[p] first and
// owners[p] once the new owner holds the partition's records.

/** How many partitions, over every topic, member `id` currently owns (the routed owner). O(total partitions). */
export function partitionsOwnedBy(state: MetadataState, id: number): number {
  let owned = 0;
  for (const topic of state.topics.values()) {
    for (const owner of topic.owners) if (owner === id) owned += 1;
  }
  return owned;
}

/** The target owners a topic.create stores: the entry's own when it carries them, else its current owners (every
 *  entry written so far: the release that wrote them had no target). */
export function targetOwnersOf(topic: TopicCreateRecord): number[] {
  if (topic.targetOwners === undefined) return [...topic.owners];
  assertOwners(topic.targetOwners, topic.partitions, `topic.create ${topic.name} (target)`);
  return [...topic.targetOwners];
}

/** Partitions added by a growth are placed where they are created: target and current owner alike. */
export function addPartitionOwners(topic: TopicRecord, newOwners: readonly number[]): void {
  topic.owners.push(...newOwners);
  topic.targetOwners.push(...newOwners);
}

/** Fail-fast: owners is an array of `count` positive integer ids. */
export function assertOwners(owners: readonly number[] | undefined, count: number, what: string): void {
  if (!Array.isArray(owners) || owners.length !== count) {
    throw new Error(`${what}: ${Array.isArray(owners) ? owners.length : 'no'} partition owners for ${count} partitions (the leader fills them before proposing)`);
  }
  for (const owner of owners) {
    if (!Number.isSafeInteger(owner) || owner <= 0) throw new Error(`${what}: partition owner ${String(owner)} is not a member id`);
  }
}

/** A member forgotten between placement and apply: refused on every replica alike (a crash would repeat on every
 *  replay). member.forget refuses a member that owns partitions, so owners already stored stay members. */
export function ownerNotMember(state: MetadataState, owners: readonly number[]): ApplyResult | undefined {
  for (const owner of owners) {
    if (!state.members.has(owner)) return { ok: false, refusal: { id: 'ownerNotMember', args: [owner] } };
  }
  return undefined;
}
