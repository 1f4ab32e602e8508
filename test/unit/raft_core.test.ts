// Goal: the pure Raft core keeps etcd's contract: an election makes one leader, proposals commit on a quorum and
// are applied once, in order, everywhere; a lone voter commits only what it persisted; restarts continue from
// storage; membership and transfer requests are refused when they must be; stale or malformed messages never
// throw; bad config is refused. The scripted cases live in raft_scripts/*.txt (raft_core_scripts.test.ts), the
// randomized ones in test/sim/raft_sim.test.ts. Method: drive RaftNode through the in-memory Cluster of shells.
import t from 'tap';
import { RaftNode, bootstrapEntries, validateRaftConfig, type RaftConfig, type RaftMessage } from '../../src/raft/core/raft.js';
import { committedIndex, voteResult } from '../../src/raft/core/quorum.js';
import { Cluster } from '../sim/raft/cluster.js';
import { initialStorage } from '../sim/raft/shell.js';

function leaderOf(cluster: Cluster): number[] {
  return cluster.ids().filter((id) => cluster.shell(id).node().status().role === 'leader');
}

t.test('three voters elect one leader and replicate a proposal to all', async (t) => {
  const c = new Cluster();
  c.add([1, 2, 3], [1, 2, 3]);
  c.stabilize();
  for (const id of c.ids()) t.same(c.shell(id).applied, ['1:addVoter(1)', '1:addVoter(2)', '1:addVoter(3)'], `bootstrap applied on ${id}`);
  c.shell(1).node().campaign();
  c.stabilize();
  t.same(leaderOf(c), [1]);
  t.equal(c.shell(1).node().status().term, 2);
  const proposed = c.shell(1).node().propose('x');
  t.same(proposed, { index: 5, term: 2 });
  t.equal(c.shell(2).node().propose('y'), null, 'a follower refuses proposals');
  c.stabilize();
  for (const id of c.ids()) t.same(c.shell(id).applied.slice(3), ['2:noop', '2:x'], `applied on ${id}`);
});

t.test('a lone voter commits only what it has persisted', async (t) => {
  const c = new Cluster();
  c.add([1], [1]);
  const node = c.shell(1).node();
  node.campaign();
  t.equal(node.status().role, 'leader');
  node.propose('a');
  const ready = node.ready();
  t.ok(ready);
  t.same(ready?.entries.map((e) => e.index), [2, 3], 'noop and proposal to persist');
  t.same(ready?.committed.map((e) => e.index), [1], 'only the stored bootstrap entry is applied');
  t.equal(ready?.mustSync, true);
  if (ready === null || ready === undefined) return;
  c.shell(1).persist(ready);
  c.shell(1).apply(ready);
  node.advance(ready);
  const next = node.ready();
  t.same(next?.committed.map((e) => e.index), [2, 3], 'committed once persisted');
  t.same(next?.hardState, { term: 2, vote: 1, commit: 3 });
});

t.test('a restarted node continues from storage and reapplies its committed entries', async (t) => {
  const c = new Cluster();
  c.add([1, 2, 3], [1, 2, 3]);
  c.shell(1).node().campaign();
  c.stabilize();
  c.shell(1).node().propose('a');
  c.stabilize();
  c.shell(1).compact();
  c.shell(2).crash();
  c.shell(2).start();
  t.same(c.shell(2).applied, [], 'state machine restarts empty without a snapshot');
  c.stabilize();
  t.same(c.shell(2).applied, c.shell(1).applied);
  c.shell(1).crash();
  c.shell(1).start();
  t.equal(c.shell(1).applied.length, 5, 'restored from the snapshot');
  c.stabilize();
  t.equal(c.shell(1).node().status().role, 'follower');
});

t.test('membership and transfer requests are refused when they must be', async (t) => {
  const c = new Cluster();
  c.add([1, 2, 3], [1, 2, 3]);
  c.add([4], null);
  const leader = c.shell(1).node();
  t.same(leader.proposeConfChange({ type: 'addLearner', node: 4 }), { refused: 'not the leader' });
  leader.campaign();
  c.stabilize((m) => m.type === 'app');
  t.equal(leader.status().role, 'leader');
  t.match(leader.proposeConfChange({ type: 'addLearner', node: 4 }), { refused: /not yet committed/ }, 'before the first entry of the term commits');
  c.tick(1); // the lost probes are retried after a heartbeat
  c.stabilize();
  t.match(leader.proposeConfChange({ type: 'addVoter', node: 4 }), { refused: /learner first/ });
  t.match(leader.proposeConfChange({ type: 'removeVoter', node: 9 }), { refused: /not a member/ });
  t.same(leader.proposeConfChange({ type: 'addLearner', node: 4 }), { index: 5, term: 2 });
  t.match(leader.proposeConfChange({ type: 'removeVoter', node: 3 }), { refused: /not yet committed/ });
  c.stabilize();
  t.same(c.shell(4).node().status().confState, { voters: [1, 2, 3], learners: [4] }, 'the learner caught up');
  t.equal(leader.transferLeadership(4), false, 'a learner is no transfer target');
  t.equal(leader.transferLeadership(1), false, 'nor the leader itself');
  t.equal(c.shell(2).node().transferLeadership(3), false, 'only a leader transfers');
  t.equal(leader.transferLeadership(2), true);
  t.equal(leader.propose('x'), null, 'no proposals while transferring');
  c.stabilize();
  t.same(leaderOf(c), [2]);
});

t.test('stale, foreign and malformed messages are ignored without throwing', async (t) => {
  const c = new Cluster();
  c.add([1, 2, 3], [1, 2, 3]);
  c.shell(1).node().campaign();
  c.stabilize();
  const node = c.shell(2).node();
  const junk: unknown[] = [
    null, 7, {}, { type: 'app' }, { type: 'bogus', from: 1, to: 2, term: 9 },
    { type: 'app', from: 1, to: 3, term: 9, index: 0, logTerm: 0, entries: [], commit: 0 },
    { type: 'app', from: 1, to: 2, term: 1, index: 0, logTerm: 0, entries: [], commit: 99 },
    { type: 'app', from: 1, to: 2, term: 2, index: 99, logTerm: 2, entries: [], commit: 99 },
    { type: 'app', from: 1, to: 2, term: 2, index: 0, logTerm: 0, entries: [{ index: 5, term: 1 }], commit: 0 },
    { type: 'heartbeat', from: 1, to: 2, term: 2, commit: 1000 },
    { type: 'appResp', from: 9, to: 2, term: 2, index: 3, reject: false, rejectHint: 0, logTerm: 0 },
    { type: 'voteResp', from: 9, to: 2, term: 2, reject: false },
    { type: 'snap', from: 1, to: 2, term: 2, snapshot: null },
    { type: 'timeoutNow', from: 7, to: 2, term: 1 },
  ];
  for (const m of junk) t.doesNotThrow(() => node.step(m as RaftMessage), JSON.stringify(m));
  c.shell(1).node().step({ type: 'appResp', from: 2, to: 1, term: 2, index: 4000, reject: false, rejectHint: 0, logTerm: 0 });
  c.shell(1).node().step({ type: 'appResp', from: 2, to: 1, term: 2, index: 4000, reject: true, rejectHint: 3000, logTerm: 7 });
  c.stabilize();
  t.same(leaderOf(c), [1]);
});

t.test('validateRaftConfig rejects nonsense, and the constructor refuses it', async (t) => {
  const good: RaftConfig = { id: 1, electionTicks: 10, heartbeatTicks: 1, random: () => 0 };
  t.same(validateRaftConfig(good), []);
  t.equal(validateRaftConfig({ ...good, id: 0 }).length, 1);
  t.equal(validateRaftConfig({ ...good, electionTicks: 1 }).length, 1);
  t.equal(validateRaftConfig({ ...good, maxEntriesPerAppend: 0 }).length, 1);
  t.throws(() => new RaftNode({ ...good, heartbeatTicks: 0 }, initialStorage(null)));
  t.throws(() => new RaftNode(good, { hardState: { term: 1, vote: 0, commit: 9 }, snapshot: null, entries: bootstrapEntries([1]) }), /commit/);
});

t.test('quorum helpers', async (t) => {
  const match = new Map([[1, 5], [2, 3], [3, 1]]);
  t.equal(committedIndex((v) => match.get(v) ?? 0, [1, 2, 3]), 3);
  t.equal(committedIndex((v) => match.get(v) ?? 0, [1, 2, 3, 4]), 1);
  t.equal(voteResult(new Map([[1, true], [2, true]]), [1, 2, 3]), 'won');
  t.equal(voteResult(new Map([[1, true], [2, false], [3, false]]), [1, 2, 3]), 'lost');
  t.equal(voteResult(new Map([[1, true], [4, true]]), [1, 2, 3]), 'pending', 'a learner vote does not count');
});
