// The access model of spec §5 as pure rules: grant patterns, who may read, change, produce to and consume from a
// topic, and the no-escalation rules of the user routes; plus the field rules of spec §2 User and Grant. Pure: no
// I/O, no clock; handlers on the front thread call it with the caller their request authenticated. A caller of
// undefined means security is off: every check passes then (spec §1.13, §5.5, NOTES 8).
import { limits } from '../config.js';
import { errors, type BrokerError } from '../errors.js';
import type { Grant, GrantAction, TopicRecord, UserRecord } from '../protocol/metadata_types.js';

/** The authenticated user of a request; undefined with security off. */
export type Caller = UserRecord | undefined;

const grantActions: readonly GrantAction[] = ['produce', 'consume', 'create', 'admin'];
const grantFields = ['action', 'patterns'];
/** Spec §2 User: characters of a username. */
const usernamePattern = /^[A-Za-z0-9._-]+$/;
/** Spec §2 Grant: a topic name, or a prefix of those characters followed by one `*` (the prefix may be empty). */
const grantPatternShape = /^[A-Za-z0-9._-]*\*?$/;

export function isAdmin(caller: Caller): boolean {
  if (caller === undefined) return true;
  return caller.grants.some((g) => g.action === 'admin');
}

/** Spec §2 Grant: a pattern is a topic name, or a prefix followed by one `*`; `*` alone matches every topic. */
export function patternMatches(pattern: string, topicName: string): boolean {
  if (pattern.endsWith('*')) return topicName.startsWith(pattern.slice(0, -1));
  return pattern === topicName;
}

/** True when caller holds a grant of action matching the topic name (admin holds every grant). */
export function hasGrant(caller: Caller, action: Exclude<GrantAction, 'admin'>, topicName: string): boolean {
  if (isAdmin(caller)) return true;
  return caller!.grants.some((g) => g.action === action && (g.patterns ?? []).some((p) => patternMatches(p, topicName)));
}

/** Spec §5: any grant on a topic lets a user read it, its schema history and its children; so does ownership. */
export function canReadTopic(caller: Caller, topic: TopicRecord): boolean {
  if (isAdmin(caller)) return true;
  if (topic.owner !== undefined && topic.owner === caller!.username) return true;
  return caller!.grants.some((g) => (g.patterns ?? []).some((p) => patternMatches(p, topic.name)));
}

/** Spec §5: the owner or an admin changes, deletes and attaches a topic. A topic without owner: admins only. */
export function canManageTopic(caller: Caller, topic: TopicRecord): boolean {
  if (isAdmin(caller)) return true;
  return topic.owner !== undefined && topic.owner === caller!.username;
}

/** The route-level checks of the permissions table (spec §5); each throws 403 naming what is missing. */
export const requireTopic = {
  create(caller: Caller, name: string): void {
    if (!hasGrant(caller, 'create', name)) throw errors.forbidden(`no create grant matching topic name ${name}`);
  },
  read(caller: Caller, topic: TopicRecord): void {
    if (!canReadTopic(caller, topic)) throw errors.forbidden(`no grant on topic ${topic.name} and not its owner`);
  },
  manage(caller: Caller, topic: TopicRecord): void {
    if (!canManageTopic(caller, topic)) throw errors.forbidden(`only the owner of topic ${topic.name} or an admin may do this`);
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
  if (!isAdmin(caller)) throw errors.forbidden('needs the admin grant');
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
// No escalation (spec §5, NOTES 9). Each returns the 403 to answer, or null. The caller is already known to
// be an admin where the route needs one (requireAdmin runs first and writes no audit line).

/** True when pattern `have` matches every topic name pattern `want` matches. */
export function patternCovers(have: string, want: string): boolean {
  if (!have.endsWith('*')) return have === want;
  return want.startsWith(have.slice(0, -1));
}

/** Spec §5: a grant one does not hold cannot be given; only the root admin gives admin (NOTES 9). */
export function grantGivable(caller: Caller, grant: Grant): boolean {
  if (caller === undefined) return true;
  if (grant.action === 'admin') return caller.root;
  if (isAdmin(caller)) return true;
  return (grant.patterns ?? []).every((want) =>
    caller.grants.some((g) => g.action === grant.action && (g.patterns ?? []).some((have) => patternCovers(have, want))));
}

function givingRefusal(caller: Caller, grants: Grant[]): BrokerError | null {
  for (const grant of grants) {
    if (grantGivable(caller, grant)) continue;
    if (grant.action === 'admin') return errors.forbidden('only the root admin gives the admin grant');
    return errors.forbidden(`a ${grant.action} grant the caller does not hold cannot be given`);
  }
  return null;
}

export function userCreateRefusal(caller: Caller, grants: Grant[]): BrokerError | null {
  return givingRefusal(caller, grants);
}

export function userDeleteRefusal(caller: Caller, target: UserRecord): BrokerError | null {
  if (target.root) return errors.rootNotDeletable();
  if (caller !== undefined && caller.username === target.username) return errors.forbidden('no one deletes their own account');
  return null;
}

export function userGrantsRefusal(caller: Caller, target: UserRecord, grants: Grant[]): BrokerError | null {
  if (target.root) return errors.rootGrantsFixed();
  if (caller !== undefined && caller.username === target.username) return errors.forbidden('no one changes their own grants');
  return givingRefusal(caller, grants);
}

/**
 * Who may set whose password (spec §4 Users, §5, NOTES 9): a non-admin only their own (decided whether or not
 * the target exists, so a non-admin learns nothing about other accounts); only the root admin sets the root
 * admin's. current_password is checked separately (currentPasswordRequired).
 */
export function passwordChangeRefusal(caller: Caller, targetUsername: string, target: UserRecord | undefined): BrokerError | null {
  if (caller === undefined) return null;
  if (!isAdmin(caller)) return caller.username === targetUsername ? null : errors.forbidden('a non-admin may change only their own password');
  if (target !== undefined && target.root && !caller.root) return errors.forbidden("only the root admin changes the root admin's password");
  return null;
}

/** A non-admin changing their own password must send current_password (NOTES 9); admins may omit it. */
export function currentPasswordRequired(caller: Caller): boolean {
  return caller !== undefined && !isAdmin(caller);
}
