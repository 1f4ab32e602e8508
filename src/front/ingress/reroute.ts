// Rerouting what was already accepted (spec §1.6, issue 41 point 5): records this node answered 202 for and still owes
// an owner that the liveness view marks dead, or whose hand-offs failed for 3 s (handoff.ts), are committed to a live
// partition of the same topic instead, unless they were pinned to their partition (those wait for the owner). A batch
// of what the owner is owed (its hand-off groups in memory, else its backlog read back from the ingress log's files,
// bounded) is read, the movable records are appended to the ingress log as new entries for their new partitions
// (they then take the normal write path: local workers, or a hand-off to another owner), and only once those are
// synced is the owner no longer owed them (Handoff.rerouted): the ingress log keeps the old frames until then, and the
// new ones until their holders confirm them. A crash in between makes the restart reroute them again (a second copy,
// which at-least-once allows; decisions.md "Rerouting what was accepted"). Front thread; write_path.ts starts it.
import { decodeIngressEntry, type IngressEntry, type IngressRecord } from '../../protocol/ingress_frame.js';
import type { TopicRecord } from '../../protocol/metadata_types.js';
import { frameHeaderBytes, u32le } from '../../util/frame.js';
import { MsgpackReader } from '../../protocol/msgpack_reader.js';
import type { Logger } from '../../util/log.js';
import type { Handoff } from './handoff.js';
import type { IngressLog } from './ingress_log.js';
import { IngressReader } from './ingress_reader.js';
import type { MetadataView } from './write_path.js';

/** How often owners are looked at: well under the 3 s a failing owner takes to count as unreachable. */
const checkMs = 250;
/** One batch reads about this many bytes of frames (one group or frame at least), so memory stays bounded. */
const batchBytesMax = 4 * 1024 * 1024;
/** Batches per owner before the next owner gets its turn. */
const batchesPerTurn = 16;
/** Entries still owed to an owner behind its mark (pinned ones) that its queue remembers; past this the reroute of
 *  that owner waits until they are sent, so the list stays bounded. */
const keptSeqsMax = 65_536;

/** Per owner queue (handoff.ts): unpinned records of entries up to seq upTo went elsewhere, except in the entries of
 *  kept (ascending), still owed; pending until the queue dropped what that frees. */
export interface RerouteMark {
  upTo: number;
  kept: number[];
  pending: boolean;
}

/** What an owner is owed past its mark: groups in memory, then a seq range on disk. */
export interface OwedPastMark {
  upTo: number;
  keptSeqs: number;
  groups: readonly { firstSeq: number; lastSeq: number; frames: Uint8Array }[];
  spill: { fromSeq: number; toSeq: number } | null;
}

/** frames without those up to mark.upTo that are no longer owed (every record of theirs for the owner went
 *  elsewhere): only what the owner should still store goes to it. */
export function owedFrames(frames: Uint8Array, mark: RerouteMark): Uint8Array {
  if (mark.upTo === 0) return frames;
  const pieces: Uint8Array[] = [];
  let whole = true;
  let at = 0;
  // Seqs ascend: past the mark every frame is owed.
  while (at + frameHeaderBytes <= frames.byteLength) {
    const end = at + frameHeaderBytes + u32le(frames, at);
    const reader = new MsgpackReader(frames, at + frameHeaderBytes, end);
    reader.arrayHeader();
    const seq = reader.uint();
    if (seq > mark.upTo) break;
    if (sortedHas(mark.kept, seq)) pieces.push(frames.subarray(at, end));
    else whole = false;
    at = end;
  }
  if (whole) return frames;
  pieces.push(frames.subarray(at));
  return Buffer.concat(pieces);
}

function sortedHas(sorted: readonly number[], value: number): boolean {
  let low = 0;
  let high = sorted.length - 1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (sorted[mid] === value) return true;
    if (sorted[mid]! < value) low = mid + 1;
    else high = mid - 1;
  }
  return false;
}

/** What choosing an owner reads (partition_owners.ts): RouteServices, and this module's parts. */
export interface OwnerView {
  readonly nodeId: number;
  readonly replica: { readonly clusterStatus?: { readonly deadMembers: readonly number[] } | null };
  readonly handoff: { failingLong(owner: number): boolean };
}

/** partition_owners.ts's rule, given by the front (this folder does not reach up to it): where an unpinned record of
 *  a topic goes instead. */
export interface ReroutePlacement {
  partition(view: OwnerView, topic: TopicRecord, key: Uint8Array | null, turn: number): number | null;
}

export interface RerouteParts {
  nodeId: number;
  placement: ReroutePlacement;
  replica: Pick<MetadataView, 'state' | 'appliedIndex' | 'clusterStatus'>;
  ingress: IngressLog;
  handoff: Handoff;
  log: Logger;
}

/** A batch's outcome: new entries (seq still 0) with their topics, seqs of entries still owed, records moved. */
interface Plan {
  entries: { entry: IngressEntry; topic: TopicRecord }[];
  kept: number[];
  moved: number;
}

export class Reroute {
  private moved = 0;
  /** Spreads unkeyed records over the chosen partitions. */
  private turn = 0;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private closed = false;
  private readonly reader: IngressReader;
  private readonly owners: OwnerView;

  constructor(private readonly parts: RerouteParts) {
    this.reader = new IngressReader(parts.ingress);
    this.owners = { nodeId: parts.nodeId, replica: parts.replica, handoff: parts.handoff };
  }

  /** Records committed to another partition since start (svc_ingress_rerouted_records_total). */
  get recordsRerouted(): number {
    return this.moved;
  }

  start(): void {
    this.timer = setInterval(() => this.check(), checkMs);
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer !== null) clearInterval(this.timer);
    await this.running;
    await this.reader.close();
  }

  private check(): void {
    if (this.running !== null || this.closed) return;
    const owners = this.parts.handoff.reroutable().filter((owner) => this.unreachable(owner));
    if (owners.length === 0) return;
    this.running = this.rerouteAll(owners)
      .catch((err: unknown) => this.parts.log.error({ err }, 'rerouting records of an unreachable owner failed'))
      .finally(() => {
        this.running = null;
      });
  }

  /** Whether owner's records move: its hand-offs failed for 3 s, or the liveness view marks it dead, if that view
   *  is the leader's. A view in which the leader itself is dead is this node's own guess, where every other member
   *  looks dead: just restarted (before the leader's first view) or cut off from the leader. Records would move away
   *  from owners that hold them, so then only failing hand-offs count. */
  private unreachable(owner: number): boolean {
    if (owner === this.parts.nodeId) return false;
    if (this.parts.handoff.failingLong(owner)) return true;
    const status = this.parts.replica.clusterStatus;
    if (status === null || status === undefined || !status.deadMembers.includes(owner)) return false;
    return status.leader !== 0 && !status.deadMembers.includes(status.leader);
  }

  private async rerouteAll(owners: readonly number[]): Promise<void> {
    for (const owner of owners) {
      for (let batch = 0; batch < batchesPerTurn; batch++) {
        if (this.closed || this.parts.ingress.failed || !this.unreachable(owner)) return;
        if (!(await this.rerouteBatch(owner))) break;
      }
    }
  }

  /** Moves one bounded batch of what owner is owed; false when there was nothing (more) to look at. */
  private async rerouteBatch(owner: number): Promise<boolean> {
    const owed = this.parts.handoff.owedPastMark(owner);
    if (owed === null || owed.keptSeqs >= keptSeqsMax) return false;
    const read = await this.readOwed(owed);
    if (read === null) {
      // Nothing of the range is on disk any more: nothing in it is owed.
      if (owed.spill !== null) this.parts.handoff.rerouted(owner, owed.spill.toSeq, [], 0);
      return false;
    }
    const plan = this.plan(read.frames, owner, owed.upTo);
    await this.append(plan.entries);
    this.parts.handoff.rerouted(owner, read.lastSeq, plan.kept, plan.moved);
    if (plan.moved > 0) {
      this.moved += plan.moved;
      this.parts.log.info({ owner, records: plan.moved, entries: plan.entries.length, stillOwed: plan.kept.length, upToSeq: read.lastSeq },
        'records accepted for an unreachable owner rerouted to live partitions');
    }
    return true;
  }

  /** The oldest groups past the mark (up to batchBytesMax), else the next piece of the range on disk. */
  private async readOwed(owed: OwedPastMark): Promise<{ frames: Uint8Array; lastSeq: number } | null> {
    if (owed.groups.length > 0) {
      const taken = [owed.groups[0]!];
      let bytes = taken[0]!.frames.byteLength;
      for (let i = 1; i < owed.groups.length && bytes + owed.groups[i]!.frames.byteLength <= batchBytesMax; i++) {
        taken.push(owed.groups[i]!);
        bytes += owed.groups[i]!.frames.byteLength;
      }
      return { frames: Buffer.concat(taken.map((group) => group.frames)), lastSeq: taken.at(-1)!.lastSeq };
    }
    if (owed.spill === null) return null;
    return this.reader.read(owed.spill.fromSeq, owed.spill.toSeq, batchBytesMax);
  }

  /** Which records of frames owner's partitions hold and where each unpinned one goes now. */
  private plan(frames: Uint8Array, owner: number, upTo: number): Plan {
    const topics = new Map<string, TopicRecord>();
    for (const topic of this.parts.replica.state.topics.values()) topics.set(topic.id, topic);
    const plan: Plan = { entries: [], kept: [], moved: 0 };
    for (let at = 0; at + frameHeaderBytes <= frames.byteLength;) {
      const end = at + frameHeaderBytes + u32le(frames, at);
      const entry = decodeIngressEntry(frames.subarray(at + frameHeaderBytes, end));
      at = end;
      // A topic deleted since: its records are dropped wherever they go.
      const topic = topics.get(entry.topicId);
      if (entry.seq > upTo && topic !== undefined) this.planEntry(entry, topic, owner, plan);
    }
    return plan;
  }

  private planEntry(entry: IngressEntry, topic: TopicRecord, owner: number, plan: Plan): void {
    const pinned = new Set(entry.pinned ?? []);
    const moved: IngressRecord[] = [];
    let kept = false;
    entry.records.forEach((record, index) => {
      if (record.partition >= topic.partitions || topic.owners[record.partition] !== owner) return;
      // A fan-out copy goes to the child partition of its parent's index (spec §1.9), and is known there by its source.
      const partition = pinned.has(index) || entry.source !== undefined ? null : this.parts.placement.partition(this.owners, topic, record.key, this.turn++);
      if (partition === null) kept = true;
      else moved.push({ ...record, partition });
    });
    if (kept) plan.kept.push(entry.seq);
    if (moved.length === 0) return;
    plan.entries.push({ entry: { seq: 0, topicId: topic.id, timestampSec: entry.timestampSec, records: moved }, topic });
    plan.moved += moved.length;
  }

  /** Appends the new entries (noting the other owners they hold records for) and waits until all are synced. */
  private async append(entries: Plan['entries']): Promise<void> {
    const { ingress, handoff, nodeId } = this.parts;
    const synced: Promise<void>[] = [];
    for (const { entry, topic } of entries) {
      entry.seq = ingress.takeSeq();
      const counts = new Map<number, number>();
      for (const record of entry.records) {
        const owner = topic.owners[record.partition]!;
        if (owner !== nodeId) counts.set(owner, (counts.get(owner) ?? 0) + 1);
      }
      for (const [owner, records] of counts) handoff.note(owner, entry.seq, records);
      synced.push(new Promise<void>((resolve, reject) => ingress.appendThen(entry, {
        appended: (error) => (error === null ? resolve() : reject(error)),
      })));
    }
    await Promise.all(synced);
  }
}
