// The access model of spec §5 as the front answers it: the route-level checks that throw 403, the no-escalation
// rules of the user routes, and the field rules of spec §2 User and Grant. The rules themselves are
// src/metadata/caller_check.ts, which the leader runs again before it proposes a write (spec §5: a change is
// checked twice), so both checks decide alike. Pure: no I/O, no clock; handlers on the front thread call it with the
// caller their request authenticated. A caller of undefined means security is off: every check passes then
// (spec §1.13, §5.5, NOTES 8).
import { limits } from '../config.js';
import { errors, refusalError, type BrokerError } from '../errors.js';
import {
  adminRefusal, canReadTopic, givingRefusal, hasGrant, isAdmin, passwordChangeRefusal as passwordChangeRule, topicRefusal,
  userDeleteRefusal as userDeleteRule, userGrantsRefusal as userGrantsRule, type AccessRefusal, type Caller,
} from '../metadata/caller_check.js';
import type { Grant, GrantAction, TopicRecord, UserRecord } from '../protocol/metadata_types.js';

export type { Caller } from '../metadata/caller_check.js';
export {
  canManageTopic, canReadTopic, grantGivable, hasGrant, isAdmin, patternCovers, patternMatches,
} from '../metadata/caller_check.js';

const grantActions: readonly GrantAction[] = ['produce', 'consume', 'create', 'admin'];
const grantFields = ['action', 'patterns'];
/** Spec §2 User: characters of a username. */
const usernamePattern = /^[A-Za-z0-9._-]+$/;
/** Spec §2 Grant: a topic name, or a prefix of those characters followed by one `*` (the prefix may be empty). */
const grantPatternShape = /^[A-Za-z0-9._-]*\*?$/;

/** A refusal of the shared rules as the error the front throws; null passes. */
function thrown(refusal: AccessRefusal | null): void {
  if (refusal !== null) throw refusalError(refusal);
}

function asError(refusal: AccessRefusal | null): BrokerError | null {
  return refusal === null ? null : refusalError(refusal);
}

/** The route-level checks of the permissions table (spec §5); each throws 403 naming what is missing. */
export const requireTopic = {
  create(caller: Caller, name: string): void {
    thrown(topicRefusal.create(caller, name));
  },
  read(caller: Caller, topic: TopicRecord): void {
    if (!canReadTopic(caller, topic)) throw errors.forbidden(`no grant on topic ${topic.name} and not its owner`);
  },
  manage(caller: Caller, topic: TopicRecord): void {
    thrown(topicRefusal.manage(caller, topic));
  },
  createChild(caller: Caller, parent: TopicRecord): void {
    thrown(topicRefusal.createChild(caller, parent));
  },
  detach(caller: Caller, parent: TopicRecord, child: TopicRecord): void {
    thrown(topicRefusal.detach(caller, parent, child));
  },
  produce(caller: Caller, topic: TopicRecord): void {
    if (!hasGrant(caller, 'produce', topic.name)) throw errors.forbidden(`no produce grant on topic ${topic.name}`);
  },
  consume(caller: Caller, topic: TopicRecord): void {
    if (!hasGrant(caller, 'consume', topic.name)) throw errors.forbidden(`no consume grant on topic ${topic.name}`);
  },
} as const;

/** Spec §5: user management and cluster routes need the admin grant. */
export function requireAdmin(caller: Caller): void {
  thrown(adminRefusal(caller));
}

// ---------------------------------------------------------------------------------------------------------
// Field rules (spec §2 User and Grant, §8 Username and Password): each returns the 400 to answer, or nothing.

export function usernameRule(username: string): BrokerError | null {
  if (username.length === 0 || username.length > limits.username_chars_max) {
    return errors.invalid('username', `must be 1 to ${limits.username_chars_max} characters`);
  }
  if (!usernamePattern.test(username)) return errors.invalid('username', 'only characters A-Z a-z 0-9 . _ - are allowed');
  if (username === '.' || username === '..') return errors.invalid('username', 'must not be . or ..');
  return null;
}

/** Spec §2 User: a password is 1 to 72 bytes of UTF-8 (a non-ASCII character counts as several). */
export function passwordRule(field: string, password: string): BrokerError | null {
  const bytes = Buffer.byteLength(password, 'utf8');
  if (bytes < 1 || bytes > limits.password_bytes_max) return errors.invalid(field, `must be 1 to ${limits.password_bytes_max} bytes of UTF-8`);
  return null;
}

/**
 * A grants array of a request body, checked and normalised (admin without patterns). Shape faults are
 * `malformed` (docs/decisions.md: no audit line); rule faults are 400 too but audited as rejected.
 */
export function parseGrants(value: unknown): { grants: Grant[] } | { malformed: BrokerError } | { invalid: BrokerError } {
  if (!Array.isArray(value)) return { malformed: errors.invalid('grants', 'must be an array of grants') };
  const grants: Grant[] = [];
  for (let i = 0; i < value.length; i++) {
    const field = `grants[${i}]`;
    const item: unknown = value[i];
    if (typeof item !== 'object' || item === null || Array.isArray(item)) return { malformed: errors.invalid(field, 'must be an object with action and patterns') };
    for (const key of Object.keys(item)) {
      if (!grantFields.includes(key)) return { malformed: errors.unknownField(`${field}.${key}`) };
    }
    const { action, patterns } = item as { action?: unknown; patterns?: unknown };
    if (typeof action !== 'string') return { malformed: errors.invalid(`${field}.action`, 'required, one of produce, consume, create, admin') };
    if (!grantActions.includes(action as GrantAction)) return { invalid: errors.invalid(`${field}.action`, 'must be one of produce, consume, create, admin') };
    if (patterns !== undefined && (!Array.isArray(patterns) || !patterns.every((p) => typeof p === 'string'))) {
      return { malformed: errors.invalid(`${field}.patterns`, 'must be an array of strings') };
    }
    const list = (patterns ?? []) as string[];
    if (action === 'admin') {
      if (list.length > 0) return { invalid: errors.invalid(`${field}.patterns`, 'the admin grant takes no patterns') };
      grants.push({ action: 'admin' });
      continue;
    }
    if (list.length === 0) return { invalid: errors.invalid(`${field}.patterns`, `${action} needs at least one pattern`) };
    for (let k = 0; k < list.length; k++) {
      const rule = grantPatternRule(list[k]!);
      if (rule !== null) return { invalid: errors.invalid(`${field}.patterns[${k}]`, rule) };
    }
    grants.push({ action: action as GrantAction, patterns: [...list] });
  }
  return { grants };
}

function grantPatternRule(pattern: string): string | null {
  if (pattern.length === 0 || pattern.length > limits.grant_pattern_chars_max) return `must be 1 to ${limits.grant_pattern_chars_max} characters`;
  if (!grantPatternShape.test(pattern)) {
    return pattern.slice(0, -1).includes('*')
      ? 'a * is allowed only once, at the end'
      : 'only characters A-Z a-z 0-9 . _ - and a trailing * are allowed';
  }
  return null;
}

// ---------------------------------------------------------------------------------------------------------
// No escalation (spec §5, NOTES 9), as the errors the user routes answer. Each returns the 403 to answer, or null.
// The caller is already known to be an admin where the route needs one (requireAdmin runs first and writes no audit
// line).

export function userCreateRefusal(caller: Caller, grants: Grant[]): BrokerError | null {
  return asError(givingRefusal(caller, grants));
}

export function userDeleteRefusal(caller: Caller, target: UserRecord): BrokerError | null {
  return asError(userDeleteRule(caller, target));
}

export function userGrantsRefusal(caller: Caller, target: UserRecord, grants: Grant[]): BrokerError | null {
  return asError(userGrantsRule(caller, target, grants));
}

/** Who may set whose password (spec §4 Users, §5, NOTES 9); current_password is checked separately. */
export function passwordChangeRefusal(caller: Caller, targetUsername: string, target: UserRecord | undefined): BrokerError | null {
  return asError(passwordChangeRule(caller, targetUsername, target));
}

/** A non-admin changing their own password must send current_password (NOTES 9); admins may omit it. */
export function currentPasswordRequired(caller: Caller): boolean {
  return caller !== undefined && !isAdmin(caller);
}
