// The TypeScript client of the broker's HTTP API (issue 32 point 2, exported as svc-broker/client): one typed method
// per route of spec §4 over global fetch, answers other than 2xx thrown as SvcError. Runs in the caller's process
// (never in the broker); the producer, the consumer loop and the svc CLI build on it. Imports nothing outside
// src/client (scripts/tidy.ts checks), so it ships without the server.
import type * as T from './types.js';

export * from './types.js';

/** An answer other than 2xx: its status, the API's error text, Retry-After in seconds when sent, and the parsed
 *  body (some 409 and 412 answers add fields beside error). A 502 is plain text: the request may have been applied. */
export class SvcError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly retryAfterSeconds: number | null,
    readonly body: Record<string, unknown> | null,
  ) {
    super(`${status}: ${error}`);
    this.name = 'SvcError';
  }

  /** 429 and 503 with Retry-After: the spec says nothing was applied, so the same request may be sent again. 421:
   *  the partition moved to another node on the way (spec §7); the node knows the new owner a moment later. */
  get retryable(): boolean {
    return ((this.status === 429 || this.status === 503) && this.retryAfterSeconds !== null) || this.status === 421;
  }

  /** How long to wait before the retry numbered attempt (from 0): Retry-After, else a doubling back-off. */
  retryDelayMs(attempt: number): number {
    if (this.retryAfterSeconds !== null) return this.retryAfterSeconds * 1000;
    return Math.min(2_000, 100 * 2 ** attempt);
  }
}

/** No answer came (connection refused or reset, timeout, abort): whether the node applied the request is unknown. */
export class SvcNoAnswerError extends Error {
  constructor(readonly method: string, readonly path: string, cause: unknown) {
    super(`${method} ${path}: no answer (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    this.name = 'SvcNoAnswerError';
  }
}

export interface ClientOptions {
  /** Base URL, default http://127.0.0.1:7942. */
  url?: string;
  user?: string;
  password?: string;
  /** Sent as X-Svc-Client on every request (spec §5.6; needed by consume with max). */
  clientName?: string;
  /** Per-request timeout in ms beyond the long-poll wait; default 30000. */
  timeoutMs?: number;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  /** A JSON body (sent as application/json). */
  json?: unknown;
  /** A raw body, sent as is with contentType. */
  raw?: string | Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Extra time the answer may take (a long poll's wait). */
  extraTimeoutMs?: number;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
}

const seg = encodeURIComponent;

export class SvcClient {
  readonly url: string;
  private readonly authorization: string | null;
  private readonly clientName: string;
  private readonly timeoutMs: number;

  constructor(options: ClientOptions = {}) {
    this.url = (options.url ?? 'http://127.0.0.1:7942').replace(/\/+$/, '');
    this.authorization = options.user === undefined ? null
      : 'Basic ' + Buffer.from(`${options.user}:${options.password ?? ''}`).toString('base64');
    this.clientName = options.clientName ?? 'svc-broker-client';
    this.timeoutMs = options.timeoutMs ?? 30_000;
  }

  /** Sends one request; resolves to a 2xx answer, throws SvcError for any other and SvcNoAnswerError for none. */
  async request(method: string, path: string, options: RequestOptions = {}): Promise<Answer> {
    const headers: Record<string, string> = { 'x-svc-client': this.clientName, ...options.headers };
    if (this.authorization !== null) headers.authorization = this.authorization;
    let body: string | Uint8Array | undefined = options.raw;
    if (options.json !== undefined) {
      body = JSON.stringify(options.json);
      headers['content-type'] = 'application/json';
    } else if (body !== undefined) headers['content-type'] = options.contentType ?? 'application/octet-stream';
    const timeout = AbortSignal.timeout(this.timeoutMs + (options.extraTimeoutMs ?? 0));
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const target = this.url + path + queryString(options.query);
    let res: Response;
    let text: string;
    try {
      res = await fetch(target, { method, headers, body, signal });
      text = await res.text();
    } catch (cause) {
      throw new SvcNoAnswerError(method, path, cause);
    }
    if (res.status >= 200 && res.status < 300) return { status: res.status, headers: res.headers, text };
    throw errorOf(res, text);
  }

  private async json<R>(method: string, path: string, options?: RequestOptions): Promise<R> {
    return JSON.parse((await this.request(method, path, options)).text) as R;
  }

  // Topics -----------------------------------------------------------------------------------------------------
  createTopic(body: T.TopicCreate): Promise<T.TopicDetail> {
    return this.json('POST', '/v1/topics', { json: body });
  }
  listTopics(options: { limit?: number; pageToken?: string } = {}): Promise<T.TopicPage> {
    return this.json('GET', '/v1/topics', { query: { limit: options.limit, page_token: options.pageToken || undefined } });
  }
  /** Every readable topic, page after page until the token is empty (bounded by pagesMax). */
  async listAllTopics(pagesMax = 10_000): Promise<T.Topic[]> {
    const topics: T.Topic[] = [];
    let pageToken: string | undefined;
    for (let page = 0; page < pagesMax; page++) {
      const got = await this.listTopics({ limit: 1000, pageToken });
      topics.push(...got.topics);
      if (got.next_page_token === '') break;
      pageToken = got.next_page_token;
    }
    return topics;
  }
  getTopic(topic: string, options: { partition?: number } = {}): Promise<T.TopicDetail> {
    return this.json('GET', `/v1/topics/${seg(topic)}`, { query: { partition: options.partition } });
  }
  patchTopic(topic: string, body: T.TopicPatch): Promise<T.TopicDetail> {
    return this.json('PATCH', `/v1/topics/${seg(topic)}`, { json: body });
  }
  async deleteTopic(topic: string, options: { force?: boolean } = {}): Promise<void> {
    await this.request('DELETE', `/v1/topics/${seg(topic)}`, { query: { force: options.force } });
  }
  getSchema(topic: string): Promise<T.SchemaHistory> {
    return this.json('GET', `/v1/topics/${seg(topic)}/schema`);
  }

  // Produce ----------------------------------------------------------------------------------------------------
  /** Stores one message: a string is sent as application/json text, bytes as application/octet-stream. */
  async produce(topic: string, body: string | Uint8Array, options: T.ProduceOptions = {}): Promise<void> {
    await this.request('POST', `/v1/topics/${seg(topic)}/produce`, {
      raw: body, contentType: typeof body === 'string' ? 'application/json' : 'application/octet-stream',
      query: { key: options.key, partition: options.partition, key_encoding: options.keyEncoding, payload_encoding: options.payloadEncoding },
    });
  }
  /** Stores 1 to 1000 messages, all or none (spec §4 batch). */
  produceBatch(topic: string, messages: readonly T.BatchMessage[]): Promise<T.Accepted> {
    return this.json('POST', `/v1/topics/${seg(topic)}/produce/batch`, { json: { messages } });
  }

  // Consume and ack --------------------------------------------------------------------------------------------
  /** Leases the next message, or null when none came within wait (204). */
  async consume(topic: string, options: T.ConsumeOptions = {}): Promise<T.Message | null> {
    const got = await this.request('GET', `/v1/topics/${seg(topic)}/consume`, consumeRequest(options, {}));
    return got.status === 204 ? null : (JSON.parse(got.text) as T.Message);
  }
  /** Leases up to max messages in one answer (v3.1.0), each with its own lease; [] when none came within wait. */
  async consumeMany(topic: string, max: number, options: T.ConsumeOptions = {}): Promise<T.Message[]> {
    const got = await this.request('GET', `/v1/topics/${seg(topic)}/consume`, consumeRequest(options, { max }));
    return got.status === 204 ? [] : (JSON.parse(got.text) as T.MessageBatch).messages;
  }
  /** Reads one record without a lease; null past the end. */
  async replay(topic: string, partition: number, offset: number): Promise<T.Message | null> {
    const got = await this.request('GET', `/v1/topics/${seg(topic)}/consume`, { query: { partition, offset } });
    return got.status === 204 ? null : (JSON.parse(got.text) as T.Message);
  }
  async ack(topic: string, receiptHandle: string, mode: T.AckMode = 'ack'): Promise<void> {
    await this.request('POST', `/v1/topics/${seg(topic)}/ack`, { query: { receipt_handle: receiptHandle, extend: extendOf(mode) } });
  }
  /** Extends a lease for a full visibility timeout from now. */
  extend(topic: string, receiptHandle: string): Promise<void> {
    return this.ack(topic, receiptHandle, 'extend');
  }
  /** Ends a lease now: the message is delivered again. */
  nack(topic: string, receiptHandle: string): Promise<void> {
    return this.ack(topic, receiptHandle, 'nack');
  }
  /** Settles 1 to 100 handles, each on its own; one result per handle in order (v3.1.0). */
  async ackBatch(topic: string, receiptHandles: readonly string[], mode: T.AckMode = 'ack'): Promise<T.AckResult[]> {
    const got = await this.json<T.AckResults>('POST', `/v1/topics/${seg(topic)}/ack`,
      { query: { extend: extendOf(mode) }, json: { receipt_handles: receiptHandles } });
    return got.results;
  }

  // Fan-out children -------------------------------------------------------------------------------------------
  attachChild(parent: string, child: string, options: { delayMs?: number } = {}): Promise<T.Topic> {
    return this.json('POST', `/v1/topics/${seg(parent)}/children`, { json: { child, delay_ms: options.delayMs } });
  }
  listChildren(parent: string): Promise<T.ChildrenList> {
    return this.json('GET', `/v1/topics/${seg(parent)}/children`);
  }
  async detachChild(parent: string, child: string): Promise<void> {
    await this.request('DELETE', `/v1/topics/${seg(parent)}/children/${seg(child)}`);
  }
  /** Remote children (v3.2.0): these answer 501 on this release. */
  remoteChildAction(parent: string, child: string, action: 'pause' | 'resume' | 'skip', body: Record<string, unknown> = {}): Promise<unknown> {
    return this.json('POST', `/v1/topics/${seg(parent)}/children/${seg(child)}/${action}`, { json: body });
  }

  // Users ------------------------------------------------------------------------------------------------------
  createUser(body: T.UserCreate): Promise<T.User> {
    return this.json('POST', '/v1/users', { json: body });
  }
  listUsers(): Promise<T.User[]> {
    return this.json('GET', '/v1/users');
  }
  getUser(username: string): Promise<T.User> {
    return this.json('GET', `/v1/users/${seg(username)}`);
  }
  async deleteUser(username: string): Promise<void> {
    await this.request('DELETE', `/v1/users/${seg(username)}`);
  }
  putGrants(username: string, grants: readonly T.Grant[]): Promise<T.User> {
    return this.json('PUT', `/v1/users/${seg(username)}/grants`, { json: { grants } });
  }
  async setPassword(username: string, newPassword: string, currentPassword?: string): Promise<void> {
    await this.request('PUT', `/v1/users/${seg(username)}/password`, { json: { new_password: newPassword, current_password: currentPassword } });
  }

  // Cluster and remotes ----------------------------------------------------------------------------------------
  async listMembers(options: { detail?: boolean } = {}): Promise<T.Member[]> {
    return (await this.json<{ members: T.Member[] }>('GET', '/v1/cluster/members', { query: { detail: options.detail } })).members;
  }
  async forgetMember(id: string | number): Promise<void> {
    await this.request('POST', `/v1/cluster/members/${seg(String(id))}/forget`, { json: {} });
  }
  reencryptRemotes(): Promise<unknown> {
    return this.json('POST', '/v1/cluster/reencrypt-remotes', { json: {} });
  }
  /** The /v1/remotes routes (v3.2.0): these answer 501 on this release. */
  remotes(method: 'GET' | 'POST' | 'PATCH' | 'DELETE', name?: string, body?: Record<string, unknown>, test = false): Promise<unknown> {
    const path = name === undefined ? '/v1/remotes' : `/v1/remotes/${seg(name)}${test ? '/test' : ''}`;
    return this.json(method, path, body === undefined ? {} : { json: body });
  }

  // Health -----------------------------------------------------------------------------------------------------
  healthz(): Promise<{ status: string }> {
    return this.json('GET', '/healthz');
  }
  readyz(): Promise<{ status: string; degraded?: string[] }> {
    return this.json('GET', '/readyz');
  }
  async metrics(): Promise<string> {
    return (await this.request('GET', '/metrics')).text;
  }
  openapi(): Promise<Record<string, unknown>> {
    return this.json('GET', '/openapi.json');
  }
}

function queryString(query: RequestOptions['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined) params.append(name, String(value));
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

function consumeRequest(options: T.ConsumeOptions, extra: { max?: number }): RequestOptions {
  const waitMs = options.waitMs ?? 0;
  return {
    query: { wait: `${Math.max(0, Math.round(waitMs))}ms`, partition: options.partition, max: extra.max },
    signal: options.signal,
    extraTimeoutMs: waitMs,
  };
}

function extendOf(mode: T.AckMode): string | undefined {
  return mode === 'ack' ? undefined : mode === 'extend' ? 'true' : '0';
}

function errorOf(res: Response, text: string): SvcError {
  const retry = res.headers.get('retry-after');
  const retryAfter = retry !== null && /^\d+$/.test(retry) ? Number(retry) : null;
  let body: Record<string, unknown> | null = null;
  let message = text;
  if ((res.headers.get('content-type') ?? '').startsWith('application/json')) {
    try {
      body = JSON.parse(text) as Record<string, unknown>;
      if (typeof body.error === 'string') message = body.error;
    } catch {
      body = null;
    }
  }
  return new SvcError(res.status, message, retryAfter, body);
}
