// The shape of a route (spec §4): its method, pattern, handler, grant and body rule. Handlers, the body reader and
// the server share these types; the table itself is routes.ts.
import type { deferred, RequestContext } from './request_context.js';
import type { Reply } from './respond.js';
import type { RouteServices } from './services.js';

export type Method = 'GET' | 'HEAD' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
export type HandlerResult = Reply | typeof deferred | Promise<Reply | typeof deferred>;
/** A handler answers by returning a Reply, a promise of one, or `deferred` and then ctx.respond / ctx.fail. */
export type Handler = (ctx: RequestContext, services: RouteServices) => HandlerResult;

/** How the body of a route is read and capped (spec §8). */
export interface BodyRule {
  bytesMax: number;
  /** User and attach-child routes answer an oversized body with 400, not 413. */
  oversizeStatus: 400 | 413;
  /** Batch produce: a body over 1 MiB takes a share of http.max_batch_body_bytes_in_flight (spec §8). */
  usesBatchBudget?: boolean;
}

/**
 * What a route needs of its caller (spec §5 permissions table). The server checks before the handler:
 * - public: nothing, not even credentials (health, spec §5.3); metrics: public when http.metrics_unauthenticated;
 * - admin: the admin grant;
 * - topic.read, topic.produce, topic.consume: the topic of the path's first param exists (404) and the caller holds
 *   the grant on it (403); the handler finds it in ctx.topic.
 * Checked by the handler, because the check needs the body or an awaited lookup first (the table still says which):
 * - topic.create (on the body's name, after the name's own rules), topic.manage (PATCH and DELETE look the topic up
 *   again after catching up with the leader; detach needs it of either topic), password (own, or admin, NOTES 9),
 *   remote (admin, 403 with security off: NOTES 8), authenticated (any caller; listing filters per topic).
 */
export type RouteGrant = 'public' | 'metrics' | 'authenticated' | 'admin' | 'topic.read' | 'topic.produce' | 'topic.consume'
  | 'topic.create' | 'topic.manage' | 'password' | 'remote';

export interface RouteEntry {
  method: Method;
  /** The matched pattern; the metrics' route label. */
  pattern: string;
  handler: Handler;
  grant: RouteGrant;
  /** Present on routes that take a body. */
  body?: BodyRule;
  /** Spec §5.6: an accepted Content-Type or X-Svc-Client is needed (every POST, PUT and PATCH), else 415. */
  contentTypeChecked: boolean;
}
