// What blocks a decommission (spec §2 Cluster member: decommission_blocked_reasons; §7 409 "could never complete
// safely"), from the metadata replica, the members' liveness and Raft flags and, when read, the member's own report.
// The 409 answers a decommission that could never complete: the remaining members could not keep a quorum, none
// could take the partitions. The rest show while one runs. Front thread; handlers/cluster.ts and metrics read it.
import { receiversOf } from '../metadata/move_plan.js';
import { partitionsOwnedBy } from '../metadata/placement.js';
import { movesOff } from '../metadata/moves.js';
import type { MemberReportView } from '../protocol/data_messages.js';
import type { MetadataState } from '../protocol/metadata_types.js';
import type { MemberView } from '../protocol/thread_messages.js';

export type BlockedCode = 'below_min_voters' | 'no_healthy_majority' | 'move_target' | 'dispatch_backlog' | 'node_status_unavailable'
  | 'no_receivers' | 'owner_dead' | 'move_budget_full' | 'leader_transfer';

export interface BlockedReason {
  code: BlockedCode;
  message: string;
}

/** A cluster keeps at least this many live voters that are not being decommissioned: with one, a lost node loses all. */
export const minRemainingMembers = 2;

/** The codes that make a decommission impossible to complete safely: 409 before anything changes. */
const neverCompletes: ReadonlySet<BlockedCode> = new Set(['below_min_voters', 'no_healthy_majority', 'no_receivers']);

export function neverCompleting(reasons: readonly BlockedReason[]): BlockedReason[] {
  return reasons.filter((reason) => neverCompletes.has(reason.code));
}

export interface ReasonInput {
  state: MetadataState;
  id: number;
  views: readonly MemberView[];
  /** The member's report as last read, or why it could not be read; undefined when not asked. */
  report: MemberReportView | string | undefined;
  acceptDataLoss: boolean;
  movesMaxPerNode: number;
}

/** Every reason a decommission of member id is (or would be) blocked now. */
export function decommissionReasons(input: ReasonInput): BlockedReason[] {
  return [...clusterReasons(input), ...memberReasons(input)];
}

function clusterReasons({ state, id, views }: ReasonInput): BlockedReason[] {
  const reasons: BlockedReason[] = [];
  // Live voters that stay: a dead one keeps no quorum after the member is forgotten.
  const staying = views.filter((view) => view.id !== id && view.voter && view.alive && state.members.get(view.id)?.decommission === undefined).length;
  if (staying < minRemainingMembers) {
    reasons.push({ code: 'below_min_voters', message: `${staying} live voters would remain; a cluster keeps at least ${minRemainingMembers}` });
  }
  const voters = views.filter((view) => view.voter);
  const aliveVoters = voters.filter((view) => view.alive).length;
  if (aliveVoters * 2 <= voters.length) {
    reasons.push({ code: 'no_healthy_majority', message: `${aliveVoters} of ${voters.length} voters are alive` });
  }
  const receivers = receiversOf(state, views.filter((view) => view.alive).map((view) => view.id)).filter((r) => r !== id);
  if (receivers.length === 0) reasons.push({ code: 'no_receivers', message: 'no live member that is not being decommissioned can take its partitions' });
  return reasons;
}

function memberReasons({ state, id, views, report, acceptDataLoss, movesMaxPerNode }: ReasonInput): BlockedReason[] {
  const reasons: BlockedReason[] = [];
  const view = views.find((v) => v.id === id);
  const owned = partitionsOwnedBy(state, id);
  if (view !== undefined && !view.alive && owned > 0 && !acceptDataLoss) {
    reasons.push({ code: 'owner_dead', message: `the member is dead and owns ${owned} partitions that cannot be copied; decommission it with accept_data_loss=true to give them away empty` });
  }
  const aliveIds = new Set(views.filter((v) => v.alive).map((v) => v.id));
  const deadTargets = [...state.moves.values()].filter((move) => move.source === id && !aliveIds.has(move.destination)).length;
  if (deadTargets > 0) reasons.push({ code: 'move_target', message: `${deadTargets} moves off the member go to a member that is dead` });
  const moving = movesOff(state, id);
  const receivers = receiversOf(state, [...aliveIds]).filter((r) => r !== id).length;
  if (moving > movesMaxPerNode * Math.max(1, receivers)) {
    reasons.push({ code: 'move_budget_full', message: `${moving} moves wait for ${receivers} receivers running at most ${movesMaxPerNode} each` });
  }
  if (typeof report === 'string' && view?.alive === true) reasons.push({ code: 'node_status_unavailable', message: report });
  if (typeof report === 'object' && (report.ingressRecordsNotHandedOff > 0 || report.produceRequestsInFlight > 0)) {
    reasons.push({ code: 'dispatch_backlog', message: `${report.produceRequestsInFlight} produce requests unanswered and ${report.ingressRecordsNotHandedOff} accepted records not yet held by their owners` });
  }
  if (view?.leader === true && owned === 0 && moving === 0) reasons.push({ code: 'leader_transfer', message: 'the member leads the metadata group and hands the leadership away first' });
  return reasons;
}
