// Goal: the reasons that make a decommission impossible (src/front/decommission_reasons.ts, spec §7 409): a cluster
// must keep two live voters that stay (a dead voter keeps no quorum), a majority of voters alive and a receiver; a
// dead member's partitions block with owner_dead unless the loss is accepted.
// Method: pure calls on a metadata state built through applyCommand and hand-made member views.
import t from 'tap';
import { decommissionReasons, neverCompleting } from '../../src/front/decommission_reasons.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';
import type { MemberView } from '../../src/protocol/thread_messages.js';

function view(id: number, alive: boolean): MemberView {
  return { id, apiAddress: '', internalAddress: '', alive, voter: true, learner: false, leader: false, partitionsOwned: 0, heartbeatAgeSeconds: 0 };
}

function state(ids: number[]) {
  const s = emptyMetadataState();
  for (const id of ids) applyCommand(s, { type: 'member.add', member: { id, apiAddress: '', internalAddress: '', addedAtMs: 1 } });
  applyCommand(s, { type: 'topic.create', topic: { name: 'a', id: '00000000000000a1', partitions: 3, retentionMs: 1, visibilityTimeoutMs: 1,
    maxInFlightPerPartition: 1, maxAckedAheadPerPartition: 1, createdAtSec: 1, owners: [ids[0]!, ids[0]!, ids[0]!] } });
  return s;
}

const codes = (reasons: { code: string }[]) => reasons.map((r) => r.code);
const input = { report: undefined, acceptDataLoss: false, movesMaxPerNode: 2 };

t.test('two live voters must stay', async (t) => {
  const s = state([1, 2, 3]);
  t.same(codes(neverCompleting(decommissionReasons({ ...input, state: s, id: 2, views: [view(1, true), view(2, true), view(3, true)] }))), []);
  const oneDead = decommissionReasons({ ...input, state: s, id: 2, views: [view(1, true), view(2, true), view(3, false)] });
  t.ok(codes(neverCompleting(oneDead)).includes('below_min_voters'), 'a dead voter does not count as staying');
  t.same(codes(neverCompleting(decommissionReasons({ ...input, state: state([1, 2]), id: 2, views: [view(1, true), view(2, true)] }))),
    ['below_min_voters'], 'a 2-node cluster');
});

t.test('a dead owner blocks unless the loss is accepted; no receiver, no majority', async (t) => {
  const s = state([1, 2, 3, 4]);
  const views = [view(1, false), view(2, true), view(3, true), view(4, true)];
  t.ok(codes(decommissionReasons({ ...input, state: s, id: 1, views })).includes('owner_dead'));
  t.notOk(codes(decommissionReasons({ ...input, state: s, id: 1, views, acceptDataLoss: true })).includes('owner_dead'));
  const lonely = decommissionReasons({ ...input, state: state([1, 2, 3]), id: 1, views: [view(1, true), view(2, false), view(3, false)] });
  t.ok(codes(lonely).includes('no_receivers') && codes(lonely).includes('no_healthy_majority'), JSON.stringify(codes(lonely)));
});
