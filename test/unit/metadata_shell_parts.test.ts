// Goal: the metadata shell's two pure helpers. ApplyWaiters: a proposal learns its fate from the (index, term) the
// replica applied (Raft §5.3 log matching: same index and term, same entry), with the uncertain outcome whenever this
// node cannot tell; every waiter ends exactly once. Liveness: the leader's own stamps, a follower's aging copy of the
// leader's view, dead after the configured time.
// Method: drive each with explicit indexes, terms and clock values.
import t from 'tap';
import { ApplyWaiters, type ApplyOutcome } from '../../src/raft/shell/apply_waiters.js';
import { Liveness } from '../../src/raft/shell/liveness.js';

function recorder(): { outcomes: ApplyOutcome[]; settle: (outcome: ApplyOutcome) => void } {
  const outcomes: ApplyOutcome[] = [];
  return { outcomes, settle: (outcome) => outcomes.push(outcome) };
}

t.test('a waiter settles by the term applied at its index', async (t) => {
  const waiters = new ApplyWaiters();
  const same = recorder();
  const other = recorder();
  waiters.wait(5, 2, 4, 1_000, same.settle);
  waiters.wait(5, 1, 4, 1_000, other.settle);
  waiters.applied(5, 2);
  t.same(same.outcomes, ['applied']);
  t.same(other.outcomes, ['superseded'], 'another leader filled the index: not this entry');
  waiters.applied(5, 2);
  t.same(same.outcomes, ['applied'], 'settled once');
});

t.test('an answer arriving after its entry was applied', async (t) => {
  const waiters = new ApplyWaiters();
  waiters.applied(1, 1);
  waiters.applied(2, 3);
  const late = recorder();
  waiters.wait(2, 3, 2, 1_000, late.settle);
  t.same(late.outcomes, ['applied'], 'the remembered term matches');
  const wrong = recorder();
  waiters.wait(2, 2, 2, 1_000, wrong.settle);
  t.same(wrong.outcomes, ['superseded']);
  for (let index = 3; index <= 5000; index++) waiters.applied(index, 3);
  const forgotten = recorder();
  waiters.wait(2, 3, 5000, 1_000, forgotten.settle);
  t.same(forgotten.outcomes, ['timeout'], 'too old to remember: uncertain, never a false "nothing changed"');
});

t.test('deadlines, a covering snapshot and close end waiters with the uncertain outcomes', async (t) => {
  const waiters = new ApplyWaiters();
  const early = recorder();
  const late = recorder();
  const covered = recorder();
  const beyond = recorder();
  waiters.wait(10, 1, 0, 100, early.settle);
  waiters.wait(11, 1, 0, 500, late.settle);
  waiters.wait(3, 1, 0, 10_000, covered.settle);
  waiters.wait(20, 1, 0, 10_000, beyond.settle);
  waiters.expire(100);
  t.same(early.outcomes, ['timeout']);
  t.same(late.outcomes, [], 'not yet due');
  waiters.snapshotInstalled(12);
  t.same(covered.outcomes, ['timeout'], 'a snapshot cannot say which entry it holds');
  t.same(late.outcomes, ['timeout']);
  waiters.closeAll();
  t.same(beyond.outcomes, ['closed']);
  t.same(early.outcomes, ['timeout'], 'each waiter ends exactly once');
});

t.test('liveness: the leader stamps, a follower ages the leader view', async (t) => {
  const leader = new Liveness(1, 5_000, 500);
  leader.heardFrom(2, 1_000);
  t.equal(leader.alive(1, true, 99_999), true, 'a node is always alive to itself');
  t.equal(leader.alive(2, true, 5_999), true);
  t.equal(leader.alive(2, true, 6_000), false, 'dead after 5 s of silence');
  t.equal(leader.alive(3, true, 1_000), true, 'never heard: counted from the leader\'s start');
  t.equal(leader.alive(3, true, 5_500), false, 'never heard: dead 5 s after the leader started');
  t.equal(leader.heardAgoMs(2, true, 3_500), 2_500);
  t.equal(leader.heardAgoMs(3, true, 3_500), null, 'never heard: no heartbeat age');
  t.same(leader.leaderViewToSend([1, 2, 3], 3_000), [[1, 0], [2, 2_000], [3, 2_500]], 'every member in the view');

  const follower = new Liveness(3, 5_000, 0);
  t.equal(follower.heardAgoMs(2, false, 0), null, 'no view yet');
  follower.receivedLeaderView([[1, 0], [2, 2_000]], 10_000);
  t.equal(follower.heardAgoMs(2, false, 11_000), 3_000, 'aged by the time since the view arrived');
  t.equal(follower.alive(2, false, 12_999), true);
  t.equal(follower.alive(2, false, 13_000), false);
  t.equal(follower.alive(1, false, 14_999), true);
  t.equal(follower.alive(1, false, 15_000), false, 'a silent leader ends up dead too');
});
