// Waiters for a partition log's sync (an ack state may name only synced offsets): each gets a number the write core's
// 'syncWait' command carries and its 'synced' effect names back. Partition worker thread; partition_worker.ts owns one.
import assert from 'node:assert/strict';

export class SyncWaiters {
  private readonly waiting = new Map<number, () => void>();
  private next = 1;

  /** A new waiter, and what resolves when it is woken. */
  add(): { waiter: number; synced: Promise<void> } {
    const waiter = this.next++;
    const synced = new Promise<void>((resolve) => this.waiting.set(waiter, resolve));
    return { waiter, synced };
  }

  wake(waiter: number): void {
    const wake = this.waiting.get(waiter);
    if (wake === undefined) assert.fail(`sync waiter ${waiter} woken twice`);
    this.waiting.delete(waiter);
    wake();
  }
}
