// Topics in the metadata state machine: create, PATCH (topic.update) and delete, as applyCommand (state.ts)
// delegates them. Partition owners are placement's (placement.ts): this module only stores what it checked.
// Pure; runs wherever applyCommand runs (the metadata thread, and the front and workers as replicas).

import type { MetadataRefusal } from '../errors.js';
import type { FanoutAttach, MetadataState, TopicChanges, TopicCreateRecord, TopicRecord } from '../protocol/metadata_types.js';
import { childIdsOf, childSchemaRefusal, createAttachRefusal, linkCreated, parentGrown, retentionRefusal, unlinkDeleted } from './fanout.js';
import { dropTopicMoves } from './moves.js';
import { addPartitionOwners, assertOwners, ownerNotMember, targetOwnersOf } from './placement.js';
import { applySchemaChange, deleteSchemaHistory, firstSchemaRefusal, registerFirstSchema } from './schemas.js';
import type { ApplyResult } from './state.js';

/** A create with a schema registers it as version 1 (spec §3), all or nothing; with attach (a create with parent)
 *  the topic is created attached or not at all (spec §4: a failed attach part undoes the create). */
export function applyTopicCreate(state: MetadataState, topic: TopicCreateRecord, schema?: string, attach?: FanoutAttach): ApplyResult {
  // The leader's shell always fills owners (placement.ts fillOwners) before proposing: a wrong count is a bug.
  assertOwners(topic.owners, topic.partitions, `topic.create ${topic.name}`);
  const existing = state.topicNamesLower.get(topic.name.toLowerCase());
  if (existing !== undefined) {
    // Spec §4 POST /v1/topics: a name differing only by case names the existing topic.
    const refusal: MetadataRefusal = existing === topic.name ? { id: 'topicExists', args: [existing] } : { id: 'topicNameConflict', args: [existing] };
    return { ok: false, refusal };
  }
  const targetOwners = targetOwnersOf(topic);
  const gone = ownerNotMember(state, topic.owners) ?? ownerNotMember(state, targetOwners);
  if (gone !== undefined) return gone;
  const schemaRefused = schema === undefined ? undefined : firstSchemaRefusal(state, schema);
  if (schemaRefused !== undefined) return { ok: false, refusal: schemaRefused };
  const attachRefused = attach === undefined ? undefined : createAttachRefusal(state, topic, schema, attach);
  if (attachRefused !== undefined) return { ok: false, refusal: attachRefused };
  const stored: TopicRecord = { ...topic, owners: [...topic.owners], targetOwners };
  if (schema !== undefined) registerFirstSchema(state, stored.id, schema);
  state.topics.set(stored.name, stored);
  state.topicNamesLower.set(stored.name.toLowerCase(), stored.name);
  if (attach !== undefined) linkCreated(state, stored, attach);
  return { ok: true, topic: copyTopic(stored) };
}

/** Spec §4 PATCH: the groups apply in order (retention, caps, partitions, schema); a refused group leaves the earlier
 *  ones applied, on every replica alike. */
export function applyTopicUpdate(state: MetadataState, name: string, id: string, changes: TopicChanges): ApplyResult {
  const topic = state.topics.get(name);
  if (topic === undefined || topic.id !== id) return { ok: false, refusal: { id: 'topicNotFound', args: [name] } };
  if (changes.retentionMs !== undefined) {
    // Spec §3: a parent's retention must keep holding its delay children's delay plus one hour.
    const refusal = retentionRefusal(state, topic, changes.retentionMs);
    if (refusal !== undefined) return { ok: false, refusal };
    topic.retentionMs = changes.retentionMs;
  }
  if (changes.maxInFlightPerPartition !== undefined) topic.maxInFlightPerPartition = changes.maxInFlightPerPartition;
  if (changes.maxAckedAheadPerPartition !== undefined) topic.maxAckedAheadPerPartition = changes.maxAckedAheadPerPartition;
  if (changes.partitions !== undefined) {
    // Checked here, not only at the front: another PATCH may have grown the topic in between.
    if (changes.partitions <= topic.partitions) {
      return { ok: false, refusal: { id: 'partitionsNotGrown', args: [topic.partitions] } };
    }
    const added = changes.partitions - topic.partitions;
    if (changes.newOwners === undefined) {
      // The leader placed from a state that did not hold this topic yet (a new leader still applying its
      // predecessor's entries). Refused on every replica alike, never a crash: the client retries.
      return { ok: false, refusal: { id: 'partitionsNotPlaced', args: [name] } };
    }
    // Placed from a state at most as grown as this one, so newOwners covers at least the partitions still missing.
    assertOwners(changes.newOwners, changes.newOwners.length, `topic.update ${name}`);
    if (changes.newOwners.length < added) {
      throw new Error(`topic.update ${name}: ${changes.newOwners.length} new owners for ${added} new partitions`);
    }
    const newOwners = changes.newOwners.slice(changes.newOwners.length - added);
    const gone = ownerNotMember(state, newOwners);
    if (gone !== undefined) return gone;
    addPartitionOwners(topic, newOwners);
    topic.partitions = changes.partitions;
    parentGrown(state, topic.id, topic.partitions);
  }
  if (changes.schema !== undefined) {
    // Spec §3: while attached, the parent manages the child's schema; the parent's versions reach its children.
    const refusal = childSchemaRefusal(state, topic) ?? applySchemaChange(state, name, id, changes.schema, childIdsOf(state, topic.id));
    if (refusal !== undefined) return { ok: false, refusal };
  }
  return { ok: true, topic: copyTopic(topic) };
}

export function applyTopicDelete(state: MetadataState, name: string, id: string): ApplyResult {
  const topic = state.topics.get(name);
  if (topic === undefined || topic.id !== id) return { ok: false, refusal: { id: 'topicNotFound', args: [name] } };
  state.topics.delete(name);
  state.topicNamesLower.delete(name.toLowerCase());
  deleteSchemaHistory(state, topic.id);
  unlinkDeleted(state, topic.id);
  dropTopicMoves(state, topic.id);
  return { ok: true, deletedTopicId: topic.id };
}

function copyTopic(topic: TopicRecord): TopicRecord {
  const copy: TopicRecord = { ...topic, owners: [...topic.owners], targetOwners: [...topic.targetOwners] };
  if (topic.startOffsets !== undefined) copy.startOffsets = [...topic.startOffsets];
  return copy;
}
