// Consume, replay and settle of partitions another node owns (issue 29 point 4): forwarded over the data channel
// (src/front/remote_partitions.ts) to the owner, whose worker answers as a local one would. A long poll parks on the
// owner's worker and is unparked from here (deadline, client gone, shutdown, topic deleted). Front thread;
// consume.ts calls it when the partition a request names lives elsewhere.
import { BrokerError, errors } from '../../errors.js';
import { messageJson } from '../../body/message_json.js';
import { groupBy } from '../../protocol/ownership.js';
import { handleSeparator } from '../../protocol/receipt_handle.js';
import type { TopicRecord } from '../../protocol/metadata_types.js';
import type { SettleMode } from '../../protocol/thread_messages.js';
import { jsonType, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';

const emptyAnswer: Reply = { status: 204 };

export async function replayRemote(s: RouteServices, topic: TopicRecord, partition: number, offset: number): Promise<Reply> {
  const reply = await s.remote.ask(topic, partition, { kind: 'read', topicId: topic.id, partition, offset }, 'readResult');
  if (reply.status === 'past_end') return emptyAnswer;
  if (reply.status === 'aged_out') throw errors.offsetAgedOut(offset);
  return { status: 200, contentType: jsonType, body: messageJson(topic.name, partition, reply.record!) };
}

/** A consume pinned to a partition another node owns: one take there, parked on its worker for a long poll. */
export async function pollRemote(ctx: RequestContext, s: RouteServices, topic: TopicRecord, partition: number,
  max: number | undefined, waitMs: number, headers: Record<string, string>): Promise<Reply> {
  const asked = max ?? 1;
  const park = waitMs > 0 && !s.consume.closing;
  const taken = park
    ? await takeParkedRemote(ctx, s, topic, partition, asked, waitMs)
    : await s.remote.ask(topic, partition, { kind: 'take', topicId: topic.id, partitions: [partition], max: asked }, 'taken');
  if (ctx.aborted) {
    if (taken.count > 0) s.remote.tell(topic.owners[partition]!, { kind: 'release', topicId: topic.id, handles: taken.handles });
    return emptyAnswer;
  }
  if (taken.count === 0) return { ...emptyAnswer, headers };
  const body = max !== undefined ? `{"messages":[${taken.messagesJson}]}` : taken.messagesJson;
  return { status: 200, contentType: jsonType, headers, body };
}

function takeParkedRemote(ctx: RequestContext, s: RouteServices, topic: TopicRecord, partition: number, max: number, waitMs: number) {
  const { reply, unpark } = s.remote.takeParked(topic, partition, max, waitMs);
  return s.consume.whileParked(ctx, topic.id, Date.now() + waitMs, unpark, reply);
}

/** Settles the handles at `indexes` (each of a partition another node owns) with their owners, one request per
 *  owner node; a status per handle lands in statuses. An owner that cannot be reached or did not answer settles
 *  nothing known: its handles get that 503 or 502, and the error is returned for them. */
export async function settleRemote(s: RouteServices, topic: TopicRecord, mode: SettleMode, handles: readonly string[],
  partitions: readonly number[], indexes: readonly number[], statuses: number[]): Promise<Map<number, BrokerError>> {
  const byOwner = groupBy(indexes, (i) => topic.owners[partitions[i]!]!);
  const failures = new Map<number, BrokerError>();
  await Promise.all([...byOwner.values()].map(async (at) => {
    const joined = at.map((i) => handles[i]!).join(handleSeparator);
    try {
      const reply = await s.remote.ask(topic, partitions[at[0]!]!, { kind: 'settle', topicId: topic.id, mode, handles: joined }, 'settledResult');
      at.forEach((i, k) => (statuses[i] = reply.statuses[k]!));
    } catch (error) {
      if (!(error instanceof BrokerError)) throw error;
      for (const i of at) {
        statuses[i] = error.status;
        failures.set(i, error);
      }
    }
  }));
  return failures;
}
