// Cluster members in the metadata state machine: add (an upsert by id) and forget, as applyCommand (state.ts)
// delegates them. A member that owns partitions or takes part in a move cannot be forgotten.
// Pure; runs wherever applyCommand runs (the metadata thread, and the front and workers as replicas).

import type { MemberRecord, MetadataState } from '../protocol/metadata_types.js';
import { movesOf } from './moves.js';
import { partitionsOwnedBy } from './placement.js';
import type { ApplyResult } from './state.js';

export function applyMemberAdd(state: MetadataState, member: MemberRecord): ApplyResult {
  if (!Number.isSafeInteger(member.id) || member.id <= 0) throw new Error(`member.add: id ${String(member.id)} is not a positive integer`);
  const known = state.members.get(member.id);
  const stored: MemberRecord = {
    id: member.id,
    apiAddress: member.apiAddress,
    internalAddress: member.internalAddress,
    addedAtMs: known === undefined ? member.addedAtMs : known.addedAtMs,
  };
  // A decommissioned node that restarts announces itself again: it keeps draining.
  if (known?.decommission !== undefined) stored.decommission = { ...known.decommission };
  state.members.set(stored.id, stored);
  return { ok: true, member: { ...stored } };
}

export function applyMemberForget(state: MetadataState, id: number): ApplyResult {
  if (!state.members.has(id)) return { ok: false, refusal: { id: 'memberNotFound', args: [id] } };
  const owned = partitionsOwnedBy(state, id);
  if (owned > 0) return { ok: false, refusal: { id: 'memberOwnsPartitions', args: [id, owned] } };
  const moving = movesOf(state, id);
  if (moving > 0) return { ok: false, refusal: { id: 'memberInMove', args: [id, moving] } };
  state.members.delete(id);
  return { ok: true };
}
