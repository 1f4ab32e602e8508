// Goal: workers/parked_takes.ts keeps each topic's parked takes oldest first, lets the worker answer (remove) takes
// while it walks a topic's list, and forgets every take of a deleted topic or at shutdown, leaving nothing behind.
// Method: the class alone, with takes as the front sends them.
import t from 'tap';
import { ParkedTakes, type TakeRequest } from '../../workers/parked_takes.js';

function take(reqId: number, topicId: string): TakeRequest {
  return { kind: 'take', reqId, topicId, partitions: [0], max: 1, park: true };
}

t.test('a topic\'s takes come oldest first, and may be removed while they are walked', async (t) => {
  const parked = new ParkedTakes();
  for (const [reqId, topicId] of [[5, 'a'], [2, 'b'], [9, 'a'], [3, 'a']] as const) parked.park(take(reqId, topicId));
  t.equal(parked.size, 4);
  const walked: number[] = [];
  for (const parkedTake of parked.ofTopic('a')) {
    walked.push(parkedTake.reqId);
    // The worker answers every other take as it walks, as serveParked does when one leases something.
    if (parkedTake.reqId !== 9) t.equal(parked.remove(parkedTake.reqId), parkedTake);
  }
  t.same(walked, [5, 9, 3], 'oldest first, not by request id');
  t.same([...parked.ofTopic('a')].map((x) => x.reqId), [9]);
  t.equal(parked.size, 2);
  t.equal(parked.remove(5), undefined, 'a take answered already is not found again');
  t.same([...parked.ofTopic('nothing parked')], []);
});

t.test('a deleted topic takes its parked takes with it; shutdown takes all', async (t) => {
  const parked = new ParkedTakes();
  for (const [reqId, topicId] of [[1, 'a'], [2, 'b'], [3, 'a']] as const) parked.park(take(reqId, topicId));
  t.same(parked.removeTopic('a').map((x) => x.reqId), [1, 3]);
  t.equal(parked.remove(1), undefined, 'its takes are gone by request id too');
  t.equal(parked.size, 1);
  t.same(parked.removeTopic('a'), [], 'a second delete finds nothing');
  parked.park(take(4, 'c'));
  t.same(parked.removeAll().map((x) => x.reqId).sort(), [2, 4]);
  t.equal(parked.size, 0);
  t.same([...parked.ofTopic('b')], []);
});

t.test('every take of a topic removed while walking it: the walk ends and the topic is gone; a reqId parked twice throws', async (t) => {
  const parked = new ParkedTakes();
  for (const reqId of [1, 2, 3]) parked.park(take(reqId, 'a'));
  parked.park(take(4, 'b'));
  const walked: number[] = [];
  for (const parkedTake of parked.ofTopic('a')) {
    walked.push(parkedTake.reqId);
    parked.remove(parkedTake.reqId);
  }
  t.same(walked, [1, 2, 3]);
  t.same([...parked.ofTopic('a')], [], 'nothing of the topic is left');
  t.equal(parked.size, 1);
  parked.park(take(5, 'a'));
  t.same([...parked.ofTopic('a')].map((x) => x.reqId), [5], 'the topic parks anew');
  t.throws(() => parked.park(take(4, 'a')), /request 4 is parked already/, 'under another topic too');
  t.same([...parked.ofTopic('a')].map((x) => x.reqId), [5], 'a refused park changes nothing');
  t.equal(parked.size, 2);
});
