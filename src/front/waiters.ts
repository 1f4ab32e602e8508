// Long-poll waiters of the front thread (spec §4 Consume `wait`): a consume over partitions of several workers that
// found nothing waits here until a worker reports messages of its topic deliverable, its wait ends, or its client
// goes away (one whose partitions all belong to one worker waits on that worker instead: workers/parked_takes.ts).
// No polling loop: each waiter holds one timer and one entry in its topic's FIFO. Front thread; one per node.

export type WakeReason = 'available' | 'deadline' | 'aborted' | 'closed';
type Wake = (reason: WakeReason) => void;

interface Waiter {
  wake: Wake;
}

export class TopicWaiters {
  private readonly byTopic = new Map<string, Set<Waiter>>();
  private closed = false;

  /** Resolves when woken by availability, at deadlineMs, when onAbort fires, or when the node shuts down;
   *  never rejects. */
  wait(topicId: string, waitMs: number, onAbort: (listener: () => void) => () => void): Promise<WakeReason> {
    if (this.closed) return Promise.resolve('closed');
    return new Promise((resolve) => {
      let waiters = this.byTopic.get(topicId);
      if (waiters === undefined) this.byTopic.set(topicId, (waiters = new Set()));
      const set = waiters;
      const waiter: Waiter = {
        wake: (reason) => {
          clearTimeout(timer);
          removeAbort();
          set.delete(waiter);
          if (set.size === 0 && this.byTopic.get(topicId) === set) this.byTopic.delete(topicId);
          resolve(reason);
        },
      };
      const timer = setTimeout(() => waiter.wake('deadline'), waitMs);
      const removeAbort = onAbort(() => waiter.wake('aborted'));
      set.add(waiter);
    });
  }

  /** Wakes up to count waiters of the topic, oldest first. */
  notify(topicId: string, count: number): void {
    const waiters = this.byTopic.get(topicId);
    if (waiters === undefined) return;
    for (const waiter of [...waiters].slice(0, count)) waiter.wake('available');
  }

  /** Graceful shutdown: every waiter answers now, and no new one waits. */
  close(): void {
    this.closed = true;
    for (const waiters of [...this.byTopic.values()]) for (const waiter of [...waiters]) waiter.wake('closed');
  }

  /** Every waiter of a deleted topic ends now (it then answers 404 or 204). */
  notifyAll(topicId: string): void {
    this.notify(topicId, Number.MAX_SAFE_INTEGER);
  }
}
