// One HTTP request as handlers see it (front thread): everything uWS offers only synchronously (method,
// path, headers, remote address) is copied in before the first await. Lives until the reply is written.
// A handler answers by returning a Reply, a promise of one, or `deferred` and then ctx.respond / ctx.fail from a
// callback (the single produce: no promise per request on the hottest route). Made by server.ts per request.
import type { HttpResponse } from 'uWebSockets.js';
import { errors } from '../errors.js';
import type { TopicRecord, UserRecord } from '../protocol/metadata_types.js';
import type { BodyListener, BodyReader } from './body.js';
import type { Reply } from './respond.js';
import type { Query } from './query.js';

/** What a handler returns when it answers later through ctx.respond or ctx.fail. */
export const deferred = Symbol('deferred');

/** The server's side of a deferred answer (server.ts). */
export interface DeferredAnswers {
  answer(ctx: RequestContext, res: HttpResponse, pattern: string, answer: Reply | { failure: unknown }): void;
}

export interface RequestHeaders {
  authorization: string;
  contentType: string;
  contentEncoding: string;
  /** null when absent: its presence alone satisfies the content-type rule (spec §5.6). */
  svcClient: string | null;
}

export class RequestContext {
  private abortedFlag = false;
  private abortListeners: (() => void)[] | null = null;
  /** The authenticated user; undefined with security off. */
  user: UserRecord | undefined;
  /** Username, or the client IP with security off (spec §5.5, §8 limits per identity). */
  identity = '';
  /** The path's topic, looked up and its grant checked by the server on routes whose grant is topic.read, produce or
   *  consume (routes.ts); read through routeTopic. */
  topic: TopicRecord | undefined = undefined;
  bodyReader: BodyReader | undefined;
  /** Work to undo when the reply is written (budget shares, in-flight counts). */
  private cleanups: (() => void)[] | null = null;
  /** Set by the server: where a handler that returned `deferred` answers later; cleared once the request is answered,
   *  so later calls do nothing. Fields rather than a closure: the single produce makes none per request for it. */
  private deferredAnswers: DeferredAnswers | null = null;
  private res: HttpResponse | null = null;
  private pattern = '';
  /** performance.now() when the server took the request: svc_http_request_duration_seconds. */
  readonly startedAt = performance.now();

  constructor(
    readonly method: string,
    readonly path: string,
    readonly params: string[],
    readonly query: Query,
    readonly headers: RequestHeaders,
    readonly remoteIp: string,
  ) {}

  get aborted(): boolean {
    return this.abortedFlag;
  }

  /** Called by the server when uWS reports the client gone; wakes whatever waits for this request. */
  abort(): void {
    if (this.abortedFlag) return;
    this.abortedFlag = true;
    this.bodyReader?.abort();
    for (const listener of this.abortListeners?.splice(0) ?? []) listener();
  }

  /** Runs listener when the client goes away; returns a function that removes it. */
  onAbort(listener: () => void): () => void {
    (this.abortListeners ??= []).push(listener);
    return () => {
      const at = this.abortListeners?.indexOf(listener) ?? -1;
      if (at >= 0) this.abortListeners!.splice(at, 1);
    };
  }

  param(index: number): string {
    const value = this.params[index];
    if (value === undefined) throw new Error(`route has no param ${index}`);
    return value;
  }

  /** The server: a handler that returns `deferred` answers through answers, on res, under the route's pattern. */
  deferTo(answers: DeferredAnswers, res: HttpResponse, pattern: string): void {
    this.deferredAnswers = answers;
    this.res = res;
    this.pattern = pattern;
  }

  /** The server: the request is answered; respond and fail do nothing from now on. */
  stopDeferring(): void {
    this.deferredAnswers = null;
    this.res = null;
  }

  /** The answer of a handler that returned `deferred`. */
  respond(reply: Reply): void {
    this.deferredAnswers?.answer(this, this.res!, this.pattern, reply);
  }

  /** The failure of a handler that returned `deferred`: answered as if the handler had thrown it. */
  fail(failure: unknown): void {
    this.deferredAnswers?.answer(this, this.res!, this.pattern, { failure });
  }

  /** The body through a listener (BodyReader.whenDone). */
  whenBody(listener: BodyListener): void {
    if (this.bodyReader === undefined) throw new Error('body read on a route without a body rule');
    this.bodyReader.whenDone(listener);
  }

  body(): Promise<Uint8Array> {
    if (this.bodyReader === undefined) throw new Error('body read on a route without a body rule');
    return this.bodyReader.done;
  }

  onDone(cleanup: () => void): void {
    (this.cleanups ??= []).push(cleanup);
  }

  finish(): void {
    const cleanups = this.cleanups;
    this.cleanups = null;
    if (cleanups !== null) for (const cleanup of cleanups) cleanup();
    this.bodyReader?.release();
  }
}

/** The topic the server looked up for a route of grant topic.read, topic.produce or topic.consume. */
export function routeTopic(ctx: RequestContext): TopicRecord {
  if (ctx.topic === undefined) throw errors.internal('route without a topic grant read ctx.topic');
  return ctx.topic;
}
