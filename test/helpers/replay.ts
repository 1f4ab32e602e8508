// Black-box client helpers for the produce, replay and crash tests: one keep-alive undici Agent per node, raw
// requests (status, headers, body text), topic creation, and read-back by replay (spec 4, GET .../consume with
// partition and offset: 200 one Message, 204 past the end). A message is readable only after the partition owner
// committed it, which happens after the 202 (spec 1.2), so every read-back here polls within a bounded time. Also
// the start of a node together with its client (NodeWithClient), with the teardown of both.
// Imports nothing from src/; used by test/http/* and test/helpers/crash_scenario.ts.
import { connect } from 'node:net';
import { Agent, request } from 'undici';
import { removeDataDir, startNode, type NodeOptions, type StartedNode, type Teardown } from './node.js';

/** Spec 2, Message: what a replay answers. payload_encoding / key_encoding appear only for base64 (NOTES 3). */
export interface ReplayedMessage {
  topic: string;
  partition: number;
  offset: number;
  key?: string;
  key_encoding?: string;
  payload: unknown;
  payload_encoding?: string;
  timestamp: number;
  [field: string]: unknown;
}

export interface Answer {
  status: number;
  headers: Record<string, string>;
  /** Raw body text (utf8), so tests can look at digits the JSON parser would round. */
  text: string;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Request without the Authorization header. */
  noAuth?: boolean;
  timeoutMs?: number;
}

/** The assertion surface the shared checks need; tap's `t` fits it. */
export interface Asserts {
  equal(found: unknown, wanted: unknown, ...message: [] | [string]): boolean;
  ok(found: unknown, ...message: [] | [string]): boolean;
  same(found: unknown, wanted: unknown, ...message: [] | [string]): boolean;
  fail(...message: [] | [string]): boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A keep-alive HTTP client bound to one node; close() it in t.teardown. */
export class Client {
  readonly agent: Agent;

  constructor(readonly url: string, readonly auth: string, connections = 64) {
    this.agent = new Agent({ connections, keepAliveTimeout: 10_000, pipelining: 1 });
  }

  async req(path: string, options: RequestOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { ...(options.headers ?? {}) };
    if (!options.noAuth) headers['authorization'] = this.auth;
    const answer = await request(this.url + path, {
      method: (options.method ?? 'GET') as 'GET',
      headers,
      body: options.body,
      dispatcher: this.agent,
      headersTimeout: options.timeoutMs ?? 30_000,
      bodyTimeout: options.timeoutMs ?? 30_000,
    });
    // A 204 has no body whatever its headers say (RFC 9110 15.3.5); the socket is dropped rather than read, so a
    // bogus Content-Length on a 204 cannot stall the client (replay.test.ts asserts the header on its own).
    let text = '';
    if (answer.statusCode === 204) {
      answer.body.on('error', () => {});
      answer.body.destroy();
    } else {
      text = await answer.body.text();
    }
    const flat: Record<string, string> = {};
    for (const [name, value] of Object.entries(answer.headers)) {
      if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
    }
    return { status: answer.statusCode, headers: flat, text };
  }

  /** POST a JSON body (Content-Type application/json). */
  async postJson(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    return this.req(path, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
  }

  private closed = false;

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.agent.destroy().catch(() => {}); // requests still in flight fail; nothing else to do at teardown
  }
}

/**
 * A started node with a keep-alive Client of its own. t's teardown kills the node first (so a failing step after it
 * can never leave the node running), then closes the client and removes the data dir. restart() starts a new
 * process on the same data dir with a new client, after the caller stopped or killed the old one.
 */
export class NodeWithClient {
  private constructor(public node: StartedNode, public client: Client, private readonly options: NodeOptions) {}

  static async start(t: Teardown, options: NodeOptions = {}): Promise<NodeWithClient> {
    const node = await startNode(options);
    const started = new NodeWithClient(node, new Client(node.url, node.auth), options);
    t.teardown(async () => {
      await started.node.kill();
      await started.client.close();
      await removeDataDir(node.dataDir);
    });
    return started;
  }

  async restart(): Promise<NodeWithClient> {
    await this.client.close();
    this.node = await startNode({ ...this.options, dataDir: this.node.dataDir });
    this.client = new Client(this.node.url, this.node.auth);
    return this;
  }
}

/** Creates a topic and throws unless the node answers 201. */
export async function createTopic(client: Client, name: string, partitions = 3): Promise<void> {
  const answer = await client.postJson('/v1/topics', { name, partitions });
  if (answer.status !== 201) throw new Error(`create topic ${name}: ${answer.status} ${answer.text}`);
}

/** Distinct topic names within one test file (names are matched case-insensitively for uniqueness). */
export function topicNamer(prefix: string): () => string {
  let counter = 0;
  const salt = process.pid.toString(36);
  return () => `${prefix}-${salt}-${++counter}`;
}

export function topicPath(topic: string): string {
  return `/v1/topics/${encodeURIComponent(topic)}`;
}

/** One replay request; body parsed when 200. */
export async function replayAt(client: Client, topic: string, partition: number, offset: number):
  Promise<Answer & { message?: ReplayedMessage }> {
  const answer = await client.req(`${topicPath(topic)}/consume?partition=${partition}&offset=${offset}`);
  if (answer.status === 200) return { ...answer, message: JSON.parse(answer.text) as ReplayedMessage };
  return answer;
}

/**
 * Polls one offset until it answers 200 (or timeoutMs passes, then returns the last answer). 204 means not yet
 * committed; 503 (owner not ready, e.g. right after a restart) is also retried.
 */
export async function waitReplay(client: Client, topic: string, partition: number, offset: number, timeoutMs = 2_000):
  Promise<Answer & { message?: ReplayedMessage }> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 10_000; attempt++) {
    const answer = await replayAt(client, topic, partition, offset);
    if (answer.status === 200 || (answer.status !== 204 && answer.status !== 503)) return answer;
    if (Date.now() >= deadline) return answer;
    await sleep(Math.min(5 * (attempt + 1), 50));
  }
  throw new Error('waitReplay: attempt bound reached');
}

/**
 * Reads a partition by replay from fromOffset until the first 204, `window` offsets in flight at a time.
 * 503 answers are retried for up to retryMs in total; any other non-200 answer throws.
 */
export async function readPartition(client: Client, topic: string, partition: number, fromOffset = 0,
  options: { window?: number; retryMs?: number; maxRecords?: number } = {}): Promise<ReplayedMessage[]> {
  const window = options.window ?? 16;
  const maxRecords = options.maxRecords ?? 2_000_000;
  const retryDeadline = Date.now() + (options.retryMs ?? 10_000);
  const out: ReplayedMessage[] = [];
  let offset = fromOffset;
  while (out.length < maxRecords) {
    const answers = await Promise.all(Array.from({ length: window }, (_, i) => replayAt(client, topic, partition, offset + i)));
    let retry = false;
    for (const answer of answers) {
      if (answer.status === 200) {
        const message = answer.message!;
        if (message.offset !== offset) throw new Error(`replay ${topic}/${partition}@${offset} answered offset ${message.offset}`);
        out.push(message);
        offset++;
        continue;
      }
      if (answer.status === 204) return out;
      if (answer.status === 503 && Date.now() < retryDeadline) {
        retry = true;
        break;
      }
      throw new Error(`replay ${topic}/${partition}@${offset}: ${answer.status} ${answer.text}`);
    }
    if (retry) await sleep(50);
  }
  throw new Error(`readPartition: more than ${maxRecords} records`);
}

/**
 * Reads every partition until together they hold at least `count` records from the given start offsets, polling
 * for up to timeoutMs (commits are asynchronous). Returns records per partition (possibly short on timeout).
 */
export async function readAllUntil(client: Client, topic: string, partitions: number, count: number, timeoutMs = 3_000):
  Promise<ReplayedMessage[][]> {
  const deadline = Date.now() + timeoutMs;
  const byPartition: ReplayedMessage[][] = Array.from({ length: partitions }, () => []);
  for (let round = 0; round < 10_000; round++) {
    await Promise.all(byPartition.map(async (records, partition) => {
      records.push(...(await readPartition(client, topic, partition, records.length)));
    }));
    const total = byPartition.reduce((sum, records) => sum + records.length, 0);
    if (total >= count || Date.now() >= deadline) return byPartition;
    await sleep(25);
  }
  return byPartition;
}

/** Spec 2, Partition statistics: next_offset of every partition, from GET /v1/topics/{topic}. */
export async function nextOffsets(client: Client, topic: string): Promise<number[]> {
  const answer = await client.req(topicPath(topic));
  if (answer.status !== 200) throw new Error(`get topic ${topic}: ${answer.status} ${answer.text}`);
  const body = JSON.parse(answer.text) as { partition_stats?: { index: number; next_offset: number }[] };
  const stats = [...(body.partition_stats ?? [])].sort((a, b) => a.index - b.index);
  return stats.map((s) => s.next_offset);
}

/**
 * Asserts a JSON error answer (spec 7): the status, Content-Type JSON, a body whose only field is error (a string),
 * and that the text contains `includes` (or starts with it when `startsWith`).
 */
export function assertError(t: Asserts, answer: Answer, status: number, includes?: string, startsWith = false): void {
  t.equal(answer.status, status, `status ${status} (body ${answer.text.slice(0, 300)})`);
  t.ok((answer.headers['content-type'] ?? '').startsWith('application/json'), `JSON content type, got ${answer.headers['content-type']}`);
  let body: unknown;
  try {
    body = JSON.parse(answer.text);
  } catch {
    t.fail(`error body is not JSON: ${answer.text.slice(0, 200)}`);
    return;
  }
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  t.ok(isObject && Object.keys(body as object).length === 1 && typeof (body as { error?: unknown }).error === 'string',
    `body is {"error": string}: ${answer.text.slice(0, 200)}`);
  const error = isObject ? (body as { error?: unknown }).error : undefined;
  if (includes !== undefined && typeof error === 'string') {
    if (startsWith) t.ok(error.startsWith(includes), `error starts with ${JSON.stringify(includes)}: ${error}`);
    else t.ok(error.toLowerCase().includes(includes.toLowerCase()), `error names ${JSON.stringify(includes)}: ${error}`);
  }
}

/**
 * One request on its own raw TCP connection, for bodies the node refuses before reading them whole (413 with
 * Connection: close): HTTP clients such as undici report the EPIPE of the unsent rest instead of the answer the
 * node did send. Resolves with the answer once its Content-Length is read; rejects only without a full answer.
 */
export async function rawRequest(url: string, path: string, options: { method: string; headers: Record<string, string>;
  body: Uint8Array; timeoutMs?: number; earlyAnswerWaitMs?: number }): Promise<Answer> {
  const target = new URL(url);
  const head = [`${options.method} ${path} HTTP/1.1`, `Host: ${target.host}`, `Content-Length: ${options.body.byteLength}`,
    'Connection: close', ...Object.entries(options.headers).map(([name, value]) => `${name}: ${value}`)].join('\r\n');
  return new Promise<Answer>((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    const chunks: Buffer[] = [];
    let settled = false;
    const timer = setTimeout(() => finish(new Error(`raw request timed out`)), options.timeoutMs ?? 30_000);
    function parse(): Answer | undefined {
      const data = Buffer.concat(chunks);
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return undefined;
      const lines = data.subarray(0, end).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')?.[1]);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const length = status === 204 ? 0 : Number(headers['content-length'] ?? NaN);
      if (!Number.isFinite(length) || data.length - end - 4 < length) return undefined;
      return { status, headers, text: data.subarray(end + 4, end + 4 + length).toString('utf8') };
    }
    function finish(error: Error | null): void {
      if (settled) return;
      const answer = parse();
      if (answer === undefined && error === null) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (answer !== undefined) resolve(answer);
      else reject(error ?? new Error('no answer'));
    }
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      finish(null);
    });
    socket.on('error', (error) => finish(error));
    socket.on('close', () => finish(new Error('connection closed before a full answer')));
    // Headers first, then the body in chunks, each after the previous one drained; writing stops as soon as any
    // answer byte arrived, so an early answer is read before the node's close can reset the connection.
    socket.write(head + '\r\n\r\n');
    const chunkBytes = 64 * 1024;
    let offset = 0;
    const writeMore = (): void => {
      while (!settled && chunks.length === 0 && offset < options.body.byteLength) {
        const chunk = options.body.subarray(offset, offset + chunkBytes);
        offset += chunk.byteLength;
        if (!socket.write(chunk)) {
          socket.once('drain', writeMore);
          return;
        }
      }
    };
    // A node may answer from the Content-Length header alone; give that answer time to arrive first.
    setTimeout(writeMore, options.earlyAnswerWaitMs ?? 200);
  });
}

/**
 * rawRequest, tried up to 3 times while the connection fails without an answer (the node's close can reset the
 * connection before its answer is read). Only for requests the node is expected to refuse.
 */
export async function rawRefusedRequest(url: string, path: string, options: Parameters<typeof rawRequest>[2]): Promise<Answer> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await rawRequest(url, path, options);
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}
