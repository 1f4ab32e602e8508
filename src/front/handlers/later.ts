// Routes of later work (remotes, remote children): each answers 501 once the caller passed the route's access check
// (spec §5 permissions), so a client learns the same about access as it will when the work lands. Front thread;
// routes.ts names these handlers.
import { errors } from '../../errors.js';
import { requireAdmin } from '../access.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';

/** NOTES 8: with security off only the v3.2.0 remote items answer 403; with it on they need admin. */
export function onRemote(ctx: RequestContext, s: RouteServices): never {
  if (!s.config['security.enabled']) throw errors.remotesNeedSecurity();
  requireAdmin(ctx.user);
  throw errors.notImplemented();
}
