// The node-link thread's ports to this node's partition workers: forwarded requests go to the worker that owns the
// partition, under negative reqIds (the front's are positive, so a worker answers each on the port it came from).
// Node-link thread only; data_server.ts is its user.
import type { MessagePort } from 'node:worker_threads';
import { groupByWorker, workerForPartition } from '../protocol/ownership.js';
import type { FromWorker, ToWorker } from '../protocol/thread_messages.js';

type Answer = Exclude<FromWorker, { kind: 'durable' | 'available' | 'ready' | 'closed' }>;
type WithoutReqId<T> = T extends { reqId: number } ? Omit<T, 'reqId'> : never;
export type LinkRequest = WithoutReqId<ToWorker>;

export class WorkerLinks {
  private nextReqId = -1;
  private readonly pending = new Map<number, (answer: Answer) => void>();

  constructor(private readonly ports: readonly MessagePort[]) {
    for (const port of ports) port.on('message', (message: FromWorker) => this.onAnswer(message));
  }

  /** Every worker's index. */
  all(): number[] {
    return this.ports.map((_, worker) => worker);
  }

  ownerOf(topicId: string, partition: number): number {
    return workerForPartition(topicId, partition, this.ports.length);
  }

  /** Items grouped by the worker owning each one's partition (protocol/ownership.ts groupByWorker). */
  groupByWorker<T>(topicId: string, items: readonly T[], partitionOf: (item: T) => number): Map<number, T[]> {
    return groupByWorker(topicId, this.ports.length, items, partitionOf);
  }

  /** Sends a request and resolves with the worker's answer; reqId is given so a parked take can be unparked. */
  request(worker: number, body: LinkRequest): { reqId: number; answer: Promise<Answer> } {
    const reqId = this.nextReqId--;
    const answer = new Promise<Answer>((resolve) => this.pending.set(reqId, resolve));
    this.ports[worker]!.postMessage({ ...body, reqId } as ToWorker);
    return { reqId, answer };
  }

  send(worker: number, message: Extract<ToWorker, { kind: 'unpark' | 'release' }>): void {
    this.ports[worker]!.postMessage(message);
  }

  private onAnswer(message: FromWorker): void {
    if (!('reqId' in message)) return;
    const resolve = this.pending.get(message.reqId);
    this.pending.delete(message.reqId);
    resolve?.(message as Answer);
  }

  close(): void {
    for (const port of this.ports) port.close();
  }
}
