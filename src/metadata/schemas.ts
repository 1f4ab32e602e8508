// Schema histories in the metadata state machine (spec §2 Schema history, §3 Schema version, §8 limits): version 1
// with a topic's create, version N+1 with the schema group of a PATCH, the history gone with its topic. The front
// proved the document valid and compatible before proposing (src/schema/); this module only re-checks what could
// have changed since: the current version and the budgets. Pure; runs wherever applyCommand runs.

import { limits } from '../config.js';
import type { MetadataRefusal } from '../errors.js';
import type { MetadataState, SchemaChange, SchemaHistory } from '../protocol/metadata_types.js';

/** The refusal a new document of these bytes meets in this history, if any (spec §8, §7 409). copies: the
 *  children that store the same version (spec §8: each child's copy counted against the cluster budget). */
function budgetRefusal(state: MetadataState, history: SchemaHistory | undefined, documentBytes: number, copies = 0): MetadataRefusal | undefined {
  const versions = history?.documents.length ?? 0;
  if (versions >= limits.schema_versions_max) return { id: 'schemaVersionsFull', args: [limits.schema_versions_max] };
  if ((history?.bytes ?? 0) + documentBytes > limits.schema_topic_history_bytes_max) {
    return { id: 'schemaTopicBudget', args: [limits.schema_topic_history_bytes_max] };
  }
  if (schemaBytesInCluster(state) + documentBytes * (1 + copies) > limits.schema_cluster_history_bytes_max) {
    return { id: 'schemaClusterBudget', args: [limits.schema_cluster_history_bytes_max] };
  }
  return undefined;
}

export function schemaBytesInCluster(state: MetadataState): number {
  let bytes = 0;
  for (const history of state.schemas.values()) bytes += history.bytes;
  return bytes;
}

/** Checks a create's version 1; the caller registers it with registerFirstSchema once the topic itself is in. */
export function firstSchemaRefusal(state: MetadataState, document: string): MetadataRefusal | undefined {
  return budgetRefusal(state, undefined, Buffer.byteLength(document));
}

export function registerFirstSchema(state: MetadataState, topicId: string, document: string): void {
  state.schemas.set(topicId, { documents: [document], bytes: Buffer.byteLength(document) });
}

/** The schema group of a PATCH: undefined when version N+1 was registered, else the refusal. childIds: a parent's
 *  children, whose histories equal the parent's while attached and take the same version (spec §3: the parent
 *  manages them). */
export function applySchemaChange(state: MetadataState, name: string, topicId: string, change: SchemaChange,
  childIds: readonly string[] = []): MetadataRefusal | undefined {
  const history = state.schemas.get(topicId);
  const current = history?.documents.length ?? 0;
  if (change.baseVersion !== undefined && change.baseVersion !== current) {
    return { id: 'schemaBaseVersionMismatch', args: [current, change.baseVersion] };
  }
  if (change.checkedAgainst !== current) return { id: 'schemaChangedUnderRequest', args: [name] };
  const documentBytes = Buffer.byteLength(change.document);
  const refused = budgetRefusal(state, history, documentBytes, childIds.length);
  if (refused !== undefined) return refused;
  for (const id of [topicId, ...childIds]) appendVersion(state, id, change.document, documentBytes);
  return undefined;
}

function appendVersion(state: MetadataState, topicId: string, document: string, documentBytes: number): void {
  const history = state.schemas.get(topicId);
  if (history === undefined) state.schemas.set(topicId, { documents: [document], bytes: documentBytes });
  else {
    history.documents.push(document);
    history.bytes += documentBytes;
  }
}

export function deleteSchemaHistory(state: MetadataState, topicId: string): void {
  state.schemas.delete(topicId);
}

/** A topic without a schema: one shared answer, so a produce to it allocates nothing for the question. */
const noSchema: { readonly version: number; readonly document: string | null } = Object.freeze({ version: 0, document: null });

/** The current version and its document, or version 0 and null without a schema. */
export function currentSchemaOf(state: MetadataState, topicId: string): { readonly version: number; readonly document: string | null } {
  const documents = state.schemas.size === 0 ? undefined : state.schemas.get(topicId)?.documents;
  if (documents === undefined || documents.length === 0) return noSchema;
  return { version: documents.length, document: documents[documents.length - 1]! };
}
