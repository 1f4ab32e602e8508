// User routes (spec §4 Users, §2 User and Grant, §5 no escalation, §6 audit): create, list, get, delete, PUT
// grants and PUT password. Every change is proposed to the metadata log; bcrypt hashing and the check of a
// current_password run in the bcrypt pool (services.authPool), never on this thread. Front thread; routes.ts names
// these handlers (every route but the password one needs admin, checked by server.ts first).
import { errors, refusalError } from '../../errors.js';
import type { Grant, UserRecord } from '../../protocol/metadata_types.js';
import {
  currentPasswordRequired, parseGrants, passwordChangeRefusal, passwordRule, userCreateRefusal, userDeleteRefusal,
  userGrantsRefusal, usernameRule,
} from '../access.js';
import { audited } from '../audit.js';
import { bcryptCompare, bcryptHash } from '../auth.js';
import { parseJsonObject } from '../json_body.js';
import { jsonReply, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { RouteServices } from '../services.js';

const createFields = ['username', 'password', 'grants'] as const;
const grantsFields = ['grants'] as const;
const passwordFields = ['new_password', 'current_password'] as const;
const done: Reply = { status: 204 };

/** Spec §2 User as answered: never the hash; grants absent for a user with none. */
export interface UserJson {
  username: string;
  grants?: Grant[];
  root: boolean;
  created_at_ms: number;
  updated_at_ms: number;
}

export function userJson(user: UserRecord): UserJson {
  const grants = user.grants.map((g) => (g.action === 'admin' ? { action: g.action } : { action: g.action, patterns: [...(g.patterns ?? [])] }));
  return {
    username: user.username,
    ...(grants.length > 0 ? { grants } : {}),
    root: user.root,
    created_at_ms: user.createdAtMs,
    updated_at_ms: user.updatedAtMs,
  };
}

function lookup(s: RouteServices, username: string): UserRecord {
  const user = s.replica.state.users.get(username);
  if (user === undefined) throw errors.userNotFound(username);
  return user;
}

function hashPassword(s: RouteServices, password: string): Promise<string> {
  return bcryptHash(s.authPool, password, s.config['auth.bcrypt_cost']);
}

export async function onCreateUser(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const body = parseJsonObject(await ctx.body(), createFields);
  const { username, password } = body;
  if (typeof username !== 'string') throw errors.invalid('username', 'required, a string');
  if (typeof password !== 'string') throw errors.invalid('password', 'required, a string');
  const parsed = body.grants === undefined ? { grants: [] } : parseGrants(body.grants);
  if ('malformed' in parsed) throw parsed.malformed;
  return audited(s.log, ctx, 'user.create', username, async () => {
    const refusal = usernameRule(username) ?? passwordRule('password', password) ?? ('invalid' in parsed ? parsed.invalid : null);
    if (refusal !== null) throw refusal;
    const grants = (parsed as { grants: Grant[] }).grants;
    const denied = userCreateRefusal(ctx.user, grants);
    if (denied !== null) throw denied;
    // Answered before paying for a hash; the log decides again when two creates race.
    if (s.replica.state.users.has(username)) throw errors.userExists(username);
    const passwordHash = await hashPassword(s, password);
    const nowMs = Date.now();
    const user: UserRecord = { username, passwordHash, credentialVersion: 0, grants, root: false, createdAtMs: nowMs, updatedAtMs: nowMs };
    const result = await s.replica.propose({ type: 'user.create', user }, ctx.user);
    if (!result.ok) throw refusalError(result.refusal);
    return jsonReply(201, userJson(user));
  });
}

export function onListUsers(_ctx: RequestContext, s: RouteServices): Reply {
  // Name order: usernames are ASCII, so code-unit order is byte order.
  const users = [...s.replica.state.users.values()].sort((a, b) => (a.username < b.username ? -1 : a.username > b.username ? 1 : 0));
  return jsonReply(200, users.map(userJson));
}

export function onGetUser(ctx: RequestContext, s: RouteServices): Reply {
  return jsonReply(200, userJson(lookup(s, ctx.param(0))));
}

export async function onDeleteUser(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const username = ctx.param(0);
  return audited(s.log, ctx, 'user.delete', username, async () => {
    const target = lookup(s, username);
    const denied = userDeleteRefusal(ctx.user, target);
    if (denied !== null) throw denied;
    const result = await s.replica.propose({ type: 'user.delete', username }, ctx.user);
    if (!result.ok) throw refusalError(result.refusal);
    return done;
  });
}

export async function onPutGrants(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const username = ctx.param(0);
  const body = parseJsonObject(await ctx.body(), grantsFields);
  if (body.grants === undefined) throw errors.invalid('grants', 'required, an array of grants (empty removes all)');
  const parsed = parseGrants(body.grants);
  if ('malformed' in parsed) throw parsed.malformed;
  return audited(s.log, ctx, 'user.grants', username, async () => {
    if ('invalid' in parsed) throw parsed.invalid;
    const target = lookup(s, username);
    const denied = userGrantsRefusal(ctx.user, target, parsed.grants);
    if (denied !== null) throw denied;
    const result = await s.replica.propose({ type: 'user.grants', username, grants: parsed.grants, updatedAtMs: Date.now() }, ctx.user);
    if (!result.ok) throw refusalError(result.refusal);
    return jsonReply(200, userJson(result.user!));
  });
}

export async function onPutPassword(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  const username = ctx.param(0);
  const body = parseJsonObject(await ctx.body(), passwordFields);
  const newPassword = body.new_password;
  const currentPassword = body.current_password;
  if (typeof newPassword !== 'string') throw errors.invalid('new_password', 'required, a string');
  if (currentPassword !== undefined && typeof currentPassword !== 'string') throw errors.invalid('current_password', 'must be a string');
  return audited(s.log, ctx, 'user.password', username, async () => {
    const rule = passwordRule('new_password', newPassword);
    if (rule !== null) throw rule;
    const target = s.replica.state.users.get(username);
    const denied = passwordChangeRefusal(ctx.user, username, target);
    if (denied !== null) throw denied;
    if (target === undefined) throw errors.userNotFound(username);
    // NOTES 9: a non-admin changing their own password sends the current one; whoever sends it has it checked.
    if (currentPassword === undefined && currentPasswordRequired(ctx.user)) throw errors.forbidden('current_password: required to change your own password');
    if (currentPassword !== undefined && ctx.user !== undefined && !(await bcryptCompare(s.authPool, currentPassword, target.passwordHash))) {
      throw errors.forbidden('current_password: wrong password');
    }
    const passwordHash = await hashPassword(s, newPassword);
    const result = await s.replica.propose({ type: 'user.password', username, passwordHash, updatedAtMs: Date.now() }, ctx.user);
    if (!result.ok) throw refusalError(result.refusal);
    return done;
  });
}
