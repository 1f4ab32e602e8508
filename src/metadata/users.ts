// Users and their grants in the metadata state machine: create, delete, replace grants, change password, as
// applyCommand (state.ts) delegates them. Credential versions come from the state's one counter.
// Pure; runs wherever applyCommand runs (the metadata thread, and the front and workers as replicas).

import type { Grant, MetadataState, UserRecord } from '../protocol/metadata_types.js';
import type { ApplyResult } from './state.js';

export function applyUserCreate(state: MetadataState, user: UserRecord): ApplyResult {
  if (state.users.has(user.username)) return { ok: false, refusal: { id: 'userExists', args: [user.username] } };
  state.credentialVersionLast += 1;
  state.users.set(user.username, { ...user, grants: copyGrants(user.grants), credentialVersion: state.credentialVersionLast });
  return { ok: true };
}

export function applyUserDelete(state: MetadataState, username: string): ApplyResult {
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

export function applyUserGrants(state: MetadataState, username: string, grants: Grant[], updatedAtMs: number): ApplyResult {
  const user = state.users.get(username);
  if (user === undefined) return userNotFound(username);
  if (user.root) return { ok: false, refusal: { id: 'rootGrantsFixed', args: [] } };
  user.grants = copyGrants(grants);
  user.updatedAtMs = updatedAtMs;
  return { ok: true, user: { ...user, grants: copyGrants(user.grants) } };
}

export function applyUserPassword(state: MetadataState, username: string, passwordHash: string, updatedAtMs: number): ApplyResult {
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
