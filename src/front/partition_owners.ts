// Which partitions of a topic this node owns (the leader placed owners in the metadata), and where a produce goes
// (spec §4 Produce, §1.6): the pinned partition, else the key's, else round-robin over every partition; a partition
// whose owner is marked dead, or has failed hand-offs for 3 s (handoff.ts), takes no new produce: pinned, 503 with
// Retry-After; by key or round-robin, the next partition whose owner takes it (key order then breaks: decisions.md).
// Records already accepted for such an owner and not pinned move to a partition chosen the same way
// (reroutePartition, src/front/ingress/reroute.ts). Consume, replay, ack and statistics of other owners' partitions are
// forwarded (src/front/remote_partitions.ts).
// Front thread; the local list is cached per topic record and partition count, since owners change only with it.
import { errors } from '../errors.js';
import type { TopicRecord } from '../protocol/metadata_types.js';
import { partitionForKey } from '../body/batch_produce_body.js';
import type { RouteServices } from './services.js';
import type { OwnerView } from './ingress/reroute.js';

const localCache = new WeakMap<TopicRecord, { partitions: number; local: number[] }>();

export function localPartitions(topic: TopicRecord, nodeId: number): number[] {
  const cached = localCache.get(topic);
  if (cached !== undefined && cached.partitions === topic.partitions) return cached.local;
  const local: number[] = [];
  for (let p = 0; p < topic.partitions; p++) if (topic.owners[p] === nodeId) local.push(p);
  localCache.set(topic, { partitions: topic.partitions, local });
  return local;
}

/** Whether a new produce may go to owner: this node, or a member neither marked dead nor failing hand-offs. */
export function ownerTakesProduce(s: OwnerView, owner: number): boolean {
  if (owner === s.nodeId) return true;
  if (s.replica.clusterStatus?.deadMembers.includes(owner) === true) return false;
  return !s.handoff.failingLong(owner);
}

/** Throws the 503 (Retry-After) of a pinned produce whose partition's owner takes none now. */
export function requireProducible(s: RouteServices, topic: TopicRecord, partition: number): void {
  const owner = topic.owners[partition]!;
  if (!ownerTakesProduce(s, owner)) throw errors.ownerUnreachable(topic.name, partition, owner);
}

/** The partition of a produce: pinned, by key, or round-robin (roundRobin: the topic's next position). */
export function producePartition(s: RouteServices, topic: TopicRecord, pin: number | undefined, key: Uint8Array | null): number {
  if (pin !== undefined) {
    requireProducible(s, topic, pin);
    return pin;
  }
  if (key !== null) return firstProducibleFrom(s, topic, partitionForKey(key, topic.partitions));
  const roundRobin = s.produce.roundRobin;
  const next = (roundRobin.get(topic.id) ?? 0) % topic.partitions;
  const partition = firstProducibleFrom(s, topic, next);
  roundRobin.set(topic.id, partition + 1);
  return partition;
}

/** Where an accepted record that was not pinned goes when its owner takes no produce (spec §1.6): with a key, where a
 *  new produce with that key would; else this node's own partitions first, in turn (turn: a counter the caller
 *  advances), then the next live owner's from turn. The partition, or null when no owner of the topic takes any. */
export function reroutePartition(s: OwnerView, topic: TopicRecord, key: Uint8Array | null, turn: number): number | null {
  if (key !== null) return firstTakingFrom(s, topic, partitionForKey(key, topic.partitions));
  const local = localPartitions(topic, s.nodeId);
  if (local.length > 0) return local[turn % local.length]!;
  return firstTakingFrom(s, topic, turn % topic.partitions);
}

/** start, or the next partition after it (wrapping) whose owner takes produces; 503 when none does. */
function firstProducibleFrom(s: OwnerView, topic: TopicRecord, start: number): number {
  const partition = firstTakingFrom(s, topic, start);
  if (partition === null) throw errors.noProducibleOwner(topic.name);
  return partition;
}

function firstTakingFrom(s: OwnerView, topic: TopicRecord, start: number): number | null {
  for (let k = 0; k < topic.partitions; k++) {
    const partition = (start + k) % topic.partitions;
    if (ownerTakesProduce(s, topic.owners[partition]!)) return partition;
  }
  return null;
}

