// Health and metrics routes (spec §4 Health and metrics). /healthz answers while the process runs and 503
// once graceful shutdown begins; /readyz answers ready once startup is done, a Raft leader was heard from within
// 5 seconds (or this node leads), this node's metadata copy caught up with the leader since start, and its own member
// record is applied. Front thread.
import { jsonReply, type Reply } from '../respond.js';
import type { FrontServices } from '../services.js';

/** Spec §4 /readyz: a leader must have been heard within 5 seconds. */
const leaderHeardWithinMs = 5_000;

export interface NodeLifecycle {
  startupDone: boolean;
  shuttingDown: boolean;
}

export function healthHandlers(services: FrontServices, lifecycle: NodeLifecycle) {
  function onHealthz(): Reply {
    if (lifecycle.shuttingDown) return jsonReply(503, { error: 'node shutting down' });
    return jsonReply(200, { status: 'ok' });
  }

  function onReadyz(): Reply {
    if (lifecycle.shuttingDown) return jsonReply(503, { error: 'node shutting down' });
    if (!lifecycle.startupDone) return jsonReply(503, { error: 'startup not finished' });
    const status = services.replica.clusterStatus;
    if (!services.replica.ready || status === null) return jsonReply(503, { error: 'metadata copy not loaded' });
    if (status.role !== 'leader') {
      if (status.leader === 0) return jsonReply(503, { error: 'no Raft leader known' });
      if (Date.now() - status.leaderHeardAtMs > leaderHeardWithinMs) return jsonReply(503, { error: 'Raft leader not heard from within 5 seconds' });
    }
    if (!status.caughtUp) return jsonReply(503, { error: 'metadata copy not caught up with the leader since start' });
    // Partitions are placed on members with a record only: before this node's own is applied, a create could find no
    // live member to place on, so a node is not ready before it.
    if (!services.replica.state.members.has(services.nodeId)) return jsonReply(503, { error: 'member record of this node not applied yet' });
    return jsonReply(200, { status: 'ready' });
  }

  async function onMetrics(): Promise<Reply> {
    const text = await services.metrics.registry.metrics();
    return { status: 200, body: text, contentType: services.metrics.registry.contentType };
  }

  return { onHealthz, onReadyz, onMetrics };
}
