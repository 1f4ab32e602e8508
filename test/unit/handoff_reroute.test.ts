// Goal: once a reroute's new entries are synced (issue 41 point 5), the hand-off stops owing the old owner what
// moved: groups holding nothing still owed to it are dropped and the ingress log may then drop their segments
// (onDurable), a group holding a pinned record stays, and the reroute does not look at the same groups twice.
// Method: a Handoff with no data channel (every send fails, as to an unreachable owner), groups of known seqs.
import t from 'tap';
import { Handoff } from '../../src/front/ingress/handoff.js';
import { PayloadKind } from '../../src/protocol/ingress_frame.js';
import { encodeFrame } from '../../src/util/frame.js';
import { encodeIngressEntry } from '../helpers/ingress_entries.js';

const frameOf = (seq: number) => encodeFrame(encodeIngressEntry({
  seq, topicId: 'abc', timestampSec: 1, records: [{ partition: 0, key: null, payload: new Uint8Array([1]), payloadKind: PayloadKind.Binary }],
}));

/** Lets the failed send's continuation run, as between two turns of the event loop. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

t.test('rerouted groups are no longer owed; a group with a kept seq stays', async (t) => {
  const handoff = new Handoff(null, () => 0, 1 << 20, { segmentsFrom: () => [] });
  t.teardown(() => handoff.close());
  const durable: number[] = [];
  handoff.onDurable = (seq) => durable.push(seq);
  for (const seq of [1, 2, 3]) {
    handoff.note(7, seq, 1);
    handoff.groupSynced(frameOf(seq), seq);
  }
  handoff.localDurable(3);
  t.same(durable, [], 'owner 7 owes all three: nothing may go');
  t.same(handoff.reroutable(), [7]);
  t.same(handoff.owedPastMark(7)?.groups.map((g) => g.firstSeq), [1, 2, 3]);
  handoff.rerouted(7, 2, [2], 2);
  await settle();
  t.same(durable, [1], 'seq 1 moved elsewhere: the log may drop up to it; seq 2 is still owed');
  t.same(handoff.owedPastMark(7)?.groups.map((g) => g.firstSeq), [3], 'the reroute looks only past its mark');
  t.equal(handoff.backlogRecords(), 2, 'the kept group and the one past the mark');
  handoff.rerouted(7, 3, [], 1);
  await settle();
  t.same(handoff.reroutable(), [], 'nothing left to look at');
  t.equal(handoff.backlogRecords(), 1, 'only the kept group');
  t.same(durable, [1], 'the kept seq 2 still holds the log');
});
