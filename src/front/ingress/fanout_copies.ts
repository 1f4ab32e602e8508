// Fan-out copies, the front's side (issue 30): a parent partition's worker posts committed parent records for a child
// whose partition it does not own itself ('fanoutCopy'; workers/fanout/fanout_copy_route.ts); they are appended to this node's ingress log as one entry of the child topic, on the normal write
// path (local workers store them; a child partition another node owns gets them by hand-off), and once synced the
// worker is told ('fanoutCopied') so it moves its copy cursor. Front thread; write_path.ts wires it to the workers.
import { Packr } from 'msgpackr';
import { fanoutOrigin, type IngressEntry, type IngressRecord, type PayloadKind } from '../../protocol/ingress_frame.js';
import type { FanoutCopyMessage, PartitionWorkers } from './dispatch.js';
import type { Handoff } from './handoff.js';
import type { IngressLog } from './ingress_log.js';
import type { MetadataView } from './write_path.js';

const packr = new Packr({ useRecords: false, moreTypes: false });

export class FanoutCopies {
  constructor(private readonly s: {
    nodeId: number; replica: MetadataView; workers: PartitionWorkers; ingress: IngressLog; handoff: Handoff;
  }) {}

  /** The workers' 'fanoutCopy' handler (PartitionWorkers.fanoutCopiesTo). */
  static handler(s: ConstructorParameters<typeof FanoutCopies>[0]): (workerIndex: number, msg: FanoutCopyMessage) => void {
    const copies = new FanoutCopies(s);
    return (workerIndex, msg) => copies.onCopy(workerIndex, msg);
  }

  /** Appends one batch of copies, or answers null at once when the front cannot (the worker tries again later). */
  onCopy(workerIndex: number, msg: FanoutCopyMessage): void {
    const answer = (upToOffset: number | null): void => this.s.workers.send(workerIndex, {
      kind: 'fanoutCopied', parentTopicId: msg.parentTopicId, partition: msg.partition, childId: msg.childId, epoch: msg.epoch, upToOffset,
    });
    const state = this.s.replica.state;
    const parent = state.fanout.get(msg.parentTopicId);
    const link = parent?.children.find((c) => c.childId === msg.childId && c.epoch === msg.epoch);
    const child = link === undefined ? undefined : state.topics.get(link.child);
    // The link ended (or is not on this replica yet): nothing is copied under an epoch the metadata does not hold.
    if (parent === undefined || child === undefined || child.id !== msg.childId || child.partitions === 0) return answer(null);
    const ingress = this.s.ingress;
    if (ingress.failed) return answer(null);
    // Spec §1.9: the child's partition of the same index, modulo the child's count; keys kept.
    const partition = msg.partition % child.partitions;
    const records = (packr.unpack(msg.records) as [Uint8Array | null, Uint8Array, PayloadKind][]).map(
      ([key, payload, payloadKind]): IngressRecord => ({ partition, key, payload, payloadKind }));
    const entry: IngressEntry = {
      seq: ingress.takeSeq(),
      topicId: child.id,
      // The child's own time of the message: its retention counts from the copy, and a delay child's timestamp is when
      // the message became due there.
      timestampSec: Math.floor(Date.now() / 1000),
      records,
      source: { origin: fanoutOrigin(msg.epoch, msg.partition), firstSeq: msg.fromOffset + 1 },
    };
    const owner = child.owners[partition];
    if (owner !== undefined && owner !== this.s.nodeId) this.s.handoff.note(owner, entry.seq, records.length);
    ingress.appendThen(entry, { appended: (error) => answer(error === null ? msg.fromOffset + records.length : null) });
  }
}
