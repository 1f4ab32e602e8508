// Routes of later work (fan-out children, remotes): each answers 501 once the caller passed the route's access check
// (spec §5 permissions), so a client learns the same about access as it will when the work lands. Front thread;
// routes.ts names these handlers.
import { errors } from '../../errors.js';
import { canManageTopic, requireAdmin, requireTopic } from '../access.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';

/** NOTES 8: with security off only the v3.2.0 remote items answer 403; with it on they need admin. */
export function onRemote(ctx: RequestContext, s: RouteServices): never {
  if (!s.config['security.enabled']) throw errors.remotesNeedSecurity();
  requireAdmin(ctx.user);
  throw errors.notImplemented();
}

/** Spec §5: an attach needs ownership of both topics (the child, named in the body, is checked with the fan-out work). */
export function onAttach(ctx: RequestContext, s: RouteServices): never {
  requireTopic.manage(ctx.user, s.replica.topic(ctx.param(0)));
  throw errors.notImplemented();
}

/** Spec §5: listing children needs any grant on the parent or its ownership (the server checked topic.read). */
export function onListChildren(): never {
  throw errors.notImplemented();
}

/** Spec §5: a detach needs ownership of either topic. */
export function onDetach(ctx: RequestContext, s: RouteServices): never {
  const parent = s.replica.topic(ctx.param(0));
  const child = s.replica.topic(ctx.param(1));
  if (!canManageTopic(ctx.user, parent) && !canManageTopic(ctx.user, child)) {
    throw errors.forbidden(`only the owner of topic ${parent.name} or ${child.name}, or an admin, may detach`);
  }
  throw errors.notImplemented();
}
