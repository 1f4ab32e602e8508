// Consume and ack routes (spec §4 Consume and ack, §3 Lease of a message). Without offset a consume leases the
// next available message(s) through the owning workers, walking the topic's partitions round-robin, and long-polls
// (front/waiters.ts) when nothing is available; with partition and offset it is a replay (no lease). Ack, extend and
// nack settle leases on the owning worker, one handle or a batch. Front thread.
import { localPartitions, noLocalPartition, ownedElsewhere, requireLocalPartition } from '../partition_owners.js';
import { formatDuration, limits, parseDuration } from '../../config.js';
import { BrokerError, errors } from '../../errors.js';
import { messageJson } from '../../protocol/message_json.js';
import { forEachJoinedHandle, formatReceiptHandle, handleSeparator, receiptHandlePartition } from '../../protocol/receipt_handle.js';
import type { SettleMode } from '../../protocol/thread_messages.js';
import type { TopicRecord } from '../../protocol/metadata_types.js';
import { workerFailure } from '../dispatch.js';
import { parseJsonObject } from '../json_body.js';
import { requireTopic } from '../access.js';
import { InFlightPerIdentity } from '../in_flight.js';
import { jsonType, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { FrontServices } from '../services.js';
import { TopicWaiters } from '../waiters.js';

const emptyAnswer: Reply = { status: 204 };

export function consumeHandlers(services: FrontServices) {
  const { replica, workers, config } = services;
  const waiters = new TopicWaiters();
  const consumeInFlight = new InFlightPerIdentity();
  const consumeCapMax = config['http.max_consume_in_flight_per_identity'];
  const waitMsMax = config['http.max_consume_wait'];
  /** Per topic id: the partition the next consume starts from, so no partition starves. */
  const startIndex = new Map<string, number>();
  /** Per topic id: how to end each long poll parked on a worker. */
  const parkedByTopic = new Map<string, Set<() => void>>();
  /** Set by graceful shutdown: long polls answer now and no new one parks. */
  let closing = false;
  workers.onAvailable = (topicId, count) => waiters.notify(topicId, count);
  replica.onApplied((command) => {
    if (command.type === 'topic.delete') {
      startIndex.delete(command.id);
      waiters.notifyAll(command.id);
      unparkTopic(command.id);
    }
  });

  async function onConsume(ctx: RequestContext): Promise<Reply> {
    const topic = replica.topic(ctx.param(0));
    requireTopic.consume(ctx.user, topic);
    const { query } = ctx;
    const waitText = query.get('wait');
    const waitMsAsked = waitText === undefined ? 0 : parseDuration(waitText);
    if (waitMsAsked === null) throw errors.invalid('wait', 'must be a duration such as 500ms or 10s, not negative');
    const partition = query.integer('partition', 0, topic.partitions - 1, `not a partition of topic ${topic.name} (0 to ${topic.partitions - 1})`);
    const offset = query.integer('offset', 0, Number.MAX_SAFE_INTEGER, 'must be a non-negative integer');
    const max = query.integer('max', 1, limits.batch_consume_max);
    if (max !== undefined && offset !== undefined) throw errors.invalid('max', 'not allowed with offset');
    if (offset !== undefined && partition === undefined) throw errors.invalid('offset', 'requires partition');
    if (max !== undefined && ctx.headers.svcClient === null) throw errors.invalid('max', 'needs the X-Svc-Client header');
    if (partition !== undefined) requireLocalPartition(topic, partition, services.nodeId);
    else if (localPartitions(topic, services.nodeId).length === 0) throw noLocalPartition(topic);
    if (offset !== undefined) return replay(topic, partition!, offset);

    const headers: Record<string, string> = {};
    let waitMs = waitMsAsked;
    if (waitMs > waitMsMax) {
      waitMs = waitMsMax;
      headers['X-Svc-Wait-Clamped'] = formatDuration(waitMs);
    }
    // Spec §8: a batch consume counts as its max (clamped to the cap); long polls count while they wait.
    const taken = consumeInFlight.tryTake(ctx.identity, max ?? 1, consumeCapMax);
    if (taken === null) {
      throw new BrokerError(429, 'too many in-flight consume requests for this identity', { 'Retry-After': '1', ...headers });
    }
    ctx.onDone(() => consumeInFlight.give(ctx.identity, taken));
    const deadlineMs = Date.now() + waitMs;
    // Bounded: every round either answers or waits for messages, the deadline or an abort.
    for (;;) {
      const byWorker = workers.groupByOwner(topic.id, partitionOrder(topic, partition), (p) => p);
      // A long poll whose partitions all live on one worker waits there (workers/parked_takes.ts): the flush that
      // brings its records answers it. Spread over several workers, it waits here for their 'available' reports.
      const parkOn = waitMs > 0 && !closing && byWorker.size === 1 ? byWorker.entries().next().value! : null;
      const messages = parkOn === null ? await take(topic, byWorker, max ?? 1) : await takeParked(ctx, topic, parkOn[0], parkOn[1], max ?? 1, deadlineMs);
      if (ctx.aborted) {
        release(topic, messages);
        return emptyAnswer;
      }
      if (messages.count > 0) {
        const body = max !== undefined ? `{"messages":[${messages.json}]}` : messages.json;
        return { status: 200, contentType: jsonType, headers, body };
      }
      const leftMs = deadlineMs - Date.now();
      if (leftMs <= 0 || closing) return { ...emptyAnswer, headers };
      if (parkOn === null) {
        const reason = await waiters.wait(topic.id, leftMs, (listener) => ctx.onAbort(listener));
        if (reason === 'aborted') return emptyAnswer;
        if (reason === 'closed') return { ...emptyAnswer, headers };
      }
      const current = replica.state.topics.get(topic.name);
      if (current === undefined || current.id !== topic.id) throw errors.topicNotFound(topic.name);
    }
  }

  /** The partitions a consume tries, in order: the one asked for, or this node's in round-robin order from a
   *  per-topic start (the others are served by their owners). */
  function partitionOrder(topic: TopicRecord, partition: number | undefined): number[] {
    if (partition !== undefined) return [partition];
    const local = localPartitions(topic, services.nodeId);
    const start = (startIndex.get(topic.id) ?? 0) % local.length;
    startIndex.set(topic.id, start + 1);
    return Array.from({ length: local.length }, (_, i) => local[(start + i) % local.length]!);
  }

  /** Leases up to max messages from each worker's partitions in order, one message per worker. */
  async function take(topic: TopicRecord, byWorker: Map<number, number[]>, max: number): Promise<Taken> {
    const taken: Taken = { count: 0, json: '', handles: '' };
    for (const [worker, partitions] of byWorker) {
      const reply = await workers.request(worker, { kind: 'take', topicId: topic.id, partitions, max: max - taken.count });
      const failure = workerFailure(reply);
      if (failure !== null) {
        release(topic, taken);
        throw failure;
      }
      if (reply.kind === 'taken' && reply.count > 0) {
        const separator = taken.count === 0 ? '' : handleSeparator;
        taken.json += separator + reply.messagesJson;
        taken.handles += separator + reply.handles;
        taken.count += reply.count;
      }
      if (taken.count >= max) break;
    }
    return taken;
  }

  /** A take that waits on its worker until it leases something, or is unparked: at the deadline, when the client
   *  goes away, when the topic is deleted or when the node shuts down. It then comes back empty, or with what the
   *  worker leased just before the unpark arrived (the caller answers with it, or releases it). */
  async function takeParked(ctx: RequestContext, topic: TopicRecord, worker: number, partitions: number[], max: number, deadlineMs: number): Promise<Taken> {
    const { reply, unpark } = workers.requestParked(worker, { kind: 'take', topicId: topic.id, partitions, max });
    const timer = setTimeout(unpark, deadlineMs - Date.now());
    const removeAbort = ctx.onAbort(unpark);
    let unparks = parkedByTopic.get(topic.id);
    if (unparks === undefined) parkedByTopic.set(topic.id, (unparks = new Set()));
    unparks.add(unpark);
    let answer: Awaited<typeof reply>;
    try {
      answer = await reply;
    } finally {
      clearTimeout(timer);
      removeAbort();
      unparks.delete(unpark);
      if (unparks.size === 0 && parkedByTopic.get(topic.id) === unparks) parkedByTopic.delete(topic.id);
    }
    const failure = workerFailure(answer);
    if (failure !== null) throw failure;
    if (answer.kind !== 'taken') throw errors.internal('unexpected worker answer');
    return { count: answer.count, json: answer.messagesJson, handles: answer.handles };
  }

  function unparkTopic(topicId: string): void {
    for (const unpark of parkedByTopic.get(topicId) ?? []) unpark();
  }

  /** Ends the leases of a consume whose client went away (rare: the handles are parsed only here). */
  function release(topic: TopicRecord, taken: Taken): void {
    const leases: { partition: number; handle: string }[] = [];
    forEachJoinedHandle(taken.handles, (partition, offset, nonce) => leases.push({ partition, handle: formatReceiptHandle(partition, offset, nonce) }));
    for (const [worker, items] of workers.groupByOwner(topic.id, leases, (lease) => lease.partition)) {
      workers.send(worker, { kind: 'release', topicId: topic.id, handles: items.map((item) => item.handle).join(handleSeparator) });
    }
  }

  async function replay(topic: TopicRecord, partition: number, offset: number): Promise<Reply> {
    const reply = await workers.request(workers.ownerOf(topic.id, partition), { kind: 'read', topicId: topic.id, partition, offset });
    const failure = workerFailure(reply);
    if (failure !== null) throw failure;
    if (reply.kind !== 'readResult') throw errors.internal('unexpected worker answer');
    if (reply.status === 'past_end') return emptyAnswer;
    if (reply.status === 'aged_out') throw errors.offsetAgedOut(offset);
    return { status: 200, contentType: jsonType, body: messageJson(topic.name, partition, reply.record!) };
  }

  async function onAck(ctx: RequestContext): Promise<Reply> {
    const topic = replica.topic(ctx.param(0));
    requireTopic.consume(ctx.user, topic);
    const mode = settleMode(ctx.query.get('extend'));
    const handleText = ctx.query.get('receipt_handle');
    if (handleText !== undefined) {
      const partition = receiptHandlePartition(handleText);
      if (partition < 0) throw errors.invalid('receipt_handle', 'not a receipt handle from a consume answer');
      const [status] = await settle(topic, mode, [handleText], [partition]);
      if (status === 204) return emptyAnswer;
      if (status === 503) throw ownedElsewhere(topic, partition);
      throw leaseGone();
    }
    const handles = batchHandles(await ctx.body());
    const partitions = handles.map(receiptHandlePartition);
    const statuses = await settle(topic, mode, handles, partitions);
    // The results array as text, exactly what JSON.stringify of {results} gives: nearly every item is {"status":204}.
    const results = statuses.map((status, at) => {
      if (status === 204) return settledResultJson;
      if (status === 410) return leaseGoneResultJson;
      if (status === 400) return notAHandleResultJson;
      return JSON.stringify({ status, error: status === 503 ? ownedElsewhere(topic, partitions[at]!).message : leaseGone().message });
    });
    return { status: 200, contentType: jsonType, body: `{"results":[${results.join(',')}]}` };
  }

  /**
   * One status per handle, in order: 400 where partitions[i] is -1 (the text is not a handle: NOTES 10), 410 for a
   * partition the topic does not have, 503 for a partition another node owns (its leases live there), else the owning
   * worker's answer. Handles and partitions are parallel arrays: a batch ack builds no object per handle.
   */
  async function settle(topic: TopicRecord, mode: SettleMode, handles: readonly string[], partitions: readonly number[]): Promise<number[]> {
    const statuses = new Array<number>(handles.length);
    const local: number[] = [];
    for (let i = 0; i < handles.length; i++) {
      const partition = partitions[i]!;
      if (partition < 0) statuses[i] = 400;
      else if (partition >= topic.partitions) statuses[i] = 410;
      else if (topic.owners[partition] !== services.nodeId) statuses[i] = 503;
      else local.push(i);
    }
    const byWorker = workers.groupByOwner(topic.id, local, (i) => partitions[i]!);
    await Promise.all([...byWorker].map(async ([worker, indexes]) => {
      // The handles as the client sent them (each checked by receiptHandlePartition), joined: one string to copy.
      const joined = indexes.map((i) => handles[i]!).join(handleSeparator);
      const reply = await workers.request(worker, { kind: 'settle', topicId: topic.id, mode, handles: joined });
      const failure = workerFailure(reply);
      if (failure !== null) throw failure;
      if (reply.kind !== 'settledResult') throw errors.internal('unexpected worker answer');
      indexes.forEach((i, k) => (statuses[i] = reply.statuses[k]!));
    }));
    return statuses;
  }

  /** Graceful shutdown: long polls answer now instead of holding the node until their wait ends. */
  function closeWaiters(): void {
    closing = true;
    waiters.close();
    for (const topicId of [...parkedByTopic.keys()]) unparkTopic(topicId);
  }

  return { onConsume, onAck, closeWaiters };
}

function settleMode(extend: string | undefined): SettleMode {
  if (extend === undefined || extend === 'false') return 'ack';
  if (extend === 'true' || extend === '1') return 'extend';
  if (extend === '0') return 'nack';
  throw errors.invalid('extend', 'must be true or 1 (extend), 0 (nack) or false (ack)');
}

function batchHandles(body: Uint8Array): string[] {
  if (body.byteLength === 0) throw errors.invalid('receipt_handle', 'required in the query, or receipt_handles in the body');
  const handles = parseJsonObject(body, ['receipt_handles']).receipt_handles;
  if (!Array.isArray(handles) || handles.length === 0) throw errors.invalid('receipt_handles', `required, 1 to ${limits.batch_ack_handles_max} receipt handles`);
  if (handles.length > limits.batch_ack_handles_max) throw errors.invalid('receipt_handles', `at most ${limits.batch_ack_handles_max} receipt handles`);
  // A handle that is not even a string makes the body malformed; a string that does not decode fails alone (NOTES 10).
  if (!handles.every((h) => typeof h === 'string')) throw errors.invalid('receipt_handles', 'must be an array of strings');
  return handles as string[];
}

function leaseGone(): BrokerError {
  return new BrokerError(410, 'lease gone: it ran out, was settled, or the message was delivered again under a new handle');
}

/** Items of a batch ack's results array (NOTES 10), as JSON.stringify writes them. */
const settledResultJson = JSON.stringify({ status: 204 });
const leaseGoneResultJson = JSON.stringify({ status: 410, error: leaseGone().message });
const notAHandleResultJson = JSON.stringify({ status: 400, error: 'receipt_handle: not a receipt handle from a consume answer' });

/** Leases taken for one consume: how many, their Message objects as JSON text joined by ',', and their receipt
 *  handles joined by ',' (thread_messages.ts 'taken'). */
interface Taken {
  count: number;
  json: string;
  handles: string;
}
