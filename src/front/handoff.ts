// Produce through any node, the origin's side (issue 29 point 1, spec §1.2): a synced ingress group that holds
// records for partitions other nodes own is handed to each of those owners in the background, in seq order, over the
// data channel (src/node_link/data_server.ts stores them and answers once synced). The ingress log keeps a group until
// the local workers and every owner it went to hold it durably. A failing owner is retried until it answers; one
// failing for handoffGiveUpMs counts as unreachable for new produces (rerouting, partition_choice.ts). Front thread;
// main.ts wires it between the ingress log and the workers' durable reports; handlers/produce.ts notes each remote
// record before it is appended.
import type { DataReply } from '../protocol/data_messages.js';
import type { PortChannel } from '../transport/port_channel.js';

/** Spec §1.6: after this long of failed hand-offs, new produces go around the owner. */
export const handoffGiveUpMs = 3_000;
const retryMs = 200;
const answerMs = 10_000;
/** One request carries groups up to about this many bytes (a bigger group goes alone). */
const requestBytesMax = 8 * 1024 * 1024;

interface PendingGroup {
  firstSeq: number;
  lastSeq: number;
  frames: Uint8Array;
  records: number;
}

interface OwnerQueue {
  groups: PendingGroup[];
  sending: boolean;
  /** Date.now() of the first failure since the last success; null while it answers. */
  failingSinceMs: number | null;
  retry: NodeJS.Timeout | null;
}

export class Handoff {
  private readonly queues = new Map<number, OwnerQueue>();
  /** owner -> the highest seq of a record noted for it, and records noted since the last group took them. */
  private readonly noted = new Map<number, { maxSeq: number; records: number }>();
  private lastGroupSeq = 0;
  private localDurableSeq = 0;
  private reportedSeq = 0;
  private closed = false;

  /** Told the highest seq every holder (local workers, owners handed to) keeps durably: the ingress log may drop
   *  segments up to it. */
  onDurable: (seqUpTo: number) => void = () => undefined;

  constructor(
    private readonly channel: PortChannel | null,
    private readonly metaIndexNow: () => number,
  ) {}

  /** A record for owner's partition is about to be appended at seq. */
  note(owner: number, seq: number, records: number): void {
    const noted = this.noted.get(owner);
    if (noted === undefined) this.noted.set(owner, { maxSeq: seq, records });
    else {
      noted.maxSeq = seq;
      noted.records += records;
    }
  }

  /** A group up to lastSeq is synced: it goes to every owner a record of it may be for (a later group's record
   *  noted early sends this one too, which the owner finds nothing in). Call before the frames are transferred. */
  groupSynced(frames: Uint8Array, lastSeq: number): void {
    const firstSeq = this.lastGroupSeq + 1;
    for (const [owner, noted] of this.noted) {
      if (noted.maxSeq < firstSeq) continue;
      this.enqueue(owner, { firstSeq, lastSeq, frames: frames.slice(), records: noted.records });
      noted.records = 0;
    }
    this.lastGroupSeq = Math.max(this.lastGroupSeq, lastSeq);
  }

  /** At start: retained groups may hold records no owner confirmed; each owner stores what it lacks once. */
  replayed(frames: Uint8Array, firstSeq: number, lastSeq: number, owners: readonly number[]): void {
    for (const owner of owners) this.enqueue(owner, { firstSeq, lastSeq, frames: frames.slice(), records: 0 });
    this.lastGroupSeq = Math.max(this.lastGroupSeq, lastSeq);
  }

  localDurable(seqUpTo: number): void {
    this.localDurableSeq = Math.max(this.localDurableSeq, seqUpTo);
    this.report();
  }

  /** Whether new produces should go around owner: its hand-offs failed for handoffGiveUpMs. */
  failingLong(owner: number, nowMs = Date.now()): boolean {
    const since = this.queues.get(owner)?.failingSinceMs ?? null;
    return since !== null && nowMs - since >= handoffGiveUpMs;
  }

  /** Records accepted here and not yet confirmed by their owner (svc_ingress_dispatch_backlog_records). */
  backlogRecords(): number {
    let records = 0;
    for (const queue of this.queues.values()) for (const group of queue.groups) records += group.records;
    for (const noted of this.noted.values()) records += noted.records;
    return records;
  }

  close(): void {
    this.closed = true;
    for (const queue of this.queues.values()) if (queue.retry !== null) clearTimeout(queue.retry);
  }

  private enqueue(owner: number, group: PendingGroup): void {
    let queue = this.queues.get(owner);
    if (queue === undefined) this.queues.set(owner, (queue = { groups: [], sending: false, failingSinceMs: null, retry: null }));
    queue.groups.push(group);
    this.pump(owner, queue);
  }

  /** One request per owner at a time, carrying the oldest groups: a hand-off is applied in seq order. */
  private pump(owner: number, queue: OwnerQueue): void {
    if (queue.sending || queue.retry !== null || queue.groups.length === 0 || this.closed) return;
    const batch = takeBatch(queue.groups);
    queue.sending = true;
    this.send(owner, batch).then((ok) => {
      queue.sending = false;
      if (ok) {
        queue.groups.splice(0, batch.length);
        queue.failingSinceMs = null;
        this.report();
        return this.pump(owner, queue);
      }
      queue.failingSinceMs ??= Date.now();
      queue.retry = setTimeout(() => {
        queue.retry = null;
        this.pump(owner, queue);
      }, retryMs);
    }, () => undefined);
  }

  private async send(owner: number, batch: readonly PendingGroup[]): Promise<boolean> {
    if (this.channel === null) return false;
    const frames = batch.length === 1 ? batch[0]!.frames : joinFrames(batch);
    try {
      const reply = (await this.channel.request(owner, { kind: 'handoff', metaIndex: this.metaIndexNow(), frames }, answerMs)) as DataReply;
      return reply.kind === 'handedOff';
    } catch {
      // Unreachable, no answer in time or refused: the owner may have stored some of it, which it skips next time.
      return false;
    }
  }

  /** The ingress log may drop what the local workers and every owner still owed a group hold. */
  private report(): void {
    let floor = this.localDurableSeq;
    for (const queue of this.queues.values()) {
      const oldest = queue.groups[0];
      if (oldest !== undefined) floor = Math.min(floor, oldest.firstSeq - 1);
    }
    if (floor <= this.reportedSeq) return;
    this.reportedSeq = floor;
    this.onDurable(floor);
  }
}

function takeBatch(groups: readonly PendingGroup[]): PendingGroup[] {
  const batch = [groups[0]!];
  let bytes = groups[0]!.frames.byteLength;
  for (let i = 1; i < groups.length && bytes + groups[i]!.frames.byteLength <= requestBytesMax; i++) {
    batch.push(groups[i]!);
    bytes += groups[i]!.frames.byteLength;
  }
  return batch;
}

function joinFrames(batch: readonly PendingGroup[]): Uint8Array {
  let bytes = 0;
  for (const group of batch) bytes += group.frames.byteLength;
  const joined = new Uint8Array(bytes);
  let at = 0;
  for (const group of batch) {
    joined.set(group.frames, at);
    at += group.frames.byteLength;
  }
  return joined;
}
