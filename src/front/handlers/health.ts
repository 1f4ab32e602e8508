// Health and metrics routes (spec §4 Health and metrics). /healthz answers while the process runs and 503
// once graceful shutdown begins; /readyz answers ready once startup is done, a Raft leader was heard from within
// 5 seconds (or this node leads), this node's metadata copy caught up with the leader since start, and its own member
// record is applied. Front thread; routes.ts names these handlers for the API port and http.metrics_addr.
import { limits } from '../../config.js';
import { errors } from '../../errors.js';
import type { RequestContext } from '../request_context.js';
import { errorReply, jsonReply, type Reply } from '../respond.js';
import type { RouteServices } from '../services.js';
import { clusterTlsDegraded } from '../../transport/cluster_tls.js';

const ok = jsonReply(200, { status: 'ok' });
const ready = jsonReply(200, { status: 'ready' });

export function onHealthz(_ctx: RequestContext, s: RouteServices): Reply {
  if (s.lifecycle.shuttingDown) return errorReply(errors.notReady('node shutting down'));
  return ok;
}

/** Why this node is not ready (spec §4 /readyz), or null when it is. */
function notReadyReason(s: RouteServices): string | null {
  if (s.lifecycle.shuttingDown) return 'node shutting down';
  if (!s.lifecycle.startupDone) return 'startup not finished';
  const status = s.replica.clusterStatus;
  if (!s.replica.ready || status === null) return 'metadata copy not loaded';
  if (status.role !== 'leader') {
    if (status.leader === 0) return 'no Raft leader known';
    if (Date.now() - status.leaderHeardAtMs > limits.leader_heard_within_ms) return `Raft leader not heard from within ${limits.leader_heard_within_ms / 1000} seconds`;
  }
  if (!status.caughtUp) return 'metadata copy not caught up with the leader since start';
  // Partitions are placed on members with a record only: before this node's own is applied, a create could find no
  // live member to place on, so a node is not ready before it.
  if (!s.replica.state.members.has(s.nodeId)) return 'member record of this node not applied yet';
  return null;
}

export function onReadyz(_ctx: RequestContext, s: RouteServices): Reply {
  const reason = notReadyReason(s);
  if (reason !== null) return errorReply(errors.notReady(reason));
  // An expired node-to-node certificate does not make this node unready (spec §4): peers refuse it, which the
  // Raft and liveness checks show on their own; degraded says why.
  const degraded = clusterTlsDegraded(s.metrics.clusterTlsDates, Date.now());
  return degraded.length === 0 ? ready : jsonReply(200, { status: 'ready', degraded });
}

export async function onMetrics(_ctx: RequestContext, s: RouteServices): Promise<Reply> {
  s.metrics.noteReady(notReadyReason(s) === null);
  const text = await s.metrics.exposition();
  return { status: 200, body: text, contentType: s.metrics.registry.contentType };
}

/** /metrics on the API port: 404 when http.metrics_addr serves it instead. */
export function onApiMetrics(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  if (s.separateMetrics) throw errors.metricsElsewhere();
  return onMetrics(ctx, s);
}
