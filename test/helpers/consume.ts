// Black-box helpers for the leased consume, long poll and ack tests (spec 4 "Consume and ack", spec 2 Message,
// spec 3 "Lease of a message", docs/decisions.md "Consume and ack"): produce, topic creation with any fields,
// consume (single and batch) with timing, ack (single and batch), receipt handle decoding, a consume that can be
// aborted mid-wait, and a readiness wait after a restart. Built on the keep-alive Client of replay.ts.
// Imports nothing from src/.
import { request as httpRequest } from 'node:http';
import { Client, topicPath, type Answer, type ReplayedMessage } from './replay.js';

/** Spec 2, Message in a consume answer: a replayed message plus its receipt_handle. */
export interface ConsumedMessage extends ReplayedMessage {
  receipt_handle: string;
}

export interface ConsumeAnswer extends Answer {
  /** The Message of a single consume answered 200. */
  message?: ConsumedMessage;
  /** The messages of a batch consume answered 200. */
  messages?: ConsumedMessage[];
  elapsedMs: number;
}

/** Header a batch consume needs (spec 4: max requires X-Svc-Client); also makes a POST pass the 415 check. */
export const clientHeader = { 'x-svc-client': 'consume-tests' } as const;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Creates a topic with any create fields (spec 4 POST /v1/topics); throws unless 201. */
export async function createTopicWith(client: Client, name: string, fields: Record<string, unknown> = {}): Promise<void> {
  const answer = await client.postJson('/v1/topics', { name, partitions: 3, ...fields });
  if (answer.status !== 201) throw new Error(`create topic ${name}: ${answer.status} ${answer.text}`);
}

/** One single produce; throws unless 202. `query` starts with '?' when given. */
export async function produce(client: Client, topic: string, body: string | Uint8Array, query = '',
  contentType = 'application/json'): Promise<void> {
  const answer = await client.req(`${topicPath(topic)}/produce${query}`, {
    method: 'POST', headers: { 'content-type': contentType }, body,
  });
  if (answer.status !== 202) throw new Error(`produce to ${topic}${query}: ${answer.status} ${answer.text}`);
}

/** One batch produce of JSON payloads (spec 4 produce/batch); throws unless 202. */
export async function produceBatch(client: Client, topic: string,
  messages: { payload: unknown; key?: string; partition?: number }[]): Promise<void> {
  const answer = await client.postJson(`${topicPath(topic)}/produce/batch`, { messages });
  if (answer.status !== 202) throw new Error(`batch produce to ${topic}: ${answer.status} ${answer.text}`);
}

/**
 * GET .../consume with `query` (starting with '?' or empty). A 200 is parsed into message (single) or messages
 * (an answer with a messages array, batch). Parsing failures are left to the caller (text is kept).
 */
export async function consume(client: Client, topic: string, query = '', headers: Record<string, string> = {},
  timeoutMs = 30_000): Promise<ConsumeAnswer> {
  const started = Date.now();
  const answer = await client.req(`${topicPath(topic)}/consume${query}`, { headers, timeoutMs });
  const elapsedMs = Date.now() - started;
  if (answer.status !== 200) return { ...answer, elapsedMs };
  let parsed: unknown;
  try {
    parsed = JSON.parse(answer.text);
  } catch {
    return { ...answer, elapsedMs };
  }
  if (typeof parsed === 'object' && parsed !== null && Array.isArray((parsed as { messages?: unknown }).messages)) {
    return { ...answer, elapsedMs, messages: (parsed as { messages: ConsumedMessage[] }).messages };
  }
  return { ...answer, elapsedMs, message: parsed as ConsumedMessage };
}

/** A single consume that must answer 200 with a message; throws with the answer otherwise. */
export async function consumeMessage(client: Client, topic: string, query = '?wait=10s'): Promise<ConsumedMessage> {
  const answer = await consume(client, topic, query);
  if (answer.status !== 200 || answer.message === undefined) {
    throw new Error(`consume ${topic}${query}: expected a message, got ${answer.status} ${answer.text.slice(0, 200)}`);
  }
  return answer.message;
}

/** POST .../ack?receipt_handle=<handle>[&extend=<extend>] without a body, with X-Svc-Client (spec 5.6). */
export async function ack(client: Client, topic: string, handle: string, extend?: string,
  headers: Record<string, string> = clientHeader): Promise<Answer> {
  let query = `?receipt_handle=${encodeURIComponent(handle)}`;
  if (extend !== undefined) query += `&extend=${encodeURIComponent(extend)}`;
  return client.req(`${topicPath(topic)}/ack${query}`, { method: 'POST', headers });
}

/** Batch ack (spec 4, v3.1.0): POST .../ack[?extend=...] with {"receipt_handles": [...]}. */
export async function batchAck(client: Client, topic: string, handles: unknown, extend?: string): Promise<Answer> {
  const query = extend === undefined ? '' : `?extend=${encodeURIComponent(extend)}`;
  return client.postJson(`${topicPath(topic)}/ack${query}`, { receipt_handles: handles });
}

/** Spec 2: a receipt handle is partition:offset:nonce; decisions.md: the nonce is 12 hex characters. */
export function parseHandle(handle: unknown): { partition: number; offset: number; nonce: string } | undefined {
  if (typeof handle !== 'string') return undefined;
  const match = /^(\d+):(\d+):([0-9a-f]{12})$/.exec(handle);
  if (!match) return undefined;
  return { partition: Number(match[1]), offset: Number(match[2]), nonce: match[3]! };
}

/** "partition:offset" of a message, to compare deliveries. */
export function place(message: { partition: number; offset: number }): string {
  return `${message.partition}:${message.offset}`;
}

/**
 * A consume on its own connection that the caller can abort: `abort()` destroys the socket mid-wait (the node
 * sees the client go away). `done` resolves with the status (or 0 when aborted) and the elapsed time.
 */
export function abortableConsume(url: string, auth: string, topic: string, query: string):
  { abort(): void; done: Promise<{ status: number; text: string; elapsedMs: number; aborted: boolean }> } {
  const target = new URL(`${topicPath(topic)}/consume${query}`, url);
  const controller = new AbortController();
  const started = Date.now();
  const done = new Promise<{ status: number; text: string; elapsedMs: number; aborted: boolean }>((resolve) => {
    const req = httpRequest({
      host: target.hostname, port: target.port, method: 'GET', path: target.pathname + target.search,
      headers: { authorization: auth, connection: 'close' }, agent: false, signal: controller.signal,
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, text: '', elapsedMs: Date.now() - started, aborted: true }));
      res.on('end', () => resolve({
        status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), elapsedMs: Date.now() - started, aborted: false,
      }));
    });
    req.on('error', () => resolve({ status: 0, text: '', elapsedMs: Date.now() - started, aborted: true }));
    req.end();
  });
  return { abort: () => controller.abort(), done };
}

/** Polls GET /readyz until 200 (spec 4 Health) or the deadline; returns whether it got there. */
export async function waitReady(client: Client, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 10_000; attempt++) {
    const answer = await client.req('/readyz', { noAuth: true }).catch(() => undefined);
    if (answer?.status === 200) return true;
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
  return false;
}

/**
 * Consumes (wait=`wait`) and acks everything until `quietRounds` 204 answers in a row; 503 answers (owner not
 * loaded yet) are retried for up to retryMs. Returns the payloads delivered, in delivery order, and the acks' statuses.
 */
export async function drain(client: Client, topic: string, options: { wait?: string; quietRounds?: number; retryMs?: number;
  maxMessages?: number } = {}): Promise<{ payloads: unknown[]; ackStatuses: number[]; otherStatuses: string[] }> {
  const wait = options.wait ?? '1s';
  const quietRounds = options.quietRounds ?? 2;
  const retryDeadline = Date.now() + (options.retryMs ?? 10_000);
  const maxMessages = options.maxMessages ?? 100_000;
  const payloads: unknown[] = [];
  const ackStatuses: number[] = [];
  const otherStatuses: string[] = [];
  let quiet = 0;
  while (quiet < quietRounds && payloads.length < maxMessages) {
    const answer = await consume(client, topic, `?wait=${wait}`);
    if (answer.status === 204) {
      quiet++;
      continue;
    }
    quiet = 0;
    if (answer.status === 200 && answer.message !== undefined) {
      payloads.push(answer.message.payload);
      ackStatuses.push((await ack(client, topic, answer.message.receipt_handle)).status);
      continue;
    }
    otherStatuses.push(`${answer.status} ${answer.text.slice(0, 120)}`);
    if (answer.status !== 503 || Date.now() >= retryDeadline) break;
    await sleep(100);
  }
  return { payloads, ackStatuses, otherStatuses };
}

export { sleep };
