// The destination side of partition moves on a partition worker (issue 41, docs/architecture.md "Partition moves"):
// 'moveWrite' stores a chunk in the partition's incoming copy (workers/store/incoming_copy.ts), 'moveDiscard' sets
// the copy aside (kind staging), and when the flip gives the partition to this node the copy is renamed into topics/
// and opened as the partition (the shell's partitionOpen), its records held until then (adoptingKeys feeds
// dispatch_staging.ts). Copies survive a restart: scan() finds them. Partition worker thread; the shell
// (partition_worker.ts) owns one and feeds it requests and replica changes. Work on one copy runs one step at a time.
import { readdir, rename, stat } from 'node:fs/promises';
import { dirCreateDurably } from '../src/util/durable_fs.js';
import { dirname } from 'node:path';
import type { Logger } from 'pino';
import { moveKey } from '../src/protocol/metadata_types.js';
import type { FromWorker, ToWorker } from '../src/protocol/thread_messages.js';
import { dirSync } from '../src/util/durable_fs.js';
import { setAsideMove } from '../src/util/set_aside.js';
import { IncomingCopy } from './store/incoming_copy.js';
import { incomingDir, incomingPartitionDir, parsePartitionDirName, parseTopicDirName, topicDir } from './store/partition_dirs.js';
import type { PartitionTable } from './partition_table.js';

type WriteRequest = Extract<ToWorker, { kind: 'moveWrite' }>;
type DiscardRequest = Extract<ToWorker, { kind: 'moveDiscard' }>;

export interface MoveDestinationHost {
  readonly nodeId: number;
  readonly table: PartitionTable;
  readonly logger: Logger;
  /** Opens the partition directory (the renamed copy) as a partition this worker serves. */
  partitionOpen(topicId: string, partition: number): Promise<void>;
  /** A partition whose records were held takes them again. */
  thaw(): void;
  post(msg: FromWorker, transfer?: ArrayBuffer[]): void;
  failStop(what: string, err: unknown): never;
}

/** One incoming copy: on disk (copy null until a write or the flip opens it), its work chained one step at a time. */
interface Incoming {
  topicId: string;
  partition: number;
  dir: string;
  copy: IncomingCopy | null;
  queue: Promise<void>;
  /** The flip gave the partition here: the copy is being renamed and opened. */
  adopting: boolean;
  /** The copy left (adopted or set aside): later steps find nothing. */
  gone: boolean;
  /** The replica has shown this copy's move (or the copy was found at start): from then on a replica without the move
   *  means it ended without a flip. Until then the worker's replica may simply lag the front's that sent the chunk. */
  moveSeen: boolean;
}

export class MoveDestination {
  private readonly copies = new Map<string, Incoming>();

  constructor(private readonly host: MoveDestinationHost) {}

  /** At start: the incoming copies of this worker's partitions a restart finds. */
  async scan(): Promise<void> {
    const root = incomingDir(this.host.table.dataDir());
    for (const topicId of await names(root, parseTopicDirName)) {
      for (const partition of await names(`${root}/${topicId}`, parsePartitionDirName)) {
        if (this.host.table.owns(topicId, partition)) this.entryOf(topicId, partition).moveSeen = true;
      }
    }
  }

  /** Partitions whose records wait until their copy is open as the partition. */
  adoptingKeys(): string[] {
    return [...this.copies].filter(([, entry]) => entry.adopting).map(([key]) => key);
  }

  onWrite(msg: WriteRequest): void {
    const entry = this.entryOf(msg.topicId, msg.partition);
    this.step(entry, async () => {
      if (entry.gone || entry.adopting || this.host.table.nodeOwns(msg.topicId, msg.partition)) {
        return this.host.post({ kind: 'failed', reqId: msg.reqId, refusal: { id: 'partitionMoved', args: [msg.topicId, msg.partition] } });
      }
      const copy = await this.copyFor(entry, msg.chunk.fromOffset);
      const result = await copy.write(msg.chunk);
      if ('problem' in result) {
        this.host.logger.warn({ topicId: msg.topicId, partition: msg.partition, problem: result.problem }, 'incoming chunk refused');
        // Records that did not read back as sent must not be continued: the next chunk starts a fresh copy.
        if (result.damaged) await this.setAside(entry);
        return this.host.post({ kind: 'failed', reqId: msg.reqId, refusal: { id: 'copyUnverifiable', args: [msg.topicId, msg.partition, result.problem] } });
      }
      this.host.post({ kind: 'moveWritten', reqId: msg.reqId, nextOffset: result.nextOffset, bytes: result.bytes });
    });
  }

  onDiscard(msg: DiscardRequest): void {
    const entry = this.entryOf(msg.topicId, msg.partition);
    this.step(entry, async () => {
      if (!entry.gone && !entry.adopting) await this.setAside(entry);
      this.host.post({ kind: 'moveReleased', reqId: msg.reqId });
    });
  }

  /** After every replica change: a copy whose partition the flip gave here is adopted; one whose topic is gone, or
   *  whose move ended without a flip, is set aside. Returns whether a partition started adopting (its records wait). */
  replicaChanged(): boolean {
    const { table } = this.host;
    if (!table.judged) return false;
    let adopting = false;
    for (const entry of this.copies.values()) {
      if (entry.adopting || entry.gone) continue;
      const move = table.moveOf(entry.topicId, entry.partition);
      const moving = move !== undefined && move.destination === this.host.nodeId;
      if (table.nodeOwns(entry.topicId, entry.partition)) {
        entry.adopting = adopting = true;
        this.step(entry, () => this.adopt(entry));
      } else if (moving) entry.moveSeen = true;
      // Aborted, or its topic deleted (which ends its moves).
      else if (entry.moveSeen) {
        entry.gone = true;
        this.step(entry, () => this.setAside(entry));
      }
    }
    return adopting;
  }

  /** The copy becomes the partition directory (a restart then finds it there) and is served. */
  private async adopt(entry: Incoming): Promise<void> {
    await entry.copy?.close();
    entry.copy = null;
    const exists = await stat(entry.dir).then(() => true, () => false);
    if (exists) {
      const target = this.host.table.dirOf(entry.topicId, entry.partition);
      // A directory there is an older copy of this partition (this node owned it before): kept, aside.
      if (await stat(target).then(() => true, () => false)) {
        await setAsideMove(this.host.table.dataDir(), target, 'partition', entry.topicId, entry.partition, Date.now());
      }
      await dirCreateDurably(topicDir(this.host.table.dataDir(), entry.topicId));
      await rename(entry.dir, target);
      await dirSync(topicDir(this.host.table.dataDir(), entry.topicId));
      await dirSync(dirname(entry.dir));
    }
    await this.host.partitionOpen(entry.topicId, entry.partition);
    entry.gone = true;
    entry.adopting = false;
    this.copies.delete(moveKey(entry.topicId, entry.partition));
    this.host.logger.info({ topicId: entry.topicId, partition: entry.partition }, 'moved partition opened here');
    this.host.thaw();
  }

  private async setAside(entry: Incoming): Promise<void> {
    await entry.copy?.close();
    entry.copy = null;
    entry.gone = true;
    this.copies.delete(moveKey(entry.topicId, entry.partition));
    const dir = await setAsideMove(this.host.table.dataDir(), entry.dir, 'staging', entry.topicId, entry.partition, Date.now()).catch((err: unknown) => {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw err;
    });
    if (dir !== null) this.host.logger.info({ topicId: entry.topicId, partition: entry.partition, dir }, 'incoming copy set aside');
  }

  /** The open copy, created at fromOffset when there is none; a copy that ends before fromOffset (the source's
   *  retention removed what it lacks) is set aside and a new one started. */
  private async copyFor(entry: Incoming, fromOffset: number): Promise<IncomingCopy> {
    const { table } = this.host;
    entry.copy ??= await IncomingCopy.open(entry.dir, table.segmentBytesMax(), this.host.nodeId);
    if (entry.copy !== null && entry.copy.nextOffset < fromOffset) {
      await this.setAside(entry);
      entry.gone = false;
      this.copies.set(moveKey(entry.topicId, entry.partition), entry);
    }
    entry.copy ??= await IncomingCopy.create(entry.dir, table.segmentBytesMax(), this.host.nodeId, fromOffset);
    return entry.copy;
  }

  private entryOf(topicId: string, partition: number): Incoming {
    const key = moveKey(topicId, partition);
    let entry = this.copies.get(key);
    if (entry === undefined) {
      const dir = incomingPartitionDir(this.host.table.dataDir(), topicId, partition);
      entry = { topicId, partition, dir, copy: null, queue: Promise.resolve(), adopting: false, gone: false, moveSeen: false };
      this.copies.set(key, entry);
    }
    return entry;
  }

  /** Runs work after the copy's earlier steps; a failure leaves its files in an unknown state: the worker ends. */
  private step(entry: Incoming, work: () => Promise<void>): void {
    entry.queue = entry.queue.then(work).catch((err: unknown) => this.host.failStop('incoming partition copy', err));
  }

  /** Closes the open copies (shutdown), after their steps in flight. */
  async close(): Promise<void> {
    await Promise.all([...this.copies.values()].map(async (entry) => {
      await entry.queue;
      await entry.copy?.close();
      entry.copy = null;
    }));
  }
}

async function names<T>(dir: string, parse: (name: string) => T | null): Promise<T[]> {
  let found: string[];
  try {
    found = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') return [];
    throw err;
  }
  return found.map(parse).filter((value): value is T => value !== null);
}
