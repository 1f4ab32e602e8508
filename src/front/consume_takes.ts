// Leasing from this node's workers for a consume, and giving the leases back when its client went away. Shared by
// the consume route and the spread consume (handlers/consume.ts, handlers/consume_spread.ts). Front thread.
import { forEachJoinedHandle, formatReceiptHandle, handleSeparator } from '../protocol/receipt_handle.js';
import type { TopicRecord } from '../protocol/metadata_types.js';
import { workerFailure } from './ingress/dispatch.js';
import type { RouteServices } from './services.js';

/** Leases up to max messages from each worker's partitions in order, one message per worker. */
export async function take(s: RouteServices, topic: TopicRecord, byWorker: Map<number, number[]>, max: number): Promise<Taken> {
  const taken: Taken = { count: 0, json: '', handles: '' };
  for (const [worker, partitions] of byWorker) {
    const reply = await s.workers.request(worker, { kind: 'take', topicId: topic.id, partitions, max: max - taken.count });
    const failure = workerFailure(reply);
    if (failure !== null) {
      release(s, topic, taken);
      throw failure;
    }
    if (reply.kind === 'taken' && reply.count > 0) {
      const separator = taken.count === 0 ? '' : handleSeparator;
      taken.json += separator + reply.messagesJson;
      taken.handles += separator + reply.handles;
      taken.count += reply.count;
    }
    if (taken.count >= max) break;
  }
  return taken;
}

/** Ends the leases of a consume whose client went away (rare: the handles are parsed only here). */
export function release(s: RouteServices, topic: TopicRecord, taken: Taken): void {
  const leases: { partition: number; handle: string }[] = [];
  forEachJoinedHandle(taken.handles, (partition, offset, nonce) => leases.push({ partition, handle: formatReceiptHandle(partition, offset, nonce) }));
  for (const [worker, items] of s.workers.groupByOwner(topic.id, leases, (lease) => lease.partition)) {
    s.workers.send(worker, { kind: 'release', topicId: topic.id, handles: items.map((item) => item.handle).join(handleSeparator) });
  }
}

/** Leases taken for one consume: how many, their Message objects as JSON text joined by ',', and their receipt
 *  handles joined by ',' (thread_messages.ts 'taken'). */
export interface Taken {
  count: number;
  json: string;
  handles: string;
}
