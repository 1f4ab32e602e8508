// The front thread's HTTP server on uWebSockets.js: one catch-all handler runs every request through the
// spec's checks in a fixed order (docs/decisions.md, "Check order"): header block size (431), route (404),
// method (405), shutdown (503), a browser's cross-origin mark (403), credentials (401), content type (415), the
// route's grant (admin; or the path's topic, 404 then 403), then the route's handler. The routes and what each
// needs are data in routes.ts. Created by front_start.ts after startup; shutdown() refuses new requests and waits for
// in-flight ones.
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js';
import { limits, parseListenAddress } from '../../config.js';
import { BrokerError, errors } from '../../errors.js';
import { requireAdmin, requireTopic } from '../access.js';
import { Authenticator, parseBasic } from '../auth.js';
import { BodyReader } from '../body.js';
import { LoginThrottle } from '../login_throttle.js';
import { ClusterControl } from '../cluster_control.js';
import { ConsumeState } from '../consume_state.js';
import { ProduceState } from '../produce_state.js';
import { Query } from '../query.js';
import { deferred, RequestContext, type DeferredAnswers, type RequestHeaders } from '../request_context.js';
import { errorReply, writeReply, type Reply } from '../respond.js';
import { RouteTable } from '../route_table.js';
import { apiRoutes, metricsRoutes } from './routes.js';
import type { HandlerResult, RouteEntry } from '../route_types.js';
import type { FrontServices, NodeLifecycle, RouteServices } from '../services.js';
import { localMemberReport } from '../member_report.js';
import type { MemberReportView } from '../../protocol/data_messages.js';

type uWSModule = typeof import('uWebSockets.js');
/** LIBUS_LISTEN_EXCLUSIVE_PORT of uWS's ListenOptions: bind without SO_REUSEPORT. The native module takes
 *  (host, port, options, cb), which its typings leave out. */
const listenExclusivePort = 1;
/** A listener could not bind: the node refuses to start (main.ts prints the message and exits 1). */
export class ListenRefused extends Error {}
type ListenWithOptions = (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => TemplatedApp;

/** Spec §5.6: a charset or other parameter after the type is fine. */
const acceptedContentTypes = new Set(['application/json', 'application/octet-stream']);

export class FrontServer {
  private readonly routes = new RouteTable<RouteEntry>(apiRoutes);
  private readonly metricsRoutes = new RouteTable<RouteEntry>(metricsRoutes);
  private readonly routeServices: RouteServices;
  private readonly authenticator: Authenticator;
  private readonly listenSockets: us_listen_socket[] = [];
  private inFlight = 0;
  private readonly security: boolean;
  /** Routes of grant 'metrics' need no credentials (http.metrics_unauthenticated, metrics on the API port). */
  private readonly metricsPublic: boolean;
  private readonly headerBytesMax: number;
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
    const config = services.config;
    this.security = config['security.enabled'];
    this.headerBytesMax = config['http.max_header_bytes'];
    const separateMetrics = config['http.metrics_addr'] !== '';
    this.metricsPublic = config['http.metrics_unauthenticated'] && !separateMetrics;
    const throttle = new LoginThrottle({
      failedLoginThreshold: config['auth.failed_login_threshold'],
      retryIntervalMs: config['auth.failed_login_retry_interval'],
      checkBudget: config['auth.login_check_budget'],
      checkRefillPerSecond: config['auth.login_check_refill_per_second'],
    }, Date.now());
    this.authenticator = new Authenticator(services.replica, authPool, throttle, config['auth.bcrypt_cost']);
    const cluster = new ClusterControl(services, () => localMemberReport(this.routeServices));
    services.metrics.reportDecommissionBlocked(() => cluster.blocked());
    this.routeServices = {
      ...services, lifecycle, separateMetrics, produce: new ProduceState(services), consume: new ConsumeState(services), cluster,
    };
  }

  /** This node's own member report (spec §2 Cluster member, detail=true), for other nodes' asks. */
  memberReport(): MemberReportView {
    return localMemberReport(this.routeServices);
  }

  /** Listens on the API address (and the metrics address when set); resolves to the API port. */
  async listen(host: string, port: number): Promise<number> {
    this.routeServices.cluster.start();
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

  /** Binds without SO_REUSEPORT (uWS's default would share the port): a second node started on a port already
   *  taken must refuse to start, not split the connections between two brokers with different data. */
  private listenApp(app: TemplatedApp, host: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      const listen = app.listen as unknown as ListenWithOptions;
      listen.call(app, host, port, listenExclusivePort, (socket) => {
        if (socket === false) {
          reject(new ListenRefused(`cannot listen on ${host}:${port}: the port is in use (or the address is not this host's)`));
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
    this.routeServices.cluster.stop();
    this.routeServices.consume.closeWaiters();
    const deadline = Date.now() + limits.shutdown_drain_ms_max;
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    for (const socket of this.listenSockets.splice(0)) this.uws.us_listen_socket_close(socket);
  }

  private onRequest(routes: RouteTable<RouteEntry>, res: HttpResponse, req: HttpRequest): void {
    const method = methodName(req.getMethod());
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const scan = this.headerScan;
    // Request line and terminating CRLFs count too. uWS hands over any block that reached it in one read (up to
    // about 124 KiB), so the spec's 431 is decided here (docs/decisions.md "Header blocks and uWS").
    scan.start(method.length + path.length + rawQuery.length + 16);
    req.forEach(scan.visit);
    const headers = scan.take();
    const contentLength = scan.contentLength;
    // Without a length or chunked encoding a request has no body (RFC 9112 §6.3).
    const hasBody = scan.chunked || (contentLength !== null && contentLength > 0);
    if (scan.bytes > this.headerBytesMax) {
      this.writeEarly(res, errors.headersTooLarge(), 'unmatched', method, hasBody);
      return;
    }
    const framingFault = scan.framingFault;
    if (framingFault !== null) {
      // Nothing of the body is read or stored, and the connection closes: the next bytes cannot be framed.
      this.writeEarly(res, errors.badFraming(framingFault), 'unmatched', method, true);
      return;
    }
    if (scan.headerFault !== null) {
      this.writeEarly(res, errors.badRequest(scan.headerFault), 'unmatched', method, hasBody);
      return;
    }
    const match = routes.match(method, path);
    if (match.kind === 'not_found') {
      this.writeEarly(res, errors.routeNotFound(), 'unmatched', method, hasBody);
      return;
    }
    if (match.kind === 'method_not_allowed') {
      this.writeEarly(res, errors.methodNotAllowed(match.allow), 'unmatched', method, hasBody);
      return;
    }
    const route = match.entry;
    if (this.lifecycle.shuttingDown && route.pattern !== '/healthz' && route.pattern !== '/readyz') {
      this.writeEarly(res, errors.shuttingDown(), route.pattern, method, hasBody);
      return;
    }
    // Before credentials, body or work: a browser sends the credentials it cached for this origin with a request
    // any other page makes (docs/decisions.md "Cross-origin requests"). Public routes do nothing and hold no secret.
    const crossOrigin = route.grant === 'public' ? null : scan.crossOriginFault();
    if (crossOrigin !== null) {
      this.writeEarly(res, errors.crossOrigin(crossOrigin), route.pattern, method, hasBody);
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
      reply = this.handle(route, ctx, res);
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

  /** Authentication, the content-type rule and the route's grant, then the handler; synchronous while nothing needs
   *  to wait. */
  private handle(route: RouteEntry, ctx: RequestContext, res: HttpResponse): HandlerResult {
    if (!this.security || route.grant === 'public' || (route.grant === 'metrics' && this.metricsPublic)) {
      ctx.identity = ctx.remoteIp;
      return this.afterAuth(route, ctx);
    }
    if (ctx.headers.authorization === '') throw errors.unauthorized();
    const user = this.authenticator.check(ctx.headers.authorization);
    if (user instanceof Promise) {
      // Only a check that runs bcrypt can fail; the peer is read now, while uWS still holds the request.
      const peer = Buffer.from(res.getRemoteAddressAsText()).toString();
      return user.then((u) => {
        ctx.user = u;
        ctx.identity = u.username;
        return this.afterAuth(route, ctx);
      }, (error: unknown) => {
        if (error instanceof BrokerError && error.status === 401) this.logFailedLogin(ctx.headers.authorization, peer);
        throw error;
      });
    }
    ctx.user = user;
    ctx.identity = user.username;
    return this.afterAuth(route, ctx);
  }

  /** A warn line per refused credential, for operators and intrusion detection: the username as sent (cut to the
   *  longest valid name, so a flood of long names cannot fill the log) and the peer address, never the password. */
  private logFailedLogin(authorization: string, peer: string): void {
    const username = parseBasic(authorization)?.username.slice(0, limits.username_chars_max) ?? null;
    this.services.log.warn({ component: 'auth', username, peer }, 'login failed');
  }

  private afterAuth(route: RouteEntry, ctx: RequestContext): HandlerResult {
    if (route.contentTypeChecked) {
      const given = ctx.headers.contentType;
      // The usual exact header needs no parsing: split, trim and lower-case cost a single produce about 1% of its time.
      if (!acceptedContentTypes.has(given) && !acceptedContentTypes.has(given.split(';', 1)[0]!.trim().toLowerCase())
        && ctx.headers.svcClient === null) {
        throw errors.unsupportedContentType();
      }
    }
    this.checkGrant(route, ctx);
    return route.handler(ctx, this.routeServices);
  }

  /** The grants routes.ts says the server checks: admin, and a grant on the path's topic (404 before 403), which the
   *  handler then finds in ctx.topic. The others are the handler's (routes.ts RouteGrant). */
  private checkGrant(route: RouteEntry, ctx: RequestContext): void {
    switch (route.grant) {
      case 'admin':
        requireAdmin(ctx.user);
        return;
      case 'topic.read':
        requireTopic.read(ctx.user, (ctx.topic = this.services.replica.topic(ctx.param(0))));
        return;
      case 'topic.produce':
        requireTopic.produce(ctx.user, (ctx.topic = this.services.replica.topic(ctx.param(0))));
        return;
      case 'topic.consume':
        requireTopic.consume(ctx.user, (ctx.topic = this.services.replica.topic(ctx.param(0))));
        return;
      default:
        return;
    }
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
    this.services.metrics.observeDuration(pattern, ctx.startedAt);
    if (ctx.aborted) return;
    const body = ctx.bodyReader;
    if (body !== undefined && body.receiving && body.oversize) {
      body.drainThen(() => this.finishAfterDrain(res, ctx, reply));
      return;
    }
    // Any other answer given while the client still sends its body closes the connection, so the unread rest of
    // the body is never taken for the next request.
    const close = body?.receiving === true;
    const head = ctx.method === 'HEAD';
    if (corked) this.corkedWriter.write(res, reply, close, head);
    else writeReply(res, reply, close, head);
  }

  /** A 413 (400 on user routes) decided while the client was still sending: written once the rest of the body was
   *  dropped, so a client that sends its whole body before it reads (Node's fetch) reads it (spec §8). If the drain
   *  was cut short (limits.body_drain_bytes_max) the connection closes after it. */
  private finishAfterDrain(res: HttpResponse, ctx: RequestContext, reply: Reply): void {
    if (ctx.aborted) return;
    this.corkedWriter.write(res, reply, ctx.bodyReader?.receiving === true, false);
  }

  /** Answers before any handler ran (431, 404, 405, 503 shutting down, 403 cross-origin). */
  private writeEarly(res: HttpResponse, error: BrokerError, route: string, method: string, hasBody: boolean): void {
    this.services.metrics.countRequest(route, method, error.status);
    // A body we never read must not be taken for the next request: close after answering.
    writeReply(res, errorReply(error), hasBody,
      method === 'HEAD');
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
  /** Why the message's framing cannot be trusted (RFC 9112 §6.3), or null: set by the scan, read before any route. */
  framingFault: string | null = null;
  private contentLengthSeen = false;
  /** A header given in a way that makes the request malformed (answered 400 before any route), or null. */
  headerFault: string | null = null;
  private authorizationSeen = false;
  private authorization = '';
  private contentType = '';
  private contentEncoding = '';
  private svcClient: string | null = null;
  /** What a browser says of where a request comes from (Fetch Metadata, RFC 6454); '' when not sent. */
  private host = '';
  private origin = '';
  private secFetchSite = '';

  readonly visit = (name: string, value: string): void => {
    this.bytes += name.length + value.length + 4;
    switch (name) {
      case 'authorization': this.authorizationVisit(value); break;
      case 'content-type': this.contentType = value; break;
      case 'content-length': this.contentLengthVisit(value); break;
      case 'content-encoding': this.contentEncoding = value; break;
      case 'x-svc-client': this.svcClient = value; break;
      case 'transfer-encoding': this.chunked = true; break;
      case 'host': this.host = value; break;
      case 'origin': this.origin = value; break;
      case 'sec-fetch-site': this.secFetchSite = value; break;
    }
  };

  /** RFC 9112 §6.3: two lengths that differ leave the message's end unknown; a proxy and this node could then split
   *  the bytes into different requests (request smuggling). uWS itself closes the connection, unanswered, on a length
   *  that is not a decimal and on a length beside Transfer-Encoding (test/http/framing.test.ts), so those never
   *  reach here. */
  /** RFC 9110 §11.6.2: Authorization holds one credential; two fields make the request malformed, whichever a
   *  proxy or this node would pick. */
  private authorizationVisit(value: string): void {
    if (this.authorizationSeen) this.headerFault = 'Authorization: given more than once';
    this.authorizationSeen = true;
    this.authorization = value;
  }

  private contentLengthVisit(value: string): void {
    const length = decimalOrNull(value);
    if (this.contentLengthSeen && length !== this.contentLength) this.framingFault = 'Content-Length: given twice with different values';
    this.contentLengthSeen = true;
    this.contentLength = length;
  }

  /** Before a request's forEach. The header fields need no reset: the previous request's take() emptied them. */
  start(requestLineBytes: number): void {
    this.bytes = requestLineBytes;
    this.contentLength = null;
    this.chunked = false;
    this.framingFault = null;
    this.contentLengthSeen = false;
    this.headerFault = null;
    this.authorizationSeen = false;
    this.host = '';
    this.origin = '';
    this.secFetchSite = '';
  }

  /** Why a browser's marks say another origin sent the request, or null: Sec-Fetch-Site other than same-origin or
   *  none (a same-site page on another port is another origin too), or an Origin other than this request's own
   *  scheme and Host (`null` included; either scheme, since TLS ends in a proxy). Clients that are not browsers send
   *  neither header. */
  crossOriginFault(): string | null {
    const site = this.secFetchSite;
    if (site !== '' && site !== 'same-origin' && site !== 'none') return 'Sec-Fetch-Site must be same-origin or none';
    const origin = this.origin;
    if (origin === '') return null;
    const host = this.host.toLowerCase();
    const lower = origin.toLowerCase();
    if (host !== '' && (lower === `http://${host}` || lower === `https://${host}`)) return null;
    return "Origin must be this node's own (the scheme and Host of the request)";
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
  private head = false;
  private readonly writeCorked = (): void => writeReply(this.res!, this.reply!, this.close, this.head);

  write(res: HttpResponse, reply: Reply, close: boolean, head: boolean): void {
    this.res = res;
    this.reply = reply;
    this.close = close;
    this.head = head;
    try {
      res.cork(this.writeCorked);
    } finally {
      this.res = null;
      this.reply = null;
    }
  }
}
