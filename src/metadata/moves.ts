// Partition moves and decommission in the metadata state machine (issue 41, spec §3 Node liveness and
// decommission, NOTES 16). A move sets the partition's target owner first (move.start), records the source's freeze
// (move.freeze), gives the partition to its destination (move.flip: owners[p], which every route reads) and ends once
// the source set its copy aside (move.finish); before the flip it may be aborted, leaving the source untouched.
// A member lost for good hands its partitions over without a copy (partition.reassign), empty from a start offset.
// Pure; runs wherever applyCommand runs (the metadata thread, and the front and workers as replicas).

import type { MetadataRefusal } from '../errors.js';
import { moveKey, type MetadataState, type PartitionMoveRecord, type TopicRecord } from '../protocol/metadata_types.js';
import type { ApplyResult } from './state.js';

function topicById(state: MetadataState, topicId: string): TopicRecord | undefined {
  for (const topic of state.topics.values()) if (topic.id === topicId) return topic;
  return undefined;
}

function refused(refusal: MetadataRefusal): ApplyResult {
  return { ok: false, refusal };
}

/** Why a planned move cannot start on this state, or undefined when it can. */
function startRefusal(state: MetadataState, move: PartitionMoveRecord): MetadataRefusal | undefined {
  const topic = topicById(state, move.topicId);
  if (topic === undefined) return { id: 'topicNotFound', args: [move.topic] };
  if (!Number.isSafeInteger(move.partition) || move.partition < 0 || move.partition >= topic.partitions) {
    return { id: 'moveRefused', args: [topic.name, move.partition, `the topic has ${topic.partitions} partitions`] };
  }
  if (state.moves.has(moveKey(move.topicId, move.partition))) return { id: 'moveExists', args: [topic.name, move.partition] };
  if (topic.owners[move.partition] !== move.source) {
    return { id: 'moveRefused', args: [topic.name, move.partition, `member ${move.source} does not own it`] };
  }
  const destination = state.members.get(move.destination);
  if (destination === undefined) return { id: 'moveRefused', args: [topic.name, move.partition, `member ${move.destination} is not a member`] };
  if (destination.decommission !== undefined) {
    return { id: 'moveRefused', args: [topic.name, move.partition, `member ${move.destination} is being decommissioned`] };
  }
  if (move.destination === move.source) return { id: 'moveRefused', args: [topic.name, move.partition, `member ${move.source} owns it already`] };
  return undefined;
}

/** All the moves start, or none (a plan is checked whole on every replica alike). */
export function applyMoveStart(state: MetadataState, moves: readonly PartitionMoveRecord[]): ApplyResult {
  const keys = new Set<string>();
  for (const move of moves) {
    const refusal = startRefusal(state, move);
    if (refusal !== undefined) return refused(refusal);
    const key = moveKey(move.topicId, move.partition);
    if (keys.has(key)) return refused({ id: 'moveExists', args: [move.topic, move.partition] });
    keys.add(key);
  }
  for (const move of moves) {
    const topic = topicById(state, move.topicId)!;
    topic.targetOwners[move.partition] = move.destination;
    state.moves.set(moveKey(move.topicId, move.partition), { ...move, topic: topic.name, phase: 'copying' });
  }
  return { ok: true };
}

/** The move of (topicId, partition) toward destination, or the refusal naming it. */
function runningMove(state: MetadataState, topicId: string, partition: number, destination?: number): PartitionMoveRecord | MetadataRefusal {
  const move = state.moves.get(moveKey(topicId, partition));
  if (move === undefined || (destination !== undefined && move.destination !== destination)) {
    return { id: 'moveNotFound', args: [topicById(state, topicId)?.name ?? topicId, partition] };
  }
  return move;
}

export function applyMoveFreeze(state: MetadataState, topicId: string, partition: number, destination: number, frozen: boolean): ApplyResult {
  const move = runningMove(state, topicId, partition, destination);
  if ('id' in move) return refused(move);
  if (move.phase === 'flipped') return refused({ id: 'moveFlipped', args: [move.topic, partition] });
  move.phase = frozen ? 'frozen' : 'copying';
  return { ok: true };
}

/** Only a frozen move flips: the source has staged nothing for the partition since the destination's last read. */
export function applyMoveFlip(state: MetadataState, topicId: string, partition: number, destination: number): ApplyResult {
  const move = runningMove(state, topicId, partition, destination);
  if ('id' in move) return refused(move);
  if (move.phase !== 'frozen') return refused({ id: 'moveRefused', args: [move.topic, partition, `the move is ${move.phase}, not frozen`] });
  const topic = topicById(state, topicId);
  if (topic === undefined) return refused({ id: 'topicNotFound', args: [move.topic] });
  topic.owners[partition] = destination;
  topic.targetOwners[partition] = destination;
  move.phase = 'flipped';
  return { ok: true };
}

export function applyMoveFinish(state: MetadataState, topicId: string, partition: number, destination: number): ApplyResult {
  const move = runningMove(state, topicId, partition, destination);
  if ('id' in move) return refused(move);
  if (move.phase !== 'flipped') return refused({ id: 'moveRefused', args: [move.topic, partition, `the move is ${move.phase}, not flipped`] });
  state.moves.delete(moveKey(topicId, partition));
  return { ok: true };
}

export function applyMoveAbort(state: MetadataState, topicId: string, partition: number): ApplyResult {
  const move = runningMove(state, topicId, partition);
  if ('id' in move) return refused(move);
  if (move.phase === 'flipped') return refused({ id: 'moveFlipped', args: [move.topic, partition] });
  abortMove(state, move);
  return { ok: true };
}

function abortMove(state: MetadataState, move: PartitionMoveRecord): void {
  const topic = topicById(state, move.topicId);
  if (topic !== undefined) topic.targetOwners[move.partition] = topic.owners[move.partition]!;
  state.moves.delete(moveKey(move.topicId, move.partition));
}

export function applyDecommission(state: MetadataState, id: number, startedAtMs: number, acceptDataLoss: boolean): ApplyResult {
  const member = state.members.get(id);
  if (member === undefined) return refused({ id: 'memberNotFound', args: [id] });
  if (member.decommission !== undefined) {
    // Naming a lost node's data loss later is allowed: the operator learned the node will not come back.
    if (!acceptDataLoss || member.decommission.acceptDataLoss) return refused({ id: 'decommissionRunning', args: [id] });
    member.decommission.acceptDataLoss = true;
    return { ok: true, member: { ...member, decommission: { ...member.decommission } } };
  }
  member.decommission = { startedAtMs, acceptDataLoss };
  return { ok: true, member: { ...member, decommission: { ...member.decommission } } };
}

/** Cancel: moves off the member that have not flipped go back to it (a flipped one finishes where it went). */
export function applyDecommissionCancel(state: MetadataState, id: number): ApplyResult {
  const member = state.members.get(id);
  if (member === undefined) return refused({ id: 'memberNotFound', args: [id] });
  if (member.decommission === undefined) return refused({ id: 'decommissionNotRunning', args: [id] });
  delete member.decommission;
  for (const move of [...state.moves.values()]) {
    if (move.source === id && move.reason === 'decommission' && move.phase !== 'flipped') abortMove(state, move);
  }
  return { ok: true, member: { ...member } };
}

/** A lost member's partition goes to `to`, starting empty at startOffset at least (offsets never go back). */
export function applyPartitionReassign(state: MetadataState, topicId: string, partition: number, from: number, to: number, startOffset: number): ApplyResult {
  const topic = topicById(state, topicId);
  if (topic === undefined) return refused({ id: 'topicNotFound', args: [topicId] });
  if (topic.owners[partition] !== from) return refused({ id: 'moveRefused', args: [topic.name, partition, `member ${from} does not own it`] });
  const target = state.members.get(to);
  if (target === undefined || target.decommission !== undefined) {
    return refused({ id: 'moveRefused', args: [topic.name, partition, `member ${to} cannot take it`] });
  }
  const pending = state.moves.get(moveKey(topicId, partition));
  if (pending !== undefined) abortMove(state, pending);
  topic.owners[partition] = to;
  topic.targetOwners[partition] = to;
  const starts = topic.startOffsets ?? new Array<number>(topic.partitions).fill(0);
  while (starts.length < topic.partitions) starts.push(0);
  starts[partition] = Math.max(starts[partition] ?? 0, startOffset);
  topic.startOffsets = starts;
  return { ok: true };
}

/** A deleted topic's moves end with it. */
export function dropTopicMoves(state: MetadataState, topicId: string): void {
  for (const [key, move] of state.moves) if (move.topicId === topicId) state.moves.delete(key);
}

/** How many moves read from or write to member id. */
export function movesOf(state: MetadataState, id: number): number {
  let count = 0;
  for (const move of state.moves.values()) if (move.source === id || move.destination === id) count += 1;
  return count;
}

/** Partitions moving off member id (spec §2 Cluster member: partitions moving off it). */
export function movesOff(state: MetadataState, id: number): number {
  let count = 0;
  for (const move of state.moves.values()) if (move.source === id && move.phase !== 'flipped') count += 1;
  return count;
}
