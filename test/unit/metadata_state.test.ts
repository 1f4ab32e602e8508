// Goal: applyCommand, the pure metadata state machine, decides every proposal the same way on every replica:
// creation and its case-insensitive uniqueness (409 naming the existing topic), PATCH groups applied in order,
// 404 for a missing or recreated topic, delete then recreate under a new id, and user uniqueness.
// Method: apply commands to a fresh state and check both the result and the state left behind.
import t from 'tap';
import type { MetadataCommand, MetadataState, TopicCreateRecord, UserRecord } from '../../src/protocol/metadata_types.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';
import { answered } from '../helpers/refusal.js';

function topic(name: string, id: string, partitions = 3): TopicCreateRecord {
  return {
    name,
    id,
    partitions,
    retentionMs: 86_400_000,
    visibilityTimeoutMs: 30_000,
    maxInFlightPerPartition: 1000,
    maxAckedAheadPerPartition: 10_000,
    createdAtSec: 1_700_000_000,
    owners: Array<number>(partitions).fill(1),
  };
}

/** A state holding member 1, the owner of every partition here (every owner must be a member). */
function fresh(): MetadataState {
  const state = emptyMetadataState();
  const added = applyCommand(state, { type: 'member.add', member: { id: 1, apiAddress: 'n1:7942', internalAddress: 'n1:7943', addedAtMs: 1 } });
  if (!added.ok) throw new Error(`setup failed: ${JSON.stringify(added.refusal)}`);
  return state;
}

function user(username: string): UserRecord {
  return {
    username,
    passwordHash: '$2a$10$abcdefghijklmnopqrstuv',
    credentialVersion: 1,
    grants: [{ action: 'produce', patterns: ['orders.*'] }],
    root: false,
    createdAtMs: 1_700_000_000_000,
    updatedAtMs: 1_700_000_000_000,
  };
}

function withTopic(name = 'orders', id = '00000000000000a1'): MetadataState {
  const state = fresh();
  const result = applyCommand(state, { type: 'topic.create', topic: topic(name, id) });
  if (!result.ok) throw new Error(`setup failed: ${JSON.stringify(result.refusal)}`);
  return state;
}

t.test('topic.create stores the topic and answers it', async (t) => {
  const state = fresh();
  const created = topic('orders', '00000000000000a1');
  const result = applyCommand(state, { type: 'topic.create', topic: created });
  const stored = { ...created, targetOwners: [1, 1, 1] };
  t.same(result, { ok: true, topic: stored }, 'target owners = owners: the entry carries none');
  t.same(state.topics.get('orders'), stored);
  t.equal(state.topicNamesLower.get('orders'), 'orders');
  created.partitions = 99;
  created.owners.push(1);
  t.equal(state.topics.get('orders')?.partitions, 3, 'the state keeps its own copy');
  t.same(state.topics.get('orders')?.owners, [1, 1, 1], 'owners too');
});

t.test('topic.create of an existing name is 409 naming the topic', async (t) => {
  const state = withTopic();
  const result = applyCommand(state, { type: 'topic.create', topic: topic('orders', '00000000000000b2', 5) });
  t.same(answered(result), { ok: false, status: 409, error: 'topic orders already exists' });
  t.equal(state.topics.get('orders')?.id, '00000000000000a1', 'the existing topic is untouched');
  t.equal(state.topics.size, 1);
});

t.test('topic.create of a name differing only in case is 409 naming the existing topic', async (t) => {
  const state = withTopic('Orders');
  const result = applyCommand(state, { type: 'topic.create', topic: topic('oRDERS', '00000000000000b2') });
  t.equal(result.ok, false);
  if (result.ok) return;
  t.same(result.refusal, { id: 'topicNameConflict', args: ['Orders'] }, '409 naming the existing topic');
  t.notOk(state.topics.has('oRDERS'));
  t.equal(state.topics.size, 1);
});

t.test('topic.update changes the fields given and keeps the others', async (t) => {
  const state = withTopic();
  const result = applyCommand(state, {
    type: 'topic.update',
    name: 'orders',
    id: '00000000000000a1',
    changes: { retentionMs: 3_600_000, partitions: 6, newOwners: [1, 1, 1] },
  });
  t.equal(result.ok, true);
  const stored = state.topics.get('orders');
  t.equal(stored?.retentionMs, 3_600_000);
  t.equal(stored?.partitions, 6);
  t.same(stored?.owners, [1, 1, 1, 1, 1, 1], 'the new partitions have their owners');
  t.equal(stored?.maxInFlightPerPartition, 1000, 'absent field kept');
  if (result.ok) t.same(result.topic, stored, 'answers the updated topic');
});

t.test('topic.update with partitions not growing is 400, and earlier groups stay applied', async (t) => {
  for (const partitions of [3, 2]) {
    const state = withTopic();
    const result = applyCommand(state, {
      type: 'topic.update',
      name: 'orders',
      id: '00000000000000a1',
      changes: { retentionMs: 7_200_000, maxInFlightPerPartition: 50, maxAckedAheadPerPartition: 500, partitions },
    });
    t.same(answered(result), { ok: false, status: 400, error: 'partitions: must be larger than the current count 3' }, `partitions ${partitions}`);
    const stored = state.topics.get('orders');
    t.equal(stored?.partitions, 3, 'partitions unchanged');
    t.equal(stored?.retentionMs, 7_200_000, 'retention applied before the failure');
    t.equal(stored?.maxInFlightPerPartition, 50);
    t.equal(stored?.maxAckedAheadPerPartition, 500);
  }
});

t.test('topic.update and topic.delete of a missing topic are 404', async (t) => {
  const state = withTopic();
  t.same(answered(applyCommand(state, { type: 'topic.update', name: 'payments', id: '00000000000000a1', changes: { retentionMs: 1 } })), {
    ok: false,
    status: 404,
    error: 'topic payments not found',
  });
  t.same(answered(applyCommand(state, { type: 'topic.delete', name: 'payments', id: '00000000000000a1' })), {
    ok: false,
    status: 404,
    error: 'topic payments not found',
  });
  t.same(answered(applyCommand(state, { type: 'topic.delete', name: 'ORDERS', id: '00000000000000a1' })), { ok: false, status: 404, error: 'topic ORDERS not found' }, 'names in paths match exactly');
  t.equal(state.topics.size, 1);
});

t.test('delete then recreate gives a new id; commands for the old id are 404', async (t) => {
  const state = withTopic();
  t.same(applyCommand(state, { type: 'topic.delete', name: 'orders', id: '00000000000000a1' }), { ok: true, deletedTopicId: '00000000000000a1' });
  t.equal(state.topics.size, 0);
  t.equal(state.topicNamesLower.size, 0, 'the name is free again, in every case');
  const recreated = applyCommand(state, { type: 'topic.create', topic: topic('ORDERS', '00000000000000c3', 4) });
  t.equal(recreated.ok, true, 'recreate under the same name (another case) succeeds');
  t.equal(state.topics.get('ORDERS')?.id, '00000000000000c3');
  t.same(answered(applyCommand(state, { type: 'topic.update', name: 'ORDERS', id: '00000000000000a1', changes: { partitions: 9, newOwners: Array<number>(5).fill(1) } })), {
    ok: false,
    status: 404,
    error: 'topic ORDERS not found',
  }, 'an update aimed at the old topic does not touch the new one');
  t.same(answered(applyCommand(state, { type: 'topic.delete', name: 'ORDERS', id: '00000000000000a1' })), { ok: false, status: 404, error: 'topic ORDERS not found' });
  t.equal(state.topics.get('ORDERS')?.partitions, 4);
});

t.test('user.create stores the user; a second one of that name is 409', async (t) => {
  const state = fresh();
  const alice = user('alice');
  t.same(applyCommand(state, { type: 'user.create', user: alice }), { ok: true });
  alice.grants[0]!.action = 'admin';
  t.equal(state.users.get('alice')?.grants[0]?.action, 'produce', 'grants are copied, not shared');
  const again = { ...user('alice'), passwordHash: 'other' };
  t.same(answered(applyCommand(state, { type: 'user.create', user: again })), { ok: false, status: 409, error: 'user alice already exists' });
  t.equal(state.users.get('alice')?.passwordHash, '$2a$10$abcdefghijklmnopqrstuv', 'the first user is kept');
});

t.test('the same commands give the same state and answers on every replica', async (t) => {
  const commands: MetadataCommand[] = [
    { type: 'topic.create', topic: topic('a', '0000000000000001') },
    { type: 'topic.create', topic: topic('A', '0000000000000002') },
    { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 5, newOwners: [1, 1] } },
    { type: 'topic.delete', name: 'a', id: '0000000000000001' },
    { type: 'topic.create', topic: topic('A', '0000000000000003') },
  ];
  const left = fresh();
  const right = fresh();
  const leftAnswers = commands.map((command) => applyCommand(left, structuredClone(command)));
  const rightAnswers = commands.map((command) => applyCommand(right, structuredClone(command)));
  t.same(leftAnswers, rightAnswers);
  t.same(left, right);
  t.same(leftAnswers.map((answer) => answer.ok), [true, false, true, true, true]);
});
