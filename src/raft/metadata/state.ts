// The metadata state machine: topics and users, changed only by applying committed entries.
// Pure: no I/O, no clock, no randomness. Every id and timestamp arrives inside the command, so the
// metadata thread, the front thread and every partition worker reach the same state from the same log.
// Runs on: the metadata thread (authoritative) and, as read-only replicas, the front thread and workers.

/** One topic as the metadata keeps it (spec §2 Topic; wire names are produced in src/front/topic_view.ts). */
export interface TopicRecord {
  name: string;
  /** 16 hex characters; a recreated topic gets a new one, so its files never collide with the old ones. */
  id: string;
  partitions: number;
  retentionMs: number;
  visibilityTimeoutMs: number;
  maxInFlightPerPartition: number;
  maxAckedAheadPerPartition: number;
  createdAtSec: number;
  /** Absent when the topic was created with security off (spec §5: only admins manage it). */
  owner?: string;
}

export type GrantAction = 'produce' | 'consume' | 'create' | 'admin';
export interface Grant {
  action: GrantAction;
  patterns?: string[];
}

export interface UserRecord {
  username: string;
  /** bcrypt hash; never leaves the node in an answer. */
  passwordHash: string;
  /** Moves on every password change, so cached verifications of the old password stop matching. */
  credentialVersion: number;
  grants: Grant[];
  root: boolean;
  createdAtMs: number;
  updatedAtMs: number;
}

export interface MetadataState {
  /** Keyed by exact name (NOTES 6: names in paths match case-sensitively). */
  topics: Map<string, TopicRecord>;
  /** Lower-cased name -> exact name, for the case-insensitive uniqueness rule at creation. */
  topicNamesLower: Map<string, string>;
  users: Map<string, UserRecord>;
  /** The last credential version handed out. Every user create and password change takes the next one, so
   *  a version never repeats, not even for a user deleted and created again under its name: a credential
   *  cached for the old account can never match the new one (src/front/auth.ts keys on the version). */
  credentialVersionLast: number;
}

/** Topic settings a PATCH may change; absent fields keep their value. Applied in spec order. */
export interface TopicChanges {
  retentionMs?: number;
  maxInFlightPerPartition?: number;
  maxAckedAheadPerPartition?: number;
  partitions?: number;
}

/** A change proposed to the metadata log. Each variant is applied by applyCommand below. */
export type MetadataCommand =
  /** POST /v1/topics: the front validated fields and filled defaults, id and createdAtSec. */
  | { type: 'topic.create'; topic: TopicRecord }
  /** PATCH /v1/topics/{topic}: groups applied one at a time, earlier groups stay on a later failure. */
  | { type: 'topic.update'; name: string; id: string; changes: TopicChanges }
  /** DELETE /v1/topics/{topic}: workers remove the files once they apply it. */
  | { type: 'topic.delete'; name: string; id: string }
  /** First start of a secured node: the root admin; POST /v1/users. The credential version given is replaced
   *  by the next one of the state (credentialVersionLast). */
  | { type: 'user.create'; user: UserRecord }
  /** DELETE /v1/users/{username}: the root admin is never deleted (403); its topics lose their owner (spec §5,
   *  v3.1.0). */
  | { type: 'user.delete'; username: string }
  /** PUT /v1/users/{username}/grants: replaces every grant; the root admin's never change (403). */
  | { type: 'user.grants'; username: string; grants: Grant[]; updatedAtMs: number }
  /** PUT /v1/users/{username}/password: a new hash and the next credential version, so every replica stops
   *  accepting cached verifications of the old password at once. */
  | { type: 'user.password'; username: string; passwordHash: string; updatedAtMs: number };

export type ApplyResult =
  /** user: the user after a user.grants or user.password (a copy). */
  | { ok: true; topic?: TopicRecord; deletedTopicId?: string; user?: UserRecord }
  | { ok: false; status: number; error: string };

export function emptyMetadataState(): MetadataState {
  return { topics: new Map(), topicNamesLower: new Map(), users: new Map(), credentialVersionLast: 0 };
}

/** Applies one committed command. Mutates state; the result is what the proposer answers. */
export function applyCommand(state: MetadataState, command: MetadataCommand): ApplyResult {
  switch (command.type) {
    case 'topic.create':
      return applyTopicCreate(state, command.topic);
    case 'topic.update':
      return applyTopicUpdate(state, command.name, command.id, command.changes);
    case 'topic.delete':
      return applyTopicDelete(state, command.name, command.id);
    case 'user.create':
      return applyUserCreate(state, command.user);
    case 'user.delete':
      return applyUserDelete(state, command.username);
    case 'user.grants':
      return applyUserGrants(state, command.username, command.grants, command.updatedAtMs);
    case 'user.password':
      return applyUserPassword(state, command.username, command.passwordHash, command.updatedAtMs);
    default:
      return assertNeverCommand(command);
  }
}

function applyTopicCreate(state: MetadataState, topic: TopicRecord): ApplyResult {
  const existing = state.topicNamesLower.get(topic.name.toLowerCase());
  if (existing !== undefined) {
    // Spec §4 POST /v1/topics: a name differing only by case names the existing topic.
    const error = existing === topic.name ? `topic ${existing} already exists` : `topic name conflicts with existing topic ${existing} (names are unique ignoring letter case)`;
    return { ok: false, status: 409, error };
  }
  const stored = { ...topic };
  state.topics.set(stored.name, stored);
  state.topicNamesLower.set(stored.name.toLowerCase(), stored.name);
  return { ok: true, topic: { ...stored } };
}

function applyTopicUpdate(state: MetadataState, name: string, id: string, changes: TopicChanges): ApplyResult {
  const topic = state.topics.get(name);
  if (topic === undefined || topic.id !== id) return { ok: false, status: 404, error: `topic ${name} not found` };
  if (changes.retentionMs !== undefined) topic.retentionMs = changes.retentionMs;
  if (changes.maxInFlightPerPartition !== undefined) topic.maxInFlightPerPartition = changes.maxInFlightPerPartition;
  if (changes.maxAckedAheadPerPartition !== undefined) topic.maxAckedAheadPerPartition = changes.maxAckedAheadPerPartition;
  if (changes.partitions !== undefined) {
    // Checked here, not only at the front: another PATCH may have grown the topic in between.
    if (changes.partitions <= topic.partitions) {
      return { ok: false, status: 400, error: `partitions: must be larger than the current count ${topic.partitions}` };
    }
    topic.partitions = changes.partitions;
  }
  return { ok: true, topic: { ...topic } };
}

function applyTopicDelete(state: MetadataState, name: string, id: string): ApplyResult {
  const topic = state.topics.get(name);
  if (topic === undefined || topic.id !== id) return { ok: false, status: 404, error: `topic ${name} not found` };
  state.topics.delete(name);
  state.topicNamesLower.delete(name.toLowerCase());
  return { ok: true, deletedTopicId: topic.id };
}

function applyUserCreate(state: MetadataState, user: UserRecord): ApplyResult {
  if (state.users.has(user.username)) return { ok: false, status: 409, error: `user ${user.username} already exists` };
  state.credentialVersionLast += 1;
  state.users.set(user.username, { ...user, grants: copyGrants(user.grants), credentialVersion: state.credentialVersionLast });
  return { ok: true };
}

function applyUserDelete(state: MetadataState, username: string): ApplyResult {
  const user = state.users.get(username);
  if (user === undefined) return userNotFound(username);
  // Also refused by the front; checked here too so no path through the log can remove the root admin.
  if (user.root) return { ok: false, status: 403, error: 'the root admin cannot be deleted' };
  state.users.delete(username);
  // Spec §5 (v3.1.0): a user created later under this name must not own these topics.
  for (const topic of state.topics.values()) {
    if (topic.owner === username) delete topic.owner;
  }
  return { ok: true };
}

function applyUserGrants(state: MetadataState, username: string, grants: Grant[], updatedAtMs: number): ApplyResult {
  const user = state.users.get(username);
  if (user === undefined) return userNotFound(username);
  if (user.root) return { ok: false, status: 403, error: "the root admin's grants cannot change" };
  user.grants = copyGrants(grants);
  user.updatedAtMs = updatedAtMs;
  return { ok: true, user: { ...user, grants: copyGrants(user.grants) } };
}

function applyUserPassword(state: MetadataState, username: string, passwordHash: string, updatedAtMs: number): ApplyResult {
  const user = state.users.get(username);
  if (user === undefined) return userNotFound(username);
  state.credentialVersionLast += 1;
  user.passwordHash = passwordHash;
  user.credentialVersion = state.credentialVersionLast;
  user.updatedAtMs = updatedAtMs;
  return { ok: true, user: { ...user, grants: copyGrants(user.grants) } };
}

function userNotFound(username: string): ApplyResult {
  return { ok: false, status: 404, error: `user ${username} not found` };
}

function copyGrants(grants: Grant[]): Grant[] {
  return grants.map((g) => (g.patterns === undefined ? { ...g } : { ...g, patterns: [...g.patterns] }));
}

function assertNeverCommand(command: never): never {
  throw new Error(`unknown metadata command ${JSON.stringify(command)}`);
}
