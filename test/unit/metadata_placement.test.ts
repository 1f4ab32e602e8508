// Goal: placement of new partitions (src/metadata/placement.ts) spreads partitions evenly over the live members,
// the least-loaded member first and ties to the lowest id, keeps a replica child off its parent's nodes when another
// live member exists (spec 1.9), places only the added partitions of a growing topic, gives the same owners for the
// same state and live set whatever their order, and refuses when no live member exists. fillOwners fills exactly
// what applyCommand checks, so a filled command always applies. Each partition has a target owner beside its
// current owner: equal on create and growth, also for entries written before targets existed; placement balances
// on targets while partitionsOwnedBy (routing's and forget's count) reads the current owner.
// Method: fill and apply commands on fresh states, counting owned partitions per member.
import t from 'tap';
import { fillOwners, partitionsOwnedBy, placePartitions, PlacementError } from '../../src/metadata/placement.js';
import type { MetadataCommand, MetadataState, TopicCreateRecord, TopicRecord } from '../../src/protocol/metadata_types.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';

let topicIdLast = 0;
function topic(name: string, partitions: number): TopicCreateRecord {
  const id = (++topicIdLast).toString(16).padStart(16, '0');
  return {
    name, id, partitions, retentionMs: 86_400_000, visibilityTimeoutMs: 30_000,
    maxInFlightPerPartition: 1000, maxAckedAheadPerPartition: 10_000, createdAtSec: 1_700_000_000, owners: [],
  };
}

function withMembers(...ids: number[]): MetadataState {
  const state = emptyMetadataState();
  for (const id of ids) applyCommand(state, { type: 'member.add', member: { id, apiAddress: `n${id}:7942`, internalAddress: `n${id}:7943`, addedAtMs: id } });
  return state;
}

/** Fills as the leader's shell does, then applies; throws on a refusal. */
function propose(state: MetadataState, command: MetadataCommand, live: readonly number[], avoid?: readonly number[]): TopicRecord {
  const result = applyCommand(state, fillOwners(state, command, live, avoid));
  if (!result.ok) throw new Error(`${command.type}: ${JSON.stringify(result.refusal)}`);
  return result.topic!;
}

function spread(state: MetadataState, ids: readonly number[]): number[] {
  return ids.map((id) => partitionsOwnedBy(state, id));
}

t.test('1,000 topics of 3 partitions spread evenly over 3 members, each topic over all three', async (t) => {
  const state = withMembers(1, 2, 3);
  let everyTopicOnAll = true;
  for (let i = 0; i < 1000; i++) {
    const created = propose(state, { type: 'topic.create', topic: topic(`t${i}`, 3) }, [1, 2, 3]);
    if (new Set(created.owners).size !== 3) everyTopicOnAll = false;
  }
  const counts = spread(state, [1, 2, 3]);
  t.same(counts, [1000, 1000, 1000]);
  t.ok(everyTopicOnAll, 'a topic of as many partitions as members gets one per member');
});

t.test('uneven counts stay within one of each other, growth included', async (t) => {
  const state = withMembers(1, 2, 3);
  const uneven: string[] = [];
  for (let i = 0; i < 200; i++) {
    const name = `t${i}`;
    const created = propose(state, { type: 'topic.create', topic: topic(name, 1 + (i % 5)) }, [1, 2, 3]);
    if (i % 3 === 0) propose(state, { type: 'topic.update', name, id: created.id, changes: { partitions: created.partitions + 2 } }, [1, 2, 3]);
    const counts = spread(state, [1, 2, 3]);
    if (Math.max(...counts) - Math.min(...counts) > 1) uneven.push(`after ${name}: ${counts.join(',')}`);
  }
  t.same(uneven, [], 'max - min <= 1 after every step');
  t.same(spread(state, [1, 2, 3]).reduce((a, b) => a + b, 0), Array.from({ length: 200 }, (_, i) => 1 + (i % 5) + (i % 3 === 0 ? 2 : 0)).reduce((a, b) => a + b, 0), 'every partition has an owner');
});

t.test('least-loaded first, ties to the lowest id; a new member catches up first', async (t) => {
  const state = withMembers(1, 2, 3);
  t.same(placePartitions(state, [3, 1, 2], 4), [1, 2, 3, 1]);
  propose(state, { type: 'topic.create', topic: topic('a', 3) }, [1, 2, 3]);
  applyCommand(state, { type: 'member.add', member: { id: 4, apiAddress: 'n4:7942', internalAddress: 'n4:7943', addedAtMs: 4 } });
  t.same(placePartitions(state, [1, 2, 3, 4], 3), [4, 1, 2]);
  t.same(placePartitions(state, [1, 2, 3, 4], 0), []);
});

t.test('the same state and live set give the same owners, in any order and with repeats', async (t) => {
  const build = (live: number[]) => {
    const state = withMembers(5, 2, 9);
    return Array.from({ length: 50 }, (_, i) => propose(state, { type: 'topic.create', topic: topic(`t${i}`, 1 + (i % 4)) }, live).owners);
  };
  t.same(build([2, 5, 9]), build([9, 5, 2, 5]));
});

t.test('only live members that have a record take partitions', async (t) => {
  const state = withMembers(1, 2, 3);
  t.same(placePartitions(state, [1, 3], 4), [1, 3, 1, 3], 'member 2 is dead');
  t.same(placePartitions(state, [7, 2], 2), [2, 2], 'a live id without a member record is ignored');
});

t.test('no live member: PlacementError, nothing placed', async (t) => {
  const state = withMembers(1);
  t.throws(() => placePartitions(state, [], 1), PlacementError);
  t.throws(() => placePartitions(emptyMetadataState(), [1], 1), /no live cluster member to place 1 partitions on/);
  t.throws(() => fillOwners(state, { type: 'topic.create', topic: topic('a', 2) }, [4]), PlacementError);
  t.throws(() => placePartitions(state, [1], -1), /count -1/);
});

t.test('avoid keeps partitions off the given members when another live member exists', async (t) => {
  const state = withMembers(1, 2, 3, 4);
  const parent = propose(state, { type: 'topic.create', topic: topic('parent', 2) }, [1, 2, 3, 4]);
  t.same(parent.owners, [1, 2]);
  const child = propose(state, { type: 'topic.create', topic: topic('replica', 4) }, [1, 2, 3, 4], parent.owners);
  t.same(child.owners, [3, 4, 3, 4], 'honoured although 1 and 2 own fewer');
  t.same(placePartitions(state, [1, 2, 3], 2, [1, 2]), [3, 3], 'the only other live member takes all');
  t.same(placePartitions(state, [1, 2], 3, [1, 2]), [1, 2, 1], 'impossible: ignored, placed as without avoid');
  t.same(placePartitions(state, [1, 2, 3, 4], 2, [1, 2, 3, 4]), placePartitions(state, [1, 2, 3, 4], 2));
  const grown = propose(state, { type: 'topic.update', name: 'replica', id: child.id, changes: { partitions: 6 } }, [1, 2, 3, 4], parent.owners);
  t.same(grown.owners, [3, 4, 3, 4, 3, 4], 'growth honours it too');
});

t.test('growth places only the added partitions and keeps the existing owners', async (t) => {
  const state = withMembers(1, 2);
  const created = propose(state, { type: 'topic.create', topic: topic('a', 3) }, [1, 2]);
  t.same(created.owners, [1, 2, 1]);
  const command: MetadataCommand = { type: 'topic.update', name: 'a', id: created.id, changes: { retentionMs: 9, partitions: 6 } };
  const filled = fillOwners(state, command, [1, 2]);
  t.same(filled, { ...command, changes: { retentionMs: 9, partitions: 6, newOwners: [2, 1, 2] } });
  t.same(command.changes, { retentionMs: 9, partitions: 6 }, 'the input is not mutated');
  t.equal(applyCommand(state, filled).ok, true);
  t.same(state.topics.get('a')?.owners, [1, 2, 1, 2, 1, 2]);
});

t.test('fillOwners leaves other commands alone', async (t) => {
  const state = withMembers(1);
  const created = propose(state, { type: 'topic.create', topic: topic('a', 2) }, [1]);
  const unchanged: MetadataCommand[] = [
    { type: 'topic.update', name: 'a', id: created.id, changes: { retentionMs: 5 } },
    { type: 'topic.update', name: 'a', id: created.id, changes: { partitions: 2 } },
    { type: 'topic.update', name: 'a', id: 'ffffffffffffffff', changes: { partitions: 9 } },
    { type: 'topic.update', name: 'nope', id: created.id, changes: { partitions: 9 } },
    { type: 'topic.delete', name: 'a', id: created.id },
    { type: 'member.forget', id: 1 },
    { type: 'user.delete', username: 'x' },
  ];
  for (const command of unchanged) t.equal(fillOwners(state, command, [1]), command, `${command.type} ${JSON.stringify(command)}`);
});

t.test('one-node cluster: its own member.add, then every partition on it', async (t) => {
  const state = emptyMetadataState();
  t.equal(applyCommand(state, { type: 'member.add', member: { id: 1, apiAddress: '127.0.0.1:7942', internalAddress: '127.0.0.1:7943', addedAtMs: 1 } }).ok, true);
  const created = propose(state, { type: 'topic.create', topic: topic('orders', 8) }, [1]);
  t.same(created.owners, Array(8).fill(1));
  const grown = propose(state, { type: 'topic.update', name: 'orders', id: created.id, changes: { partitions: 10 } }, [1]);
  t.same(grown.owners, Array(10).fill(1));
  t.equal(partitionsOwnedBy(state, 1), 10);
});

t.test('create and growth place target and current owner alike, as copies', async (t) => {
  const state = withMembers(1, 2, 3);
  const created = propose(state, { type: 'topic.create', topic: topic('a', 3) }, [1, 2, 3]);
  t.same(created.targetOwners, created.owners);
  const grown = propose(state, { type: 'topic.update', name: 'a', id: created.id, changes: { partitions: 5 } }, [1, 2, 3]);
  t.equal(grown.targetOwners.length, 5);
  t.same(grown.targetOwners, grown.owners);
  const stored = state.topics.get('a')!;
  t.not(stored.targetOwners, stored.owners, 'two arrays: a move can change one without the other');
});

t.test('a topic.create entry written before targets existed applies with target = current', async (t) => {
  const state = withMembers(1, 2);
  // As the release before targets wrote it to the Raft log: owners placed, no targetOwners field at all.
  const entry = { type: 'topic.create', topic: { ...topic('old', 3), owners: [2, 1, 2] } } as MetadataCommand;
  t.notOk('targetOwners' in (entry as { topic: object }).topic);
  const result = applyCommand(state, entry);
  t.ok(result.ok);
  t.same(state.topics.get('old')?.targetOwners, [2, 1, 2]);
});

t.test('placement balances on target owners; partitionsOwnedBy counts current owners', async (t) => {
  const state = withMembers(1, 2);
  propose(state, { type: 'topic.create', topic: topic('a', 2) }, [1, 2]);
  const a = state.topics.get('a')!;
  t.same(a.owners, [1, 2]);
  // A move in flight (set by hand: no command moves partitions yet): both partitions meant for member 2.
  a.targetOwners = [2, 2];
  t.same(spread(state, [1, 2]), [1, 1], 'the current owners still count for routing and forget');
  t.same(placePartitions(state, [1, 2], 2), [1, 1], 'the new partitions go to member 1, the target of none');
});
