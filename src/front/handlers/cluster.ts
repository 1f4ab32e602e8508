// Cluster routes (spec §4 Cluster, admin only, reads included): the member list, answered from this node's
// metadata thread (its replica and the leader's liveness view) plus, with detail=true, each member's own report
// (member_report.ts), and forget of a dead member, which the metadata
// thread runs on the leader with the 409 rules. Front thread; routes.ts names these handlers (admin only, checked
// by server.ts first).
import { limits } from '../../config.js';
import { errors, refusalError } from '../../errors.js';
import type { MemberView } from '../../protocol/thread_messages.js';
import { audited } from '../audit.js';
import { parseJsonObject } from '../json_body.js';
import { localMemberReport, memberReportJson, memberReports } from '../member_report.js';
import { recordsOnlyOn } from '../cluster_control.js';
import { decommissionReasons, neverCompleting, type BlockedReason } from '../decommission_reasons.js';
import { decommissionPlan, reassignPlan, rebalancePlan } from '../../metadata/move_plan.js';
import { movesOff } from '../../metadata/moves.js';
import type { MemberReportView } from '../../protocol/data_messages.js';
import { jsonReply, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';

/** Spec §2 Cluster member; the spec does not show the field names, docs/decisions.md records these. */
function memberJson(s: RouteServices, member: MemberView, views: readonly MemberView[], report: MemberReportView | string | undefined): Record<string, unknown> {
  const state = s.replica.state;
  const decommission = state.members.get(member.id)?.decommission;
  const reasons = decommission === undefined ? [] : decommissionReasons({
    state, id: member.id, views, report, acceptDataLoss: decommission.acceptDataLoss, movesMaxPerNode: movesMaxPerNode(s),
  });
  return {
    id: String(member.id),
    api_address: member.apiAddress,
    liveness: member.alive ? 'alive' : 'dead',
    decommissioning: decommission !== undefined,
    partitions_owned: member.partitionsOwned,
    partitions_moving_off: movesOff(state, member.id),
    raft_voter: member.voter,
    raft_learner: member.learner,
    raft_leader: member.leader,
    seconds_since_heartbeat: member.heartbeatAgeSeconds,
    decommission_blocked_reasons: reasons,
  };
}

function movesMaxPerNode(s: RouteServices): number {
  return s.config['cluster.moves_max_per_node'];
}

export async function onListMembers(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const detailText = ctx.query.get('detail');
  if (detailText !== undefined && detailText !== 'true' && detailText !== 'false') throw errors.invalid('detail', 'must be true or false');
  const members = await s.replica.members();
  const reports = detailText === 'true' ? await memberReports(s, members.map((member) => member.id)) : null;
  return jsonReply(200, {
    members: members.map((member) => {
      const report = reports?.get(member.id) ?? lastReport(s, member.id);
      const json = memberJson(s, member, members, report);
      if (reports === null) return json;
      if (typeof report === 'string') json.status_error = report;
      else if (report !== undefined) Object.assign(json, memberReportJson(report));
      return json;
    }),
  });
}

/** The member's report as the cluster control last read it (every 5 s); this node's own is made now. */
function lastReport(s: RouteServices, id: number): MemberReportView | string | undefined {
  return id === s.nodeId ? localMemberReport(s) : s.cluster.reports.get(id)?.report;
}

/** A member id in the path: an integer from 1 to node_id_max. */
function pathMemberId(ctx: RequestContext): number {
  const idText = ctx.param(0);
  const id = /^\d{1,5}$/.test(idText) ? Number(idText) : NaN;
  if (!(id >= 1 && id <= limits.node_id_max)) throw errors.invalid('id', `must be a node id (an integer from 1 to ${limits.node_id_max})`);
  return id;
}

/** A boolean option given in the query or the JSON body (NOTES 16: dry_run either way). */
function flag(ctx: RequestContext, body: Record<string, unknown>, name: string): boolean {
  const fromQuery = ctx.query.get(name);
  if (fromQuery !== undefined && fromQuery !== 'true' && fromQuery !== 'false') throw errors.invalid(name, 'must be true or false');
  const fromBody = body[name];
  if (fromBody !== undefined && typeof fromBody !== 'boolean') throw errors.invalid(name, 'must be a boolean');
  return fromQuery === 'true' || fromBody === true;
}

async function jsonBody(ctx: RequestContext, allowed: readonly string[]): Promise<Record<string, unknown>> {
  const body = await ctx.body();
  return body.byteLength === 0 ? {} : parseJsonObject(body, allowed);
}

export async function onDecommission(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const id = pathMemberId(ctx);
  const body = await jsonBody(ctx, ['dry_run', 'accept_data_loss']);
  const dryRun = flag(ctx, body, 'dry_run');
  const acceptDataLoss = flag(ctx, body, 'accept_data_loss');
  if (dryRun) return decommissionDryRun(s, id, acceptDataLoss);
  return audited(s.log, ctx, 'cluster.decommission', String(id), async () => {
    const { views, view, reasons } = await decommissionCheck(s, id, acceptDataLoss);
    const never = neverCompleting(reasons);
    if (never.length > 0) {
      return jsonReply(409, { error: errors.decommissionNeverCompletes(id, never.map((r) => r.code).join(', ')).message, reasons: never });
    }
    const lost = acceptDataLoss ? recordsOnlyOn(s.cluster, s.replica.state, id) : 0;
    const result = await s.replica.propose({ type: 'member.decommission', id, startedAtMs: Date.now(), acceptDataLoss }, ctx.user);
    if (!result.ok) throw refusalError(result.refusal);
    if (acceptDataLoss) s.log.warn({ member: id, records: lost }, 'decommission with accept_data_loss: records only that member held are lost');
    const answer: Record<string, unknown> = { member: memberJson(s, view, views, lastReport(s, id)) };
    if (acceptDataLoss) answer.records_only_on_member = lost;
    return jsonReply(202, answer);
  });
}

/** The member's view and every reason that blocks its decommission now; 404 for an unknown member. */
async function decommissionCheck(s: RouteServices, id: number, acceptDataLoss: boolean) {
  const views = await s.replica.members();
  const view = views.find((v) => v.id === id);
  if (view === undefined || !s.replica.state.members.has(id)) throw errors.memberNotFound(id);
  const reasons = decommissionReasons({ state: s.replica.state, id, views, report: lastReport(s, id), acceptDataLoss, movesMaxPerNode: movesMaxPerNode(s) });
  return { views, view, reasons };
}

async function decommissionDryRun(s: RouteServices, id: number, acceptDataLoss: boolean): Promise<Reply> {
  const { views, view, reasons } = await decommissionCheck(s, id, acceptDataLoss);
  const live = views.filter((v) => v.alive).map((v) => v.id);
  const giveAway = !view.alive && acceptDataLoss;
  const moves = giveAway
    ? reassignPlan(s.replica.state, id, live).map(({ topic, partition, to }) => ({ topic: topic.name, partition, source: String(id), destination: String(to), copy: false }))
    : decommissionPlan(s.replica.state, id, live, Date.now()).moves.map((m) => ({ topic: m.topic, partition: m.partition, source: String(m.source), destination: String(m.destination), copy: true }));
  const answer: Record<string, unknown> = { member: memberJson(s, view, views, lastReport(s, id)), moves, reasons };
  if (acceptDataLoss) answer.records_only_on_member = recordsOnlyOn(s.cluster, s.replica.state, id);
  return jsonReply(200, answer);
}

export async function onDecommissionCancel(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const id = pathMemberId(ctx);
  await jsonBody(ctx, []);
  return audited(s.log, ctx, 'cluster.decommission.cancel', String(id), async () => {
    const result = await s.replica.propose({ type: 'member.decommissionCancel', id }, ctx.user);
    if (!result.ok) throw refusalError(result.refusal);
    const views = await s.replica.members();
    const view = views.find((v) => v.id === id);
    if (view === undefined) throw errors.memberNotFound(id);
    return jsonReply(200, { member: memberJson(s, view, views, lastReport(s, id)) });
  });
}

/** Beyond the contract (NOTES 16): moves until every live member owns within one partition of the mean. */
export async function onRebalance(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const body = await jsonBody(ctx, ['dry_run']);
  const dryRun = flag(ctx, body, 'dry_run');
  const views = await s.replica.members();
  const plan = rebalancePlan(s.replica.state, views.filter((v) => v.alive).map((v) => v.id), Date.now());
  const moves = plan.moves.map((m) => ({ topic: m.topic, partition: m.partition, source: String(m.source), destination: String(m.destination) }));
  if (dryRun || plan.moves.length === 0) return jsonReply(dryRun ? 200 : 202, { moves });
  const result = await s.replica.propose({ type: 'move.start', moves: plan.moves }, ctx.user);
  if (!result.ok) throw refusalError(result.refusal);
  return jsonReply(202, { moves });
}

/** Spec §3: a live member being decommissioned is removable only once its unanswered produces and the records it
 *  accepted but did not hand over are 0, as its own report tells (read now); null when that holds or forget's other
 *  rules decide (a dead member, one not being decommissioned). */
async function undrainedReason(s: RouteServices, id: number): Promise<BlockedReason | null> {
  if (s.replica.state.members.get(id)?.decommission === undefined) return null;
  if ((await s.replica.members()).find((view) => view.id === id)?.alive !== true) return null;
  const report = (await s.cluster.reportsOf([id])).get(id);
  if (typeof report === 'string') return { code: 'node_status_unavailable', message: report };
  if (report === undefined || (report.produceRequestsInFlight === 0 && report.ingressRecordsNotHandedOff === 0)) return null;
  return { code: 'dispatch_backlog', message: `${report.produceRequestsInFlight} produce requests unanswered and ${report.ingressRecordsNotHandedOff} accepted records not yet held by their owners` };
}

export async function onForget(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const id = pathMemberId(ctx);
  // The route takes no fields: an empty body or {} (strict bodies, spec §2).
  const body = await ctx.body();
  if (body.byteLength > 0) parseJsonObject(body, []);
  return audited(s.log, ctx, 'cluster.forget', String(id), async () => {
    const undrained = await undrainedReason(s, id);
    if (undrained !== null) return jsonReply(409, { error: errors.decommissionUndrained(id).message, reasons: [undrained] });
    const answer = await s.replica.forget(id);
    if (answer.ok) return { status: 204 };
    throw refusalError(answer.refusal);
  });
}
