// A request that reached a partition's old owner after a move gave it away (issue 41, spec §7 421): the owner's
// worker answers partitionMoved; the asking front catches its metadata copy up with the leader, which then names the
// new owner, and tries once more there. A second 421 reaches the client (the project's client retries it). Front
// thread; the consume, ack and topic handlers wrap their partition requests in it.
import { BrokerError, errors } from '../errors.js';
import type { TopicRecord } from '../protocol/metadata_types.js';
import type { RouteServices } from './services.js';

export function isMoved(error: unknown): boolean {
  return error instanceof BrokerError && error.status === 421;
}

/** The topic as the replica holds it once caught up with the leader (404 when it was deleted meanwhile). */
export async function topicAfterMove(s: Pick<RouteServices, 'replica'>, topic: TopicRecord): Promise<TopicRecord> {
  await s.replica.catchUp();
  const current = s.replica.state.topics.get(topic.name);
  if (current === undefined || current.id !== topic.id) throw errors.topicNotFound(topic.name);
  return current;
}

/** Runs run with the topic; on a 421, once more with the topic's owners as the leader knows them. */
export async function retryMoved<T>(s: Pick<RouteServices, 'replica'>, topic: TopicRecord, run: (topic: TopicRecord) => Promise<T>): Promise<T> {
  try {
    return await run(topic);
  } catch (error) {
    if (!isMoved(error)) throw error;
    return run(await topicAfterMove(s, topic));
  }
}
