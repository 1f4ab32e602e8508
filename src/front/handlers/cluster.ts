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
import { memberReportJson, memberReports } from '../member_report.js';
import { jsonReply, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';

/** Spec §2 Cluster member; the spec does not show the field names, docs/decisions.md records these. */
function memberJson(member: MemberView): Record<string, unknown> {
  return {
    id: String(member.id),
    api_address: member.apiAddress,
    liveness: member.alive ? 'alive' : 'dead',
    decommissioning: false,
    partitions_owned: member.partitionsOwned,
    partitions_moving_off: 0,
    raft_voter: member.voter,
    raft_learner: member.learner,
    raft_leader: member.leader,
    seconds_since_heartbeat: member.heartbeatAgeSeconds,
    decommission_blocked_reasons: [],
  };
}

export async function onListMembers(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const detailText = ctx.query.get('detail');
  if (detailText !== undefined && detailText !== 'true' && detailText !== 'false') throw errors.invalid('detail', 'must be true or false');
  const members = await s.replica.members();
  const reports = detailText === 'true' ? await memberReports(s, members.map((member) => member.id)) : null;
  return jsonReply(200, {
    members: members.map((member) => {
      const json = memberJson(member);
      const report = reports?.get(member.id);
      if (typeof report === 'string') json.status_error = report;
      else if (report !== undefined) Object.assign(json, memberReportJson(report));
      return json;
    }),
  });
}

export async function onForget(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const idText = ctx.param(0);
  const id = /^\d{1,5}$/.test(idText) ? Number(idText) : NaN;
  if (!(id >= 1 && id <= limits.node_id_max)) throw errors.invalid('id', `must be a node id (an integer from 1 to ${limits.node_id_max})`);
  // The route takes no fields: an empty body or {} (strict bodies, spec §2).
  const body = await ctx.body();
  if (body.byteLength > 0) parseJsonObject(body, []);
  return audited(s.log, ctx, 'cluster.forget', String(id), async () => {
    const answer = await s.replica.forget(id);
    if (answer.ok) return { status: 204 };
    throw refusalError(answer.refusal);
  });
}
