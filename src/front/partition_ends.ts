// The highest end this node has heard of for every partition of the cluster (issue 41 point 4): its own workers'
// (asked every few seconds) and every other member's, read from their reports. A partition of a member lost for good
// restarts on another member empty at the highest end known here, so an offset a consumer saw is never given to
// another record. Front thread; the cluster control (cluster_control.ts) fills it, member reports carry this node's.
import type { PartitionEndView } from '../protocol/thread_messages.js';

export class PartitionEnds {
  private readonly ends = new Map<string, PartitionEndView>();

  /** Keeps the higher next offset of each partition (a report read late never lowers it). */
  note(views: readonly PartitionEndView[]): void {
    for (const view of views) {
      const key = `${view.topicId}/${view.partition}`;
      const known = this.ends.get(key);
      if (known === undefined || view.nextOffset >= known.nextOffset) this.ends.set(key, { ...view });
    }
  }

  /** The highest end known, or undefined when nobody reported the partition. */
  get(topicId: string, partition: number): PartitionEndView | undefined {
    return this.ends.get(`${topicId}/${partition}`);
  }

  /** Forgets the partitions of topics no longer in the metadata. */
  retain(topicIds: ReadonlySet<string>): void {
    for (const [key, view] of this.ends) if (!topicIds.has(view.topicId)) this.ends.delete(key);
  }
}
