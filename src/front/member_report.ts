// A member's own report for GET /v1/cluster/members?detail=true (spec §2 Cluster member, §4): this node's is made
// here from its front's state; other members' are asked for over the data channel, all at once, within 2 seconds in
// total, and one that is not read in time becomes a status_error. Front thread; handlers/cluster.ts calls it for the
// answer, and main.ts hands localMemberReport to the node-link thread for other nodes' asks.
import type { DestinationMoveView, MemberReportView } from '../protocol/data_messages.js';
import type { RouteServices } from './services.js';

/** Spec §2: the first 100 set-aside copies are listed. */
const setAsideListedMax = 100;

export function localMemberReport(s: Pick<RouteServices, 'lifecycle' | 'produce' | 'handoff' | 'moves' | 'cluster' | 'replica' | 'nodeId'>): MemberReportView {
  const setAside = s.moves.setAside();
  return {
    // Spec §3: a member being decommissioned drains as a stopping one does.
    draining: s.lifecycle.shuttingDown || s.replica.state.members.get(s.nodeId)?.decommission !== undefined,
    produceRequestsInFlight: s.produce.admitted,
    // The same count as svc_ingress_dispatch_backlog_records: records accepted here that their owner has not confirmed.
    ingressRecordsNotHandedOff: s.handoff.backlogRecords(),
    setAsideCount: setAside.count,
    setAsideBytes: setAside.bytes,
    setAside: setAside.copies.slice(0, setAsideListedMax),
    movesAsDestination: s.moves.movesAsDestination(),
    partitionEnds: s.cluster.localEnds(),
  };
}

/** Each member's report (or why it could not be read), by member id; ids other than self are asked at once. */
export function memberReports(s: RouteServices, ids: readonly number[]): Promise<Map<number, MemberReportView | string>> {
  return s.cluster.reportsOf(ids);
}

/** The report's fields as a member entry carries them (names: docs/decisions.md "Member routes"). */
export function memberReportJson(report: MemberReportView): Record<string, unknown> {
  return {
    draining: report.draining,
    produce_requests_in_flight: report.produceRequestsInFlight,
    ingress_messages_not_handed_off: report.ingressRecordsNotHandedOff,
    set_aside_copies: {
      count: report.setAsideCount,
      total_size_bytes: report.setAsideBytes,
      copies: report.setAside.slice(0, setAsideListedMax).map((copy) => ({
        kind: copy.kind,
        topic: copy.topic,
        partition: copy.partition,
        directory: copy.directory,
        size_bytes: copy.sizeBytes,
        modified_at: new Date(copy.modifiedAtMs).toISOString(),
      })),
    },
    moves_as_destination: report.movesAsDestination.map(moveJson),
  };
}

/** A destination's move as spec §2 shows it (member detail, GET /v1/cluster/moves). */
export function moveJson(move: DestinationMoveView): Record<string, unknown> {
  return {
    topic: move.topic,
    partition: move.partition,
    source: String(move.source),
    destination: String(move.destination),
    started_at: new Date(move.startedAtMs).toISOString(),
    worker_state: move.workerState,
    attempts: move.attempts,
    last_error: move.lastError,
    bytes_fetched: move.bytesFetched,
    ...(move.stuckReason === '' ? {} : { stuck_reason: move.stuckReason }),
  };
}
