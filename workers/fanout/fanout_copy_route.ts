// Where a batch of fan-out copies goes (issue 30). A child partition this worker owns gets the copies staged right
// here, as a local dispatch the write core treats like a hand-off: the copies are in no ingress log, so the child
// partition shows them only once synced and the copy cursor moves only then. Any other child partition (another
// worker's or another node's) gets them through the front's ingress log ('fanoutCopy', src/front/ingress/fanout_copies.ts).
// Staging here skips a pack, a port crossing, an ingress write and sync, and a dispatch per copy: at half the peak
// produce rate a parent with three children copies three times what it takes in. Partition worker thread;
// partition_worker.ts owns one.
import { Packr } from 'msgpackr';
import { fanoutOrigin } from '../../src/protocol/ingress_frame.js';
import type { FromWorker } from '../../src/protocol/thread_messages.js';
import type { TopicRecord } from '../../src/protocol/metadata_types.js';
import type { CopyAnswer, CopyBatch, CopyRoute } from './fanout_copier.js';
import type { StoredRecord } from '../store/segment_store.js';

/** Copies for a child partition of this worker, staged by the shell like a hand-off; waiter is answered 'handedOff'.
 *  Record i is known by (origin, firstSeq + i, 0) in the child partition (ingress_frame.ts IngressSource). */

/** What the route reads of the worker's partition table (workers/partition_table.ts satisfies it). */
export interface ChildPartitions {
  readonly appliedIndex: number;
  topicOf(topicId: string): TopicRecord | undefined;
  owns(topicId: string, partition: number): boolean;
}
export interface LocalCopyDispatch {
  kind: 'copy';
  metaIndex: number;
  waiter: number;
  childId: string;
  partition: number;
  /** The copy's own time (docs/decisions.md): the child's retention counts from it. */
  timestampSec: number;
  origin: number;
  firstSeq: number;
  records: StoredRecord[];
}

export interface CopyRouteHost {
  nodeId: number;
  table: ChildPartitions;
  /** Hands a local copy to the write core ('dispatchArrived'). */
  arrive(dispatch: LocalCopyDispatch): void;
  /** Posts to the front. */
  post(msg: FromWorker, transfer: ArrayBuffer[]): void;
  /** The copier's answer ('copied'). */
  answer(answer: CopyAnswer): void;
}

const packr = new Packr({ useRecords: false, moreTypes: false });

export class FanoutCopyRoute {
  private readonly waiting = new Map<number, CopyAnswer>();
  private nextWaiter = 1;

  constructor(private readonly host: CopyRouteHost) {}

  copy(batch: CopyBatch): void {
    const childPartition = this.localPartition(batch.childId, batch.partition);
    if (childPartition === null) return this.toFront(batch);
    const waiter = this.nextWaiter++;
    const { parentTopicId, partition, childId, epoch, fromOffset, records } = batch;
    this.waiting.set(waiter, { parentTopicId, partition, childId, epoch, upToOffset: fromOffset + records.length });
    this.host.arrive({
      kind: 'copy', metaIndex: this.host.table.appliedIndex, waiter, childId, partition: childPartition,
      timestampSec: Math.floor(Date.now() / 1000), origin: fanoutOrigin(epoch, partition), firstSeq: fromOffset + 1, records,
    });
  }

  /** Where copy sends them: staged here (never refused), or through the front (refused while its replica does not
   *  hold the link yet). */
  routeOf(childId: string, parentPartition: number): CopyRoute {
    return this.localPartition(childId, parentPartition) !== null ? 'direct' : 'front';
  }

  /** The write core's 'handedOff' of one waiter; false when it is not a local copy's (hand-offs' reqIds are negative). */
  handedOff(waiter: number): boolean {
    const answer = this.waiting.get(waiter);
    if (answer === undefined) return false;
    this.waiting.delete(waiter);
    // Answered after the core's command returns: the answer moves a cursor, itself a command of the core.
    queueMicrotask(() => this.host.answer(answer));
    return true;
  }

  /** A local copy staging refused (its child partition moved to another node meanwhile): the copier tries again,
   *  through the front now. */
  refused(waiter: number): void {
    const answer = this.waiting.get(waiter);
    if (answer === undefined) return;
    this.waiting.delete(waiter);
    queueMicrotask(() => this.host.answer({ ...answer, upToOffset: null }));
  }

  /** The child partition the copies go to (spec §1.9: the same index modulo the child's count) when it is this
   *  worker's, else null. */
  private localPartition(childId: string, parentPartition: number): number | null {
    const child = this.host.table.topicOf(childId);
    if (child === undefined || child.partitions === 0) return null;
    const partition = parentPartition % child.partitions;
    return child.owners[partition] === this.host.nodeId && this.host.table.owns(child.id, partition) ? partition : null;
  }

  private toFront(batch: CopyBatch): void {
    const packed = packr.pack(batch.records.map((r) => [r.key, r.payload, r.payloadKind]));
    // packr reuses its buffer: the transferred bytes must be a copy of their own.
    const bytes = new Uint8Array(packed);
    const { parentTopicId, partition, childId, epoch, fromOffset } = batch;
    this.host.post({ kind: 'fanoutCopy', parentTopicId, partition, childId, epoch, fromOffset, count: batch.records.length, records: bytes }, [bytes.buffer]);
  }
}
