// Goal: the pure Raft core keeps etcd's contract for a one-voter group: proposals come out of ready() to be
// persisted (mustSync), are committed only after advance() reports them persisted, exactly once and in order;
// proposals made during a persist batch into the next ready; a restart continues the log; bad config is refused.
// Method: drive RaftNode directly with an in-memory "shell" (no I/O), and check quorum.ts on its own.
import t from 'tap';
import { RaftNode, validateRaftConfig, type HardState, type LogEntry, type RaftConfig, type Ready, type StoredRaftState } from '../../src/raft/core/raft.js';
import { committedIndex } from '../../src/raft/core/quorum.js';

const config: RaftConfig = { id: 1, voters: [1], heartbeatTicks: 2 };
const freshState: StoredRaftState = { hardState: { term: 0, vote: 0, commit: 0 }, lastIndex: 0, lastTerm: 0, appliedIndex: 0 };

/** A shell that persists into arrays: the stored log, the stored hard state, and what it applied. */
class MemoryShell {
  stored: LogEntry<string>[] = [];
  hardState: HardState = { term: 0, vote: 0, commit: 0 };
  applied: LogEntry<string>[] = [];
  readies = 0;

  /** One ready: apply, persist, advance. Returns the ready handled, or null when there was none. */
  step(node: RaftNode<string>): Ready<string> | null {
    const ready = node.ready();
    if (ready === null) return null;
    this.readies += 1;
    this.applied.push(...ready.committed);
    this.stored.push(...ready.entries);
    if (ready.hardState !== undefined) this.hardState = ready.hardState;
    node.advance(ready);
    return ready;
  }

  drain(node: RaftNode<string>): void {
    while (this.step(node) !== null);
  }
}

t.test('a fresh node takes term 1 with its own vote and stores that before anything else', async (t) => {
  const node = new RaftNode<string>(config, freshState);
  const ready = node.ready();
  t.ok(ready);
  t.same(ready?.hardState, { term: 1, vote: 1, commit: 0 });
  t.equal(ready?.mustSync, true);
  t.same(ready?.entries, []);
  t.same(ready?.committed, []);
  node.advance(ready!);
  t.equal(node.ready(), null, 'nothing more to do');
});

t.test('a proposal is persisted with mustSync, then committed exactly once after advance', async (t) => {
  const node = new RaftNode<string>(config, freshState);
  const shell = new MemoryShell();
  shell.drain(node);
  t.equal(node.propose('a'), 1);
  const persistReady = node.ready()!;
  t.same(persistReady.entries, [{ index: 1, term: 1, data: 'a' }]);
  t.equal(persistReady.mustSync, true);
  t.same(persistReady.committed, [], 'not committed before it is persisted');
  t.equal(node.raftCommitIndex, 0);
  node.advance(persistReady);
  t.equal(node.raftCommitIndex, 1, 'committed once persisted by the only voter');
  const applyReady = node.ready()!;
  t.same(applyReady.committed, [{ index: 1, term: 1, data: 'a' }]);
  t.same(applyReady.entries, []);
  t.same(applyReady.hardState, { term: 1, vote: 1, commit: 1 });
  t.equal(applyReady.mustSync, false, 'a commit-only change need not be synced');
  node.advance(applyReady);
  t.equal(node.ready(), null, 'not handed out a second time');
  t.equal(node.appliedIndex, 1);
});

t.test('proposals made while a persist is in flight batch into the next ready, in order', async (t) => {
  const node = new RaftNode<string>(config, freshState);
  const shell = new MemoryShell();
  shell.drain(node);
  for (const data of ['a', 'b', 'c', 'd', 'e']) node.propose(data);
  const first = node.ready()!;
  t.same(first.entries.map((e) => e.index), [1, 2, 3, 4, 5], 'five proposals, one ready');
  // The shell awaits its sync here; more proposals arrive meanwhile.
  node.propose('f');
  node.propose('g');
  node.advance(first);
  const second = node.ready()!;
  t.same(second.committed.map((e) => e.data), ['a', 'b', 'c', 'd', 'e'], 'the first batch commits');
  t.same(second.entries.map((e) => e.data), ['f', 'g'], 'the late proposals form the next batch');
  t.equal(second.mustSync, true);
  node.advance(second);
  const third = node.ready()!;
  t.same(third.committed.map((e) => e.index), [6, 7]);
  node.advance(third);
  t.equal(node.ready(), null);
});

t.test('interleaved proposals and readies apply every entry once, in index order', async (t) => {
  const node = new RaftNode<string>(config, freshState);
  const shell = new MemoryShell();
  let proposed = 0;
  for (let round = 0; round < 50; round++) {
    // A fixed, uneven pattern: 0 to 3 proposals between readies.
    for (let i = 0; i < round % 4; i++) node.propose(`p${++proposed}`);
    shell.step(node);
  }
  shell.drain(node);
  t.equal(proposed, 73);
  t.same(shell.applied.map((e) => e.index), Array.from({ length: proposed }, (_, i) => i + 1));
  t.same(shell.applied.map((e) => e.data), Array.from({ length: proposed }, (_, i) => `p${i + 1}`));
  t.same(shell.stored, shell.applied, 'everything applied was stored, in the same order');
  t.same(shell.hardState, { term: 1, vote: 1, commit: proposed });
});

t.test('restart from stored state continues the log without gaps', async (t) => {
  const first = new RaftNode<string>(config, freshState);
  const shell = new MemoryShell();
  for (const data of ['a', 'b', 'c']) first.propose(data);
  shell.drain(first);
  const last = shell.stored[shell.stored.length - 1]!;
  const restarted = new RaftNode<string>(config, {
    hardState: shell.hardState,
    lastIndex: last.index,
    lastTerm: last.term,
    appliedIndex: last.index,
  });
  t.equal(restarted.raftCommitIndex, 3);
  t.equal(restarted.ready(), null, 'a voter holding its own vote keeps its term: nothing to store');
  t.equal(restarted.propose('d'), 4);
  const ready = restarted.ready()!;
  t.same(ready.entries, [{ index: 4, term: 1, data: 'd' }]);
});

t.test('a restart whose stored commit lags recomputes it from the persisted log', async (t) => {
  // The shell skips writing a commit-only hard state, so the stored commit may trail the stored entries.
  const node = new RaftNode<string>(config, { hardState: { term: 1, vote: 1, commit: 1 }, lastIndex: 3, lastTerm: 1, appliedIndex: 3 });
  t.equal(node.raftCommitIndex, 3);
  const ready = node.ready()!;
  t.same(ready.hardState, { term: 1, vote: 1, commit: 3 });
  t.equal(ready.mustSync, false);
  t.same(ready.committed, [], 'the shell already applied the stored log');
});

t.test('a stored term without this voter\'s vote starts a new term', async (t) => {
  const node = new RaftNode<string>(config, { hardState: { term: 4, vote: 0, commit: 2 }, lastIndex: 2, lastTerm: 3, appliedIndex: 2 });
  const ready = node.ready()!;
  t.same(ready.hardState, { term: 5, vote: 1, commit: 2 });
  t.equal(ready.mustSync, true);
  node.advance(ready);
  node.propose('x');
  t.same(node.ready()!.entries, [{ index: 3, term: 5, data: 'x' }]);
});

t.test('impossible stored states are refused', async (t) => {
  const hardState = { term: 1, vote: 1, commit: 2 };
  t.throws(() => new RaftNode(config, { hardState, lastIndex: 2, lastTerm: 1, appliedIndex: 1 }), /applied/, 'stored log not fully applied');
  t.throws(() => new RaftNode(config, { hardState, lastIndex: 1, lastTerm: 1, appliedIndex: 1 }), /commit 2 beyond/);
  t.throws(() => new RaftNode(config, { hardState, lastIndex: 2, lastTerm: 2, appliedIndex: 2 }), /last term 2 above/);
  t.throws(() => new RaftNode(config, { hardState, lastIndex: 2, lastTerm: 0, appliedIndex: 2 }), /disagree/);
  t.throws(() => new RaftNode(config, { hardState: { term: 1, vote: 7, commit: 0 }, lastIndex: 0, lastTerm: 0, appliedIndex: 0 }), /vote 7/);
  t.throws(() => new RaftNode(config, { hardState: { term: -1, vote: 0, commit: 0 }, lastIndex: 0, lastTerm: 0, appliedIndex: 0 }), /non-count/);
});

t.test('the ready/advance contract is enforced', async (t) => {
  const node = new RaftNode<string>(config, freshState);
  const ready = node.ready()!;
  t.throws(() => node.ready(), /before advance/);
  t.throws(() => node.advance({ ...ready }), /not the outstanding one/);
  node.advance(ready);
  t.throws(() => node.advance(ready), /not the outstanding one/, 'a ready is advanced once');
});

t.test('ticks send nothing for a lone voter', async (t) => {
  const node = new RaftNode<string>(config, freshState);
  new MemoryShell().drain(node);
  for (let i = 0; i < 10; i++) node.tick();
  t.equal(node.ready(), null);
});

t.test('validateRaftConfig rejects nonsense, and the constructor refuses it', async (t) => {
  t.same(validateRaftConfig(config), []);
  const bad: [RaftConfig, RegExp][] = [
    [{ id: 0, voters: [0], heartbeatTicks: 1 }, /id must be a positive integer/],
    [{ id: 1.5, voters: [1.5], heartbeatTicks: 1 }, /id must be a positive integer/],
    [{ id: 1, voters: [], heartbeatTicks: 1 }, /must include this node's id/],
    [{ id: 1, voters: [2], heartbeatTicks: 1 }, /must include this node's id 1/],
    [{ id: 1, voters: [1, 1], heartbeatTicks: 1 }, /must not repeat/],
    [{ id: 1, voters: [1, 2, 3], heartbeatTicks: 1 }, /exactly one voter/],
    [{ id: 1, voters: [1, -2], heartbeatTicks: 1 }, /voters must be positive integers/],
    [{ id: 1, voters: [1], heartbeatTicks: 0 }, /heartbeatTicks must be a positive integer/],
    [{ id: 1, voters: [1], heartbeatTicks: Number.NaN }, /heartbeatTicks must be a positive integer/],
  ];
  for (const [candidate, problem] of bad) {
    t.match(validateRaftConfig(candidate).join('; '), problem, JSON.stringify(candidate));
    t.throws(() => new RaftNode(candidate, freshState), /invalid raft config/);
  }
});

t.test('committedIndex is the index a majority of voters has persisted', async (t) => {
  t.equal(committedIndex(new Map([[1, 7]]), [1]), 7, 'one voter: its own match');
  t.equal(committedIndex(new Map([[1, 7], [2, 5], [3, 2]]), [1, 2, 3]), 5);
  t.equal(committedIndex(new Map([[1, 7]]), [1, 2, 3]), 0, 'voters not heard from count as 0');
  t.equal(committedIndex(new Map([[1, 9], [2, 8], [3, 4], [4, 1]]), [1, 2, 3, 4]), 4, 'four voters need three');
  t.equal(committedIndex(new Map([[1, 9], [9, 9]]), [1, 2]), 0, 'matches of non-voters are ignored');
  t.throws(() => committedIndex(new Map(), []), /no voters/);
});
