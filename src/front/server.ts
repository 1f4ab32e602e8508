// The front thread's HTTP server on uWebSockets.js: one catch-all handler runs every request through the
// spec's checks in a fixed order (docs/decisions.md, "Check order"): header block size (431), route (404),
// method (405), shutdown (503), credentials (401), content type (415), then the route's handler. Created by
// main.ts after startup; shutdown() refuses new requests and waits for in-flight ones.
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { limits, parseListenAddress } from '../config.js';
import { BrokerError, errors } from '../errors.js';
import { canManageTopic, forbidden, requireAdmin, requireTopic } from './access.js';
import { Authenticator } from './auth.js';
import { BodyReader } from './body.js';
import { LoginThrottle } from './login_throttle.js';
import { consumeHandlers } from './handlers/consume.js';
import { clusterHandlers } from './handlers/cluster.js';
import { healthHandlers, type NodeLifecycle } from './handlers/health.js';
import { produceHandlers } from './handlers/produce.js';
import { topicHandlers } from './handlers/topics.js';
import { userHandlers } from './handlers/users.js';
import { Query } from './query.js';
import { deferred, RequestContext, type DeferredAnswers, type RequestHeaders } from './request_context.js';
import { errorReply, plainReply, writeReply, type Reply } from './respond.js';
import { RouteTable, type BodyRule, type RouteEntry } from './routes.js';
import type { FrontServices } from './services.js';

type uWSModule = typeof import('uWebSockets.js');
type Handler = (ctx: RequestContext) => HandlerResult;
type HandlerResult = Reply | typeof deferred | Promise<Reply | typeof deferred>;

const kiB = 1024;
const body1MiB: BodyRule = { bytesMax: limits.request_body_bytes_max, oversizeStatus: 413 };
/** Spec §8: user and attach-child routes answer an oversized body with 400. */
const body1MiBAs400: BodyRule = { bytesMax: limits.request_body_bytes_max, oversizeStatus: 400 };
const bodyBatchAck: BodyRule = { bytesMax: limits.batch_ack_body_bytes_max, oversizeStatus: 413 };
const bodyRemotes: BodyRule = { bytesMax: 128 * kiB, oversizeStatus: 413 };
const bodyBatchProduce: BodyRule = { bytesMax: limits.batch_produce_body_bytes_max, oversizeStatus: 413, usesBatchBudget: true };
/** Spec §5.6: a charset or other parameter after the type is fine. */
const acceptedContentTypes = new Set(['application/json', 'application/octet-stream']);
/** How long graceful shutdown waits for in-flight requests before closing anyway. */
const shutdownDrainMsMax = 10_000;

export class FrontServer {
  private readonly routes: RouteTable<Handler>;
  private readonly metricsRoutes: RouteTable<Handler>;
  private readonly authenticator: Authenticator;
  private readonly listenSockets: us_listen_socket[] = [];
  private inFlight = 0;
  private readonly security: boolean;
  private readonly headerBytesMax: number;
  private closeWaiters: () => void = () => undefined;
  private readonly headerScan = new HeaderScan();
  private readonly corkedWriter = new CorkedWriter();
  /** How a handler that returned `deferred` answers: its request is finished like any other. */
  private readonly deferredAnswers: DeferredAnswers = {
    answer: (ctx, res, pattern, answer) => {
      this.finish(res, ctx, pattern, 'failure' in answer ? this.failureReply(answer.failure, pattern) : answer, true);
    },
  };

  constructor(
    private readonly uws: uWSModule,
    private readonly services: FrontServices,
    private readonly lifecycle: NodeLifecycle,
    authPool: ConstructorParameters<typeof Authenticator>[1],
  ) {
    this.security = services.config['security.enabled'];
    this.headerBytesMax = services.config['http.max_header_bytes'];
    const throttle = new LoginThrottle({
      failedLoginThreshold: services.config['auth.failed_login_threshold'],
      retryIntervalMs: services.config['auth.failed_login_retry_interval'],
      checkBudget: services.config['auth.login_check_budget'],
      checkRefillPerSecond: services.config['auth.login_check_refill_per_second'],
    }, Date.now());
    this.authenticator = new Authenticator(services.replica, authPool, throttle, services.config['auth.bcrypt_cost']);
    const separateMetrics = services.config['http.metrics_addr'] !== '';
    const { entries, metricsEntries } = this.routeEntries(separateMetrics);
    this.routes = new RouteTable(entries);
    this.metricsRoutes = new RouteTable(metricsEntries);
  }

  private routeEntries(separateMetrics: boolean): { entries: RouteEntry<Handler>[]; metricsEntries: RouteEntry<Handler>[] } {
    const topics = topicHandlers(this.services);
    const produce = produceHandlers(this.services);
    const consume = consumeHandlers(this.services);
    this.closeWaiters = consume.closeWaiters;
    const users = userHandlers(this.services);
    const health = healthHandlers(this.services, this.lifecycle);
    const cluster = clusterHandlers(this.services);
    // Routes of later work answer 501 once the caller passed the route's access check (spec §5 permissions).
    const topicOf = (name: string) => this.services.replica.topic(name);
    // NOTES 8: with security off only the v3.2.0 remote items answer 403; with it on they need admin.
    const remoteLater: Handler = (ctx) => {
      if (!this.security) throw new BrokerError(403, 'remotes need security on');
      requireAdmin(ctx.user);
      throw errors.notImplemented();
    };
    // Spec §5: an attach needs ownership of both topics (the child, named in the body, is checked with the
    // fan-out work); listing children any grant on the parent or ownership; a detach ownership of either.
    const attachLater: Handler = (ctx) => {
      requireTopic.manage(ctx.user, topicOf(ctx.param(0)));
      throw errors.notImplemented();
    };
    const childrenLater: Handler = (ctx) => {
      requireTopic.read(ctx.user, topicOf(ctx.param(0)));
      throw errors.notImplemented();
    };
    const detachLater: Handler = (ctx) => {
      const parent = topicOf(ctx.param(0));
      const child = topicOf(ctx.param(1));
      if (!canManageTopic(ctx.user, parent) && !canManageTopic(ctx.user, child)) {
        throw forbidden(`only the owner of topic ${parent.name} or ${child.name}, or an admin, may detach`);
      }
      throw errors.notImplemented();
    };
    const metricsUnauthenticated = this.services.config['http.metrics_unauthenticated'];
    const onApiMetrics: Handler = separateMetrics
      ? () => { throw new BrokerError(404, 'metrics are served on http.metrics_addr'); }
      : health.onMetrics;
    const entries: RouteEntry<Handler>[] = [
      { method: 'POST', pattern: '/v1/topics', handler: topics.onCreateTopic, body: body1MiB },
      { method: 'GET', pattern: '/v1/topics', handler: topics.onListTopics },
      { method: 'GET', pattern: '/v1/topics/{topic}', handler: topics.onGetTopic },
      { method: 'PATCH', pattern: '/v1/topics/{topic}', handler: topics.onPatchTopic, body: body1MiB },
      { method: 'DELETE', pattern: '/v1/topics/{topic}', handler: topics.onDeleteTopic },
      { method: 'GET', pattern: '/v1/topics/{topic}/schema', handler: topics.onGetSchema },
      { method: 'POST', pattern: '/v1/topics/{topic}/produce', handler: produce.onProduce, body: body1MiB },
      { method: 'POST', pattern: '/v1/topics/{topic}/produce/batch', handler: produce.onProduceBatch, body: bodyBatchProduce },
      { method: 'GET', pattern: '/v1/topics/{topic}/consume', handler: consume.onConsume },
      { method: 'POST', pattern: '/v1/topics/{topic}/ack', handler: consume.onAck, body: bodyBatchAck },
      { method: 'POST', pattern: '/v1/topics/{parent}/children', handler: attachLater, body: body1MiBAs400 },
      { method: 'GET', pattern: '/v1/topics/{parent}/children', handler: childrenLater },
      { method: 'DELETE', pattern: '/v1/topics/{parent}/children/{child}', handler: detachLater },
      { method: 'POST', pattern: '/v1/topics/{parent}/children/{child}/pause', handler: remoteLater, body: body1MiB },
      { method: 'POST', pattern: '/v1/topics/{parent}/children/{child}/resume', handler: remoteLater, body: body1MiB },
      { method: 'POST', pattern: '/v1/topics/{parent}/children/{child}/skip', handler: remoteLater, body: body1MiB },
      { method: 'POST', pattern: '/v1/users', handler: users.onCreateUser, body: body1MiBAs400 },
      { method: 'GET', pattern: '/v1/users', handler: users.onListUsers },
      { method: 'GET', pattern: '/v1/users/{username}', handler: users.onGetUser },
      { method: 'DELETE', pattern: '/v1/users/{username}', handler: users.onDeleteUser },
      { method: 'PUT', pattern: '/v1/users/{username}/grants', handler: users.onPutGrants, body: body1MiBAs400 },
      { method: 'PUT', pattern: '/v1/users/{username}/password', handler: users.onPutPassword, body: body1MiBAs400 },
      { method: 'GET', pattern: '/v1/cluster/members', handler: cluster.onListMembers },
      { method: 'POST', pattern: '/v1/cluster/members/{id}/forget', handler: cluster.onForget, body: body1MiB },
      { method: 'POST', pattern: '/v1/cluster/reencrypt-remotes', handler: remoteLater, body: bodyRemotes },
      { method: 'POST', pattern: '/v1/remotes', handler: remoteLater, body: bodyRemotes },
      { method: 'GET', pattern: '/v1/remotes', handler: remoteLater },
      { method: 'GET', pattern: '/v1/remotes/{name}', handler: remoteLater },
      { method: 'PATCH', pattern: '/v1/remotes/{name}', handler: remoteLater, body: bodyRemotes },
      { method: 'DELETE', pattern: '/v1/remotes/{name}', handler: remoteLater },
      { method: 'POST', pattern: '/v1/remotes/{name}/test', handler: remoteLater, body: bodyRemotes },
      { method: 'GET', pattern: '/healthz', handler: health.onHealthz, public: true },
      { method: 'GET', pattern: '/readyz', handler: health.onReadyz, public: true },
      { method: 'GET', pattern: '/metrics', handler: onApiMetrics, public: metricsUnauthenticated && !separateMetrics },
    ];
    const metricsEntries: RouteEntry<Handler>[] = [
      { method: 'GET', pattern: '/healthz', handler: health.onHealthz, public: true },
      { method: 'GET', pattern: '/readyz', handler: health.onReadyz, public: true },
      { method: 'GET', pattern: '/metrics', handler: health.onMetrics, public: true },
    ];
    return { entries, metricsEntries };
  }

  /** Listens on the API address (and the metrics address when set); resolves to the API port. */
  async listen(host: string, port: number): Promise<number> {
    const apiPort = await this.listenApp(this.uws.App().any('/*', (res, req) => this.onRequest(this.routes, res, req)), host, port);
    const metricsAddr = this.services.config['http.metrics_addr'];
    if (metricsAddr !== '') {
      // The config module checked the address at load.
      const address = parseListenAddress(metricsAddr)!;
      const app = this.uws.App().any('/*', (res, req) => this.onRequest(this.metricsRoutes, res, req));
      await this.listenApp(app, address.host === '' ? '0.0.0.0' : address.host, address.port);
    }
    return apiPort;
  }

  private listenApp(app: TemplatedApp, host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      app.listen(host, port, (socket) => {
        if (socket === false) {
          reject(new Error(`cannot listen on ${host}:${port}`));
          return;
        }
        this.listenSockets.push(socket);
        resolve(this.uws.us_socket_local_port(socket as unknown as Parameters<uWSModule['us_socket_local_port']>[0]));
      });
    });
  }

  /** Refuses new requests (503), waits for in-flight ones (bounded), then stops listening. */
  async shutdown(): Promise<void> {
    this.lifecycle.shuttingDown = true;
    this.closeWaiters();
    const deadline = Date.now() + shutdownDrainMsMax;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    for (const socket of this.listenSockets.splice(0)) this.uws.us_listen_socket_close(socket);
  }

  private onRequest(routes: RouteTable<Handler>, res: HttpResponse, req: HttpRequest): void {
    const method = methodName(req.getMethod());
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const scan = this.headerScan;
    // Request line and terminating CRLFs count too; uWS itself allows more (UWS_HTTP_MAX_HEADERS_SIZE is set
    // above http.max_header_bytes at load), so the spec's 431 is decided here.
    scan.start(method.length + path.length + rawQuery.length + 16);
    req.forEach(scan.visit);
    const headers = scan.take();
    const contentLength = scan.contentLength;
    // Without a length or chunked encoding a request has no body (RFC 9112 §6.3).
    const hasBody = scan.chunked || (contentLength !== null && contentLength > 0);
    if (scan.bytes > this.headerBytesMax) {
      this.writeEarly(res, plainReply(431, 'request header fields too large'), 'unmatched', method, hasBody);
      return;
    }
    const match = routes.match(method, path);
    if (match.kind === 'not_found') {
      this.writeEarly(res, plainReply(404, 'not found'), 'unmatched', method, hasBody);
      return;
    }
    if (match.kind === 'method_not_allowed') {
      this.writeEarly(res, plainReply(405, 'method not allowed', { Allow: match.allow }), 'unmatched', method, hasBody);
      return;
    }
    const route = match.entry;
    if (this.lifecycle.shuttingDown && route.pattern !== '/healthz' && route.pattern !== '/readyz') {
      this.writeEarly(res, errorReply(errors.shuttingDown()), route.pattern, method, hasBody);
      return;
    }
    const remoteIp = this.security ? '' : Buffer.from(res.getRemoteAddressAsText()).toString();
    const ctx = new RequestContext(method, path, match.params, rawQuery === '' ? Query.empty : new Query(rawQuery),
      headers, remoteIp);
    res.onAborted(() => ctx.abort());
    if (route.body !== undefined) {
      const share = route.body.usesBatchBudget ? { budget: this.services.batchBudget, freeBytesMax: limits.request_body_bytes_max } : undefined;
      ctx.bodyReader = new BodyReader(res, hasBody ? contentLength : 0, route.body, share);
    }
    this.inFlight++;
    ctx.deferTo(this.deferredAnswers, res, route.pattern);
    let reply: HandlerResult;
    try {
      reply = this.handle(route, ctx);
    } catch (error) {
      reply = this.failureReply(error, route.pattern);
    }
    if (reply === deferred) return;
    if (reply instanceof Promise) this.finishWhenSettled(res, ctx, route.pattern, reply);
    else this.finish(res, ctx, route.pattern, reply, false);
  }

  /** A method of its own: closures in onRequest would make every request allocate their captured variables. */
  private finishWhenSettled(res: HttpResponse, ctx: RequestContext, pattern: string, reply: Promise<Reply | typeof deferred>): void {
    reply.then(
      (r) => {
        if (r !== deferred) this.finish(res, ctx, pattern, r, true);
      },
      (error: unknown) => this.finish(res, ctx, pattern, this.failureReply(error, pattern), true),
    );
  }

  /** Authentication and the content-type rule, then the handler; synchronous while nothing needs to wait. */
  private handle(route: RouteEntry<Handler>, ctx: RequestContext): HandlerResult {
    if (route.public || !this.security) {
      ctx.identity = ctx.remoteIp;
      return this.afterAuth(route, ctx);
    }
    if (ctx.headers.authorization === '') throw errors.unauthorized();
    const user = this.authenticator.check(ctx.headers.authorization);
    if (user instanceof Promise) {
      return user.then((u) => {
        ctx.user = u;
        ctx.identity = u.username;
        return this.afterAuth(route, ctx);
      });
    }
    ctx.user = user;
    ctx.identity = user.username;
    return this.afterAuth(route, ctx);
  }

  private afterAuth(route: RouteEntry<Handler>, ctx: RequestContext): HandlerResult {
    const method = route.method;
    if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
      const given = ctx.headers.contentType;
      // The usual exact header needs no parsing: split, trim and lower-case cost a single produce about 1% of its time.
      if (!acceptedContentTypes.has(given) && !acceptedContentTypes.has(given.split(';', 1)[0]!.trim().toLowerCase())
        && ctx.headers.svcClient === null) {
        throw errors.unsupportedContentType();
      }
    }
    return route.handler(ctx);
  }

  private failureReply(error: unknown, pattern: string): Reply {
    if (error instanceof BrokerError) {
      if (error.status >= 500) this.services.log.error({ route: pattern, status: error.status, err: error.message }, 'request failed');
      return errorReply(error);
    }
    this.services.log.error({ route: pattern, err: error }, 'unexpected failure');
    return errorReply(errors.internal());
  }

  private finish(res: HttpResponse, ctx: RequestContext, pattern: string, reply: Reply, corked: boolean): void {
    // Answered once: a late ctx.respond or ctx.fail finds nothing to call.
    ctx.stopDeferring();
    this.inFlight--;
    ctx.finish();
    this.services.metrics.countRequest(pattern, ctx.method, ctx.aborted ? 499 : reply.status);
    if (ctx.aborted) return;
    // An answer given while the client still sends its body closes the connection, so the unread rest of
    // the body is never taken for the next request.
    const close = ctx.bodyReader?.receiving === true;
    if (corked) this.corkedWriter.write(res, reply, close);
    else writeReply(res, reply, close);
  }

  private writeEarly(res: HttpResponse, reply: Reply, route: string, method: string, hasBody: boolean): void {
    this.services.metrics.countRequest(route, method, reply.status);
    // A body we never read must not be taken for the next request: close after answering.
    writeReply(res, reply, hasBody);
  }
}

/** uWS gives the method in lower case: the usual ones map to constant strings (a Map lookup of a constant needs no
 *  hashing per request), any other is upper-cased. */
function methodName(lower: string): string {
  switch (lower) {
    case 'get': return 'GET';
    case 'post': return 'POST';
    case 'put': return 'PUT';
    case 'patch': return 'PATCH';
    case 'delete': return 'DELETE';
    case 'head': return 'HEAD';
    case 'options': return 'OPTIONS';
    default: return lower.toUpperCase();
  }
}

/** The headers the checks read, gathered in one uWS forEach per request through one callback made once per server: no
 *  closure, and no context for it, per request. Front thread: forEach is synchronous, so a scan runs to its end before
 *  the next starts. */
class HeaderScan {
  bytes = 0;
  contentLength: number | null = null;
  chunked = false;
  private authorization = '';
  private contentType = '';
  private contentEncoding = '';
  private svcClient: string | null = null;

  readonly visit = (name: string, value: string): void => {
    this.bytes += name.length + value.length + 4;
    switch (name) {
      case 'authorization': this.authorization = value; break;
      case 'content-type': this.contentType = value; break;
      case 'content-length': this.contentLength = decimalOrNull(value); break;
      case 'content-encoding': this.contentEncoding = value; break;
      case 'x-svc-client': this.svcClient = value; break;
      case 'transfer-encoding': this.chunked = true; break;
    }
  };

  /** Before a request's forEach. The header fields need no reset: the previous request's take() emptied them. */
  start(requestLineBytes: number): void {
    this.bytes = requestLineBytes;
    this.contentLength = null;
    this.chunked = false;
  }

  /** The scanned headers; the scan lets go of them, so it keeps no credential until the next request (the
   *  authenticator keeps the last one it checked, docs/decisions.md). */
  take(): RequestHeaders {
    const headers = { authorization: this.authorization, contentType: this.contentType, contentEncoding: this.contentEncoding,
      svcClient: this.svcClient };
    this.authorization = '';
    this.contentType = '';
    this.contentEncoding = '';
    this.svcClient = null;
    return headers;
  }
}

/** A Content-Length value: digits only, else null (not a length). */
function decimalOrNull(text: string): number | null {
  if (text.length === 0) return null;
  let value = 0;
  for (let i = 0; i < text.length; i++) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return null;
    value = value * 10 + digit;
  }
  return value;
}

/** res.cork with a callback made once: the reply to write waits in fields while cork runs it, synchronously. */
class CorkedWriter {
  private res: HttpResponse | null = null;
  private reply: Reply | null = null;
  private close = false;
  private readonly writeCorked = (): void => writeReply(this.res!, this.reply!, this.close);

  write(res: HttpResponse, reply: Reply, close: boolean): void {
    this.res = res;
    this.reply = reply;
    this.close = close;
    try {
      res.cork(this.writeCorked);
    } finally {
      this.res = null;
      this.reply = null;
    }
  }
}
