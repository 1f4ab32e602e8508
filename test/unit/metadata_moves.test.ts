// Goal: partition moves and decommission in the metadata state machine (src/metadata/moves.ts, issue 41): a move sets
// the target owner first and the current owner only at the flip, which needs a frozen source; abort before the flip
// leaves the partition with its source; a decommission survives the member's re-announcement and its cancel aborts
// the moves it started; a lost member's partition is reassigned empty from a start offset that never goes back;
// forget refuses a member that takes part in a move; every part round-trips through the snapshot.
// Method: apply commands to fresh states and check answers, the state left behind and snapshot bytes.
import t from 'tap';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';
import { decodeMetadataSnapshot, encodeMetadataSnapshot } from '../../src/metadata/snapshot.js';
import { moveKey, type MetadataCommand, type MetadataState, type PartitionMoveRecord } from '../../src/protocol/metadata_types.js';
import { movesOff } from '../../src/metadata/moves.js';
import { decommissionPlan, rebalancePlan } from '../../src/metadata/move_plan.js';

const topicId = '00000000000000a1';

function apply(state: MetadataState, command: MetadataCommand) {
  return applyCommand(state, structuredClone(command));
}

function cluster(): MetadataState {
  const state = emptyMetadataState();
  for (const id of [1, 2, 3]) {
    apply(state, { type: 'member.add', member: { id, apiAddress: `n${id}:7942`, internalAddress: `n${id}:7943`, addedAtMs: 1_700_000_000_000 } });
  }
  const created = apply(state, { type: 'topic.create', topic: { name: 'orders', id: topicId, partitions: 3, retentionMs: 86_400_000,
    visibilityTimeoutMs: 30_000, maxInFlightPerPartition: 1000, maxAckedAheadPerPartition: 10_000, createdAtSec: 1_700_000_000, owners: [1, 2, 3] } });
  if (!created.ok) throw new Error('setup');
  return state;
}

function move(partition: number, source: number, destination: number): PartitionMoveRecord {
  return { topicId, topic: 'orders', partition, source, destination, startedAtMs: 1_700_000_001_000, reason: 'operator', phase: 'copying' };
}

const orders = (state: MetadataState) => state.topics.get('orders')!;

t.test('a move sets the target, flips the owner only when frozen, and ends at finish', async (t) => {
  const state = cluster();
  t.same(apply(state, { type: 'move.start', moves: [move(0, 1, 2)] }), { ok: true });
  t.same(orders(state).owners, [1, 2, 3], 'the current owner serves until the flip');
  t.same(orders(state).targetOwners, [2, 2, 3]);
  t.equal(movesOff(state, 1), 1);
  const early = apply(state, { type: 'move.flip', topicId, partition: 0, destination: 2 });
  t.equal(early.ok ? '' : early.refusal.id, 'moveRefused', 'a copying move does not flip');
  t.same(apply(state, { type: 'move.freeze', topicId, partition: 0, destination: 2, frozen: true }), { ok: true });
  t.equal(state.moves.get(moveKey(topicId, 0))?.phase, 'frozen');
  t.same(apply(state, { type: 'move.flip', topicId, partition: 0, destination: 2 }), { ok: true });
  t.same(orders(state).owners, [2, 2, 3]);
  t.equal(movesOff(state, 1), 0, 'a flipped move no longer counts as moving off');
  const abort = apply(state, { type: 'move.abort', topicId, partition: 0 });
  t.equal(abort.ok ? '' : abort.refusal.id, 'moveFlipped', 'a flipped move cannot be aborted');
  const forget = apply(state, { type: 'member.forget', id: 1 });
  t.equal(forget.ok ? '' : forget.refusal.id, 'memberInMove', 'the source is still in the move until it finishes');
  t.same(apply(state, { type: 'move.finish', topicId, partition: 0, destination: 2 }), { ok: true });
  t.equal(state.moves.size, 0);
  t.same(apply(state, { type: 'member.forget', id: 1 }), { ok: true }, 'then the emptied member can be forgotten');
});

t.test('move.start refuses bad plans whole', async (t) => {
  const state = cluster();
  const cases: [PartitionMoveRecord[], string][] = [
    [[move(0, 2, 3)], 'moveRefused'],
    [[move(5, 1, 2)], 'moveRefused'],
    [[move(0, 1, 9)], 'moveRefused'],
    [[move(0, 1, 1)], 'moveRefused'],
    [[move(0, 1, 2), move(0, 1, 3)], 'moveExists'],
    [[{ ...move(0, 1, 2), topicId: '00000000000000ff' }], 'topicNotFound'],
  ];
  for (const [moves, id] of cases) {
    const result = apply(state, { type: 'move.start', moves });
    t.equal(result.ok ? '' : result.refusal.id, id, JSON.stringify(moves.map((m) => [m.partition, m.source, m.destination])));
  }
  t.equal(state.moves.size, 0, 'nothing started');
  t.same(orders(state).targetOwners, [1, 2, 3]);
  apply(state, { type: 'move.start', moves: [move(0, 1, 2)] });
  const again = apply(state, { type: 'move.start', moves: [move(0, 1, 3)] });
  t.equal(again.ok ? '' : again.refusal.id, 'moveExists');
});

t.test('abort before the flip leaves the partition with its source', async (t) => {
  const state = cluster();
  apply(state, { type: 'move.start', moves: [move(1, 2, 3)] });
  apply(state, { type: 'move.freeze', topicId, partition: 1, destination: 3, frozen: true });
  t.same(apply(state, { type: 'move.abort', topicId, partition: 1 }), { ok: true });
  t.same(orders(state).owners, [1, 2, 3]);
  t.same(orders(state).targetOwners, [1, 2, 3]);
  const none = apply(state, { type: 'move.abort', topicId, partition: 1 });
  t.equal(none.ok ? '' : none.refusal.id, 'moveNotFound');
});

t.test('a decommission survives member.add and its cancel aborts its unflipped moves', async (t) => {
  const state = cluster();
  t.same(apply(state, { type: 'member.decommission', id: 1, startedAtMs: 5, acceptDataLoss: false }).ok, true);
  apply(state, { type: 'member.add', member: { id: 1, apiAddress: 'n1:8000', internalAddress: 'n1:8001', addedAtMs: 9 } });
  t.same(state.members.get(1)?.decommission, { startedAtMs: 5, acceptDataLoss: false });
  const twice = apply(state, { type: 'member.decommission', id: 1, startedAtMs: 6, acceptDataLoss: false });
  t.equal(twice.ok ? '' : twice.refusal.id, 'decommissionRunning');
  const toDecommissioning = apply(state, { type: 'move.start', moves: [move(1, 2, 1)] });
  t.equal(toDecommissioning.ok ? '' : toDecommissioning.refusal.id, 'moveRefused', 'a decommissioning member takes no partition');
  apply(state, { type: 'move.start', moves: [{ ...move(0, 1, 2), reason: 'decommission' }] });
  t.same(apply(state, { type: 'member.decommissionCancel', id: 1 }).ok, true);
  t.equal(state.members.get(1)?.decommission, undefined);
  t.equal(state.moves.size, 0);
  t.same(orders(state).targetOwners, [1, 2, 3]);
  const none = apply(state, { type: 'member.decommissionCancel', id: 1 });
  t.equal(none.ok ? '' : none.refusal.id, 'decommissionNotRunning');
});

t.test('a lost member\'s partition is reassigned from a start offset that never goes back', async (t) => {
  const state = cluster();
  apply(state, { type: 'move.start', moves: [move(2, 3, 1)] });
  t.same(apply(state, { type: 'partition.reassign', topicId, partition: 2, from: 3, to: 2, startOffset: 500 }), { ok: true });
  t.same(orders(state).owners, [1, 2, 2]);
  t.same(orders(state).startOffsets, [0, 0, 500]);
  t.equal(state.moves.size, 0, 'a move of the lost partition ends');
  apply(state, { type: 'partition.reassign', topicId, partition: 2, from: 2, to: 1, startOffset: 100 });
  t.same(orders(state).startOffsets, [0, 0, 500], 'a lower start offset keeps the higher one');
  const wrong = apply(state, { type: 'partition.reassign', topicId, partition: 0, from: 3, to: 2, startOffset: 0 });
  t.equal(wrong.ok ? '' : wrong.refusal.id, 'moveRefused');
});

t.test('moves, decommissions and start offsets round-trip through the snapshot; deletes drop moves', async (t) => {
  const state = cluster();
  apply(state, { type: 'member.decommission', id: 3, startedAtMs: 7, acceptDataLoss: true });
  apply(state, { type: 'move.start', moves: [move(0, 1, 2)] });
  apply(state, { type: 'partition.reassign', topicId, partition: 2, from: 3, to: 1, startOffset: 42 });
  const decoded = decodeMetadataSnapshot(encodeMetadataSnapshot(state));
  t.same([...decoded.moves.entries()], [...state.moves.entries()]);
  t.same(decoded.members.get(3)?.decommission, { startedAtMs: 7, acceptDataLoss: true });
  t.same(orders(decoded).startOffsets, [0, 0, 42]);
  t.same(orders(decoded).targetOwners, [2, 2, 1]);
  t.same(Buffer.from(encodeMetadataSnapshot(decoded)), Buffer.from(encodeMetadataSnapshot(state)), 'equal bytes again');
  apply(state, { type: 'topic.delete', name: 'orders', id: topicId });
  t.equal(state.moves.size, 0);
});

t.test('plans: a replica child keeps off its parent\'s nodes, rebalance evens the load', async (t) => {
  const state = emptyMetadataState();
  for (const id of [1, 2, 3, 4]) {
    apply(state, { type: 'member.add', member: { id, apiAddress: `n${id}:7942`, internalAddress: `n${id}:7943`, addedAtMs: 1 } });
  }
  const topic = (name: string, id: string, owners: number[]) => ({ name, id, partitions: owners.length, retentionMs: 86_400_000,
    visibilityTimeoutMs: 30_000, maxInFlightPerPartition: 1000, maxAckedAheadPerPartition: 10_000, createdAtSec: 1, owners });
  t.ok(apply(state, { type: 'topic.create', topic: topic('parent', '00000000000000b1', [1]) }).ok);
  t.ok(apply(state, { type: 'topic.create', topic: topic('child', '00000000000000b2', [2, 4, 4]),
    attach: { parent: 'parent', parentId: '00000000000000b1', epoch: '00000000000000e1', attachOffsets: [0] } }).ok);
  t.ok(apply(state, { type: 'topic.create', topic: topic('busy', '00000000000000b3', [4, 4, 3, 3]) }).ok);
  // Member 1 is the target of the fewest partitions, but it holds the parent: the child's partition goes to 3.
  const plan = decommissionPlan(state, 2, [1, 2, 3, 4], 5);
  t.same(plan.moves.map((m) => [m.topic, m.partition, m.source, m.destination]), [['child', 0, 2, 3]]);
  t.same(plan.unplaced, []);
  t.same(decommissionPlan(state, 2, [2], 5).unplaced, [{ topic: 'child', partition: 0 }], 'no receiver alive');
  const rebalance = rebalancePlan(state, [1, 2, 3, 4], 5);
  const counts = new Map<number, number>([[1, 0], [2, 0], [3, 0], [4, 0]]);
  for (const topicRecord of state.topics.values()) for (const owner of topicRecord.owners) counts.set(owner, counts.get(owner)! + 1);
  for (const move of rebalance.moves) {
    counts.set(move.source, counts.get(move.source)! - 1);
    counts.set(move.destination, counts.get(move.destination)! + 1);
  }
  t.ok(Math.max(...counts.values()) - Math.min(...counts.values()) <= 1, `rebalanced counts ${JSON.stringify([...counts])}`);
  t.ok(rebalance.moves.length > 0 && rebalance.moves.every((m) => m.reason === 'rebalance'));
});
