// Goal: member records in the metadata state machine, and the owner checks on every topic entry. member.add is an
// upsert (a restarted node with a new address updates its record and keeps addedAtMs); member.forget is 404 for an
// unknown member and 409 while the member owns partitions. A topic.create must carry one owner per partition and a
// growing topic.update the owners of the added partitions: a wrong shape is a bug of the proposer and throws, while
// what a race between the leader's placement and the apply can produce (an owner forgotten meanwhile, a growth placed
// from a state without the topic, another growth applied in between) is answered the same way on every replica.
// Method: apply commands to fresh states and check the results and the state left behind.
import t from 'tap';
import type { MemberRecord, MetadataState, TopicCreateRecord } from '../../src/protocol/metadata_types.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';
import { partitionsOwnedBy } from '../../src/metadata/placement.js';
import { answered } from '../helpers/refusal.js';

function member(id: number, host = `n${id}`, addedAtMs = 1_700_000_000_000 + id): MemberRecord {
  return { id, apiAddress: `${host}:7942`, internalAddress: `${host}:7943`, addedAtMs };
}

function topic(name: string, id: string, owners: number[]): TopicCreateRecord {
  return {
    name, id, partitions: owners.length, retentionMs: 86_400_000, visibilityTimeoutMs: 30_000,
    maxInFlightPerPartition: 1000, maxAckedAheadPerPartition: 10_000, createdAtSec: 1_700_000_000, owners,
  };
}

function withMembers(...ids: number[]): MetadataState {
  const state = emptyMetadataState();
  for (const id of ids) {
    const result = applyCommand(state, { type: 'member.add', member: member(id) });
    if (!result.ok) throw new Error(`setup: ${JSON.stringify(result.refusal)}`);
  }
  return state;
}

t.test('member.add stores the member and answers a copy', async (t) => {
  const state = emptyMetadataState();
  const added = member(1);
  const result = applyCommand(state, { type: 'member.add', member: added });
  t.same(result, { ok: true, member: added });
  t.same(state.members.get(1), added);
  added.apiAddress = 'elsewhere:1';
  t.equal(state.members.get(1)?.apiAddress, 'n1:7942', 'the state keeps its own copy');
  if (result.ok) {
    result.member!.apiAddress = 'elsewhere:2';
    t.equal(state.members.get(1)?.apiAddress, 'n1:7942', 'the answer is a copy too');
  }
});

t.test('member.add of a known id updates the addresses and keeps addedAtMs', async (t) => {
  const state = withMembers(1, 2);
  const result = applyCommand(state, { type: 'member.add', member: member(2, '10.0.0.9', 1_800_000_000_000) });
  const expected = { id: 2, apiAddress: '10.0.0.9:7942', internalAddress: '10.0.0.9:7943', addedAtMs: 1_700_000_000_002 };
  t.same(result, { ok: true, member: expected });
  t.same(state.members.get(2), expected);
  t.same(state.members.get(1), member(1), 'the other member is untouched');
  t.equal(state.members.size, 2);
});

t.test('member.add with an id that is not a positive integer is a bug and throws', async (t) => {
  for (const id of [0, -1, 1.5, Number.NaN]) {
    const state = emptyMetadataState();
    t.throws(() => applyCommand(state, { type: 'member.add', member: member(id) }), /member\.add: id .* is not a positive integer/, `id ${id}`);
    t.equal(state.members.size, 0);
  }
});

t.test('member.forget: 404 unknown, 409 while it owns partitions, then forgotten', async (t) => {
  const state = withMembers(1, 2, 3);
  t.same(answered(applyCommand(state, { type: 'member.forget', id: 9 })), { ok: false, status: 404, error: 'member 9 not found' });
  t.same(applyCommand(state, { type: 'topic.create', topic: topic('orders', '00000000000000a1', [2, 1, 2]) }).ok, true);
  t.same(applyCommand(state, { type: 'topic.create', topic: topic('events', '00000000000000b2', [2]) }).ok, true);
  t.same(answered(applyCommand(state, { type: 'member.forget', id: 2 })), { ok: false, status: 409, error: 'member 2 owns 3 partitions' });
  t.same(answered(applyCommand(state, { type: 'member.forget', id: 1 })), { ok: false, status: 409, error: 'member 1 owns 1 partitions' });
  t.ok(state.members.has(2), 'kept while it owns partitions');
  t.same(applyCommand(state, { type: 'member.forget', id: 3 }), { ok: true }, 'a member owning nothing is forgotten');
  t.notOk(state.members.has(3));
  t.same(answered(applyCommand(state, { type: 'member.forget', id: 3 })), { ok: false, status: 404, error: 'member 3 not found' }, 'twice is 404');
  t.same(applyCommand(state, { type: 'topic.delete', name: 'orders', id: '00000000000000a1' }).ok, true);
  t.same(applyCommand(state, { type: 'member.forget', id: 1 }), { ok: true }, 'free once its topic is deleted');
  t.same(answered(applyCommand(state, { type: 'member.forget', id: 2 })), { ok: false, status: 409, error: 'member 2 owns 1 partitions' });
  t.same([...state.members.keys()], [2]);
});

t.test('partitionsOwnedBy counts over every topic', async (t) => {
  const state = withMembers(1, 2, 3);
  applyCommand(state, { type: 'topic.create', topic: topic('a', '0000000000000001', [1, 2, 1]) });
  applyCommand(state, { type: 'topic.create', topic: topic('b', '0000000000000002', [1, 3]) });
  t.same([1, 2, 3, 4].map((id) => partitionsOwnedBy(state, id)), [3, 1, 1, 0]);
});

t.test('topic.create without one owner per partition is a bug and throws, leaving the state alone', async (t) => {
  const state = withMembers(1);
  const cases: [string, TopicCreateRecord][] = [
    ['no owners', { ...topic('a', '0000000000000001', [1, 1, 1]), owners: [] }],
    ['too few', { ...topic('a', '0000000000000001', [1, 1, 1]), owners: [1, 1] }],
    ['too many', { ...topic('a', '0000000000000001', [1, 1, 1]), owners: [1, 1, 1, 1] }],
    ['owners absent', { ...topic('a', '0000000000000001', [1]), owners: undefined as unknown as number[] }],
    ['target owners too few', { ...topic('a', '0000000000000001', [1, 1, 1]), targetOwners: [1, 1] }],
  ];
  for (const [label, bad] of cases) {
    t.throws(() => applyCommand(state, { type: 'topic.create', topic: bad }), /topic\.create a(?: \(target\))?: .*partition owners for \d+ partitions/, label);
  }
  t.throws(() => applyCommand(state, { type: 'topic.create', topic: topic('a', '0000000000000001', [1, 0]) }), /owner 0 is not a member id/);
  t.equal(state.topics.size, 0);
});

t.test('topic.create naming an owner that is not a member is refused on every replica, not applied', async (t) => {
  const state = withMembers(1, 2);
  t.same(answered(applyCommand(state, { type: 'topic.create', topic: topic('a', '0000000000000001', [1, 3]) })), {
    ok: false,
    status: 503,
    error: 'partition owner 3 is not a cluster member; retry',
  });
  t.equal(state.topics.size, 0);
  t.equal(state.topicNamesLower.size, 0);
});

t.test('topic.update growth appends the owners of the new partitions', async (t) => {
  const state = withMembers(1, 2, 3);
  applyCommand(state, { type: 'topic.create', topic: topic('a', '0000000000000001', [1, 2]) });
  const result = applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 4, newOwners: [3, 1] } });
  t.equal(result.ok, true);
  t.same(state.topics.get('a')?.owners, [1, 2, 3, 1]);
  t.equal(state.topics.get('a')?.partitions, 4);
  t.same(result.ok ? result.topic?.owners : result, [1, 2, 3, 1], 'the result carries the grown owners');
});

t.test('topic.update growth placed before another growth was applied uses the owners of the partitions still missing', async (t) => {
  const state = withMembers(1, 2, 3);
  applyCommand(state, { type: 'topic.create', topic: topic('a', '0000000000000001', [1]) });
  // Both placed from the one-partition state: 2 -> [2], 4 -> [2, 3, 1].
  t.equal(applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 2, newOwners: [2] } }).ok, true);
  t.equal(applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 4, newOwners: [2, 3, 1] } }).ok, true);
  t.same(state.topics.get('a')?.owners, [1, 2, 3, 1], 'partition p gets newOwners[p - (target - newOwners.length)]');
});

t.test('topic.update growth: missing owners refused (earlier groups stay), too few owners or a bad id throw', async (t) => {
  const state = withMembers(1);
  applyCommand(state, { type: 'topic.create', topic: topic('a', '0000000000000001', [1]) });
  t.same(answered(applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { retentionMs: 5, partitions: 3 } })), {
    ok: false,
    status: 503,
    error: 'partitions: owners of the new partitions of topic a were not placed; retry',
  });
  t.equal(state.topics.get('a')?.retentionMs, 5, 'retention applied before the refusal, as for any later group failing');
  t.equal(state.topics.get('a')?.partitions, 1);
  t.throws(() => applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 3, newOwners: [1] } }),
    /topic\.update a: 1 new owners for 2 new partitions/);
  t.throws(() => applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 3, newOwners: [1, -2] } }),
    /owner -2 is not a member id/);
  t.same(state.topics.get('a')?.owners, [1]);
  t.same(answered(applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 3, newOwners: [1, 7] } })), {
    ok: false,
    status: 503,
    error: 'partition owner 7 is not a cluster member; retry',
  }, 'an owner forgotten since the placement');
  t.same(state.topics.get('a')?.owners, [1]);
  t.equal(state.topics.get('a')?.partitions, 1);
  t.same(applyCommand(state, { type: 'topic.update', name: 'a', id: '0000000000000001', changes: { partitions: 1, newOwners: [] } }).ok, false,
    'not growing is still the 400 of before');
});
