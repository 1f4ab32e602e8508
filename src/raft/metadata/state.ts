// The metadata state machine: topics, users and cluster members, changed only by applying committed entries.
// Pure: no I/O, no clock, no randomness. Every id and timestamp arrives inside the command, so the
// metadata thread, the front thread and every partition worker reach the same state from the same log.
// Runs on: the metadata thread (authoritative) and, as read-only replicas, the front thread and workers.
import type { MetadataRefusal } from '../../errors.js';

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
  /** Owner node (member id) of each partition: owners[p] owns partition p; length == partitions. Filled by the
   *  leader's shell (placement.ts fillOwners) before it proposes; a create from the front carries []. */
  owners: number[];
}

/** A node of the cluster as the metadata keeps it. Liveness, voter and leader flags are not replicated state:
 *  the shell keeps them. */
export interface MemberRecord {
  /** The node id; owners in TopicRecord name it. A positive integer. */
  id: number;
  /** "host:port" of the node's HTTP API. */
  apiAddress: string;
  /** "host:port" of the node-to-node transport. */
  internalAddress: string;
  /** When the member was first added; an upsert of a known member keeps it. */
  addedAtMs: number;
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
  /** Keyed by member id. Every partition owner is a member (applyCommand refuses others). */
  members: Map<number, MemberRecord>;
}

/** Topic settings a PATCH may change; absent fields keep their value. Applied in spec order. */
export interface TopicChanges {
  retentionMs?: number;
  maxInFlightPerPartition?: number;
  maxAckedAheadPerPartition?: number;
  partitions?: number;
  /** Owners of the partitions added by a growing `partitions`, filled by the leader's shell (placement.ts
   *  fillOwners): newOwners[i] owns partition (partitions - newOwners.length + i). When another growth was applied
   *  between the placement and this entry, only the tail for the partitions still missing is used. */
  newOwners?: number[];
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
  | { type: 'user.password'; username: string; passwordHash: string; updatedAtMs: number }
  /** A node joins or comes back: upsert by id; a known member gets the new addresses and keeps addedAtMs. A node's
   *  shell proposes its own member.add at first start, before anything else, so a one-node cluster has one too. */
  | { type: 'member.add'; member: MemberRecord }
  /** Forget a member: 404 when unknown, 409 while it owns partitions (they must move off first). */
  | { type: 'member.forget'; id: number };

export type ApplyResult =
  /** user: the user after a user.grants or user.password (a copy). */
  /** member: the member after a member.add (a copy). */
  | { ok: true; topic?: TopicRecord; deletedTopicId?: string; user?: UserRecord; member?: MemberRecord }
  /** refusal: a catalog id and its arguments (src/errors.ts); the front answers its status and text. */
  | { ok: false; refusal: MetadataRefusal };

export function emptyMetadataState(): MetadataState {
  return { topics: new Map(), topicNamesLower: new Map(), users: new Map(), credentialVersionLast: 0, members: new Map() };
}

/** How many partitions, over every topic, member `id` owns. O(total partitions). */
export function partitionsOwnedBy(state: MetadataState, id: number): number {
  let owned = 0;
  for (const topic of state.topics.values()) {
    for (const owner of topic.owners) if (owner === id) owned += 1;
  }
  return owned;
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
    case 'member.add':
      return applyMemberAdd(state, command.member);
    case 'member.forget':
      return applyMemberForget(state, command.id);
    default:
      return assertNeverCommand(command);
  }
}

function applyTopicCreate(state: MetadataState, topic: TopicRecord): ApplyResult {
  // The leader's shell always fills owners (placement.ts fillOwners) before proposing: a wrong count is a bug.
  assertOwners(topic.owners, topic.partitions, `topic.create ${topic.name}`);
  const existing = state.topicNamesLower.get(topic.name.toLowerCase());
  if (existing !== undefined) {
    // Spec §4 POST /v1/topics: a name differing only by case names the existing topic.
    const refusal: MetadataRefusal = existing === topic.name ? { id: 'topicExists', args: [existing] } : { id: 'topicNameConflict', args: [existing] };
    return { ok: false, refusal };
  }
  const gone = ownerNotMember(state, topic.owners);
  if (gone !== undefined) return gone;
  const stored = { ...topic, owners: [...topic.owners] };
  state.topics.set(stored.name, stored);
  state.topicNamesLower.set(stored.name.toLowerCase(), stored.name);
  return { ok: true, topic: copyTopic(stored) };
}

function applyTopicUpdate(state: MetadataState, name: string, id: string, changes: TopicChanges): ApplyResult {
  const topic = state.topics.get(name);
  if (topic === undefined || topic.id !== id) return { ok: false, refusal: { id: 'topicNotFound', args: [name] } };
  if (changes.retentionMs !== undefined) topic.retentionMs = changes.retentionMs;
  if (changes.maxInFlightPerPartition !== undefined) topic.maxInFlightPerPartition = changes.maxInFlightPerPartition;
  if (changes.maxAckedAheadPerPartition !== undefined) topic.maxAckedAheadPerPartition = changes.maxAckedAheadPerPartition;
  if (changes.partitions !== undefined) {
    // Checked here, not only at the front: another PATCH may have grown the topic in between.
    if (changes.partitions <= topic.partitions) {
      return { ok: false, refusal: { id: 'partitionsNotGrown', args: [topic.partitions] } };
    }
    const added = changes.partitions - topic.partitions;
    if (changes.newOwners === undefined) {
      // The leader placed from a state that did not hold this topic yet (a new leader still applying its
      // predecessor's entries). Refused on every replica alike, never a crash: the client retries.
      return { ok: false, refusal: { id: 'partitionsNotPlaced', args: [name] } };
    }
    // Placed from a state at most as grown as this one, so newOwners covers at least the partitions still missing.
    assertOwners(changes.newOwners, changes.newOwners.length, `topic.update ${name}`);
    if (changes.newOwners.length < added) {
      throw new Error(`topic.update ${name}: ${changes.newOwners.length} new owners for ${added} new partitions`);
    }
    const newOwners = changes.newOwners.slice(changes.newOwners.length - added);
    const gone = ownerNotMember(state, newOwners);
    if (gone !== undefined) return gone;
    topic.owners.push(...newOwners);
    topic.partitions = changes.partitions;
  }
  return { ok: true, topic: copyTopic(topic) };
}

/** Fail-fast: owners is an array of `count` positive integer ids. */
function assertOwners(owners: readonly number[] | undefined, count: number, what: string): void {
  if (!Array.isArray(owners) || owners.length !== count) {
    throw new Error(`${what}: ${Array.isArray(owners) ? owners.length : 'no'} partition owners for ${count} partitions (the leader fills them before proposing)`);
  }
  for (const owner of owners) {
    if (!Number.isSafeInteger(owner) || owner <= 0) throw new Error(`${what}: partition owner ${String(owner)} is not a member id`);
  }
}

/** A member forgotten between placement and apply: refused on every replica alike (a crash would repeat on every
 *  replay). member.forget refuses a member that owns partitions, so owners already stored stay members. */
function ownerNotMember(state: MetadataState, owners: readonly number[]): ApplyResult | undefined {
  for (const owner of owners) {
    if (!state.members.has(owner)) return { ok: false, refusal: { id: 'ownerNotMember', args: [owner] } };
  }
  return undefined;
}

function copyTopic(topic: TopicRecord): TopicRecord {
  return { ...topic, owners: [...topic.owners] };
}

function applyMemberAdd(state: MetadataState, member: MemberRecord): ApplyResult {
  if (!Number.isSafeInteger(member.id) || member.id <= 0) throw new Error(`member.add: id ${String(member.id)} is not a positive integer`);
  const known = state.members.get(member.id);
  const stored: MemberRecord = {
    id: member.id,
    apiAddress: member.apiAddress,
    internalAddress: member.internalAddress,
    addedAtMs: known === undefined ? member.addedAtMs : known.addedAtMs,
  };
  state.members.set(stored.id, stored);
  return { ok: true, member: { ...stored } };
}

function applyMemberForget(state: MetadataState, id: number): ApplyResult {
  if (!state.members.has(id)) return { ok: false, refusal: { id: 'memberNotFound', args: [id] } };
  const owned = partitionsOwnedBy(state, id);
  if (owned > 0) return { ok: false, refusal: { id: 'memberOwnsPartitions', args: [id, owned] } };
  state.members.delete(id);
  return { ok: true };
}

function applyTopicDelete(state: MetadataState, name: string, id: string): ApplyResult {
  const topic = state.topics.get(name);
  if (topic === undefined || topic.id !== id) return { ok: false, refusal: { id: 'topicNotFound', args: [name] } };
  state.topics.delete(name);
  state.topicNamesLower.delete(name.toLowerCase());
  return { ok: true, deletedTopicId: topic.id };
}

function applyUserCreate(state: MetadataState, user: UserRecord): ApplyResult {
  if (state.users.has(user.username)) return { ok: false, refusal: { id: 'userExists', args: [user.username] } };
  state.credentialVersionLast += 1;
  state.users.set(user.username, { ...user, grants: copyGrants(user.grants), credentialVersion: state.credentialVersionLast });
  return { ok: true };
}

function applyUserDelete(state: MetadataState, username: string): ApplyResult {
  const user = state.users.get(username);
  if (user === undefined) return userNotFound(username);
  // Also refused by the front; checked here too so no path through the log can remove the root admin.
  if (user.root) return { ok: false, refusal: { id: 'rootNotDeletable', args: [] } };
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
  if (user.root) return { ok: false, refusal: { id: 'rootGrantsFixed', args: [] } };
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
  return { ok: false, refusal: { id: 'userNotFound', args: [username] } };
}

function copyGrants(grants: Grant[]): Grant[] {
  return grants.map((g) => (g.patterns === undefined ? { ...g } : { ...g, patterns: [...g.patterns] }));
}

function assertNeverCommand(command: never): never {
  throw new Error(`unknown metadata command ${JSON.stringify(command)}`);
}
