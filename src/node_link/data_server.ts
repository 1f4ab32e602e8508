// The owner's side of the data channel (issue 29): a request another node forwards is split by this node's partition
// workers, handed to each over its link port (worker_links.ts), and the answers joined in the order asked. A parked
// take (a long poll) is remembered by its asker and parkRef until it answers, so an 'unpark' finds it. Node-link
// thread only; node_link_thread.ts opens the channel with it.
import type { DataMessage, DataReply, DataRequest, MemberReportView } from '../protocol/data_messages.js';
import { handleSeparator, receiptHandlePartition } from '../protocol/receipt_handle.js';
import type { PartitionStatsView } from '../protocol/thread_messages.js';
import type { WorkerLinks } from './worker_links.js';

export class DataServer {
  /** `${asker}:${parkRef}` -> the worker and reqId of each take parked for it (a watch parks on several workers). */
  private readonly parked = new Map<string, { worker: number; reqId: number }[]>();

  constructor(
    private readonly workers: WorkerLinks,
    /** This node's front, which makes its member report. */
    private readonly front: { memberReport(): Promise<MemberReportView> },
  ) {}

  onRequest(from: number, body: DataRequest): Promise<DataReply> {
    switch (body.kind) {
      case 'read':
        return this.read(body);
      case 'stats':
        return this.stats(body);
      case 'take':
        return this.take(from, body);
      case 'settle':
        return this.settle(body);
      case 'handoff':
        return this.handoff(from, body);
      case 'memberReport':
        return this.front.memberReport().then((report) => ({ kind: 'memberReportResult', report }));
      case 'moveRead':
      case 'moveRelease':
        return this.moveRequest(body);
    }
  }

  /** A move's destination asks the partition's worker here (its source). */
  private async moveRequest(body: Extract<DataRequest, { kind: 'moveRead' | 'moveRelease' }>): Promise<DataReply> {
    const answer = await this.workers.request(this.workers.ownerOf(body.topicId, body.partition), body).answer;
    if (answer.kind === 'failed') return { kind: 'failed', refusal: answer.refusal };
    if (answer.kind === 'moveChunk') return { kind: 'moveChunk', chunk: answer.chunk };
    if (answer.kind === 'moveReleased') return { kind: 'moveReleased' };
    throw new Error(`worker answered ${answer.kind} to ${body.kind}`);
  }

  onMessage(from: number, message: DataMessage): void {
    if (message.kind === 'unpark') {
      for (const parked of this.parked.get(`${from}:${message.parkRef}`) ?? []) {
        this.workers.send(parked.worker, { kind: 'unpark', takeReqId: parked.reqId });
      }
      return;
    }
    const byWorker = this.workers.groupByWorker(message.topicId, message.handles.split(handleSeparator), receiptHandlePartition);
    for (const [worker, handles] of byWorker) this.workers.send(worker, { kind: 'release', topicId: message.topicId, handles: handles.join(handleSeparator) });
  }

  private async read(body: Extract<DataRequest, { kind: 'read' }>): Promise<DataReply> {
    const answer = await this.workers.request(this.workers.ownerOf(body.topicId, body.partition), body).answer;
    if (answer.kind === 'failed') return { kind: 'failed', refusal: answer.refusal };
    if (answer.kind !== 'readResult') throw new Error(`worker answered ${answer.kind} to a read`);
    return answer.record === undefined ? { kind: 'readResult', status: answer.status } : { kind: 'readResult', status: answer.status, record: answer.record };
  }

  private async stats(body: Extract<DataRequest, { kind: 'stats' }>): Promise<DataReply> {
    const byWorker = this.workers.groupByWorker(body.topicId, body.partitions, (p) => p);
    const answers = await Promise.all([...byWorker].map(([worker, partitions]) =>
      this.workers.request(worker, { kind: 'stats', topicId: body.topicId, partitions }).answer));
    const stats: PartitionStatsView[] = [];
    for (const answer of answers) {
      if (answer.kind === 'failed') return { kind: 'failed', refusal: answer.refusal };
      if (answer.kind === 'statsResult') stats.push(...answer.stats);
    }
    return { kind: 'statsResult', stats: stats.sort((a, b) => a.index - b.index) };
  }

  /** A take over the named partitions: worker by worker until max are leased; a parked one (a long poll pinned to one
   *  partition) waits on its worker; a watch (max 0) waits on every worker holding one of them. */
  private async take(from: number, body: Extract<DataRequest, { kind: 'take' }>): Promise<DataReply> {
    if (body.parkRef !== undefined) return body.max === 0 ? this.watch(from, body) : this.takeParked(from, body);
    const taken = { kind: 'taken' as const, count: 0, messagesJson: '', handles: '' };
    for (const [worker, partitions] of this.workers.groupByWorker(body.topicId, body.partitions, (p) => p)) {
      const answer = await this.workers.request(worker, { kind: 'take', topicId: body.topicId, partitions, max: body.max - taken.count }).answer;
      if (answer.kind === 'failed') {
        if (taken.count === 0) return { kind: 'failed', refusal: answer.refusal };
        break;
      }
      if (answer.kind !== 'taken') throw new Error(`worker answered ${answer.kind} to a take`);
      if (answer.count > 0) {
        const separator = taken.count === 0 ? '' : handleSeparator;
        taken.messagesJson += separator + answer.messagesJson;
        taken.handles += separator + answer.handles;
        taken.count += answer.count;
      }
      if (taken.count >= body.max) break;
    }
    return taken;
  }

  private async takeParked(from: number, body: Extract<DataRequest, { kind: 'take' }>): Promise<DataReply> {
    const worker = this.workers.ownerOf(body.topicId, body.partitions[0]!);
    const partitions = body.partitions.filter((p) => this.workers.ownerOf(body.topicId, p) === worker);
    const { reqId, answer } = this.workers.request(worker, { kind: 'take', topicId: body.topicId, partitions, max: body.max, park: true });
    const key = `${from}:${body.parkRef}`;
    this.parked.set(key, [{ worker, reqId }]);
    try {
      const taken = await answer;
      if (taken.kind === 'failed') return { kind: 'failed', refusal: taken.refusal };
      if (taken.kind !== 'taken') throw new Error(`worker answered ${taken.kind} to a take`);
      return { kind: 'taken', count: taken.count, messagesJson: taken.messagesJson, handles: taken.handles };
    } finally {
      this.parked.delete(key);
    }
  }

  /** Answers once any worker's watch does; the others are unparked then. */
  private async watch(from: number, body: Extract<DataRequest, { kind: 'take' }>): Promise<DataReply> {
    const key = `${from}:${body.parkRef}`;
    const watches = [...this.workers.groupByWorker(body.topicId, body.partitions, (p) => p)].map(([worker, partitions]) => {
      const { reqId, answer } = this.workers.request(worker, { kind: 'take', topicId: body.topicId, partitions, max: 0, park: true });
      return { worker, reqId, answer };
    });
    this.parked.set(key, watches.map(({ worker, reqId }) => ({ worker, reqId })));
    try {
      const first = await Promise.race(watches.map((w) => w.answer));
      if (first.kind === 'failed') return { kind: 'failed', refusal: first.refusal };
      return { kind: 'taken', count: 0, messagesJson: '', handles: '' };
    } finally {
      this.parked.delete(key);
      for (const { worker, reqId } of watches) this.workers.send(worker, { kind: 'unpark', takeReqId: reqId });
    }
  }

  /** Every worker takes the frames and stores its partitions' records; the origin hears once all are synced. */
  private async handoff(origin: number, body: Extract<DataRequest, { kind: 'handoff' }>): Promise<DataReply> {
    const answers = await Promise.all(this.workers.all().map((worker) =>
      this.workers.request(worker, { kind: 'handoff', origin, metaIndex: body.metaIndex, frames: body.frames }).answer));
    let metaIndex = 0;
    for (const answer of answers) {
      if (answer.kind !== 'handedOff') throw new Error(`worker answered ${answer.kind} to a hand-off`);
      metaIndex = Math.max(metaIndex, answer.metaIndex);
    }
    return { kind: 'handedOff', metaIndex };
  }

  private async settle(body: Extract<DataRequest, { kind: 'settle' }>): Promise<DataReply> {
    const handles = body.handles.split(handleSeparator);
    const indexes = handles.map((_, i) => i);
    const byWorker = this.workers.groupByWorker(body.topicId, indexes, (i) => receiptHandlePartition(handles[i]!));
    const statuses = new Array<number>(handles.length);
    await Promise.all([...byWorker].map(async ([worker, at]) => {
      const joined = at.map((i) => handles[i]!).join(handleSeparator);
      const answer = await this.workers.request(worker, { kind: 'settle', topicId: body.topicId, mode: body.mode, handles: joined }).answer;
      // A worker that refused (shutting down) settled nothing: those leases live on, the owner is going away.
      if (answer.kind === 'settledResult') at.forEach((i, k) => { statuses[i] = answer.statuses[k]!; });
      else at.forEach((i) => { statuses[i] = 503; });
    }));
    return { kind: 'settledResult', statuses };
  }
}
