// The metadata state machine: topics, users and cluster members, changed only by applying committed entries.
// Pure: no I/O, no clock, no randomness. Every id and timestamp arrives inside the command, so the
// metadata thread, the front thread and every partition worker reach the same state from the same log.
// Runs on: the metadata thread (authoritative) and, as read-only replicas, the front thread and workers.

import type { Grant, MemberRecord, MetadataCommand, MetadataState, TopicChanges, TopicRecord, UserRecord } from '../../protocol/metadata_types.js';

export type ApplyResult =
  /** user: the user after a user.grants or user.password (a copy). */
  /** member: the member after a member.add (a copy). */
  | { ok: true; topic?: TopicRecord; deletedTopicId?: string; user?: UserRecord; member?: MemberRecord }
  | { ok: false; status: number; error: string };

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
    const error = existing === topic.name ? `topic ${existing} already exists` : `topic name conflicts with existing topic ${existing} (names are unique ignoring letter case)`;
    return { ok: false, status: 409, error };
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
  if (topic === undefined || topic.id !== id) return { ok: false, status: 404, error: `topic ${name} not found` };
  if (changes.retentionMs !== undefined) topic.retentionMs = changes.retentionMs;
  if (changes.maxInFlightPerPartition !== undefined) topic.maxInFlightPerPartition = changes.maxInFlightPerPartition;
  if (changes.maxAckedAheadPerPartition !== undefined) topic.maxAckedAheadPerPartition = changes.maxAckedAheadPerPartition;
  if (changes.partitions !== undefined) {
    // Checked here, not only at the front: another PATCH may have grown the topic in between.
    if (changes.partitions <= topic.partitions) {
      return { ok: false, status: 400, error: `partitions: must be larger than the current count ${topic.partitions}` };
    }
    const added = changes.partitions - topic.partitions;
    if (changes.newOwners === undefined) {
      // The leader placed from a state that did not hold this topic yet (a new leader still applying its
      // predecessor's entries). Refused on every replica alike, never a crash: the client retries.
      return { ok: false, status: 503, error: `partitions: owners of the new partitions of topic ${name} were not placed; retry` };
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
    if (!state.members.has(owner)) return { ok: false, status: 503, error: `partition owner ${owner} is not a cluster member; retry` };
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
  if (!state.members.has(id)) return { ok: false, status: 404, error: `member ${id} not found` };
  const owned = partitionsOwnedBy(state, id);
  if (owned > 0) return { ok: false, status: 409, error: `member ${id} owns ${owned} partitions` };
  state.members.delete(id);
  return { ok: true };
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
