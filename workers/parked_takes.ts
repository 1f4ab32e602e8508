// Long-poll takes held on the partition worker (protocol/README.md "Long polls"): a consume that found nothing waits
// here instead of on the front, so the flush that makes its topic's records deliverable answers it directly, one
// thread hop from the records to the front instead of three. Oldest first per topic; the front ends a take it no
// longer wants with 'unpark' (deadline, client gone, shutdown), and a deleted topic's takes end with it. Owned by
// the worker's port loop.
import type { ToWorker } from '../src/protocol/thread_messages.js';

export type TakeRequest = Extract<ToWorker, { kind: 'take' }>;

export class ParkedTakes {
  /** topic id -> request id -> take; a Map keeps insertion order, so iteration is oldest first. */
  private readonly byTopic = new Map<string, Map<number, TakeRequest>>();
  private readonly topicOfReq = new Map<number, string>();

  get size(): number {
    return this.topicOfReq.size;
  }

  /** Request ids are unique per front, so one parked twice is a programmer error: it would leave a stale take behind. */
  park(take: TakeRequest): void {
    if (this.topicOfReq.has(take.reqId)) throw new Error(`parked takes: request ${take.reqId} is parked already`);
    let takes = this.byTopic.get(take.topicId);
    if (takes === undefined) this.byTopic.set(take.topicId, (takes = new Map()));
    takes.set(take.reqId, take);
    this.topicOfReq.set(take.reqId, take.topicId);
  }

  /** The parked take with this request id, removed; undefined when it was answered already. */
  remove(reqId: number): TakeRequest | undefined {
    const topicId = this.topicOfReq.get(reqId);
    if (topicId === undefined) return undefined;
    this.topicOfReq.delete(reqId);
    const takes = this.byTopic.get(topicId)!;
    const take = takes.get(reqId);
    takes.delete(reqId);
    if (takes.size === 0) this.byTopic.delete(topicId);
    return take;
  }

  /** The topic's parked takes, oldest first; remove() may be called while iterating. */
  ofTopic(topicId: string): Iterable<TakeRequest> {
    return this.byTopic.get(topicId)?.values() ?? [];
  }

  /** Every parked take of the topic, removed. */
  removeTopic(topicId: string): TakeRequest[] {
    const takes = [...(this.byTopic.get(topicId)?.values() ?? [])];
    this.byTopic.delete(topicId);
    for (const take of takes) this.topicOfReq.delete(take.reqId);
    return takes;
  }

  /** Every parked take, removed. */
  removeAll(): TakeRequest[] {
    const takes = [...this.byTopic.values()].flatMap((takes) => [...takes.values()]);
    this.byTopic.clear();
    this.topicOfReq.clear();
    return takes;
  }
}
