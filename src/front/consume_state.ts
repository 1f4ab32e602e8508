// What the consume routes keep between requests (RouteServices.consume): long-poll waiters, the per-identity
// in-flight cap, where each topic's next consume starts, and how to end the long polls parked on workers. Front
// thread; built once by server.ts, so services.ts names it without importing a handler.
import { InFlightPerIdentity } from './in_flight.js';
import type { RequestContext } from './request_context.js';
import type { FrontServices } from './services.js';
import { TopicWaiters } from './waiters.js';

/** What the consume routes keep between requests; one per server (RouteServices.consume). */
export class ConsumeState {
  readonly waiters = new TopicWaiters();
  readonly inFlight = new InFlightPerIdentity();
  readonly capMax: number;
  readonly waitMsMax: number;
  /** Per topic id: the partition the next consume starts from, so no partition starves. */
  readonly startIndex = new Map<string, number>();
  /** Per topic id: how to end each long poll parked on a worker. */
  readonly parkedByTopic = new Map<string, Set<() => void>>();
  /** Set by graceful shutdown: long polls answer now and no new one parks. */
  closing = false;

  constructor(services: FrontServices) {
    this.capMax = services.config['http.max_consume_in_flight_per_identity'];
    this.waitMsMax = services.config['http.max_consume_wait'];
    services.workers.onAvailable = (topicId, count) => this.waiters.notify(topicId, count);
    services.replica.onApplied((command) => {
      if (command.type === 'topic.delete') {
        this.startIndex.delete(command.id);
        this.waiters.notifyAll(command.id);
        this.unparkTopic(command.id);
      }
    });
  }

  /** Awaits a parked take's reply, ending it early (unpark) at the deadline, when the client goes away, when its
   *  topic is deleted or when the node shuts down; the same for a take parked here or on another node. */
  async whileParked<T>(ctx: RequestContext, topicId: string, deadlineMs: number, unpark: () => void, reply: Promise<T>): Promise<T> {
    const timer = setTimeout(unpark, deadlineMs - Date.now());
    const removeAbort = ctx.onAbort(unpark);
    let unparks = this.parkedByTopic.get(topicId);
    if (unparks === undefined) this.parkedByTopic.set(topicId, (unparks = new Set()));
    unparks.add(unpark);
    try {
      return await reply;
    } finally {
      clearTimeout(timer);
      removeAbort();
      unparks.delete(unpark);
      if (unparks.size === 0 && this.parkedByTopic.get(topicId) === unparks) this.parkedByTopic.delete(topicId);
    }
  }

  unparkTopic(topicId: string): void {
    for (const unpark of this.parkedByTopic.get(topicId) ?? []) unpark();
  }

  /** Graceful shutdown: long polls answer now instead of holding the node until their wait ends. */
  closeWaiters(): void {
    this.closing = true;
    this.waiters.close();
    for (const topicId of [...this.parkedByTopic.keys()]) this.unparkTopic(topicId);
  }
}
