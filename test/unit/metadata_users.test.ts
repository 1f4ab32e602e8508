// Goal: the user commands of the metadata state machine (user.create, user.delete, user.grants, user.password)
// decide the same way on every replica: 404 for an unknown user, the root admin never deleted and its grants never
// changed (403), a delete clears the owner of that user's topics only, a grants change touches only grants, and a
// password change moves the credential version past every version handed out before, also across a delete and a
// re-create under the same name (so a cached credential of the old account never matches the new one).
// Method: apply commands to fresh states and check both the results and the state left behind.
import t from 'tap';
import type { MetadataCommand, MetadataState, TopicCreateRecord, UserRecord } from '../../src/protocol/metadata_types.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';
import { answered } from '../helpers/refusal.js';

function user(username: string, root = false): UserRecord {
  return {
    username,
    passwordHash: `$2a$10$hash-of-${username}`,
    credentialVersion: 1,
    grants: root ? [{ action: 'admin' }] : [{ action: 'create', patterns: ['orders.*'] }],
    root,
    createdAtMs: 1_700_000_000_000,
    updatedAtMs: 1_700_000_000_000,
  };
}

function topic(name: string, owner?: string): TopicCreateRecord {
  const record: TopicCreateRecord = {
    name, id: Buffer.from(name).toString('hex').padEnd(16, '0').slice(0, 16), partitions: 3, retentionMs: 0,
    visibilityTimeoutMs: 30_000, maxInFlightPerPartition: 1024, maxAckedAheadPerPartition: 1024, createdAtSec: 1_700_000_000, owners: [1, 1, 1],
  };
  if (owner !== undefined) record.owner = owner;
  return record;
}

function apply(state: MetadataState, command: MetadataCommand) {
  return applyCommand(state, command);
}

function seeded(): MetadataState {
  const state = emptyMetadataState();
  for (const command of [
    { type: 'member.add', member: { id: 1, apiAddress: 'n1:7942', internalAddress: 'n1:7943', addedAtMs: 1 } },
    { type: 'user.create', user: user('admin', true) },
    { type: 'user.create', user: user('alice') },
    { type: 'user.create', user: user('bob') },
    { type: 'topic.create', topic: topic('orders.a', 'alice') },
    { type: 'topic.create', topic: topic('orders.bb', 'bob') },
    { type: 'topic.create', topic: topic('orders.ccc') },
  ] satisfies MetadataCommand[]) {
    const result = apply(state, command);
    if (!result.ok) throw new Error(`setup: ${JSON.stringify(result.refusal)}`);
  }
  return state;
}

t.test('user.create hands out a new credential version to every user', async (t) => {
  const state = seeded();
  t.same([...state.users.values()].map((u) => u.credentialVersion), [1, 2, 3]);
  t.equal(state.credentialVersionLast, 3);
});

t.test('user.delete: 404 unknown, 403 root, clears the owner of that user\'s topics only', async (t) => {
  const state = seeded();
  t.same(answered(apply(state, { type: 'user.delete', username: 'nobody' })), { ok: false, status: 404, error: 'user nobody not found' });
  const root = apply(state, { type: 'user.delete', username: 'admin' });
  t.same(answered(root), { ok: false, status: 403, error: 'the root admin cannot be deleted' });
  t.ok(state.users.has('admin'), 'root kept');
  t.same(apply(state, { type: 'user.delete', username: 'alice' }), { ok: true });
  t.notOk(state.users.has('alice'));
  t.notOk('owner' in state.topics.get('orders.a')!, 'alice\'s topic has no owner any more');
  t.equal(state.topics.get('orders.bb')!.owner, 'bob', 'bob\'s topic keeps its owner');
  t.notOk('owner' in state.topics.get('orders.ccc')!);
});

t.test('a user created again under a deleted name owns nothing and gets a new credential version', async (t) => {
  const state = seeded();
  const before = state.users.get('alice')!.credentialVersion;
  apply(state, { type: 'user.delete', username: 'alice' });
  t.same(apply(state, { type: 'user.create', user: user('alice') }), { ok: true });
  const after = state.users.get('alice')!.credentialVersion;
  t.ok(after > before, `version ${after} > ${before}`);
  t.notOk('owner' in state.topics.get('orders.a')!);
});

t.test('user.grants: replaces grants only, copies them, 403 for root, 404 unknown', async (t) => {
  const state = seeded();
  const alice = state.users.get('alice')!;
  const hash = alice.passwordHash;
  const version = alice.credentialVersion;
  const grants = [{ action: 'produce' as const, patterns: ['orders.a', 'x*'] }, { action: 'admin' as const }];
  const result = apply(state, { type: 'user.grants', username: 'alice', grants, updatedAtMs: 1_800_000_000_000 });
  t.ok(result.ok);
  if (!result.ok) return;
  t.same(result.user?.grants, grants);
  grants[0]!.patterns!.push('mutated');
  t.same(state.users.get('alice')!.grants[0]!.patterns, ['orders.a', 'x*'], 'the state keeps its own copy');
  t.equal(state.users.get('alice')!.updatedAtMs, 1_800_000_000_000);
  t.equal(state.users.get('alice')!.createdAtMs, 1_700_000_000_000);
  t.equal(state.users.get('alice')!.passwordHash, hash, 'password untouched');
  t.equal(state.users.get('alice')!.credentialVersion, version, 'credential version untouched');
  t.same(apply(state, { type: 'user.grants', username: 'alice', grants: [], updatedAtMs: 1 }).ok, true, 'an empty list removes all');
  t.same(state.users.get('alice')!.grants, []);
  t.same(answered(apply(state, { type: 'user.grants', username: 'admin', grants: [], updatedAtMs: 1 })),
    { ok: false, status: 403, error: "the root admin's grants cannot change" });
  t.same(state.users.get('admin')!.grants, [{ action: 'admin' }]);
  t.same(answered(apply(state, { type: 'user.grants', username: 'nobody', grants: [], updatedAtMs: 1 })), { ok: false, status: 404, error: 'user nobody not found' });
});

t.test('user.password: new hash, credential version past every earlier one, grants untouched', async (t) => {
  const state = seeded();
  const grantsBefore = structuredClone(state.users.get('bob')!.grants);
  const last = state.credentialVersionLast;
  const result = apply(state, { type: 'user.password', username: 'bob', passwordHash: 'new-hash', updatedAtMs: 1_900_000_000_000 });
  t.ok(result.ok);
  const bob = state.users.get('bob')!;
  t.equal(bob.passwordHash, 'new-hash');
  t.equal(bob.credentialVersion, last + 1);
  t.equal(bob.updatedAtMs, 1_900_000_000_000);
  t.same(bob.grants, grantsBefore);
  t.ok(apply(state, { type: 'user.password', username: 'admin', passwordHash: 'root-hash', updatedAtMs: 1 }).ok, 'root\'s password can change');
  t.same(answered(apply(state, { type: 'user.password', username: 'nobody', passwordHash: 'x', updatedAtMs: 1 })), { ok: false, status: 404, error: 'user nobody not found' });
});

t.test('two replicas applying the same commands reach the same state', async (t) => {
  const commands: MetadataCommand[] = [
    { type: 'member.add', member: { id: 1, apiAddress: 'n1:7942', internalAddress: 'n1:7943', addedAtMs: 1 } },
    { type: 'user.create', user: user('admin', true) },
    { type: 'user.create', user: user('carol') },
    { type: 'topic.create', topic: topic('orders.c', 'carol') },
    { type: 'user.password', username: 'carol', passwordHash: 'h2', updatedAtMs: 5 },
    { type: 'user.grants', username: 'carol', grants: [{ action: 'consume', patterns: ['*'] }], updatedAtMs: 6 },
    { type: 'user.delete', username: 'carol' },
    { type: 'user.create', user: user('carol') },
  ];
  const a = emptyMetadataState();
  const b = emptyMetadataState();
  for (const command of commands) {
    t.same(apply(a, structuredClone(command)), apply(b, structuredClone(command)));
  }
  t.same(a, b);
});
