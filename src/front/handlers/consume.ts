// Consume and ack routes (spec §4 Consume and ack, §3 Lease of a message). Without offset a consume leases the
// next available message(s) through the owning workers, walking the topic's partitions round-robin, and long-polls
// (front/waiters.ts) when nothing is available; with partition and offset it is a replay (no lease). Ack, extend and
// nack settle leases on the owning worker, one handle or a batch. Front thread; routes.ts names these handlers, after
// server.ts looked the topic up and checked the consume grant.
import { localPartitions } from '../partition_owners.js';
import { pollRemote, replayRemote, settleRemote } from './consume_remote.js';
import { pollEverywhere } from './consume_spread.js';
import { formatDuration, limits, parseDuration } from '../../config.js';
import { errors, type BrokerError } from '../../errors.js';
import { messageJson } from '../../body/message_json.js';
import { handleSeparator, receiptHandlePartition } from '../../protocol/receipt_handle.js';
import type { SettleMode } from '../../protocol/thread_messages.js';
import type { TopicRecord } from '../../protocol/metadata_types.js';
import { release, take, type Taken } from '../consume_takes.js';
import { workerFailure } from '../ingress/dispatch.js';
import { parseJsonObject } from '../json_body.js';
import { jsonType, type Reply } from '../respond.js';
import { routeTopic, type RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';
import { retryMoved, topicAfterMove } from '../moved_retry.js';

const emptyAnswer: Reply = { status: 204 };

/** Checks the query and the caps, then replays or polls: not async itself, so a consume makes no promise more than
 *  the one of the work it starts (a throw here is answered as a rejection would be). */
export function onConsume(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const topic = routeTopic(ctx);
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
  // A pinned partition is served wherever it lives (forwarded to its owner); without one, every owner's in turn.
  const remote = (t: TopicRecord): boolean => partition !== undefined && t.owners[partition] !== s.nodeId;
  const spread = partition === undefined && localPartitions(topic, s.nodeId).length < topic.partitions;
  // A partition that moved while the request was on its way is asked again at its new owner (moved_retry.ts).
  if (offset !== undefined) return retryMoved(s, topic, (t) => (remote(t) ? replayRemote(s, t, partition!, offset) : replay(s, t, partition!, offset)));

  const state = s.consume;
  const headers: Record<string, string> = {};
  let waitMs = waitMsAsked;
  if (waitMs > state.waitMsMax) {
    waitMs = state.waitMsMax;
    headers['X-Svc-Wait-Clamped'] = formatDuration(waitMs);
  }
  // Spec §8: a batch consume counts as its max (clamped to the cap); long polls count while they wait.
  const taken = state.inFlight.tryTake(ctx.identity, max ?? 1, state.capMax);
  if (taken === null) throw errors.tooManyConsumes(headers['X-Svc-Wait-Clamped'] ?? null);
  ctx.onDone(() => state.inFlight.give(ctx.identity, taken));
  if (spread) return pollEverywhere(ctx, s, topic, max, waitMs, headers);
  return retryMoved(s, topic, (t) => (remote(t) ? pollRemote(ctx, s, t, partition!, max, waitMs, headers)
    : pollUntilAnswered(ctx, s, t, partition, max, waitMs, headers)));
}

/** Takes leases round after round until some come, the wait ends, or the client goes away. Bounded: every round
 *  either answers or waits for messages, the deadline or an abort. */
async function pollUntilAnswered(ctx: RequestContext, s: RouteServices, topic: TopicRecord, partition: number | undefined,
  max: number | undefined, waitMs: number, headers: Record<string, string>): Promise<Reply> {
  const state = s.consume;
  const deadlineMs = Date.now() + waitMs;
  for (;;) {
    const byWorker = s.workers.groupByOwner(topic.id, partitionOrder(s, topic, partition), (p) => p);
    // A long poll whose partitions all live on one worker waits there (workers/parked_takes.ts): the flush that
    // brings its records answers it. Spread over several workers, it waits here for their 'available' reports.
    const parkOn = waitMs > 0 && !state.closing && byWorker.size === 1 ? byWorker.entries().next().value! : null;
    const messages = parkOn === null ? await take(s, topic, byWorker, max ?? 1) : await takeParked(ctx, s, topic, parkOn[0], parkOn[1], max ?? 1, deadlineMs);
    if (ctx.aborted) {
      release(s, topic, messages);
      return emptyAnswer;
    }
    if (messages.count > 0) {
      const body = max !== undefined ? `{"messages":[${messages.json}]}` : messages.json;
      return { status: 200, contentType: jsonType, headers, body };
    }
    const leftMs = deadlineMs - Date.now();
    if (leftMs <= 0 || state.closing) return { ...emptyAnswer, headers };
    if (parkOn === null) {
      const reason = await state.waiters.wait(topic.id, leftMs, (listener) => ctx.onAbort(listener));
      if (reason === 'aborted') return emptyAnswer;
      if (reason === 'closed') return { ...emptyAnswer, headers };
    }
    const current = s.replica.state.topics.get(topic.name);
    if (current === undefined || current.id !== topic.id) throw errors.topicNotFound(topic.name);
  }
}

/** The partitions a consume tries, in order: the one asked for, or this node's in round-robin order from a
 *  per-topic start (the others are served by their owners). */
function partitionOrder(s: RouteServices, topic: TopicRecord, partition: number | undefined): number[] {
  if (partition !== undefined) return [partition];
  const local = localPartitions(topic, s.nodeId);
  const startIndex = s.consume.startIndex;
  const start = (startIndex.get(topic.id) ?? 0) % local.length;
  startIndex.set(topic.id, start + 1);
  return Array.from({ length: local.length }, (_, i) => local[(start + i) % local.length]!);
}

/** A take that waits on its worker until it leases something, or is unparked: at the deadline, when the client
 *  goes away, when the topic is deleted or when the node shuts down. It then comes back empty, or with what the
 *  worker leased just before the unpark arrived (the caller answers with it, or releases it). */
async function takeParked(ctx: RequestContext, s: RouteServices, topic: TopicRecord, worker: number, partitions: number[], max: number,
  deadlineMs: number): Promise<Taken> {
  const { reply, unpark } = s.workers.requestParked(worker, { kind: 'take', topicId: topic.id, partitions, max });
  const answer = await s.consume.whileParked(ctx, topic.id, deadlineMs, unpark, reply);
  const failure = workerFailure(answer);
  if (failure !== null) throw failure;
  if (answer.kind !== 'taken') throw errors.internal('unexpected worker answer');
  return { count: answer.count, json: answer.messagesJson, handles: answer.handles };
}

async function replay(s: RouteServices, topic: TopicRecord, partition: number, offset: number): Promise<Reply> {
  const reply = await s.workers.request(s.workers.ownerOf(topic.id, partition), { kind: 'read', topicId: topic.id, partition, offset });
  const failure = workerFailure(reply);
  if (failure !== null) throw failure;
  if (reply.kind !== 'readResult') throw errors.internal('unexpected worker answer');
  if (reply.status === 'past_end') return emptyAnswer;
  if (reply.status === 'aged_out') throw errors.offsetAgedOut(offset);
  return { status: 200, contentType: jsonType, body: messageJson(topic.name, partition, reply.record!) };
}

export async function onAck(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const topic = routeTopic(ctx);
  const mode = settleMode(ctx.query.get('extend'));
  const handleText = ctx.query.get('receipt_handle');
  if (handleText !== undefined) {
    const partition = receiptHandlePartition(handleText);
    if (partition < 0) throw errors.invalid('receipt_handle', 'not a receipt handle from a consume answer');
    const { statuses: [status], failures } = await settleRetryingMoved(s, topic, mode, [handleText], [partition]);
    if (status === 204) return emptyAnswer;
    const failure = failures.get(0);
    if (failure !== undefined) throw failure;
    throw errors.leaseGone();
  }
  const handles = batchHandles(await ctx.body());
  const partitions = handles.map(receiptHandlePartition);
  const { statuses, failures } = await settleRetryingMoved(s, topic, mode, handles, partitions);
  // The results array as text, exactly what JSON.stringify of {results} gives: nearly every item is {"status":204}.
  const results = statuses.map((status, at) => {
    if (status === 204) return settledResultJson;
    if (status === 410) return leaseGoneResultJson;
    if (status === 400) return notAHandleResultJson;
    return JSON.stringify({ status, error: (failures.get(at) ?? errors.leaseGone()).message });
  });
  return { status: 200, contentType: jsonType, body: `{"results":[${results.join(',')}]}` };
}

/**
 * One status per handle, in order: 400 where partitions[i] is -1 (the text is not a handle: NOTES 10), 410 for a
 * partition the topic does not have, else the owning worker's answer, here or on the owner node (whose failures,
 * 502 or 503, come with their errors). Handles and partitions are parallel arrays: a batch ack builds no object per
 * handle.
 */
async function settle(s: RouteServices, topic: TopicRecord, mode: SettleMode, handles: readonly string[], partitions: readonly number[]):
  Promise<{ statuses: number[]; failures: Map<number, BrokerError> }> {
  const statuses = new Array<number>(handles.length);
  const local: number[] = [];
  const remote: number[] = [];
  for (let i = 0; i < handles.length; i++) {
    const partition = partitions[i]!;
    if (partition < 0) statuses[i] = 400;
    else if (partition >= topic.partitions) statuses[i] = 410;
    else if (topic.owners[partition] !== s.nodeId) remote.push(i);
    else local.push(i);
  }
  const failures = remote.length === 0 ? noFailures : settleRemote(s, topic, mode, handles, partitions, remote, statuses);
  const localFailures = new Map<number, BrokerError>();
  const byWorker = s.workers.groupByOwner(topic.id, local, (i) => partitions[i]!);
  await Promise.all([...byWorker].map(async ([worker, indexes]) => {
    // The handles as the client sent them (each checked by receiptHandlePartition), joined: one string to copy.
    const joined = indexes.map((i) => handles[i]!).join(handleSeparator);
    const reply = await s.workers.request(worker, { kind: 'settle', topicId: topic.id, mode, handles: joined });
    // A worker's refusal (a partition moved away: 421) answers its own handles only, as an owner node's does in
    // settleRemote: the other workers' handles are settled already and must not be settled twice.
    const failure = workerFailure(reply);
    if (failure !== null) {
      for (const i of indexes) {
        statuses[i] = failure.status;
        localFailures.set(i, failure);
      }
      return;
    }
    if (reply.kind !== 'settledResult') throw errors.internal('unexpected worker answer');
    indexes.forEach((i, k) => (statuses[i] = reply.statuses[k]!));
  }));
  const all = await failures;
  if (localFailures.size === 0) return { statuses, failures: all };
  return { statuses, failures: new Map([...all, ...localFailures]) };
}

/** settle, with handles whose partition moved on the way (421) settled once more at the new owner. */
async function settleRetryingMoved(s: RouteServices, topic: TopicRecord, mode: SettleMode, handles: readonly string[], partitions: readonly number[]):
  Promise<{ statuses: number[]; failures: Map<number, BrokerError> }> {
  const first = await settle(s, topic, mode, handles, partitions);
  const moved = first.statuses.flatMap((status, i) => (status === 421 ? [i] : []));
  if (moved.length === 0) return first;
  const again = await settle(s, await topicAfterMove(s, topic), mode, moved.map((i) => handles[i]!), moved.map((i) => partitions[i]!));
  moved.forEach((i, k) => {
    first.statuses[i] = again.statuses[k]!;
    const failure = again.failures.get(k);
    if (failure === undefined) first.failures.delete(i);
    else first.failures.set(i, failure);
  });
  return first;
}

const noFailures: Promise<Map<number, BrokerError>> = Promise.resolve(new Map());

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

/** Items of a batch ack's results array (NOTES 10), as JSON.stringify writes them. */
const settledResultJson = JSON.stringify({ status: 204 });
const leaseGoneResultJson = resultJson(errors.leaseGone());
const notAHandleResultJson = resultJson(errors.invalid('receipt_handle', 'not a receipt handle from a consume answer'));

function resultJson(error: BrokerError): string {
  return JSON.stringify({ status: error.status, error: error.message });
}
