// Who may change what (spec §5 access model, NOTES 9 no escalation) as pure rules over records, shared by both checks
// of a metadata write: the receiving node's front runs them against its replica (src/front/access.ts turns a refusal
// into the 403 it throws), and the leader's metadata shell runs callerRefusal against its own state right before it
// proposes, so a user deleted or a grant revoked a moment ago is refused even where a replica is behind. Refusals are
// plain catalog data (src/errors.ts), so this module serves both threads. A caller of undefined means security is
// off: every rule passes then (spec §1.13, §5.5, NOTES 8). Pure: no I/O, no clock.
import type { Refusal } from '../errors.js';
import type {
  Grant, GrantAction, MetadataCommand, MetadataState, ProposalCaller, TopicRecord, UserRecord,
} from '../protocol/metadata_types.js';

/** The authenticated user of a request; undefined with security off. */
export type Caller = UserRecord | undefined;

/** The refusals of the access rules: each answers 403. */
export type AccessRefusal = Refusal<'forbidden' | 'rootNotDeletable' | 'rootGrantsFixed'>;

function forbidden(reason: string): AccessRefusal {
  return { id: 'forbidden', args: [reason] };
}

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

/** The topic changes of the permissions table (spec §5), each the 403 naming what is missing, or null. */
export const topicRefusal = {
  create(caller: Caller, name: string): AccessRefusal | null {
    return hasGrant(caller, 'create', name) ? null : forbidden(`no create grant matching topic name ${name}`);
  },
  manage(caller: Caller, topic: TopicRecord): AccessRefusal | null {
    return canManageTopic(caller, topic) ? null : forbidden(`only the owner of topic ${topic.name} or an admin may do this`);
  },
  /** A create with parent: the right on the parent as well as the create grant. */
  createChild(caller: Caller, parent: TopicRecord): AccessRefusal | null {
    if (canManageTopic(caller, parent)) return null;
    return forbidden(`only the owner of parent topic ${parent.name} or an admin may create a child of it`);
  },
  /** A detach needs the right on either topic. */
  detach(caller: Caller, parent: TopicRecord, child: TopicRecord): AccessRefusal | null {
    if (canManageTopic(caller, parent) || canManageTopic(caller, child)) return null;
    return forbidden(`only the owner of topic ${parent.name} or ${child.name}, or an admin, may detach`);
  },
} as const;

/** Spec §5: user management and cluster routes need the admin grant. */
export function adminRefusal(caller: Caller): AccessRefusal | null {
  return isAdmin(caller) ? null : forbidden('needs the admin grant');
}

// ---------------------------------------------------------------------------------------------------------
// No escalation (spec §5, NOTES 9).

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

export function givingRefusal(caller: Caller, grants: Grant[]): AccessRefusal | null {
  for (const grant of grants) {
    if (grantGivable(caller, grant)) continue;
    if (grant.action === 'admin') return forbidden('only the root admin gives the admin grant');
    return forbidden(`a ${grant.action} grant the caller does not hold cannot be given`);
  }
  return null;
}

export function userDeleteRefusal(caller: Caller, target: UserRecord): AccessRefusal | null {
  if (target.root) return { id: 'rootNotDeletable', args: [] };
  if (caller !== undefined && caller.username === target.username) return forbidden('no one deletes their own account');
  return null;
}

export function userGrantsRefusal(caller: Caller, target: UserRecord, grants: Grant[]): AccessRefusal | null {
  if (target.root) return { id: 'rootGrantsFixed', args: [] };
  if (caller !== undefined && caller.username === target.username) return forbidden('no one changes their own grants');
  return givingRefusal(caller, grants);
}

/**
 * Who may set whose password (spec §4 Users, §5, NOTES 9): a non-admin only their own (decided whether or not
 * the target exists, so a non-admin learns nothing about other accounts); only the root admin sets the root
 * admin's. current_password is the front's alone to check (it never leaves the receiving node).
 */
export function passwordChangeRefusal(caller: Caller, targetUsername: string, target: UserRecord | undefined): AccessRefusal | null {
  if (caller === undefined) return null;
  if (!isAdmin(caller)) return caller.username === targetUsername ? null : forbidden('a non-admin may change only their own password');
  if (target !== undefined && target.root && !caller.root) return forbidden("only the root admin changes the root admin's password");
  return null;
}

// ---------------------------------------------------------------------------------------------------------
// The leader's check (spec §5: a topic change is checked twice; 403 for a user the leader does not know).

/** The topic under name if it is still the one the command was built for; otherwise the apply refuses the command
 *  (404, or 409 for a recreated fan-out topic) and no right on it is asked. */
function sameTopic(state: MetadataState, name: string, id: string): TopicRecord | undefined {
  const topic = state.topics.get(name);
  return topic !== undefined && topic.id === id ? topic : undefined;
}

/** The account a user command changes (its username), or null for any other command. */
export function userChangeTarget(command: MetadataCommand): string | null {
  switch (command?.type) {
    case 'user.create':
      return command.user.username;
    case 'user.delete':
    case 'user.grants':
    case 'user.password':
      return command.username;
    default:
      return null;
  }
}

/** The rule of one command for a caller the state knows. */
function commandRefusal(state: MetadataState, user: UserRecord, command: MetadataCommand): AccessRefusal | null {
  switch (command.type) {
    case 'topic.create': {
      const parent = command.attach === undefined ? undefined : sameTopic(state, command.attach.parent, command.attach.parentId);
      return topicRefusal.create(user, command.topic.name) ?? (parent === undefined ? null : topicRefusal.createChild(user, parent));
    }
    case 'topic.update':
    case 'topic.delete': {
      const topic = sameTopic(state, command.name, command.id);
      return topic === undefined ? null : topicRefusal.manage(user, topic);
    }
    case 'fanout.attach': {
      const parent = sameTopic(state, command.attach.parent, command.attach.parentId);
      const child = sameTopic(state, command.child, command.childId);
      return (parent === undefined ? null : topicRefusal.manage(user, parent)) ?? (child === undefined ? null : topicRefusal.manage(user, child));
    }
    case 'fanout.detach': {
      const parent = sameTopic(state, command.parent, command.parentId);
      const child = sameTopic(state, command.child, command.childId);
      return parent === undefined || child === undefined ? null : topicRefusal.detach(user, parent, child);
    }
    case 'user.create':
      return adminRefusal(user) ?? givingRefusal(user, command.user.grants);
    case 'user.delete': {
      const target = state.users.get(command.username);
      return adminRefusal(user) ?? (target === undefined ? null : userDeleteRefusal(user, target));
    }
    case 'user.grants': {
      const target = state.users.get(command.username);
      return adminRefusal(user) ?? (target === undefined ? null : userGrantsRefusal(user, target, command.grants));
    }
    case 'user.password':
      return passwordChangeRefusal(user, command.username, state.users.get(command.username));
    case 'member.decommission':
    case 'member.decommissionCancel':
    case 'move.start':
    case 'move.abort':
      // The cluster routes (NOTES 16) are admin only; a node's own move steps carry no caller.
      return adminRefusal(user);
    default:
      // Membership changes and a move's own steps are the nodes': they carry no caller.
      return null;
  }
}

/**
 * The leader's check of a write that carries its caller, against the leader's state: the caller must be a user it
 * knows under the credentials the receiving node accepted (a user deleted, or deleted and created again, or whose
 * password changed, is not), and hold the right the command needs by the same rules as the receiving node's check.
 * A target the state lacks is left to the apply, which refuses it with its own status.
 */
export function callerRefusal(state: MetadataState, caller: ProposalCaller, command: MetadataCommand): AccessRefusal | null {
  const user = state.users.get(caller.username);
  if (user === undefined || user.credentialVersion !== caller.credentialVersion) {
    return forbidden(`the metadata leader does not know user ${String(caller.username)} with these credentials (deleted or changed)`);
  }
  return commandRefusal(state, user, command);
}
