// The schema side of the topic routes (spec §3 Schema version, §4 create, PATCH, get-topic, GET .../schema): what a
// `schema` field must be, the pool's check of a document (src/pool/schema_prepare_task.ts) turned into an answer or
// a change to propose, and the answers that show a history. Front thread; handlers/topics.ts calls it.
import { errors } from '../errors.js';
import type { SchemaChange, TopicRecord } from '../protocol/metadata_types.js';
import type { PreparedSchema } from '../schema/registration.js';
import { jsonType, type Reply } from './respond.js';
import type { RouteServices } from './services.js';

const prepareTaskFile = new URL('../pool/schema_prepare_task.js', import.meta.url).href;

/** The `schema` field: an object or true (spec §4); null is 400 (a schema cannot be removed). */
export function schemaField(body: Record<string, unknown>): unknown {
  const schema = body.schema;
  if (schema === undefined) return undefined;
  if (schema === null) throw errors.invalid('schema', 'must not be null (a schema cannot be removed)');
  if (schema !== true && (typeof schema !== 'object' || Array.isArray(schema))) throw errors.invalid('schema', 'must be a JSON object or true');
  return schema;
}

function prepare(s: RouteServices, document: unknown, current: string | null): Promise<PreparedSchema> {
  return s.workPool.run({ document, current }, { filename: prepareTaskFile }) as Promise<PreparedSchema>;
}

/** A create's version 1 as stored text, or its 400. */
export async function firstSchemaText(s: RouteServices, document: unknown): Promise<string> {
  const prepared = await prepare(s, document, null);
  if (prepared.kind === 'refused') throw errors.badRequest(prepared.refusal);
  if (prepared.kind !== 'register') throw new Error('a first schema version cannot be unchanged');
  return prepared.text;
}

/** The schema group of a PATCH: the change to propose, or null when the document registers nothing (identical or
 *  annotation-only, v3.1.0); throws the 400 or 409 it answers. schema_base_version is checked here first so a stale
 *  client learns 409 before 400, and again at apply, where it is authoritative. */
export async function schemaChangeFor(s: RouteServices, topic: TopicRecord, document: unknown, baseVersion: number | undefined): Promise<SchemaChange | null> {
  const current = s.replica.schemaOf(topic);
  const prepared = await prepare(s, document, current.document);
  if (prepared.kind === 'refused') throw errors.badRequest(prepared.refusal);
  if (prepared.kind === 'unchanged') return null;
  if (baseVersion !== undefined && baseVersion !== current.version) throw errors.schemaBaseVersionMismatch(current.version, baseVersion);
  if (!prepared.compatible) throw errors.badRequest(prepared.refusal);
  return { document: prepared.text, checkedAgainst: current.version, ...(baseVersion === undefined ? {} : { baseVersion }) };
}

/** get-topic's schema fields (spec §2): schema_version always, schema only with one. */
export function schemaFields(s: RouteServices, topic: TopicRecord): { schema_version: number; schema?: unknown } {
  const { version, document } = s.replica.schemaOf(topic);
  return document === null ? { schema_version: 0 } : { schema_version: version, schema: JSON.parse(document) as unknown };
}

/** GET /v1/topics/{topic}/schema (spec §2 Schema history): assembled from the stored texts, which are JSON already,
 *  so a history of megabytes is never parsed on the front thread. */
export function schemaHistoryReply(s: RouteServices, topic: TopicRecord): Reply {
  const documents = s.replica.state.schemas.get(topic.id)?.documents ?? [];
  const versions = documents.map((text, i) => `{"version":${i + 1},"schema":${text}}`).join(',');
  const body = `{"topic":${JSON.stringify(topic.name)},"version":${documents.length},"versions":[${versions}]}`;
  return { status: 200, body, contentType: jsonType };
}
