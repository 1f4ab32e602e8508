// Fan-out children routes (spec §4 Fan-out children, §3 attach rules, §5 access): attach, list with lag, detach;
// the attach part of a create with parent (topics.ts) and the refusal of a direct produce to a delay child
// (produce.ts). The rules are decided where the entry applies (src/metadata/fanout.ts); this module reads the
// attach point from the parent's partition owners and proposes. Front thread; routes.ts names these handlers.
import { randomBytes } from 'node:crypto';
import { limits } from '../../config.js';
import { errors, refusalError, type BrokerError } from '../../errors.js';
import type { FanoutAttach, MetadataCommand, TopicRecord, UserRecord } from '../../protocol/metadata_types.js';
import { linkOf } from '../../metadata/fanout.js';
import type { ApplyResult } from '../../metadata/state.js';
import { requireTopic } from '../access.js';
import { optionalInteger, parseJsonObject } from '../json_body.js';
import { jsonReply, type Reply } from '../respond.js';
import { routeTopic, type RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';
import { topicJson } from '../topic_view.js';
import { onRemote } from './later.js';
import { statsByPartition } from '../partition_stats.js';

/** Spec §4 attach body: child and delay_ms, or the remote child attach fields (v3.2.0, not built: 403/501 as
 *  later.onRemote answers). fanout_delay_ms is the create's field: here it is 400. */
const attachFields = ['child', 'delay_ms', 'remote', 'remote_topic', 'from', 'lanes', 'dry_run'] as const;
const remoteOnlyFields = ['remote_topic', 'from', 'lanes', 'dry_run'] as const;

/** Attempts of an attach whose topics were recreated under it (spec §4: 409 only twice in a row). */
const attachAttempts = 2;

/** delay_ms / fanout_delay_ms: 0 (an ordinary child) up to fanout_delay_ms_max (NOTES 14: over it 400). */
export function delayField(body: Record<string, unknown>, field: 'delay_ms' | 'fanout_delay_ms'): number | undefined {
  const max = limits.fanout_delay_ms_max;
  const delayMs = optionalInteger(body, field, 0, max, `must be an integer from 0 to ${max}`);
  return delayMs === 0 ? undefined : delayMs;
}

/** The parent's committed high watermark of every partition, asked of each owner (spec §1.9: copying starts at the
 *  attach). An owner that does not answer is 503: nothing is linked (spec §4 POST .../children). */
async function attachOffsetsOf(s: RouteServices, parent: TopicRecord): Promise<number[]> {
  const { stats } = await statsByPartition(s, parent, [...Array(parent.partitions).keys()]);
  return [...Array(parent.partitions).keys()].map((p) => {
    const stat = stats.get(p);
    if (stat === undefined) throw errors.attachOwnerUnreachable(parent.name, p);
    return stat.highWatermark;
  });
}

/** Reads the parent and its attach point, then proposes the command built from them for caller; a topic recreated
 *  between the read and the apply is read again once (spec §4: 409 when it happens twice in a row). */
export async function proposeAttach(s: RouteServices, caller: UserRecord | undefined, parentName: string, delayMs: number | undefined,
  command: (parent: TopicRecord, attach: FanoutAttach) => Promise<MetadataCommand>): Promise<ApplyResult & { ok: true }> {
  let refusal: BrokerError = errors.fanoutTopicChanged(parentName);
  for (let attempt = 1; attempt <= attachAttempts; attempt++) {
    const parent = await s.replica.topicForChange(parentName);
    const attach: FanoutAttach = {
      parent: parent.name, parentId: parent.id, epoch: randomBytes(8).toString('hex'), attachOffsets: await attachOffsetsOf(s, parent),
    };
    if (delayMs !== undefined) attach.delayMs = delayMs;
    const result = await s.replica.propose(await command(parent, attach), caller);
    if (result.ok) return result;
    refusal = refusalError(result.refusal);
    if (result.refusal.id !== 'fanoutTopicChanged') break;
  }
  throw refusal;
}

/** POST /v1/topics/{parent}/children. Spec §5: ownership (or admin) of both topics. */
export async function onAttach(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  requireTopic.manage(ctx.user, await s.replica.topicForChange(ctx.param(0)));
  const body = parseJsonObject(await ctx.body(), attachFields);
  if (body.remote !== undefined) return onRemote(ctx, s);
  for (const field of remoteOnlyFields) if (body[field] !== undefined) throw errors.invalid(field, 'only with remote');
  const childName = body.child;
  if (typeof childName !== 'string' || childName.length === 0) throw errors.invalid('child', 'required, a topic name');
  const delayMs = delayField(body, 'delay_ms');
  requireTopic.manage(ctx.user, await s.replica.topicForChange(childName));
  const result = await proposeAttach(s, ctx.user, ctx.param(0), delayMs, async (_parent, attach) => {
    const child = await s.replica.topicForChange(childName);
    requireTopic.manage(ctx.user, child);
    return { type: 'fanout.attach', child: child.name, childId: child.id, attach };
  });
  return jsonReply(200, topicJson(s.replica.state, result.topic!, true));
}

/** GET /v1/topics/{parent}/children (the server checked a grant on the parent, or ownership). A child's lag is the
 *  parent's committed records past its copy cursor, per partition (the owner reports its cursors with the
 *  statistics; a partition whose cursor the owner has not set up yet counts from the attach point); an owner that does
 *  not answer leaves its partitions out (a lower bound, lag_complete false). */
export async function onListChildren(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const parent = routeTopic(ctx);
  const links = s.replica.state.fanout.get(parent.id)?.children ?? [];
  if (links.length === 0) return jsonReply(200, { parent: parent.name, children: [] });
  const { stats, complete } = await statsByPartition(s, parent, [...Array(parent.partitions).keys()]);
  const children = links.map((link) => {
    let lag = 0;
    for (const [p, stat] of stats) {
      const cursor = stat.fanoutCursors?.find((c) => c.childId === link.childId && c.epoch === link.epoch);
      lag += Math.max(0, stat.highWatermark - (cursor?.offset ?? link.attachOffsets[p] ?? 0));
    }
    return { name: link.child, delay_ms: link.delayMs ?? 0, lag_messages: lag, lag_complete: complete };
  });
  return jsonReply(200, { parent: parent.name, children });
}

/** DELETE /v1/topics/{parent}/children/{child}. Spec §5: ownership of either topic (or admin). */
export async function onDetach(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const parent = await s.replica.topicForChange(ctx.param(0));
  const child = await s.replica.topicForChange(ctx.param(1));
  requireTopic.detach(ctx.user, parent, child);
  if (s.replica.state.fanoutParentOf.get(child.id) !== parent.id) throw errors.notLinked(parent.name, child.name);
  const result = await s.replica.propose({ type: 'fanout.detach', parent: parent.name, parentId: parent.id, child: child.name, childId: child.id }, ctx.user);
  if (!result.ok) throw refusalError(result.refusal);
  return { status: 204 };
}

/** Spec §3, §4 Produce: a delay child takes no direct produce (409, counted as reason delayed_child). */
export function directProduceRefusal(s: RouteServices, topic: TopicRecord): BrokerError | null {
  if (s.replica.state.fanoutParentOf.size === 0) return null;
  if (linkOf(s.replica.state, topic.id)?.link.delayMs === undefined) return null;
  s.metrics.countRejection(topic.name, 'delayed_child');
  return errors.produceToDelayChild(topic.name);
}
