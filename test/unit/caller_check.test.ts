// Goal: the leader's second check of a metadata write (spec §5: a topic change is checked by the receiving node and
// again by the leader, 403 for a user the leader does not know): callerRefusal decides from the leader's state alone,
// so a caller deleted, deleted and created again, or whose password changed is refused; a revoked create grant, a
// lost ownership (a delete clears it) and a missing admin grant are refused by the same rules as the front's
// check; a target the state lacks is left to the apply. Also the holds that keep a write from being checked before
// a change of its caller's account (or an entry of the leader's own term) is applied.
// Method: build states with the real applyCommand, call the pure functions; CallerHolds with plain callbacks.
import t from 'tap';
import type { Grant, MetadataCommand, MetadataState, ProposalCaller, TopicCreateRecord, UserRecord } from '../../src/protocol/metadata_types.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';
import { callerRefusal } from '../../src/metadata/caller_check.js';
import { CallerHolds } from '../../src/raft/shell/caller_holds.js';
import type { MetadataRefusal } from '../../src/errors.js';

function user(username: string, grants: Grant[], root = false): UserRecord {
  return { username, passwordHash: '$2a$10$x', credentialVersion: 0, grants, root, createdAtMs: 1, updatedAtMs: 1 };
}

function topic(name: string, owner?: string): TopicCreateRecord {
  const record: TopicCreateRecord = {
    name, id: Buffer.from(name).toString('hex').padEnd(16, '0').slice(0, 16), partitions: 1, retentionMs: 0,
    visibilityTimeoutMs: 30_000, maxInFlightPerPartition: 1024, maxAckedAheadPerPartition: 1024, createdAtSec: 1, owners: [1],
  };
  if (owner !== undefined) record.owner = owner;
  return record;
}

function apply(state: MetadataState, command: MetadataCommand): void {
  const result = applyCommand(state, command);
  if (!result.ok) throw new Error(`setup: ${JSON.stringify(result.refusal)}`);
}

function seeded(): MetadataState {
  const state = emptyMetadataState();
  for (const command of [
    { type: 'member.add', member: { id: 1, apiAddress: 'n1:1', internalAddress: 'n1:2', addedAtMs: 1 } },
    { type: 'user.create', user: user('admin', [{ action: 'admin' }], true) },
    { type: 'user.create', user: user('ops', [{ action: 'admin' }]) },
    { type: 'user.create', user: user('alice', [{ action: 'create', patterns: ['a.*'] }]) },
    { type: 'user.create', user: user('bob', [{ action: 'create', patterns: ['b.*'] }]) },
    { type: 'topic.create', topic: topic('a.one', 'alice') },
    { type: 'topic.create', topic: topic('b.one', 'bob') },
  ] satisfies MetadataCommand[]) apply(state, command);
  return state;
}

/** The caller as the receiving node sends it: the username and the credential version it authenticated under. */
function callerOf(state: MetadataState, username: string): ProposalCaller {
  return { username, credentialVersion: state.users.get(username)!.credentialVersion };
}

const createIn = (name: string, owner: string): MetadataCommand => ({ type: 'topic.create', topic: { ...topic(name, owner), owners: [] } });
const forbidden = (reason: string) => ({ id: 'forbidden', args: [reason] });
const unknownText = (username: string) => `the metadata leader does not know user ${username} with these credentials (deleted or changed)`;

t.test('a caller the leader does not know under these credentials is refused 403, whatever the command', async (t) => {
  const state = seeded();
  const alice = callerOf(state, 'alice');
  t.equal(callerRefusal(state, alice, createIn('a.two', 'alice')), null, 'alice with her create grant passes');
  t.same(callerRefusal(state, { username: 'carol', credentialVersion: 1 }, createIn('a.two', 'carol')), forbidden(unknownText('carol')),
    'a user the leader never knew');
  apply(state, { type: 'user.delete', username: 'alice' });
  t.same(callerRefusal(state, alice, createIn('a.two', 'alice')), forbidden(unknownText('alice')), 'a user deleted a moment ago');
  apply(state, { type: 'user.create', user: user('alice', [{ action: 'admin' }]) });
  t.same(callerRefusal(state, alice, createIn('a.two', 'alice')), forbidden(unknownText('alice')),
    'a user deleted and created again under the name is another account, even one holding admin');
  const bob = callerOf(state, 'bob');
  apply(state, { type: 'user.password', username: 'bob', passwordHash: '$2a$10$y', updatedAtMs: 2 });
  t.same(callerRefusal(state, bob, { type: 'topic.delete', name: 'b.one', id: state.topics.get('b.one')!.id }), forbidden(unknownText('bob')),
    'credentials of a password changed since');
  t.same(callerRefusal(state, { username: 7 as unknown as string, credentialVersion: 1 }, createIn('a.two', 'x')), forbidden(unknownText('7')),
    'a malformed caller from a peer knows no user');
});

t.test('topic changes: the create grant, ownership or admin, by the leader state', async (t) => {
  const state = seeded();
  const alice = callerOf(state, 'alice');
  const ops = callerOf(state, 'ops');
  t.same(callerRefusal(state, alice, createIn('b.two', 'alice')), forbidden('no create grant matching topic name b.two'));
  t.equal(callerRefusal(state, ops, createIn('anything', 'ops')), null, 'admin holds every grant');
  apply(state, { type: 'user.grants', username: 'alice', grants: [{ action: 'produce', patterns: ['a.*'] }], updatedAtMs: 2 });
  t.same(callerRefusal(state, alice, createIn('a.two', 'alice')), forbidden('no create grant matching topic name a.two'), 'a revoked create grant');

  const aOne = state.topics.get('a.one')!;
  const bOne = state.topics.get('b.one')!;
  const bob = callerOf(state, 'bob');
  const manage = (name: string) => `only the owner of topic ${name} or an admin may do this`;
  t.equal(callerRefusal(state, alice, { type: 'topic.update', name: 'a.one', id: aOne.id, changes: { retentionMs: 0 } }), null, 'the owner');
  t.same(callerRefusal(state, bob, { type: 'topic.update', name: 'a.one', id: aOne.id, changes: { retentionMs: 0 } }), forbidden(manage('a.one')));
  t.same(callerRefusal(state, bob, { type: 'topic.delete', name: 'a.one', id: aOne.id }), forbidden(manage('a.one')));
  t.equal(callerRefusal(state, ops, { type: 'topic.delete', name: 'a.one', id: aOne.id }), null, 'an admin');
  t.equal(callerRefusal(state, bob, { type: 'topic.delete', name: 'a.one', id: 'ffffffffffffffff' }), null,
    'a topic recreated since is left to the apply (404)');
  t.equal(callerRefusal(state, bob, { type: 'topic.delete', name: 'gone', id: aOne.id }), null, 'a missing topic is left to the apply');

  const attach = (parent: typeof aOne) => ({ parent: parent.name, parentId: parent.id, epoch: '0'.repeat(16), attachOffsets: [0] });
  t.same(callerRefusal(state, bob, { type: 'topic.create', topic: { ...topic('b.child', 'bob'), owners: [] }, attach: attach(aOne) }),
    forbidden('only the owner of parent topic a.one or an admin may create a child of it'), 'a create with a parent not owned');
  t.equal(callerRefusal(state, bob, { type: 'topic.create', topic: { ...topic('b.child', 'bob'), owners: [] }, attach: attach(bOne) }), null);
  t.same(callerRefusal(state, bob, { type: 'fanout.attach', child: 'b.one', childId: bOne.id, attach: attach(aOne) }), forbidden(manage('a.one')),
    'an attach needs the parent');
  t.same(callerRefusal(state, alice, { type: 'fanout.attach', child: 'b.one', childId: bOne.id, attach: attach(aOne) }), forbidden(manage('b.one')),
    'and the child');
  const detach: MetadataCommand = { type: 'fanout.detach', parent: 'a.one', parentId: aOne.id, child: 'b.one', childId: bOne.id };
  t.equal(callerRefusal(state, bob, detach), null, 'a detach needs either topic');
  apply(state, { type: 'user.create', user: user('carol', [{ action: 'create', patterns: ['*'] }]) });
  t.same(callerRefusal(state, callerOf(state, 'carol'), detach), forbidden('only the owner of topic a.one or b.one, or an admin, may detach'));
});

t.test('user changes: the admin grant and no escalation, by the leader state', async (t) => {
  const state = seeded();
  const alice = callerOf(state, 'alice');
  const ops = callerOf(state, 'ops');
  const root = callerOf(state, 'admin');
  const newUser = (grants: Grant[]): MetadataCommand => ({ type: 'user.create', user: user('dave', grants) });
  t.same(callerRefusal(state, alice, newUser([])), forbidden('needs the admin grant'));
  t.same(callerRefusal(state, alice, { type: 'user.delete', username: 'bob' }), forbidden('needs the admin grant'));
  t.same(callerRefusal(state, alice, { type: 'user.grants', username: 'bob', grants: [], updatedAtMs: 2 }), forbidden('needs the admin grant'));
  t.equal(callerRefusal(state, ops, newUser([{ action: 'create', patterns: ['x'] }])), null);
  t.same(callerRefusal(state, ops, newUser([{ action: 'admin' }])), forbidden('only the root admin gives the admin grant'));
  t.equal(callerRefusal(state, root, newUser([{ action: 'admin' }])), null);
  t.same(callerRefusal(state, ops, { type: 'user.delete', username: 'ops' }), forbidden('no one deletes their own account'));
  t.same(callerRefusal(state, ops, { type: 'user.delete', username: 'admin' }), { id: 'rootNotDeletable', args: [] });
  t.same(callerRefusal(state, ops, { type: 'user.grants', username: 'ops', grants: [], updatedAtMs: 2 }), forbidden('no one changes their own grants'));
  t.equal(callerRefusal(state, ops, { type: 'user.delete', username: 'nobody' }), null, 'an unknown target is left to the apply (404)');
  const password = (username: string): MetadataCommand => ({ type: 'user.password', username, passwordHash: '$2a$10$z', updatedAtMs: 2 });
  t.equal(callerRefusal(state, alice, password('alice')), null, 'a non-admin sets their own password');
  t.same(callerRefusal(state, alice, password('bob')), forbidden('a non-admin may change only their own password'));
  t.same(callerRefusal(state, ops, password('admin')), forbidden("only the root admin changes the root admin's password"));
  apply(state, { type: 'user.grants', username: 'ops', grants: [], updatedAtMs: 2 });
  t.same(callerRefusal(state, ops, { type: 'user.delete', username: 'bob' }), forbidden('needs the admin grant'), 'an admin grant revoked');
  t.equal(callerRefusal(state, root, { type: 'member.forget', id: 9 }), null, 'membership commands carry no caller rule');
});

t.test('holds: a caller is checked only once its account changes and an entry of the leader term are applied', async (t) => {
  const holds = new CallerHolds();
  t.notOk(holds.ready('alice', 3, 10), 'a leader that applied nothing of its term yet waits');
  holds.leaderApplied(3);
  t.ok(holds.ready('alice', 3, 10));
  t.notOk(holds.ready('alice', 4, 10), 'a later term waits for its own entry again');
  holds.userChangeProposed('alice', 12);
  t.notOk(holds.ready('alice', 3, 11), 'a change of the account in flight');
  t.ok(holds.ready('bob', 3, 11), 'other callers do not wait for it');

  const log: string[] = [];
  const refusals: MetadataRefusal[] = [];
  holds.hold('alice', 1_000, () => log.push('first'), (r) => refusals.push(r));
  holds.hold('alice', 2_000, () => log.push('second'), (r) => refusals.push(r));
  holds.release(true, 3, 11);
  t.same(log, [], 'nothing retried before the change applies');
  holds.release(true, 3, 12);
  t.same(log, ['first', 'second'], 'retried in arrival order once applied');
  t.ok(holds.ready('alice', 3, 12));

  holds.userChangeProposed('alice', 20);
  holds.hold('alice', 1_000, () => log.push('late'), (r) => refusals.push(r));
  holds.hold('alice', 3_000, () => log.push('lost'), (r) => refusals.push(r));
  holds.expire(1_000);
  t.same(refusals, [{ id: 'noLeader', args: [] }], 'a hold past its deadline is refused: nothing was proposed');
  holds.release(false, 3, 20);
  t.same(refusals.length, 2, 'a node that no longer leads refuses what it held');
  holds.hold('alice', 9_000, () => log.push('closed'), (r) => refusals.push(r));
  holds.closeAll();
  t.same(refusals[2], { id: 'metadataLogUnavailable', args: [] });
  t.same(log, ['first', 'second'], 'no refused write was retried');
});
