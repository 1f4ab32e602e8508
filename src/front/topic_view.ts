// The Topic and Partition statistics objects as the API answers them (spec §2): snake_case wire names,
// fields in the spec's order. Front thread.
import type { TopicRecord } from '../protocol/metadata_types.js';
import type { PartitionStatsView } from '../protocol/thread_messages.js';

export interface TopicJson {
  name: string;
  id: string;
  partitions: number;
  retention_ms: number;
  visibility_timeout_ms: number;
  max_in_flight_per_partition: number;
  max_acked_ahead_per_partition: number;
  created_at: number;
  owner?: string;
  role?: 'standalone' | 'parent' | 'child';
}

/** NOTES 7: every answer but a create without parent carries role. */
export function topicJson(topic: TopicRecord, withRole: boolean): TopicJson {
  const json: TopicJson = {
    name: topic.name,
    id: topic.id,
    partitions: topic.partitions,
    retention_ms: topic.retentionMs,
    visibility_timeout_ms: topic.visibilityTimeoutMs,
    max_in_flight_per_partition: topic.maxInFlightPerPartition,
    max_acked_ahead_per_partition: topic.maxAckedAheadPerPartition,
    created_at: topic.createdAtSec,
  };
  if (topic.owner !== undefined) json.owner = topic.owner;
  if (withRole) json.role = 'standalone';
  return json;
}

/** A partition this node cannot read now: zero statistics that are never added to totals (spec §2, v3.1.0). */
export function placeholderStatsJson(index: number, ownerNode: string, ownerLiveness: 'dead' | 'unreachable' | 'unknown' | 'unassigned'): Record<string, unknown> {
  return {
    index, segments: 0, oldest_offset: 0, next_offset: 0, high_watermark: 0, size_bytes: 0,
    owner_node: ownerNode, status: 'owner_unavailable', owner_liveness: ownerLiveness,
  };
}

export function partitionStatsJson(stats: PartitionStatsView, ownerNode: string): Record<string, unknown> {
  const json: Record<string, unknown> = {
    index: stats.index,
    segments: stats.segments,
    oldest_offset: stats.oldestOffset,
    next_offset: stats.nextOffset,
    high_watermark: stats.highWatermark,
    size_bytes: stats.sizeBytes,
  };
  if (stats.oldestSegmentAtSec !== undefined) json.oldest_segment_at = stats.oldestSegmentAtSec;
  json.owner_node = ownerNode;
  json.status = 'ok';
  return json;
}
