// Goal: replies to forwarded metadata requests keep the wire shape of release 3.2 ({status, error,
// retryAfterSeconds}; forget {status: 204}), so a follower and a leader of two releases understand each other during
// a rolling upgrade (spec §9), and a refusal relayed from a leader answers the client exactly as the leader decided.
// Method: convert this node's catalog refusals to the wire and back; decode replies written in the earlier release's
// shape (as its leader sends them) and broken ones.
import t from 'tap';
import { refusalError, type MetadataRefusal } from '../../src/errors.js';
import { forgetReplyFromPeer, forgetReplyToPeer, proposeReplyFromPeer, proposeReplyToPeer } from '../../src/raft/shell/peer_replies.js';

function answered(reply: { ok: boolean; refusal?: MetadataRefusal }): { status: number; error: string; retryAfter?: string } {
  const error = refusalError(reply.refusal!);
  const retryAfter = error.headers['Retry-After'];
  return retryAfter === undefined ? { status: error.status, error: error.message } : { status: error.status, error: error.message, retryAfter };
}

t.test('a leader answers a peer in the 3.2 wire shape', async (t) => {
  t.same(proposeReplyToPeer({ ok: true, index: 7, term: 2 }), { ok: true, index: 7, term: 2 });
  t.same(proposeReplyToPeer({ ok: false, refusal: { id: 'noLeader', args: [] } }),
    { ok: false, status: 503, error: 'no leader to write metadata', retryAfterSeconds: 1 });
  t.same(proposeReplyToPeer({ ok: false, refusal: { id: 'topicExists', args: ['orders'] } }),
    { ok: false, status: 409, error: 'topic orders already exists' }, 'no Retry-After field without the header');
  t.same(forgetReplyToPeer({ ok: true }), { status: 204 });
  t.same(forgetReplyToPeer({ ok: false, refusal: { id: 'memberOwnsPartitions', args: [3, 4] } }),
    { status: 409, error: 'member 3 owns 4 partitions' });
});

t.test('a follower relays a 3.2 leader\'s reply as that leader decided it', async (t) => {
  const ok = proposeReplyFromPeer({ ok: true, index: 9, term: 3 });
  t.same(ok, { ok: true, index: 9, term: 3 });
  t.same(answered(proposeReplyFromPeer({ ok: false, status: 503, error: 'leader unreachable', retryAfterSeconds: 2 })),
    { status: 503, error: 'leader unreachable', retryAfter: '2' });
  t.same(answered(proposeReplyFromPeer({ ok: false, status: 404, error: 'topic t not found' })), { status: 404, error: 'topic t not found' });
  t.same(forgetReplyFromPeer({ status: 204 }), { ok: true });
  t.same(answered(forgetReplyFromPeer({ status: 409, error: 'member 2 is alive: only a dead member can be forgotten' })),
    { status: 409, error: 'member 2 is alive: only a dead member can be forgotten' });
});

t.test('every refusal survives the trip to the wire and back unchanged for the client', async (t) => {
  const refusals: MetadataRefusal[] = [
    { id: 'noLeader', args: [] }, { id: 'leaderUnreachable', args: [] }, { id: 'committedUnconfirmed', args: [] },
    { id: 'topicNameConflict', args: ['Orders'] }, { id: 'partitionsNotGrown', args: [3] }, { id: 'userNotFound', args: ['bob'] },
    { id: 'forgetBreaksQuorum', args: [2, 1, 2] }, { id: 'membershipChangeRefused', args: ['a change is in flight'] },
  ];
  for (const refusal of refusals) {
    const direct = answered({ ok: false, refusal });
    t.same(answered(proposeReplyFromPeer(proposeReplyToPeer({ ok: false, refusal }))), direct, `${refusal.id} via propose`);
    t.same(answered(forgetReplyFromPeer(forgetReplyToPeer({ ok: false, refusal }))), direct, `${refusal.id} via forget`);
  }
});

t.test('a broken reply becomes a 500 naming what came, never a crash', async (t) => {
  for (const raw of [undefined, null, 'x', {}, { ok: false }, { ok: false, status: 200, error: 'fine' }, { ok: true, index: 'a', term: 1 }]) {
    const reply = proposeReplyFromPeer(raw);
    t.equal(reply.ok, false, JSON.stringify(raw) ?? 'undefined');
    t.equal(answered(reply).status, 500);
  }
  t.equal(answered(forgetReplyFromPeer({ status: 'gone' })).status, 500);
  t.same(answered(proposeReplyFromPeer({ ok: false, status: 503, error: 'x', retryAfterSeconds: -1 })), { status: 503, error: 'x' },
    'a nonsense Retry-After is dropped');
});
