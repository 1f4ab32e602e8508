// The front's way to a partition another node owns (issue 29): a request over the data channel of the node-to-node
// transport, served by the owner's node-link thread and worker (src/node_link/data_server.ts). A transport failure
// becomes the spec's answer: no connection is 503 with Retry-After (nothing applied), no answer in time is 502 (it
// may have been applied). Front thread; the consume, ack and topic handlers call it.
import { errors, refusalError } from '../errors.js';
import type { DataMessage, DataReply, DataRequest, MemberReportView } from '../protocol/data_messages.js';
import type { TopicRecord } from '../protocol/metadata_types.js';
import type { MoveChunk } from '../protocol/thread_messages.js';
import { TransportError } from '../transport/peer_transport.js';
import type { PortChannel } from '../transport/port_channel.js';

/** A forwarded request's answer time (past what it asks the owner to wait, for a long poll). */
const forwardAnswerMs = 5_000;

export class RemotePartitions {
  private nextParkRef = 1;

  constructor(private readonly channel: PortChannel | null) {}

  /** Asks the owner of topic's partition, allowing timeoutMs for its answer. */
  ask<K extends DataReply['kind']>(topic: TopicRecord, partition: number, body: DataRequest, kind: K,
    timeoutMs = forwardAnswerMs): Promise<Extract<DataReply, { kind: K }>> {
    return this.askOwner(topic, topic.owners[partition]!, partition, body, kind, timeoutMs);
  }

  /** Asks owner about partitions of topic (partition: the one its errors name). */
  async askOwner<K extends DataReply['kind']>(topic: TopicRecord, owner: number, partition: number, body: DataRequest, kind: K,
    timeoutMs = forwardAnswerMs): Promise<Extract<DataReply, { kind: K }>> {
    if (this.channel === null) throw errors.ownerUnreachable(topic.name, partition, owner);
    let reply: DataReply;
    try {
      reply = (await this.channel.request(owner, body, timeoutMs)) as DataReply;
    } catch (error) {
      throw this.failure(error, topic, partition, owner);
    }
    if (reply.kind === 'failed') throw refusalError(reply.refusal);
    if (reply.kind !== kind) throw errors.internal(`owner answered ${reply.kind} to ${body.kind}`);
    return reply as Extract<DataReply, { kind: K }>;
  }

  /** A parked take on the owner, and the way to end it early (the client left, the wait ended here first). */
  takeParked(topic: TopicRecord, partition: number, max: number, waitMs: number): { reply: Promise<Extract<DataReply, { kind: 'taken' }>>; unpark: () => void } {
    const parkRef = this.nextParkRef++;
    const reply = this.ask(topic, partition, { kind: 'take', topicId: topic.id, partitions: [partition], max, parkRef }, 'taken', waitMs + forwardAnswerMs);
    const unpark = (): void => this.tell(topic.owners[partition]!, { kind: 'unpark', parkRef });
    return { reply, unpark };
  }

  /** A watch on owner's partitions of topic: answers empty once one has a deliverable message, or after unpark. */
  watch(topic: TopicRecord, owner: number, partitions: number[], waitMs: number): { reply: Promise<unknown>; unpark: () => void } {
    const parkRef = this.nextParkRef++;
    const body: DataRequest = { kind: 'take', topicId: topic.id, partitions, max: 0, parkRef };
    const reply = this.askOwner(topic, owner, partitions[0]!, body, 'taken', waitMs + forwardAnswerMs);
    return { reply, unpark: () => this.tell(owner, { kind: 'unpark', parkRef }) };
  }

  /** Member id's own report (GET /v1/cluster/members?detail=true); throws when it is not read within timeoutMs. */
  async memberReport(id: number, timeoutMs: number): Promise<MemberReportView> {
    if (this.channel === null) throw new Error('this node has no data channel');
    const reply = (await this.channel.request(id, { kind: 'memberReport' } satisfies DataRequest, timeoutMs)) as DataReply;
    if (reply.kind !== 'memberReportResult') throw new Error(`member answered ${reply.kind} to memberReport`);
    return reply.report;
  }

  /** A move's destination reads the next chunk of the partition from its source (issue 41). */
  async moveRead(topic: TopicRecord, source: number, partition: number, fromOffset: number, maxBytes: number, timeoutMs: number): Promise<MoveChunk> {
    const body: DataRequest = { kind: 'moveRead', topicId: topic.id, partition, fromOffset, maxBytes };
    return (await this.askOwner(topic, source, partition, body, 'moveChunk', timeoutMs)).chunk;
  }

  /** After the flip at metaIndex, the destination asks the source to confirm it let the partition go (issue 41). */
  async moveRelease(topic: TopicRecord, source: number, partition: number, metaIndex: number, timeoutMs: number): Promise<void> {
    await this.askOwner(topic, source, partition, { kind: 'moveRelease', topicId: topic.id, partition, metaIndex }, 'moveReleased', timeoutMs);
  }

  tell(owner: number, message: DataMessage): void {
    this.channel?.send(owner, message);
  }

  private failure(error: unknown, topic: TopicRecord, partition: number, owner: number): Error {
    if (error instanceof TransportError && (error.code === 'unreachable' || error.code === 'closed')) {
      return errors.ownerUnreachable(topic.name, partition, owner);
    }
    if (error instanceof TransportError) return errors.ownerNoAnswer(topic.name, partition, owner);
    return error instanceof Error ? error : new Error(String(error));
  }
}
