// Partition move routes (NOTES 16, issue 41; admin only, checked by server.ts first): the moves every member runs
// as destination, gathered from their own reports (member_report.ts); abort of a move that has not flipped; and an
// operator's move of one partition to a named member, which proposes move.start (the destination's MoveRunner,
// src/front/moves/, copies it). Front thread; routes.ts names these handlers.
import { limits } from '../../config.js';
import { errors, refusalError } from '../../errors.js';
import type { DestinationMoveView } from '../../protocol/data_messages.js';
import type { PartitionMoveRecord, TopicRecord } from '../../protocol/metadata_types.js';
import { parseJsonObject } from '../json_body.js';
import { memberReports, moveJson } from '../member_report.js';
import { jsonReply, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';

/** GET /v1/cluster/moves: each move as its destination reports it; one whose destination did not answer in time is
 *  shown from the metadata, with why in last_error. */
export async function onListMoves(_ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const reports = await memberReports(s, [...s.replica.state.members.keys()]);
  const moves: Record<string, unknown>[] = [];
  const reported = new Set<string>();
  for (const report of reports.values()) {
    if (typeof report === 'string') continue;
    for (const move of report.movesAsDestination) {
      reported.add(`${move.topic}/${move.partition}`);
      moves.push(moveJson(move));
    }
  }
  for (const move of s.replica.state.moves.values()) {
    if (reported.has(`${move.topic}/${move.partition}`)) continue;
    const report = reports.get(move.destination);
    moves.push(moveJson(unreportedView(move, typeof report === 'string' ? report : '')));
  }
  return jsonReply(200, { moves });
}

function unreportedView(move: PartitionMoveRecord, why: string): DestinationMoveView {
  return {
    topic: move.topic, partition: move.partition, source: move.source, destination: move.destination, startedAtMs: move.startedAtMs,
    workerState: move.phase === 'flipped' ? 'waiting_for_source' : move.phase, attempts: 0, lastError: why, bytesFetched: 0, stuckReason: '',
  };
}

/** POST /v1/cluster/moves/{topic}/{partition}/abort: 204, or 409 "no matching move" (NOTES 16). */
export async function onAbortMove(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const name = ctx.param(0);
  const partition = partitionParam(ctx.param(1));
  const body = await ctx.body();
  if (body.byteLength > 0) parseJsonObject(body, []);
  const topic = s.replica.state.topics.get(name);
  if (topic === undefined) throw errors.moveNotFound(name, partition);
  const result = await s.replica.propose({ type: 'move.abort', topicId: topic.id, partition }, ctx.user);
  if (!result.ok) throw refusalError(result.refusal);
  return { status: 204 };
}

/** POST /v1/cluster/moves {"topic", "partition", "destination"}: 202 with the move (NOTES 16). */
export async function onStartMove(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const body = parseJsonObject(await ctx.body(), ['topic', 'partition', 'destination']);
  if (typeof body.topic !== 'string' || body.topic === '') throw errors.invalid('topic', 'required: a topic name');
  const partition = body.partition;
  if (typeof partition !== 'number' || !Number.isSafeInteger(partition) || partition < 0) {
    throw errors.invalid('partition', 'required: an integer from 0');
  }
  const destination = memberIdField(body.destination);
  if (!s.replica.state.members.has(destination)) throw errors.invalid('destination', `member ${destination} is not a member of this cluster`);
  const topic = await s.replica.topicForChange(body.topic);
  if (partition >= topic.partitions) throw errors.invalid('partition', `must be below the topic's ${topic.partitions} partitions`);
  const move = operatorMove(topic, partition, destination);
  const result = await s.replica.propose({ type: 'move.start', moves: [move] }, ctx.user);
  if (!result.ok) throw refusalError(result.refusal);
  return jsonReply(202, moveJson(unreportedView(move, '')));
}

function operatorMove(topic: TopicRecord, partition: number, destination: number): PartitionMoveRecord {
  return {
    topicId: topic.id, topic: topic.name, partition, source: topic.owners[partition]!, destination,
    startedAtMs: Date.now(), reason: 'operator', phase: 'copying',
  };
}

/** A member id as members show it (a string of digits) or as a plain integer. */
function memberIdField(value: unknown): number {
  const id = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,5}$/.test(value) ? Number(value) : NaN;
  if (!(Number.isSafeInteger(id) && id >= 1 && id <= limits.node_id_max)) {
    throw errors.invalid('destination', `required: a member id (an integer from 1 to ${limits.node_id_max})`);
  }
  return id;
}

function partitionParam(text: string): number {
  if (!/^\d{1,9}$/.test(text)) throw errors.invalid('partition', 'must be an integer from 0');
  return Number(text);
}
