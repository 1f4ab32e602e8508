// Fan-out links in the metadata state machine (spec §1.9, §3 Topic role and attach rules, §8 Children per parent):
// attach (of an existing topic, or inside a create with parent), detach, and what other commands do to links (a
// parent's growth, retention and schema versions, a topic's delete; topics.ts and schemas.ts call in). Copying reads
// the links (epoch, attach offsets, delay) and keeps its cursors elsewhere. Pure; runs wherever applyCommand runs.

import { limits } from '../config.js';
import type { MetadataRefusal } from '../errors.js';
import type { FanoutAttach, FanoutLink, MetadataState, TopicRecord } from '../protocol/metadata_types.js';
import { schemaBytesInCluster } from './schemas.js';
import type { ApplyResult } from './state.js';

export type TopicRole = 'standalone' | 'parent' | 'child';

export function roleOf(state: MetadataState, topicId: string): TopicRole {
  if (state.fanout.size === 0) return 'standalone';
  if (state.fanout.has(topicId)) return 'parent';
  return state.fanoutParentOf.has(topicId) ? 'child' : 'standalone';
}

/** The link of a child and its parent's id; undefined for a topic that is no child. */
export function linkOf(state: MetadataState, childId: string): { parentId: string; link: FanoutLink } | undefined {
  const parentId = state.fanoutParentOf.size === 0 ? undefined : state.fanoutParentOf.get(childId);
  if (parentId === undefined) return undefined;
  const link = state.fanout.get(parentId)!.children.find((c) => c.childId === childId)!;
  return { parentId, link };
}

/** The name of a parent by id (links key on ids: a recreated topic under an old name is another topic). */
function parentNameOf(state: MetadataState, parentId: string): string {
  return state.fanout.get(parentId)!.parent;
}

/** The topic the command names, still the one the request read (same id). */
function current(state: MetadataState, name: string, id: string): TopicRecord | MetadataRefusal {
  const topic = state.topics.get(name);
  if (topic === undefined) return { id: 'topicNotFound', args: [name] };
  if (topic.id !== id) return { id: 'fanoutTopicChanged', args: [name] };
  return topic;
}

function isRefusal(value: TopicRecord | MetadataRefusal): value is MetadataRefusal {
  return 'args' in value;
}

/** Spec §3 attach rules, checked against the state the entry applies to. childDocuments: the child's schema history
 *  (a create's: its version 1 or none). */
function attachRefusal(state: MetadataState, parent: TopicRecord, child: { name: string; id: string },
  childDocuments: readonly string[], attach: FanoutAttach): MetadataRefusal | undefined {
  if (parent.id === child.id) return { id: 'fanoutSelf', args: [child.name] };
  const hasParent = state.fanoutParentOf.get(child.id);
  if (hasParent !== undefined) return { id: 'fanoutHasParent', args: [child.name, parentNameOf(state, hasParent)] };
  if (state.fanout.has(child.id)) return { id: 'fanoutChildIsParent', args: [child.name] };
  if (state.fanoutParentOf.has(parent.id)) return { id: 'fanoutParentIsChild', args: [parent.name] };
  if ((state.fanout.get(parent.id)?.children.length ?? 0) >= limits.fanout_children_max) {
    return { id: 'fanoutChildrenFull', args: [parent.name, limits.fanout_children_max] };
  }
  const delayMs = attach.delayMs ?? 0;
  if (!retentionHolds(parent.retentionMs, delayMs)) return { id: 'fanoutDelayRetention', args: [parent.name, parent.retentionMs, delayMs] };
  // Offsets read from more partitions than the parent has: it was recreated and grew under the request.
  if (attach.attachOffsets.length > parent.partitions) return { id: 'fanoutTopicChanged', args: [parent.name] };
  const parentHistory = state.schemas.get(parent.id);
  const parentDocuments = parentHistory?.documents ?? [];
  if (childDocuments.length === 0) {
    // Adopting the parent's history stores a copy (spec §8: each child's copy counted).
    const bytes = parentHistory?.bytes ?? 0;
    if (bytes > 0 && schemaBytesInCluster(state) + bytes > limits.schema_cluster_history_bytes_max) {
      return { id: 'schemaClusterBudget', args: [limits.schema_cluster_history_bytes_max] };
    }
    return undefined;
  }
  const same = childDocuments.length === parentDocuments.length && childDocuments.every((d, i) => d === parentDocuments[i]);
  return same ? undefined : { id: 'fanoutSchemaMismatch', args: [child.name, parent.name] };
}

/** Spec §3: the parent's retention holds a delay child's delay plus one hour; 0 keeps forever. Only delay children
 *  bind it: an ordinary child's parent keeps any retention the topic rules allow. */
function retentionHolds(retentionMs: number, delayMs: number): boolean {
  return delayMs === 0 || retentionMs === 0 || retentionMs >= delayMs + limits.fanout_delay_retention_margin_ms;
}

/** Links a child that passed attachRefusal: a fresh attachment (new epoch, the given attach point), and the parent's
 *  schema history adopted when the child has none (equal otherwise). */
function link(state: MetadataState, parent: TopicRecord, child: { name: string; id: string }, attach: FanoutAttach): void {
  const childId = child.id;
  const attachOffsets = [...attach.attachOffsets];
  // Partitions the parent gained since the offsets were read: all their records come after the attach.
  while (attachOffsets.length < parent.partitions) attachOffsets.push(0);
  const stored: FanoutLink = { child: child.name, childId, epoch: attach.epoch, attachOffsets };
  if (attach.delayMs !== undefined && attach.delayMs > 0) stored.delayMs = attach.delayMs;
  const entry = state.fanout.get(parent.id);
  if (entry === undefined) state.fanout.set(parent.id, { parent: parent.name, children: [stored] });
  else entry.children.push(stored);
  state.fanoutParentOf.set(childId, parent.id);
  const parentHistory = state.schemas.get(parent.id);
  if (parentHistory !== undefined && !state.schemas.has(childId)) {
    state.schemas.set(childId, { documents: [...parentHistory.documents], bytes: parentHistory.bytes });
  }
}

/** POST /v1/topics/{parent}/children. The result's topic is the parent (the route answers it). */
export function applyFanoutAttach(state: MetadataState, childName: string, childId: string, attach: FanoutAttach): ApplyResult {
  const parent = current(state, attach.parent, attach.parentId);
  if (isRefusal(parent)) return { ok: false, refusal: parent };
  const child = current(state, childName, childId);
  if (isRefusal(child)) return { ok: false, refusal: child };
  const refusal = attachRefusal(state, parent, child, state.schemas.get(child.id)?.documents ?? [], attach);
  if (refusal !== undefined) return { ok: false, refusal };
  link(state, parent, child, attach);
  return { ok: true, topic: { ...parent, owners: [...parent.owners], targetOwners: [...parent.targetOwners] } };
}

/** A create with parent, before anything is created: the refusal its attach part meets, so a refused create leaves
 *  nothing to undo (spec §4: a failed attach part undoes the create). */
export function createAttachRefusal(state: MetadataState, child: { name: string; id: string }, schema: string | undefined,
  attach: FanoutAttach): MetadataRefusal | undefined {
  const parent = current(state, attach.parent, attach.parentId);
  if (isRefusal(parent)) return parent;
  return attachRefusal(state, parent, child, schema === undefined ? [] : [schema], attach);
}

/** The attach part of a create, once the child is in (createAttachRefusal passed on this same state). */
export function linkCreated(state: MetadataState, child: { name: string; id: string }, attach: FanoutAttach): void {
  link(state, state.topics.get(attach.parent)!, child, attach);
}

/** DELETE /v1/topics/{parent}/children/{child}: the child keeps its messages and its (copied) schema history. */
export function applyFanoutDetach(state: MetadataState, parentName: string, parentId: string, childName: string, childId: string): ApplyResult {
  const parent = current(state, parentName, parentId);
  if (isRefusal(parent)) return { ok: false, refusal: parent };
  const child = current(state, childName, childId);
  if (isRefusal(child)) return { ok: false, refusal: child };
  if (state.fanoutParentOf.get(child.id) !== parent.id) return { ok: false, refusal: { id: 'notLinked', args: [parent.name, child.name] } };
  unlink(state, parent.id, child.id);
  return { ok: true };
}

function unlink(state: MetadataState, parentId: string, childId: string): void {
  const entry = state.fanout.get(parentId)!;
  entry.children = entry.children.filter((c) => c.childId !== childId);
  // NOTES 7: a parent whose last child detaches is standalone.
  if (entry.children.length === 0) state.fanout.delete(parentId);
  state.fanoutParentOf.delete(childId);
}

/** A topic's delete (spec §4 DELETE: removes fan-out links): a parent's children become standalone, a child leaves
 *  its parent. */
export function unlinkDeleted(state: MetadataState, topicId: string): void {
  if (state.fanout.size === 0) return;
  const entry = state.fanout.get(topicId);
  if (entry !== undefined) {
    for (const child of entry.children) state.fanoutParentOf.delete(child.childId);
    state.fanout.delete(topicId);
  }
  const parentId = state.fanoutParentOf.get(topicId);
  if (parentId !== undefined) unlink(state, parentId, topicId);
}

/** PATCH retention of a parent: the refusal when it could no longer hold a delay child's delay plus one hour. */
export function retentionRefusal(state: MetadataState, topic: TopicRecord, retentionMs: number): MetadataRefusal | undefined {
  const children = state.fanout.size === 0 ? undefined : state.fanout.get(topic.id)?.children;
  const delayMs = Math.max(0, ...(children ?? []).map((c) => c.delayMs ?? 0));
  return retentionHolds(retentionMs, delayMs) ? undefined : { id: 'fanoutDelayRetention', args: [topic.name, retentionMs, delayMs] };
}

/** PATCH schema of an attached child: its parent manages it (spec §3). */
export function childSchemaRefusal(state: MetadataState, topic: TopicRecord): MetadataRefusal | undefined {
  const parentId = state.fanoutParentOf.size === 0 ? undefined : state.fanoutParentOf.get(topic.id);
  if (parentId === undefined) return undefined;
  return { id: 'childSchemaManaged', args: [topic.name, parentNameOf(state, parentId)] };
}

/** The ids of a parent's children, in attach order (none for another topic). */
export function childIdsOf(state: MetadataState, parentId: string): string[] {
  const entry = state.fanout.size === 0 ? undefined : state.fanout.get(parentId);
  return entry === undefined ? [] : entry.children.map((c) => c.childId);
}

/** A parent grew: its children's attach points gain 0 for each new partition (no record of it predates the attach). */
export function parentGrown(state: MetadataState, parentId: string, partitions: number): void {
  const entry = state.fanout.size === 0 ? undefined : state.fanout.get(parentId);
  for (const child of entry?.children ?? []) {
    while (child.attachOffsets.length < partitions) child.attachOffsets.push(0);
  }
}
