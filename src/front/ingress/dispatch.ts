// The front thread's side of the partition workers: it hands every synced ingress group to the workers,
// tracks how far each has made it durable (so the ingress log can drop what every owner holds), and
// carries request/reply messages (read, stats) with request ids. One instance per node.
import type { Worker } from 'node:worker_threads';
import { refusalError, type BrokerError } from '../../errors.js';
import { groupByWorker, workerForPartition } from '../../protocol/ownership.js';
import { assertNever, type FromWorker, type ToWorker } from '../../protocol/thread_messages.js';
import type { AppliedIndex } from './applied_index.js';

type Reply = Extract<FromWorker, { reqId: number }>;
export type FanoutCopyMessage = Extract<FromWorker, { kind: 'fanoutCopy' }>;
type WorkerRequest = Extract<ToWorker, { reqId: number }>;
type RequestBody = WorkerRequest extends infer R ? (R extends { reqId: number } ? Omit<R, 'reqId'> : never) : never;

export class PartitionWorkers {
  private nextReqId = 1;
  private readonly pending = new Map<number, (reply: Reply) => void>();
  private readonly durableSeq: number[];
  private readonly readyWaiters: Promise<void>[];
  private readonly closedWaiters = new Map<number, () => void>();
  /** Durable reports counted once the front's replica applied their metaIndex (applied_index.ts); null: at once. */
  appliedIndex: AppliedIndex | null = null;
  /** Called with the highest ingress seq that every worker holds durably. */
  onAllDurable: (seqUpTo: number) => void = () => undefined;
  /** Called when a worker reports messages of a topic became deliverable. */
  onAvailable: (topicId: string, count: number) => void = () => undefined;

  /** Copies posted before the front could append them (start): handed over once fanoutCopiesTo is called. */
  private copiesEarly: [number, FanoutCopyMessage][] | null = [];
  private onFanoutCopy: (workerIndex: number, message: FanoutCopyMessage) => void = (workerIndex, message) => {
    this.copiesEarly?.push([workerIndex, message]);
  };

  constructor(private readonly workers: Worker[]) {
    this.durableSeq = workers.map(() => 0);
    this.readyWaiters = workers.map(
      (worker, index) =>
        new Promise<void>((resolve) => {
          worker.on('message', (message: FromWorker) => {
            if (message.kind === 'ready') resolve();
            else this.onMessage(index, message);
          });
        }),
    );
  }

  get count(): number {
    return this.workers.length;
  }

  whenReady(): Promise<void> {
    return Promise.all(this.readyWaiters).then(() => undefined);
  }

  ownerOf(topicId: string, partition: number): number {
    return workerForPartition(topicId, partition, this.workers.length);
  }

  /** Items grouped by the worker owning each one's partition (protocol/ownership.ts groupByWorker). */
  groupByOwner<T>(topicId: string, items: readonly T[], partitionOf: (item: T) => number): Map<number, T[]> {
    return groupByWorker(topicId, this.workers.length, items, partitionOf);
  }

  /** Sends one synced ingress group to every worker; each stores the records of the partitions it owns. */
  dispatch(frames: Uint8Array, lastSeq: number, metaIndex: number): void {
    for (let i = 0; i < this.workers.length; i++) {
      const last = i === this.workers.length - 1;
      // The last worker takes the bytes themselves, whose ArrayBuffer is theirs alone (IngressLog.onSynced: the group's
      // buffer, perhaps with scratch past the frames; replay chunks: exactly sized); the others get copies (a
      // transferred buffer is gone).
      const bytes = last ? frames : frames.slice();
      const message: ToWorker = { kind: 'dispatch', metaIndex, frames: bytes, lastSeq };
      this.workers[i]!.postMessage(message, [bytes.buffer as ArrayBuffer]);
    }
  }

  request(workerIndex: number, body: RequestBody): Promise<Reply> {
    return this.requestWithId(workerIndex, body).reply;
  }

  /** A take that may park on the worker (a long poll): the reply comes once it leases something, or empty after
   *  unpark() (which may be called any number of times, and after the reply too). */
  requestParked(workerIndex: number, body: Omit<Extract<ToWorker, { kind: 'take' }>, 'reqId' | 'park'>): { reply: Promise<Reply>; unpark: () => void } {
    const { reqId, reply } = this.requestWithId(workerIndex, { ...body, park: true });
    let unparked = false;
    const unpark = (): void => {
      if (unparked || !this.pending.has(reqId)) return;
      unparked = true;
      this.workers[workerIndex]!.postMessage({ kind: 'unpark', takeReqId: reqId } satisfies ToWorker);
    };
    return { reply, unpark };
  }

  private requestWithId(workerIndex: number, body: RequestBody): { reqId: number; reply: Promise<Reply> } {
    const reqId = this.nextReqId++;
    const reply = new Promise<Reply>((resolve) => {
      this.pending.set(reqId, resolve);
      this.workers[workerIndex]!.postMessage({ ...body, reqId } as ToWorker);
    });
    return { reqId, reply };
  }

  /** Where the workers' fan-out copies go (src/front/ingress/fanout_copies.ts), with those that came before. */
  fanoutCopiesTo(handler: (workerIndex: number, message: FanoutCopyMessage) => void): void {
    this.onFanoutCopy = handler;
    const early = this.copiesEarly ?? [];
    this.copiesEarly = null;
    for (const [workerIndex, message] of early) handler(workerIndex, message);
  }

  /** A message that needs no answer. */
  send(workerIndex: number, message: Extract<ToWorker, { kind: 'release' | 'fanoutCopied' }>): void {
    this.workers[workerIndex]!.postMessage(message);
  }

  /** Asks every worker to finish and close its files. */
  async shutdown(): Promise<void> {
    await Promise.all(
      this.workers.map(
        (worker, index) =>
          new Promise<void>((resolve) => {
            this.closedWaiters.set(index, resolve);
            worker.once('exit', () => resolve());
            worker.postMessage({ kind: 'shutdown' } satisfies ToWorker);
          }),
      ),
    );
  }

  private onMessage(workerIndex: number, message: FromWorker): void {
    switch (message.kind) {
      case 'durable': {
        // Reports arrive in order per worker and the waits resolve in index order, so they are counted in order.
        const counted = (): void => {
          // A re-dispatch after a restart may report a lower seq than before; durability never goes back.
          this.durableSeq[workerIndex] = Math.max(this.durableSeq[workerIndex]!, message.seqUpTo);
          this.onAllDurable(Math.min(...this.durableSeq));
        };
        if (this.appliedIndex === null || this.appliedIndex.now() >= message.metaIndex) counted();
        else void this.appliedIndex.until(message.metaIndex).then(counted);
        return;
      }
      case 'available':
        for (const { topicId, count } of message.topics) this.onAvailable(topicId, count);
        return;
      case 'fanoutCopy':
        return this.onFanoutCopy(workerIndex, message);
      case 'readResult':
      case 'statsResult':
      case 'taken':
      case 'settledResult':
      case 'countersResult':
      case 'moveChunk':
      case 'moveWritten':
      case 'moveReleased':
      case 'failed': {
        const resolve = this.pending.get(message.reqId);
        this.pending.delete(message.reqId);
        resolve?.(message);
        return;
      }
      case 'closed':
        this.closedWaiters.get(workerIndex)?.();
        return;
      case 'ready':
        return;
      case 'handedOff':
        throw new Error('a worker answered a hand-off on the front\'s port');
      default:
        assertNever(message);
    }
  }
}

/** Turns a worker's 'failed' answer into the error the handler throws. */
export function workerFailure(reply: Reply): BrokerError | null {
  return reply.kind === 'failed' ? refusalError(reply.refusal) : null;
}
