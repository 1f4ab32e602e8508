// The Topic and Partition statistics objects as the API answers them (spec §2): snake_case wire names,
// fields in the spec's order. Front thread.
import type { MetadataState, TopicRecord } from '../protocol/metadata_types.js';
import type { PartitionStatsView } from '../protocol/thread_messages.js';
import { linkOf, roleOf, type TopicRole } from '../metadata/fanout.js';

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
  role?: TopicRole;
  children?: string[];
  parent?: string;
  attach_epoch?: string;
  fanout_delay_ms?: number;
  attach_offsets?: number[];
}

/** NOTES 7: every answer but a create without parent carries role; the fan-out fields come with it (a create without
 *  parent is standalone). */
export function topicJson(state: MetadataState, topic: TopicRecord, withRole: boolean): TopicJson {
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
  if (withRole) addFanoutFields(state, topic, json);
  return json;
}

/** Spec §2 Topic: role, children on a parent (attach order), parent and the attachment on a child. */
function addFanoutFields(state: MetadataState, topic: TopicRecord, json: TopicJson): void {
  const role = roleOf(state, topic.id);
  json.role = role;
  if (role === 'parent') json.children = state.fanout.get(topic.id)!.children.map((c) => c.child);
  if (role !== 'child') return;
  const { parentId, link } = linkOf(state, topic.id)!;
  json.parent = state.fanout.get(parentId)!.parent;
  json.attach_epoch = link.epoch;
  if (link.delayMs !== undefined) json.fanout_delay_ms = link.delayMs;
  json.attach_offsets = [...link.attachOffsets];
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
