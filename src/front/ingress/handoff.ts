// Produce through any node, the origin's side (issue 29 point 1, spec §1.2): a synced ingress group that holds
// records for partitions other nodes own is handed to each of those owners in the background, in seq order, over the
// data channel (src/node_link/data_server.ts stores them and answers once synced). The ingress log keeps a group until
// the local workers and every owner it went to hold it durably. Groups owed to one owner are held in memory up to
// cluster.handoff_queue_bytes; past it the owner's backlog is a seq range read back from the ingress log's files
// (ingress_reader.ts), so a slow owner grows the disk, not the memory. A failing owner is retried until it answers;
// one failing for handoffGiveUpMs counts as unreachable for new produces (rerouting, partition_owners.ts), and what it
// is owed and not pinned moves to live partitions (reroute.ts, through the reroute functions below). Front thread;
// main.ts wires it between the ingress log and the workers' durable reports; handlers/produce.ts notes each remote
// record before it is appended.
import type { DataReply } from '../../protocol/data_messages.js';
import type { PortChannel } from '../../transport/port_channel.js';
import type { AppliedIndex } from './applied_index.js';
import { IngressReader, type IngressSegments } from './ingress_reader.js';
import { owedFrames, type OwedPastMark, type RerouteMark } from './reroute.js';

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

/** An owner's backlog past the memory bound: the seqs fromSeq..toSeq, on disk only. */
interface Spill {
  fromSeq: number;
  toSeq: number;
  records: number;
  reader: IngressReader;
  /** The frames last read, kept for a retry of the same request. */
  read: { fromSeq: number; frames: Uint8Array; lastSeq: number } | null;
}

interface OwnerQueue {
  groups: PendingGroup[];
  bytes: number;
  spill: Spill | null;
  sending: boolean;
  /** Date.now() of the first failure since the last success; null while it answers. */
  failingSinceMs: number | null;
  /** Issue 41: the owner took over a partition; the retained seqs fromSeq..toSeq go to it again (resendRetained). */
  resend?: { fromSeq: number; toSeq: number };
  retry: NodeJS.Timeout | null;
  /** What reroute.ts moved elsewhere; applied to groups and spill between sends. */
  reroute: RerouteMark;
}

export class Handoff {
  private readonly queues = new Map<number, OwnerQueue>();
  /** owner -> the highest seq of a record noted for it, and records noted since the last group took them. */
  private readonly noted = new Map<number, { maxSeq: number; records: number }>();
  private lastGroupSeq = 0;
  /** owner -> the last seq appended before an ownership change gave it a partition (resendSynced). */
  private readonly resendUntil = new Map<number, number>();
  private localDurableSeq = 0;
  private reportedSeq = 0;
  private closed = false;

  /** A handedOff is counted once the front's replica applied its metaIndex (applied_index.ts); null: at once. */
  appliedIndex: AppliedIndex | null = null;
  /** Sends frames to this node's own workers, for an ownership change that gave this node a partition. */
  localResend: { selfId: number; dispatch: (frames: Uint8Array, lastSeq: number) => void } | null = null;

  /** Told the highest seq every holder (local workers, owners handed to) keeps durably: the ingress log may drop
   *  segments up to it. */
  onDurable: (seqUpTo: number) => void = () => undefined;

  constructor(
    private readonly channel: PortChannel | null,
    private readonly metaIndexNow: () => number,
    private readonly queueBytesMax: number,
    private readonly segments: IngressSegments,
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
      this.enqueue(owner, firstSeq, lastSeq, frames, noted.records);
      noted.records = 0;
    }
    this.lastGroupSeq = Math.max(this.lastGroupSeq, lastSeq);
    this.resendSynced(frames, firstSeq, lastSeq);
  }

  /** At start: retained groups may hold records no owner confirmed; each owner stores what it lacks once. */
  replayed(frames: Uint8Array, firstSeq: number, lastSeq: number, owners: readonly number[]): void {
    for (const owner of owners) this.enqueue(owner, firstSeq, lastSeq, frames, 0);
    this.lastGroupSeq = Math.max(this.lastGroupSeq, lastSeq);
  }

  /** Issue 41 (MOVES.md "Records accepted elsewhere"): the replica gave owner a partition another node owned. Every
   *  retained ingress group may hold records of it that the old owner never stored (held while frozen, or not sent
   *  yet): they all go to owner again, ahead of what it is owed after them, read from the ingress log's files. The
   *  owner skips what it holds by ingress position. */
  resendRetained(owner: number): void {
    // Records noted for the old owner may be in groups not synced yet: those follow as they sync.
    let notedSeq = 0;
    for (const noted of this.noted.values()) notedSeq = Math.max(notedSeq, noted.maxSeq);
    if (notedSeq > this.lastGroupSeq) this.resendUntil.set(owner, Math.max(notedSeq, this.resendUntil.get(owner) ?? 0));
    const fromSeq = this.reportedSeq + 1;
    if (fromSeq > this.lastGroupSeq) return;
    const queue = this.queueOf(owner);
    queue.resend = { fromSeq: Math.min(fromSeq, queue.resend?.fromSeq ?? fromSeq), toSeq: this.lastGroupSeq };
    this.pump(owner, queue);
  }

  /** Groups appended before an ownership change and synced after it go to the new owner too (resendRetained). */
  private resendSynced(frames: Uint8Array, firstSeq: number, lastSeq: number): void {
    for (const [owner, untilSeq] of this.resendUntil) {
      if (firstSeq <= untilSeq) this.enqueue(owner, firstSeq, lastSeq, frames, 0);
      if (lastSeq >= untilSeq) this.resendUntil.delete(owner);
    }
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
    for (const queue of this.queues.values()) {
      for (const group of queue.groups) records += group.records;
      records += queue.spill?.records ?? 0;
    }
    for (const noted of this.noted.values()) records += noted.records;
    return records;
  }

  close(): void {
    this.closed = true;
    for (const queue of this.queues.values()) {
      if (queue.retry !== null) clearTimeout(queue.retry);
      void queue.spill?.reader.close();
    }
  }

  /** In memory while the owner's queue is under its bound and nothing is on disk before it; else on disk only. */
  private enqueue(owner: number, firstSeq: number, lastSeq: number, frames: Uint8Array, records: number): void {
    const queue = this.queueOf(owner);
    if (queue.spill !== null) {
      queue.spill.toSeq = lastSeq;
      queue.spill.records += records;
    } else if (queue.groups.length > 0 && queue.bytes + frames.byteLength > this.queueBytesMax) {
      queue.spill = { fromSeq: firstSeq, toSeq: lastSeq, records, reader: new IngressReader(this.segments), read: null };
    } else {
      queue.groups.push({ firstSeq, lastSeq, frames: frames.slice(), records });
      queue.bytes += frames.byteLength;
    }
    this.pump(owner, queue);
  }

  private queueOf(owner: number): OwnerQueue {
    let queue = this.queues.get(owner);
    if (queue === undefined) {
      queue = { groups: [], bytes: 0, spill: null, sending: false, failingSinceMs: null, retry: null, reroute: { upTo: 0, kept: [], pending: false } };
      this.queues.set(owner, queue);
    }
    return queue;
  }

  /** A re-send asked for becomes the queue's backlog on disk, from its first seq (or earlier): whatever the queue
   *  held is in that range, so the owner gets the seqs in order again. Only between two sends. */
  private startResend(queue: OwnerQueue): void {
    const resend = queue.resend!;
    delete queue.resend;
    let records = queue.spill?.records ?? 0;
    for (const group of queue.groups) records += group.records;
    const fromSeq = Math.min(resend.fromSeq, queue.groups[0]?.firstSeq ?? resend.fromSeq, queue.spill?.fromSeq ?? resend.fromSeq);
    const toSeq = Math.max(resend.toSeq, queue.groups[queue.groups.length - 1]?.lastSeq ?? 0, queue.spill?.toSeq ?? 0);
    const reader = queue.spill?.reader ?? new IngressReader(this.segments);
    queue.groups = [];
    queue.bytes = 0;
    queue.spill = { fromSeq, toSeq, records, reader, read: null };
  }

  /** One request per owner at a time, carrying the oldest groups: a hand-off is applied in seq order. An owner failing
   *  with nothing left to send (all rerouted) is still asked, with an empty hand-off, until it answers. */
  private pump(owner: number, queue: OwnerQueue): void {
    if (!queue.sending && queue.resend !== undefined) this.startResend(queue);
    if (queue.sending || queue.retry !== null || this.closed) return;
    if (queue.groups.length === 0 && queue.spill === null && queue.failingSinceMs === null) return;
    queue.sending = true;
    this.sendNext(owner, queue).catch(() => false).then((ok) => {
      queue.sending = false;
      if (this.rerouteApply(queue)) this.report();
      if (ok) {
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

  /** Sends the oldest groups in memory, else the next piece of the backlog on disk; false when the owner failed. */
  private async sendNext(owner: number, queue: OwnerQueue): Promise<boolean> {
    if (queue.groups.length === 0 && queue.spill === null) return this.send(owner, new Uint8Array(0), 0);
    if (queue.groups.length > 0) {
      const batch = takeBatch(queue.groups);
      if (!(await this.send(owner, batch.length === 1 ? batch[0]!.frames : joinFrames(batch), batch[batch.length - 1]!.lastSeq))) return false;
      queue.groups.splice(0, batch.length);
      for (const group of batch) queue.bytes -= group.frames.byteLength;
      return true;
    }
    const spill = queue.spill!;
    if (spill.read?.fromSeq !== spill.fromSeq) {
      const read = await spill.reader.read(spill.fromSeq, spill.toSeq, requestBytesMax);
      spill.read = read === null ? null : { fromSeq: spill.fromSeq, ...read };
    }
    // Synced groups are on disk until every holder confirmed them: none found in the range means none is owed.
    if (spill.read !== null) {
      if (!(await this.send(owner, spill.read.frames, spill.read.lastSeq))) return false;
      spill.fromSeq = spill.read.lastSeq + 1;
      spill.read = null;
      if (spill.fromSeq <= spill.toSeq) return true;
    }
    queue.spill = null;
    await spill.reader.close();
    return true;
  }

  private async send(owner: number, owed: Uint8Array, lastSeq: number): Promise<boolean> {
    const rerouted = this.queues.get(owner)?.reroute;
    const frames = rerouted === undefined ? owed : owedFrames(owed, rerouted);
    if (owner === this.localResend?.selfId) {
      this.localResend.dispatch(frames, lastSeq);
      return true;
    }
    if (this.channel === null) return false;
    try {
      const reply = (await this.channel.request(owner, { kind: 'handoff', metaIndex: this.metaIndexNow(), frames }, answerMs)) as DataReply;
      if (reply.kind !== 'handedOff') return false;
      await this.appliedIndex?.until(reply.metaIndex);
      return true;
    } catch {
      // Unreachable, no answer in time or refused: the owner may have stored some of it, which it skips next time.
      return false;
    }
  }

  /** Owners owed groups the reroute has not looked at yet (reroute.ts). */
  reroutable(): number[] {
    const owners: number[] = [];
    for (const [owner, queue] of this.queues) {
      const lastSeq = queue.spill?.toSeq ?? queue.groups.at(-1)?.lastSeq ?? 0;
      if (lastSeq > queue.reroute.upTo) owners.push(owner);
    }
    return owners;
  }

  /** What owner is owed past its reroute mark: the groups in memory, then the seq range on disk. */
  owedPastMark(owner: number): OwedPastMark | null {
    const queue = this.queues.get(owner);
    if (queue === undefined) return null;
    const upTo = queue.reroute.upTo;
    const groups = queue.groups.filter((group) => group.lastSeq > upTo);
    const spill = queue.spill === null || queue.spill.toSeq <= upTo ? null
      : { fromSeq: Math.max(queue.spill.fromSeq, upTo + 1), toSeq: queue.spill.toSeq };
    return { upTo, keptSeqs: queue.reroute.kept.length, groups, spill };
  }

  /** owner's records up to seq upTo that were not pinned are synced elsewhere (reroute.ts); the entries of keptSeqs
   *  (ascending, past the old mark) are still owed to it. Memory groups and the spill shrink to what is still owed. */
  rerouted(owner: number, upTo: number, keptSeqs: readonly number[], movedRecords: number): void {
    const queue = this.queues.get(owner);
    if (queue === undefined || upTo <= queue.reroute.upTo) return;
    queue.reroute.upTo = upTo;
    for (const seq of keptSeqs) queue.reroute.kept.push(seq);
    queue.reroute.pending = true;
    if (queue.spill !== null) queue.spill.records = Math.max(0, queue.spill.records - movedRecords);
    if (!queue.sending) this.rerouteApply(queue);
    this.report();
    this.pump(owner, queue);
  }

  /** Drops the groups and the spill's head that hold nothing owed any more; never while a send is out. False when
   *  there was no new reroute to apply. */
  private rerouteApply(queue: OwnerQueue): boolean {
    const { upTo, kept } = queue.reroute;
    if (!queue.reroute.pending) return false;
    queue.reroute.pending = false;
    let k = 0;
    const left: PendingGroup[] = [];
    for (const group of queue.groups) {
      while (k < kept.length && kept[k]! < group.firstSeq) k++;
      const holdsKept = k < kept.length && kept[k]! <= group.lastSeq;
      if (group.lastSeq > upTo || holdsKept) left.push(group);
      else queue.bytes -= group.frames.byteLength;
    }
    queue.groups = left;
    const spill = queue.spill;
    if (spill !== null && spill.fromSeq <= upTo) {
      spill.fromSeq = Math.min(upTo + 1, kept.find((seq) => seq >= spill.fromSeq) ?? Infinity);
      if (spill.fromSeq > spill.toSeq) {
        queue.spill = null;
        void spill.reader.close();
      }
    }
    const oldest = queue.groups[0]?.firstSeq ?? queue.spill?.fromSeq ?? Infinity;
    const firstOwed = kept.findIndex((seq) => seq >= oldest);
    if (firstOwed !== 0) queue.reroute.kept = firstOwed < 0 ? [] : kept.slice(firstOwed);
    return true;
  }

  /** The ingress log may drop what the local workers and every owner still owed a group hold. */
  private report(): void {
    let floor = this.localDurableSeq;
    for (const queue of this.queues.values()) {
      const oldest = queue.groups[0]?.firstSeq ?? queue.spill?.fromSeq;
      if (oldest !== undefined) floor = Math.min(floor, oldest - 1);
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
