// Consume without a partition of a topic spread over several nodes (issue 29 point 4): a round asks this node's
// workers and then each other owner ("take up to k from these partitions", one request per owner node, the owners in
// a per-topic rotating order so none starves); with nothing to lease and time left, it watches every owner at once (a
// take of max 0 parked on their workers, answered once a partition has a deliverable message: a commit, an expired
// lease, a nack) and takes again when one answers, so nothing polls the owners in a loop. An owner that cannot be
// reached is skipped: its messages wait for it. Front thread; consume.ts calls it.
import { BrokerError, errors } from '../../errors.js';
import { groupBy } from '../../protocol/ownership.js';
import { handleSeparator } from '../../protocol/receipt_handle.js';
import type { TopicRecord } from '../../protocol/metadata_types.js';
import { jsonType, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';
import { release, take, type Taken } from '../consume_takes.js';

const emptyAnswer: Reply = { status: 204 };

export async function pollEverywhere(ctx: RequestContext, s: RouteServices, asked: TopicRecord, max: number | undefined,
  waitMs: number, headers: Record<string, string>): Promise<Reply> {
  // Each round reads the topic again: a move changes where its partitions are.
  let topic = asked;
  const deadlineMs = Date.now() + waitMs;
  for (let round = 0; ; round++) {
    const taken = await takeEverywhere(s, topic, max ?? 1);
    if (ctx.aborted) {
      releaseEverywhere(s, topic, taken);
      return emptyAnswer;
    }
    if (taken.all.count > 0) {
      const body = max !== undefined ? `{"messages":[${taken.all.json}]}` : taken.all.json;
      return { status: 200, contentType: jsonType, headers, body };
    }
    if (Date.now() >= deadlineMs || s.consume.closing) return { ...emptyAnswer, headers };
    await watchEverywhere(ctx, s, topic, deadlineMs);
    if (ctx.aborted) return emptyAnswer;
    const current = s.replica.state.topics.get(topic.name);
    if (current === undefined || current.id !== topic.id) throw errors.topicNotFound(topic.name);
    topic = current;
  }
}

interface TakenEverywhere {
  all: Taken;
  /** owner -> the receipt handles it leased (joined), for a release. */
  byOwner: Map<number, string>;
}

/** The topic's partitions by owner node, this node first, then the others from a per-topic rotating start. */
function ownersInOrder(s: RouteServices, topic: TopicRecord): [number, number[]][] {
  const partitions = Array.from({ length: topic.partitions }, (_, p) => p);
  const byOwner = [...groupBy(partitions, (p) => topic.owners[p]!)];
  const start = s.consume.startIndex.get(topic.id) ?? 0;
  s.consume.startIndex.set(topic.id, start + 1);
  const rotate = <T>(items: T[]): T[] => items.map((_, i) => items[(start + i) % items.length]!);
  const local = byOwner.filter(([owner]) => owner === s.nodeId).map(([owner, ps]): [number, number[]] => [owner, rotate(ps)]);
  return [...local, ...rotate(byOwner.filter(([owner]) => owner !== s.nodeId))];
}

async function takeEverywhere(s: RouteServices, topic: TopicRecord, max: number): Promise<TakenEverywhere> {
  const taken: TakenEverywhere = { all: { count: 0, json: '', handles: '' }, byOwner: new Map() };
  for (const [owner, partitions] of ownersInOrder(s, topic)) {
    const left = max - taken.all.count;
    if (left <= 0) break;
    const part = owner === s.nodeId ? await takeLocal(s, topic, partitions, left) : await takeRemote(s, topic, owner, partitions, left);
    if (part.count === 0) continue;
    const separator = taken.all.count === 0 ? '' : handleSeparator;
    taken.all = { count: taken.all.count + part.count, json: taken.all.json + separator + part.json, handles: taken.all.handles + separator + part.handles };
    taken.byOwner.set(owner, part.handles);
  }
  return taken;
}

const nothingTaken: Taken = { count: 0, json: '', handles: '' };

/** This node's share; nothing from a partition that moved away on the way (the next round asks its new owner). */
async function takeLocal(s: RouteServices, topic: TopicRecord, partitions: number[], max: number): Promise<Taken> {
  try {
    return await take(s, topic, s.workers.groupByOwner(topic.id, partitions, (p) => p), max);
  } catch (error) {
    if (error instanceof BrokerError && error.status === 421) return nothingTaken;
    throw error;
  }
}

/** One owner's share; nothing when it cannot be reached or answer (its messages wait for it). */
async function takeRemote(s: RouteServices, topic: TopicRecord, owner: number, partitions: number[], max: number): Promise<Taken> {
  try {
    const reply = await s.remote.askOwner(topic, owner, partitions[0]!, { kind: 'take', topicId: topic.id, partitions, max }, 'taken');
    return { count: reply.count, json: reply.messagesJson, handles: reply.handles };
  } catch (error) {
    // 421: the partitions moved on the way; the next round asks their new owners.
    if (error instanceof BrokerError && (error.status >= 500 || error.status === 421)) return nothingTaken;
    throw error;
  }
}

function releaseEverywhere(s: RouteServices, topic: TopicRecord, taken: TakenEverywhere): void {
  for (const [owner, handles] of taken.byOwner) {
    if (owner === s.nodeId) release(s, topic, { count: 1, json: '', handles });
    else s.remote.tell(owner, { kind: 'release', topicId: topic.id, handles });
  }
}

/** Waits until any owner's watch answers, or the deadline, the client leaving, a delete or shutdown ends the wait. */
async function watchEverywhere(ctx: RequestContext, s: RouteServices, topic: TopicRecord, deadlineMs: number): Promise<void> {
  let cancel = (): void => undefined;
  const cancelled = new Promise<void>((resolve) => (cancel = resolve));
  const watches: { reply: Promise<unknown>; unpark: () => void }[] = [];
  for (const [owner, partitions] of ownersInOrder(s, topic)) {
    if (owner !== s.nodeId) {
      watches.push(s.remote.watch(topic, owner, partitions, Math.max(0, deadlineMs - Date.now())));
      continue;
    }
    for (const [worker, mine] of s.workers.groupByOwner(topic.id, partitions, (p) => p)) {
      watches.push(s.workers.requestParked(worker, { kind: 'take', topicId: topic.id, partitions: mine, max: 0 }));
    }
  }
  const unparkAll = (): void => {
    cancel();
    for (const watch of watches) watch.unpark();
  };
  // A watch that fails (its owner is down) never ends the wait by itself: the others, or the deadline, do.
  const first = Promise.race([cancelled, ...watches.map((watch) => watch.reply.then(() => undefined, () => cancelled))]);
  try {
    await s.consume.whileParked(ctx, topic.id, deadlineMs, unparkAll, first);
  } finally {
    unparkAll();
  }
}
