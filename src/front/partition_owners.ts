// Which partitions of a topic this node owns (the leader placed owners in the metadata). Consume, replay, ack and
// statistics of other owners' partitions are forwarded (src/front/remote_partitions.ts); until produce is handed
// between nodes too (issue 29), a produce pinned elsewhere answers 503, and the node's own choices (round-robin
// produce, consume without partition) stay on its own partitions.
// Front thread; cached per topic record and partition count, since owners change only with the count.
import { errors, type BrokerError } from '../errors.js';
import type { TopicRecord } from '../protocol/metadata_types.js';

const localCache = new WeakMap<TopicRecord, { partitions: number; local: number[] }>();

export function localPartitions(topic: TopicRecord, nodeId: number): number[] {
  const cached = localCache.get(topic);
  if (cached !== undefined && cached.partitions === topic.partitions) return cached.local;
  const local: number[] = [];
  for (let p = 0; p < topic.partitions; p++) if (topic.owners[p] === nodeId) local.push(p);
  localCache.set(topic, { partitions: topic.partitions, local });
  return local;
}

export function ownedElsewhere(topic: TopicRecord, partition: number): BrokerError {
  return errors.ownedElsewhere(topic.name, partition, topic.owners[partition]);
}

/** Throws the 503 unless this node owns the partition. */
export function requireLocalPartition(topic: TopicRecord, partition: number, nodeId: number): void {
  if (topic.owners[partition] !== nodeId) throw ownedElsewhere(topic, partition);
}

/** The 503 for a topic none of whose partitions live here. */
export function noLocalPartition(topic: TopicRecord): BrokerError {
  return errors.noLocalPartition(topic.name);
}
