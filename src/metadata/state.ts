// The metadata state machine's one entry: applyCommand switches on the command and delegates to the module of its
// resource (topics.ts, users.ts, members.ts, moves.ts for partition moves and decommission; placement.ts for partition owners, schemas.ts for schema histories,
// fanout.ts for fan-out links). Pure: no I/O, no clock, no
// randomness. Every id and timestamp arrives inside the command, so the metadata thread, the front thread and every
// partition worker reach the same state from the same log.
// Runs on: the metadata thread (authoritative) and, as read-only replicas, the front thread and workers.

import type { MetadataRefusal } from '../errors.js';
import type { MemberRecord, MetadataCommand, MetadataState, TopicRecord, UserRecord } from '../protocol/metadata_types.js';
import { applyFanoutAttach, applyFanoutDetach } from './fanout.js';
import { applyMemberAdd, applyMemberForget } from './members.js';
import { applyDecommission, applyDecommissionCancel, applyMoveAbort, applyMoveFinish, applyMoveFlip, applyMoveFreeze, applyMoveStart,
  applyPartitionReassign } from './moves.js';
import { applyTopicCreate, applyTopicDelete, applyTopicUpdate } from './topics.js';
import { applyUserCreate, applyUserDelete, applyUserGrants, applyUserPassword } from './users.js';

export type ApplyResult =
  /** user: the user after a user.grants or user.password (a copy). */
  /** member: the member after a member.add (a copy). */
  | { ok: true; topic?: TopicRecord; deletedTopicId?: string; user?: UserRecord; member?: MemberRecord }
  /** refusal: a catalog id and its arguments (src/errors.ts); the front answers its status and text. */
  | { ok: false; refusal: MetadataRefusal };

export function emptyMetadataState(): MetadataState {
  return { topics: new Map(), topicNamesLower: new Map(), users: new Map(), credentialVersionLast: 0, members: new Map(), schemas: new Map(),
    fanout: new Map(), fanoutParentOf: new Map(), moves: new Map() };
}

/** Applies one committed command. Mutates state; the result is what the proposer answers. */
export function applyCommand(state: MetadataState, command: MetadataCommand): ApplyResult {
  switch (command.type) {
    case 'topic.create':
      return applyTopicCreate(state, command.topic, command.schema, command.attach);
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
    case 'fanout.attach':
      return applyFanoutAttach(state, command.child, command.childId, command.attach);
    case 'fanout.detach':
      return applyFanoutDetach(state, command.parent, command.parentId, command.child, command.childId);
    case 'member.decommission':
      return applyDecommission(state, command.id, command.startedAtMs, command.acceptDataLoss);
    case 'member.decommissionCancel':
      return applyDecommissionCancel(state, command.id);
    case 'move.start':
      return applyMoveStart(state, command.moves);
    case 'move.freeze':
      return applyMoveFreeze(state, command.topicId, command.partition, command.destination, command.frozen);
    case 'move.flip':
      return applyMoveFlip(state, command.topicId, command.partition, command.destination);
    case 'move.finish':
      return applyMoveFinish(state, command.topicId, command.partition, command.destination);
    case 'move.abort':
      return applyMoveAbort(state, command.topicId, command.partition);
    case 'partition.reassign':
      return applyPartitionReassign(state, command.topicId, command.partition, command.from, command.to, command.startOffset);
    // Seam (issue 26): remotes (remotes.ts) add their cases here when their commands join MetadataCommand
    // (src/protocol/metadata_types.ts). Schemas ride on the topic commands.
    default:
      return assertNeverCommand(command);
  }
}

function assertNeverCommand(command: never): never {
  throw new Error(`unknown metadata command ${JSON.stringify(command)}`);
}
