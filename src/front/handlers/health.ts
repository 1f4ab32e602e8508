// Health and metrics routes (spec §4 Health and metrics). /healthz answers while the process runs and 503
// once graceful shutdown begins; /readyz answers ready once startup is done and, on one node, this node
// leads its one-voter metadata group and its copy has caught up. Front thread.
import { jsonReply, type Reply } from '../respond.js';
import type { FrontServices } from '../services.js';

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
    if (!services.replica.ready) return jsonReply(503, { error: 'metadata copy not caught up' });
    return jsonReply(200, { status: 'ready' });
  }

  async function onMetrics(): Promise<Reply> {
    const text = await services.metrics.registry.metrics();
    return { status: 200, body: text, contentType: services.metrics.registry.contentType };
  }

  return { onHealthz, onReadyz, onMetrics };
}
