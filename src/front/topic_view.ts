// The Topic and Partition statistics objects as the API answers them (spec §2): snake_case wire names,
// fields in the spec's order. docs/openapi.yaml's Topic and PartitionStats schemas are the source:
// test/unit/topic_shape.test.ts fails when these types or the objects built here differ from them. Front thread.
import type { MetadataState, TopicRecord } from '../protocol/metadata_types.js';
import type { PartitionStatsView } from '../protocol/thread_messages.js';
import { linkOf, roleOf, type TopicRole } from '../metadata/fanout.js';

/** Spec §2 Topic, without remote: remote children's stubs (v3.2.0) are not built (their routes answer 501). */
export interface TopicJson {
  name: string;
  /** Optional in the contract (topics from before IDs have none); every topic of this release has one. */
  id?: string;
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

export interface PartitionStatsJson {
  index: number;
  segments: number;
  oldest_offset: number;
  next_offset: number;
  high_watermark: number;
  size_bytes: number;
  oldest_segment_at?: number;
  owner_node: string;
  status: 'ok' | 'owner_unavailable';
  owner_liveness?: OwnerLiveness;
}

type OwnerLiveness = 'dead' | 'unreachable' | 'unknown' | 'unassigned';

/** A partition this node cannot read now: zero statistics that are never added to totals (spec §2, v3.1.0). */
export function placeholderStatsJson(index: number, ownerNode: string, ownerLiveness: OwnerLiveness): PartitionStatsJson {
  return {
    index, segments: 0, oldest_offset: 0, next_offset: 0, high_watermark: 0, size_bytes: 0,
    owner_node: ownerNode, status: 'owner_unavailable', owner_liveness: ownerLiveness,
  };
}

export function partitionStatsJson(stats: PartitionStatsView, ownerNode: string): PartitionStatsJson {
  return {
    index: stats.index,
    segments: stats.segments,
    oldest_offset: stats.oldestOffset,
    next_offset: stats.nextOffset,
    high_watermark: stats.highWatermark,
    size_bytes: stats.sizeBytes,
    ...(stats.oldestSegmentAtSec === undefined ? {} : { oldest_segment_at: stats.oldestSegmentAtSec }),
    owner_node: ownerNode,
    status: 'ok',
  };
}
