// Goal: who the metadata shell serves (issue 40 point 3, src/raft/shell/peer_gate.ts): propose and forget only from
// a member (a member record, or a voter or learner of the Raft configuration), a join from a member or from the
// joining node under its own id, a Raft message only under the id its connection authenticated; each refusal is a
// warn line, on a budget; the leader's line for a user change another node proposed names the proposer and the
// outcome, and other commands get none. Also the line budget itself (src/transport/log_budget.ts).
// Method: PeerGate over a plain state and configuration; LogBudget with an injected clock.
import t from 'tap';
import { PeerGate } from '../../src/raft/shell/peer_gate.js';
import { LogBudget } from '../../src/transport/log_budget.js';
import type { MetadataState } from '../../src/protocol/metadata_types.js';
import type { PeerRequest } from '../../src/protocol/peer_messages.js';

interface Line {
  level: string;
  fields: Record<string, unknown>;
  msg: string;
}

function gateOf(recordIds: number[], voters: number[], learners: number[] = []): { gate: PeerGate; lines: Line[] } {
  const lines: Line[] = [];
  // Only the member records are read.
  const state = { members: new Map(recordIds.map((id) => [id, { id }])) } as unknown as MetadataState;
  const gate = new PeerGate({
    state: () => state,
    conf: () => ({ voters, learners }),
    log: (level, fields, msg) => lines.push({ level, fields: fields as Record<string, unknown>, msg }),
  });
  return { gate, lines };
}

const propose: PeerRequest = { kind: 'propose', command: { type: 'user.delete', username: 'u' } };
const forget: PeerRequest = { kind: 'forget', id: 2 };
const joinAs = (id: number): PeerRequest => ({ kind: 'join', id, apiAddress: '127.0.0.1:1', internalAddress: '127.0.0.1:2' });

t.test('propose and forget from members only; join from a member or the joining node itself', async (t) => {
  const { gate, lines } = gateOf([1, 2], [1, 2, 3], [4]);
  for (const from of [1, 3, 4]) {
    t.doesNotThrow(() => gate.checkRequest(from, propose), `member ${from} may propose`);
    t.doesNotThrow(() => gate.checkRequest(from, forget), `member ${from} may forget`);
  }
  t.throws(() => gate.checkRequest(77, propose), /node 77 is not a member of this cluster/);
  t.throws(() => gate.checkRequest(77, forget), /node 77 is not a member of this cluster/);
  t.doesNotThrow(() => gate.checkRequest(77, joinAs(77)), 'a new node joins under its own id');
  t.doesNotThrow(() => gate.checkRequest(2, joinAs(77)), 'a follower forwards a join');
  t.throws(() => gate.checkRequest(77, joinAs(78)), /not a member/, 'a non-member may not join for another id');
  t.doesNotThrow(() => gate.checkRequest(77, { kind: 'commitIndex' }), 'commitIndex stays open');
  t.same(lines.map((l) => [l.level, l.fields['from'], l.fields['request'], l.msg]), [
    ['warn', 77, 'propose', 'metadata: request from a node that is not a member refused'],
    ['warn', 77, 'forget', 'metadata: request from a node that is not a member refused'],
    ['warn', 77, 'join', 'metadata: request from a node that is not a member refused'],
  ]);
  t.same(gate.memberIds(), [1, 2, 3, 4]);
});

t.test('a raft message under another sender id is dropped with a line', async (t) => {
  const { gate, lines } = gateOf([1, 2], [1, 2]);
  t.ok(gate.raftSenderMatches(2, 2));
  t.notOk(gate.raftSenderMatches(77, 1), 'node 77 claiming to be node 1');
  t.match(lines, [{ level: 'warn', fields: { from: 77, claimed: 1 } }]);
});

t.test('refusals share a budget of lines', async (t) => {
  const { gate, lines } = gateOf([], [1]);
  for (let i = 0; i < 100; i++) t.throws(() => gate.checkRequest(77, propose));
  t.equal(lines.length, 20, '20 lines for 100 refusals within a minute');
});

t.test('the leader line for a peer\'s user change names the proposer and the outcome; other commands get none', async (t) => {
  const { gate, lines } = gateOf([1, 2], [1, 2]);
  gate.peerProposalDecided(2, { type: 'user.grants', username: 'ann', grants: [], updatedAtMs: 0 }, { ok: true, index: 9, term: 2 });
  gate.peerProposalDecided(2, { type: 'user.delete', username: 'bob' }, { ok: false, refusal: { id: 'noLeader', args: [] } });
  gate.peerProposalDecided(2, { type: 'member.forget', id: 3 }, { ok: true, index: 10, term: 2 });
  t.same(lines, [
    { level: 'info', fields: { event: 'user.grants', target: 'ann', proposer: 2, outcome: 'committed', index: 9 }, msg: 'metadata: user change proposed by another node' },
    { level: 'info', fields: { event: 'user.delete', target: 'bob', proposer: 2, outcome: 'refused', refusal: 'noLeader' }, msg: 'metadata: user change proposed by another node' },
  ]);
});

t.test('a log budget writes its lines per window, then says how many it left out', async (t) => {
  let nowMs = 0;
  const written: [string, object, string | undefined][] = [];
  const budget = new LogBudget({ info: (o, m) => written.push(['info', o, m]), warn: (o, m) => written.push(['warn', o, m]) }, 2, 1000, () => nowMs);
  for (let i = 0; i < 5; i++) budget.warn({ i }, 'x');
  t.same(written, [['warn', { i: 0 }, 'x'], ['warn', { i: 1 }, 'x']]);
  nowMs = 1000;
  budget.info({ i: 5 }, 'y');
  t.same(written[2], ['info', { i: 5, linesLeftOut: 3 }, 'y'], 'the next window\'s first line counts the three left out');
  budget.info({ i: 6 }, 'y');
  t.same(written[3], ['info', { i: 6 }, 'y']);
});
