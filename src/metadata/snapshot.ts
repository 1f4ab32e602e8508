// Snapshot of the metadata state machine, for Raft log compaction and for catching up a far-behind follower.
// Deterministic: equal states give identical bytes (map entries sorted, record keys in one fixed order), so
// replicas can compare snapshots byte for byte. Decoding validates every field and refuses anything else with
// an error naming the problem: a snapshot that does not decode cleanly is damage or a bug, never guessed at.
// Runs on: the metadata thread (encode and decode); the bytes may cross nodes (InstallSnapshot).

import { Packr } from 'msgpackr';
import { limits } from '../config.js';
import { moveKey, type FanoutLink, type FanoutParent, type Grant, type GrantAction, type MemberRecord, type MetadataState, type MovePhase,
  type MoveReason, type PartitionMoveRecord, type SchemaHistory, type TopicRecord, type UserRecord } from '../protocol/metadata_types.js';

/** Bumped on any change to the encoded shape; decode refuses every other value. A topic's targetOwners did not
 *  bump it: it is left out while equal to owners (always, until partition moves exist), so the bytes stay those of
 *  the release before it, whose nodes still read them, and a snapshot without it decodes with target = current. */
export const metadataSnapshotFormat = 1;

const packr = new Packr({ useRecords: false, moreTypes: false });

const topicKeys = ['name', 'id', 'partitions', 'retentionMs', 'visibilityTimeoutMs', 'maxInFlightPerPartition', 'maxAckedAheadPerPartition', 'createdAtSec', 'owner', 'owners', 'targetOwners', 'startOffsets'] as const;
const userKeys = ['username', 'passwordHash', 'credentialVersion', 'grants', 'root', 'createdAtMs', 'updatedAtMs'] as const;
const memberKeys = ['id', 'apiAddress', 'internalAddress', 'addedAtMs', 'decommission'] as const;
const decommissionKeys = ['startedAtMs', 'acceptDataLoss'] as const;
const moveKeys = ['topicId', 'topic', 'partition', 'source', 'destination', 'startedAtMs', 'reason', 'phase'] as const;
const moveReasons: readonly MoveReason[] = ['decommission', 'operator', 'rebalance'];
const movePhases: readonly MovePhase[] = ['copying', 'frozen', 'flipped'];
const grantKeys = ['action', 'patterns'] as const;
const topLevelKeys = ['format', 'credentialVersionLast', 'members', 'topics', 'users', 'schemas', 'fanout', 'moves'] as const;
const fanoutParentKeys = ['parentId', 'parent', 'children'] as const;
const fanoutLinkKeys = ['child', 'childId', 'epoch', 'attachOffsets', 'delayMs'] as const;
const schemaHistoryKeys = ['topicId', 'documents'] as const;
const grantActions: readonly GrantAction[] = ['produce', 'consume', 'create', 'admin'];

/** Encodes the whole state. Throws when a record holds a field this format does not know, so a field added to a
 *  record type without a snapshot format change fails in tests instead of vanishing from snapshots. */
export function encodeMetadataSnapshot(state: MetadataState): Uint8Array {
  const members = [...state.members.values()].sort((a, b) => a.id - b.id).map(encodeMember);
  const topics = [...state.topics.values()].sort((a, b) => byCodeUnit(a.name, b.name)).map(encodeTopic);
  const users = [...state.users.values()]
    .sort((a, b) => byCodeUnit(a.username, b.username))
    .map((user) => ({ ...ordered('user', user, userKeys), grants: user.grants.map((g) => ordered('grant', g, grantKeys)) }));
  const body: Record<string, unknown> = { format: metadataSnapshotFormat, credentialVersionLast: state.credentialVersionLast, members, topics, users };
  // Left out while empty, as targetOwners is, so a state without schemas keeps the bytes older nodes read.
  if (state.schemas.size > 0) body.schemas = encodeSchemas(state.schemas);
  // The same for fan-out links; children keep their attach order (spec §2 Topic children).
  if (state.fanout.size > 0) body.fanout = encodeFanout(state.fanout);
  // And for partition moves and decommissions (issue 41): a cluster that never moved keeps the older bytes.
  if (state.moves.size > 0) {
    body.moves = [...state.moves.entries()].sort(([a], [b]) => byCodeUnit(a, b)).map(([, move]) => ordered('move', move, moveKeys));
  }
  // pack's answer may share the packr's buffer; the snapshot outlives the next pack, so it gets its own bytes.
  return new Uint8Array(packr.pack(body));
}

function encodeSchemas(schemas: ReadonlyMap<string, SchemaHistory>): Record<string, unknown>[] {
  return [...schemas.entries()].sort(([a], [b]) => byCodeUnit(a, b)).map(([topicId, history]) => ({ topicId, documents: [...history.documents] }));
}

function encodeFanout(fanout: ReadonlyMap<string, FanoutParent>): Record<string, unknown>[] {
  return [...fanout.entries()].sort(([a], [b]) => byCodeUnit(a, b))
    .map(([parentId, entry]) => ({ parentId, parent: entry.parent, children: entry.children.map((c) => ordered('fanout link', c, fanoutLinkKeys)) }));
}

function encodeTopic(topic: TopicRecord): Record<string, unknown> {
  const fields = ordered('topic', topic, topicKeys);
  if (sameOwners(topic.targetOwners, topic.owners)) delete fields.targetOwners;
  if (topic.startOffsets?.every((offset) => offset === 0) === true) delete fields.startOffsets;
  return fields;
}

function encodeMember(member: MemberRecord): Record<string, unknown> {
  const fields = ordered('member', member, memberKeys);
  if (member.decommission !== undefined) fields.decommission = ordered('decommission', member.decommission, decommissionKeys);
  return fields;
}

function sameOwners(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((owner, p) => owner === b[p]);
}

/** Decodes and validates a snapshot; throws Error('metadata snapshot: ...') on anything that is not one. */
export function decodeMetadataSnapshot(bytes: Uint8Array): MetadataState {
  let decoded: unknown;
  try {
    decoded = packr.unpack(bytes);
  } catch (cause) {
    throw new Error(`metadata snapshot: not msgpack (${(cause as Error).message})`);
  }
  const top = object(decoded, 'snapshot', topLevelKeys);
  if (top.format !== metadataSnapshotFormat) throw problem(`format ${String(top.format)} is not the supported ${metadataSnapshotFormat}`);
  const state: MetadataState = {
    topics: new Map(),
    topicNamesLower: new Map(),
    users: new Map(),
    credentialVersionLast: integer(top.credentialVersionLast, 'credentialVersionLast', 0),
    members: new Map(),
    schemas: new Map(),
    fanout: new Map(),
    fanoutParentOf: new Map(),
    moves: new Map(),
  };
  for (const [i, raw] of array(top.members, 'members').entries()) {
    const member = decodeMember(raw, `members[${i}]`);
    if (state.members.has(member.id)) throw problem(`members[${i}]: member ${member.id} appears twice`);
    state.members.set(member.id, member);
  }
  for (const [i, raw] of array(top.topics, 'topics').entries()) {
    const topic = decodeTopic(raw, `topics[${i}]`, state.members);
    const lower = topic.name.toLowerCase();
    const clash = state.topicNamesLower.get(lower);
    if (clash !== undefined) throw problem(`topics[${i}]: name ${topic.name} clashes with ${clash} (unique ignoring case)`);
    state.topics.set(topic.name, topic);
    state.topicNamesLower.set(lower, topic.name);
  }
  for (const [i, raw] of array(top.users, 'users').entries()) {
    const user = decodeUser(raw, `users[${i}]`);
    if (state.users.has(user.username)) throw problem(`users[${i}]: user ${user.username} appears twice`);
    if (user.credentialVersion > state.credentialVersionLast) {
      throw problem(`users[${i}]: credential version ${user.credentialVersion} above the last handed out ${state.credentialVersionLast}`);
    }
    state.users.set(user.username, user);
  }
  decodeSchemas(top.schemas, state);
  decodeFanout(top.fanout, state);
  decodeMoves(top.moves, state);
  return state;
}

/** Moves name topics of the snapshot and members; at most one per partition. */
function decodeMoves(raw: unknown, state: MetadataState): void {
  if (raw === undefined) return;
  const byId = new Map([...state.topics.values()].map((topic) => [topic.id, topic]));
  for (const [i, entry] of array(raw, 'moves').entries()) {
    const where = `moves[${i}]`;
    const m = object(entry, where, moveKeys);
    const move: PartitionMoveRecord = {
      topicId: topicId(m.topicId, `${where}.topicId`),
      topic: string(m.topic, `${where}.topic`),
      partition: integer(m.partition, `${where}.partition`, 0),
      source: integer(m.source, `${where}.source`, 1),
      destination: integer(m.destination, `${where}.destination`, 1),
      startedAtMs: integer(m.startedAtMs, `${where}.startedAtMs`, 0),
      reason: oneOf(m.reason, moveReasons, `${where}.reason`),
      phase: oneOf(m.phase, movePhases, `${where}.phase`),
    };
    const topic = byId.get(move.topicId);
    if (topic === undefined || move.partition >= topic.partitions) throw problem(`${where}: partition ${move.partition} of topic ${move.topicId} is not in the snapshot`);
    if (!state.members.has(move.source) || !state.members.has(move.destination)) throw problem(`${where}: source or destination is not a member`);
    const key = moveKey(move.topicId, move.partition);
    if (state.moves.has(key)) throw problem(`${where}: partition ${key} moves twice`);
    state.moves.set(key, move);
  }
}

function oneOf<T extends string>(raw: unknown, values: readonly T[], where: string): T {
  if (!values.includes(raw as T)) throw problem(`${where}: ${String(raw)} is not one of ${values.join(', ')}`);
  return raw as T;
}

/** Fan-out links, checked against the rules every apply keeps (spec §3): known topics, one parent per child, no
 *  grandchildren, at most fanout_children_max children, one attach offset per parent partition. */
function decodeFanout(raw: unknown, state: MetadataState): void {
  if (raw === undefined) return;
  const byId = new Map([...state.topics.values()].map((topic) => [topic.id, topic]));
  for (const [i, entry] of array(raw, 'fanout').entries()) {
    const where = `fanout[${i}]`;
    const f = object(entry, where, fanoutParentKeys);
    const parentId = topicId(f.parentId, `${where}.parentId`);
    const parent = byId.get(parentId);
    if (parent === undefined || parent.name !== f.parent) throw problem(`${where}: topic ${parentId} named ${String(f.parent)} is not in the snapshot`);
    if (state.fanout.has(parentId)) throw problem(`${where}: parent ${parentId} appears twice`);
    const children = array(f.children, `${where}.children`).map((c, j) => decodeLink(c, `${where}.children[${j}]`, parent.partitions));
    if (children.length === 0 || children.length > limits.fanout_children_max) throw problem(`${where}: ${children.length} children`);
    for (const child of children) {
      if (byId.get(child.childId)?.name !== child.child) throw problem(`${where}: child ${child.childId} named ${child.child} is not in the snapshot`);
      if (state.fanoutParentOf.has(child.childId)) throw problem(`${where}: child ${child.childId} has two parents`);
      state.fanoutParentOf.set(child.childId, parentId);
    }
    state.fanout.set(parentId, { parent: parent.name, children });
  }
  for (const [childId, parentId] of state.fanoutParentOf) {
    if (state.fanout.has(childId)) throw problem(`fanout: topic ${childId} is both a child (of ${parentId}) and a parent`);
  }
}

function decodeLink(raw: unknown, where: string, parentPartitions: number): FanoutLink {
  const l = object(raw, where, fanoutLinkKeys);
  const attachOffsets = array(l.attachOffsets, `${where}.attachOffsets`).map((o, p) => integer(o, `${where}.attachOffsets[${p}]`, 0));
  if (attachOffsets.length !== parentPartitions) throw problem(`${where}: ${attachOffsets.length} attach offsets for ${parentPartitions} parent partitions`);
  const link: FanoutLink = { child: string(l.child, `${where}.child`), childId: topicId(l.childId, `${where}.childId`), epoch: string(l.epoch, `${where}.epoch`), attachOffsets };
  if (l.delayMs !== undefined) {
    link.delayMs = integer(l.delayMs, `${where}.delayMs`, 1);
    if (link.delayMs > limits.fanout_delay_ms_max) throw problem(`${where}.delayMs: over ${limits.fanout_delay_ms_max}`);
  }
  return link;
}

function decodeSchemas(raw: unknown, state: MetadataState): void {
  if (raw === undefined) return;
  const topicIds = new Set([...state.topics.values()].map((topic) => topic.id));
  for (const [i, entry] of array(raw, 'schemas').entries()) {
    const where = `schemas[${i}]`;
    const h = object(entry, where, schemaHistoryKeys);
    const id = topicId(h.topicId, `${where}.topicId`);
    if (!topicIds.has(id)) throw problem(`${where}: topic ${id} is not in the snapshot`);
    if (state.schemas.has(id)) throw problem(`${where}: topic ${id} appears twice`);
    const documents = array(h.documents, `${where}.documents`).map((d, v) => string(d, `${where}.documents[${v}]`));
    if (documents.length === 0) throw problem(`${where}: no versions`);
    state.schemas.set(id, { documents, bytes: documents.reduce((sum, d) => sum + Buffer.byteLength(d), 0) });
  }
}

function decodeMember(raw: unknown, where: string): MemberRecord {
  const m = object(raw, where, memberKeys);
  return {
    id: integer(m.id, `${where}.id`, 1),
    apiAddress: string(m.apiAddress, `${where}.apiAddress`),
    internalAddress: string(m.internalAddress, `${where}.internalAddress`),
    addedAtMs: integer(m.addedAtMs, `${where}.addedAtMs`, 0),
    ...(m.decommission === undefined ? {} : { decommission: decodeDecommission(m.decommission, `${where}.decommission`) }),
  };
}

function decodeDecommission(raw: unknown, where: string): NonNullable<MemberRecord['decommission']> {
  const d = object(raw, where, decommissionKeys);
  if (typeof d.acceptDataLoss !== 'boolean') throw problem(`${where}.acceptDataLoss: not a boolean`);
  return { startedAtMs: integer(d.startedAtMs, `${where}.startedAtMs`, 0), acceptDataLoss: d.acceptDataLoss };
}

function decodeTopic(raw: unknown, where: string, members: ReadonlyMap<number, MemberRecord>): TopicRecord {
  const t = object(raw, where, topicKeys);
  const topic: TopicRecord = {
    name: string(t.name, `${where}.name`),
    id: topicId(t.id, `${where}.id`),
    partitions: integer(t.partitions, `${where}.partitions`, 1),
    retentionMs: integer(t.retentionMs, `${where}.retentionMs`, 0),
    visibilityTimeoutMs: integer(t.visibilityTimeoutMs, `${where}.visibilityTimeoutMs`, 0),
    maxInFlightPerPartition: integer(t.maxInFlightPerPartition, `${where}.maxInFlightPerPartition`, 0),
    maxAckedAheadPerPartition: integer(t.maxAckedAheadPerPartition, `${where}.maxAckedAheadPerPartition`, 0),
    createdAtSec: integer(t.createdAtSec, `${where}.createdAtSec`, 0),
    owners: decodeOwners(t.owners, `${where}.owners`, members),
    targetOwners: [],
  };
  if (t.owner !== undefined) topic.owner = string(t.owner, `${where}.owner`);
  // Absent: written while the target always equalled the current owner (see metadataSnapshotFormat).
  topic.targetOwners = t.targetOwners === undefined ? [...topic.owners] : decodeOwners(t.targetOwners, `${where}.targetOwners`, members);
  if (topic.owners.length !== topic.partitions) throw problem(`${where}: ${topic.owners.length} owners for ${topic.partitions} partitions`);
  if (topic.targetOwners.length !== topic.partitions) {
    throw problem(`${where}: ${topic.targetOwners.length} target owners for ${topic.partitions} partitions`);
  }
  if (t.startOffsets !== undefined) {
    topic.startOffsets = array(t.startOffsets, `${where}.startOffsets`).map((o, p) => integer(o, `${where}.startOffsets[${p}]`, 0));
    if (topic.startOffsets.length > topic.partitions) throw problem(`${where}: ${topic.startOffsets.length} start offsets for ${topic.partitions} partitions`);
  }
  return topic;
}

function decodeOwners(raw: unknown, where: string, members: ReadonlyMap<number, MemberRecord>): number[] {
  const owners = array(raw, where).map((o, p) => integer(o, `${where}[${p}]`, 1));
  for (const [p, owner] of owners.entries()) {
    if (!members.has(owner)) throw problem(`${where}[${p}]: ${owner} is not a member`);
  }
  return owners;
}

function decodeUser(raw: unknown, where: string): UserRecord {
  const u = object(raw, where, userKeys);
  if (typeof u.root !== 'boolean') throw problem(`${where}.root: not a boolean`);
  return {
    username: string(u.username, `${where}.username`),
    passwordHash: string(u.passwordHash, `${where}.passwordHash`),
    credentialVersion: integer(u.credentialVersion, `${where}.credentialVersion`, 1),
    grants: array(u.grants, `${where}.grants`).map((g, i) => decodeGrant(g, `${where}.grants[${i}]`)),
    root: u.root,
    createdAtMs: integer(u.createdAtMs, `${where}.createdAtMs`, 0),
    updatedAtMs: integer(u.updatedAtMs, `${where}.updatedAtMs`, 0),
  };
}

function decodeGrant(raw: unknown, where: string): Grant {
  const g = object(raw, where, grantKeys);
  if (!grantActions.includes(g.action as GrantAction)) throw problem(`${where}.action: ${String(g.action)} is not a grant action`);
  const grant: Grant = { action: g.action as GrantAction };
  if (g.patterns !== undefined) grant.patterns = array(g.patterns, `${where}.patterns`).map((p, i) => string(p, `${where}.patterns[${i}]`));
  return grant;
}

/** The record's fields in `keys` order, absent ones left out; a field outside `keys` is a bug (see encode). */
function ordered(what: string, record: object, keys: readonly string[]): Record<string, unknown> {
  const source = record as Record<string, unknown>;
  for (const key of Object.keys(source)) {
    if (!keys.includes(key)) throw new Error(`metadata snapshot: ${what} field ${key} has no place in format ${metadataSnapshotFormat}`);
  }
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const value = source[key];
    if (value !== undefined) out[key] = Array.isArray(value) ? [...(value as unknown[])] : value;
  }
  return out;
}

function object<K extends string>(raw: unknown, where: string, keys: readonly K[]): Partial<Record<K, unknown>> {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || raw instanceof Uint8Array || raw instanceof Map) {
    throw problem(`${where}: not an object`);
  }
  for (const key of Object.keys(raw)) {
    if (!(keys as readonly string[]).includes(key)) throw problem(`${where}: unknown field ${key}`);
  }
  return raw as Partial<Record<K, unknown>>;
}

function topicId(raw: unknown, where: string): string {
  if (typeof raw !== 'string' || !/^[0-9a-f]{16}$/.test(raw)) throw problem(`${where}: not 16 lower-case hex characters`);
  return raw;
}

function array(raw: unknown, where: string): unknown[] {
  if (!Array.isArray(raw)) throw problem(`${where}: not an array`);
  return raw;
}

function string(raw: unknown, where: string): string {
  if (typeof raw !== 'string') throw problem(`${where}: not a string`);
  return raw;
}

function integer(raw: unknown, where: string, min: number): number {
  if (typeof raw !== 'number' || !Number.isSafeInteger(raw) || raw < min) throw problem(`${where}: not an integer >= ${min}`);
  return raw;
}

function problem(message: string): Error {
  return new Error(`metadata snapshot: ${message}`);
}

/** Code-unit order, the same on every replica (localeCompare is not). */
function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
