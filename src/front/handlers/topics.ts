// Topic routes (spec §4 Topics): create, list, get with partition statistics, PATCH, DELETE and the schema
// history. Every change is proposed to the metadata log; the answer is the result of applying it. Front thread;
// routes.ts names these handlers, and server.ts calls them after the checks the route table asks for.
import { randomBytes } from 'node:crypto';
import { limits } from '../../config.js';
import { BrokerError, errors, refusalError } from '../../errors.js';
import type { FanoutAttach, MetadataCommand, TopicChanges, TopicCreateRecord, TopicRecord, UserRecord } from '../../protocol/metadata_types.js';
import { childSchemaRefusal } from '../../metadata/fanout.js';
import type { ApplyResult } from '../../metadata/state.js';
import type { MemberView } from '../../protocol/thread_messages.js';
import { canReadTopic, requireTopic } from '../access.js';
import { optionalInteger, optionalString, parseJsonObject } from '../json_body.js';
import { statsByPartition } from '../partition_stats.js';
import { jsonReply, type Reply } from '../respond.js';
import { routeTopic, type RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';
import { firstSchemaText, schemaChangeFor, schemaField, schemaFields, schemaHistoryReply } from '../topic_schema.js';
import { partitionStatsJson, placeholderStatsJson, topicJson } from '../topic_view.js';
import { delayField, proposeAttach } from './children.js';

const topicNamePattern = /^[A-Za-z0-9._-]+$/;
const createFields = ['name', 'partitions', 'retention_ms', 'visibility_timeout_ms', 'max_in_flight_per_partition',
  'max_acked_ahead_per_partition', 'schema', 'parent', 'fanout_delay_ms', 'owner'] as const;
const patchFields = ['retention_ms', 'max_in_flight_per_partition', 'max_acked_ahead_per_partition', 'partitions',
  'schema', 'schema_base_version', 'visibility_timeout_ms'] as const;

function retention(body: Record<string, unknown>): number | undefined {
  const value = body.retention_ms;
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || (value !== 0 && value < limits.retention_ms_min)) {
    throw errors.invalid('retention_ms', `must be 0 (keep forever) or an integer of at least ${limits.retention_ms_min}`);
  }
  return value;
}

function cap(body: Record<string, unknown>, field: string, fallback: number): number | undefined {
  const max = limits.per_partition_cap_max;
  const value = optionalInteger(body, field, 0, max, `must be an integer from 0 (server default) to ${max}`);
  return value === 0 ? fallback : value;
}

/** Spec §4 POST /v1/topics: the name's rules, then the create grant on it (so a caller without it learns no more). */
function checkedName(ctx: RequestContext, body: Record<string, unknown>): string {
  const name = body.name;
  if (typeof name !== 'string' || name.length === 0) throw errors.invalid('name', 'required, a string of 1 to 200 characters');
  if (name.length > limits.topic_name_chars_max) throw errors.invalid('name', `at most ${limits.topic_name_chars_max} characters`);
  if (!topicNamePattern.test(name)) throw errors.invalid('name', 'only characters A-Z a-z 0-9 . _ - are allowed');
  if (name === '.' || name === '..') throw errors.invalid('name', 'must not be . or ..');
  requireTopic.create(ctx.user, name);
  return name;
}

/** The topic record a create body asks for (the leader's shell fills its owners). */
function topicToCreate(ctx: RequestContext, s: RouteServices, name: string, body: Record<string, unknown>): TopicCreateRecord {
  const partitionsMax = s.config['topics.partitions_max'];
  const partitions = optionalInteger(body, 'partitions', 0, partitionsMax, `must be an integer from ${limits.partitions_min} to ${partitionsMax}`);
  if (partitions !== undefined && partitions !== 0 && partitions < limits.partitions_min) {
    throw errors.invalid('partitions', `must be an integer from ${limits.partitions_min} to ${partitionsMax}`);
  }
  const retentionMs = retention(body) ?? s.config['topics.retention_ms_default'];
  const visibilityRule = `must be 0 (default) or an integer from ${limits.visibility_timeout_ms_min} to ${limits.visibility_timeout_ms_max}`;
  const visibility = optionalInteger(body, 'visibility_timeout_ms', 0, limits.visibility_timeout_ms_max, visibilityRule);
  if (visibility !== undefined && visibility !== 0 && visibility < limits.visibility_timeout_ms_min) {
    throw errors.invalid('visibility_timeout_ms', visibilityRule);
  }
  const maxInFlight = cap(body, 'max_in_flight_per_partition', limits.max_in_flight_per_partition_default);
  const maxAckedAhead = cap(body, 'max_acked_ahead_per_partition', limits.max_acked_ahead_per_partition_default);
  schemaField(body);
  optionalString(body, 'parent');
  delayField(body, 'fanout_delay_ms');
  if (body.fanout_delay_ms !== undefined && body.parent === undefined) throw errors.invalid('fanout_delay_ms', 'only with parent');
  return {
    name,
    id: randomBytes(8).toString('hex'),
    // Spec §4: with parent the default is the parent's count (set by onCreateTopic once it read the parent).
    partitions: partitions || 0,
    retentionMs,
    visibilityTimeoutMs: visibility || limits.visibility_timeout_ms_default,
    maxInFlightPerPartition: maxInFlight ?? limits.max_in_flight_per_partition_default,
    maxAckedAheadPerPartition: maxAckedAhead ?? limits.max_acked_ahead_per_partition_default,
    createdAtSec: Math.floor(Date.now() / 1000),
    // Placed by the leader's shell (src/metadata/placement.ts fillOwners) before it proposes.
    owners: [],
  };
}

export async function onCreateTopic(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const body = parseJsonObject(await ctx.body(), createFields);
  const topic = topicToCreate(ctx, s, checkedName(ctx, body), body);
  if (ctx.user !== undefined) topic.owner = ctx.user.username;
  const parentName = body.parent as string | undefined;
  // Spec §4: a missing parent is 404 whatever else the request holds; then the right on it (ownership or admin).
  const parent = parentName === undefined ? undefined : await parentForCreate(ctx, s, parentName);
  if (topic.partitions === 0) topic.partitions = parent?.partitions ?? limits.partitions_min;
  const document = schemaField(body);
  const schema = document === undefined ? undefined : await firstSchemaText(s, document);
  const create = (attach?: FanoutAttach): MetadataCommand =>
    ({ type: 'topic.create', topic, ...(schema === undefined ? {} : { schema }), ...(attach === undefined ? {} : { attach }) });
  let result: ApplyResult & { ok: true };
  if (parent === undefined) {
    const proposed = await s.replica.propose(create(), ctx.user);
    if (!proposed.ok) throw refusalError(proposed.refusal);
    result = proposed;
  } else {
    // One entry creates the topic and attaches it (spec §4: a failed attach part undoes the create).
    result = await proposeAttach(s, ctx.user, parent.name, delayField(body, 'fanout_delay_ms'), async (_parent, attach) => create(attach));
  }
  return jsonReply(201, { ...topicJson(s.replica.state, result.topic!, parent !== undefined), ...schemaFields(s, result.topic!) });
}

async function parentForCreate(ctx: RequestContext, s: RouteServices, name: string): Promise<TopicRecord> {
  let parent: TopicRecord;
  try {
    parent = await s.replica.topicForChange(name);
  } catch (error) {
    if (error instanceof BrokerError && error.status === 404) throw errors.parentNotFound(name);
    throw error;
  }
  requireTopic.createChild(ctx.user, parent);
  return parent;
}

export function onListTopics(ctx: RequestContext, s: RouteServices): Reply {
  const limitText = ctx.query.get('limit');
  let limit: number = limits.list_topics_limit_default;
  if (limitText !== undefined) {
    limit = /^\d+$/.test(limitText) ? Number(limitText) : NaN;
    if (!Number.isSafeInteger(limit) || limit < 1) throw errors.invalid('limit', 'must be a positive integer');
    limit = Math.min(limit, limits.list_topics_limit_max);
  }
  const token = ctx.query.get('page_token');
  let after: string | null = null;
  if (token !== undefined && token !== '') {
    after = Buffer.from(token, 'base64url').toString('utf8');
    if (!topicNamePattern.test(after) || Buffer.from(after).toString('base64url') !== token) {
      throw errors.invalid('page_token', 'not a page token from a previous listing');
    }
  }
  const topics = s.replica.state.topics;
  // Byte order of the name (NOTES 6): names are ASCII, so code-unit order is byte order.
  const names = [...topics.keys()].filter((n) => after === null || n > after).sort(byteOrder);
  const page = names.slice(0, limit);
  const nextPageToken = names.length > limit ? Buffer.from(page[page.length - 1]!).toString('base64url') : '';
  // Spec §4: unreadable topics are removed after the page is cut, so a page may be short while
  // next_page_token is set.
  const readable = page.map((n) => topics.get(n)!).filter((topic) => canReadTopic(ctx.user, topic)).map((topic) => topicJson(s.replica.state, topic, true));
  return jsonReply(200, { topics: readable, next_page_token: nextPageToken });
}

export async function onGetTopic(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const topic = routeTopic(ctx);
  const only = ctx.query.integer('partition', 0, topic.partitions - 1,
    `not a partition of topic ${topic.name} (0 to ${topic.partitions - 1})`);
  const partitions = only === undefined ? [...Array(topic.partitions).keys()] : [only];
  // Partitions owned by another node are asked of their owner; one that does not answer is a placeholder (spec §4
  // get-topic, v3.1.0 partial answers).
  const { stats } = await statsByPartition(s, topic, partitions);
  const missing = partitions.filter((p) => !stats.has(p));
  const members = missing.length === 0 ? new Map<number, MemberView>() : new Map((await s.replica.members()).map((m) => [m.id, m]));
  const statsJson = partitions.map((p) => {
    const owner = topic.owners[p];
    const own = stats.get(p);
    if (own !== undefined) return partitionStatsJson(own, String(owner));
    if (owner === undefined) return placeholderStatsJson(p, '', 'unassigned');
    const member = members.get(owner);
    // No heartbeat age: this node has no liveness view of the owner yet (spec §2: unknown).
    const liveness = member === undefined || member.heartbeatAgeSeconds === null ? 'unknown' : member.alive ? 'unreachable' : 'dead';
    return placeholderStatsJson(p, String(owner), liveness);
  });
  return jsonReply(200, {
    ...topicJson(s.replica.state, topic, true),
    ...schemaFields(s, topic),
    partition_stats: statsJson,
    ...(missing.length > 0 ? { partial: true } : {}),
  });
}

/** The groups of a PATCH body up to the first that fails, and that failure (spec §4 PATCH: groups apply one at a
 *  time in order, retention, caps, partitions, schema, with no transaction, so the groups before a failing one are
 *  still proposed and stay applied). */
function topicChanges(s: RouteServices, topic: TopicRecord, body: Record<string, unknown>): { changes: TopicChanges; refusal?: unknown } {
  const changes: TopicChanges = {};
  try {
    const retentionMs = retention(body);
    if (retentionMs !== undefined) changes.retentionMs = retentionMs;
    const maxInFlight = cap(body, 'max_in_flight_per_partition', limits.max_in_flight_per_partition_default);
    const maxAckedAhead = cap(body, 'max_acked_ahead_per_partition', limits.max_acked_ahead_per_partition_default);
    if (maxInFlight !== undefined) changes.maxInFlightPerPartition = maxInFlight;
    if (maxAckedAhead !== undefined) changes.maxAckedAheadPerPartition = maxAckedAhead;
    const partitionsMax = s.config['topics.partitions_max'];
    const partitions = optionalInteger(body, 'partitions', 1, partitionsMax, `must be larger than the current count and at most ${partitionsMax}`);
    if (partitions !== undefined && partitions <= topic.partitions) throw errors.partitionsNotGrown(topic.partitions);
    if (partitions !== undefined) changes.partitions = partitions;
    schemaField(body);
    optionalInteger(body, 'schema_base_version', 0, Number.MAX_SAFE_INTEGER);
    if (body.schema_base_version !== undefined && body.schema === undefined) throw errors.invalid('schema_base_version', 'only with schema');
  } catch (refusal) {
    return { changes, refusal };
  }
  return { changes };
}

export async function onPatchTopic(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const topic = await s.replica.topicForChange(ctx.param(0));
  requireTopic.manage(ctx.user, topic);
  const body = parseJsonObject(await ctx.body(), patchFields);
  if (Object.keys(body).length === 0) throw errors.badRequest('body: send at least one field');
  if (body.visibility_timeout_ms !== undefined) throw errors.invalid('visibility_timeout_ms', 'cannot be changed after creation');
  const { changes, refusal } = topicChanges(s, topic, body);
  // The schema group comes last: checked only when every earlier group passed, proposed in the same entry.
  let schemaRefusal: unknown;
  if (refusal === undefined && body.schema !== undefined) {
    const baseVersion = body.schema_base_version as number | undefined;
    // Spec §3: while attached the parent manages the child's schema: 409 before any compatibility work.
    const managed = childSchemaRefusal(s.replica.state, topic);
    try {
      if (managed !== undefined) throw refusalError(managed);
      const change = await schemaChangeFor(s, topic, body.schema, baseVersion);
      if (change !== null) changes.schema = change;
    } catch (error) {
      schemaRefusal = error;
    }
  }
  let updated = topic;
  if (Object.keys(changes).length > 0) updated = await proposeChanges(s, ctx.user, topic, changes);
  if (refusal !== undefined) throw refusal;
  if (schemaRefusal !== undefined) throw schemaRefusal;
  return jsonReply(200, { ...topicJson(s.replica.state, updated, true), ...schemaFields(s, updated) });
}

/** Proposes a PATCH's groups. A schema version registered by another request between the compatibility proof and
 *  the apply refuses only the schema group (the others stay applied): it is proved again against the new current
 *  version and proposed once more; a second race answers 409 (spec §7: changed since read, twice in a row). */
async function proposeChanges(s: RouteServices, caller: UserRecord | undefined, topic: TopicRecord, changes: TopicChanges): Promise<TopicRecord> {
  const result = await s.replica.propose({ type: 'topic.update', name: topic.name, id: topic.id, changes }, caller);
  if (result.ok) return result.topic!;
  if (result.refusal.id !== 'schemaChangedUnderRequest' || changes.schema === undefined) throw refusalError(result.refusal);
  const latest = s.replica.state.topics.get(topic.name) ?? topic;
  const { baseVersion } = changes.schema;
  const again = await schemaChangeFor(s, latest, JSON.parse(changes.schema.document), baseVersion);
  if (again === null) return latest;
  const retried = await s.replica.propose({ type: 'topic.update', name: topic.name, id: topic.id, changes: { schema: again } }, caller);
  if (!retried.ok) throw refusalError(retried.refusal);
  return retried.topic!;
}

export async function onDeleteTopic(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const topic = await s.replica.topicForChange(ctx.param(0));
  requireTopic.manage(ctx.user, topic);
  const force = ctx.query.get('force');
  if (force !== undefined && force !== 'true' && force !== 'false') throw errors.invalid('force', 'must be true or false');
  const result = await s.replica.propose({ type: 'topic.delete', name: topic.name, id: topic.id }, ctx.user);
  if (!result.ok) throw refusalError(result.refusal);
  return { status: 204 };
}

export function onGetSchema(ctx: RequestContext, s: RouteServices): Reply {
  return schemaHistoryReply(s, routeTopic(ctx));
}

function byteOrder(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
