// The bench's batch ack, built from a consume answer's bytes, and the all-settled answer it compares acks with:
// both must be exactly what the node reads and writes (a mismatch would cost the bench its fast path, or its acks).
import t from 'tap';
import type { BrokerTarget } from '../../bench/common.js';
import { AckRequests, ackStatuses, allSettledAnswer, scanHandleSpans, scanHandles } from '../../bench/consume.js';

const target: BrokerTarget = { url: 'http://127.0.0.1:7942', authorization: 'Basic YWRtaW46eA==', server: null, serverPid: null };

function consumeAnswer(handles: string[]): Buffer {
  const messages = handles.map((handle, i) => ({ topic: 't', partition: 0, offset: i, payload: { n: i }, timestamp: 1, receipt_handle: handle }));
  return Buffer.from(JSON.stringify({ messages }));
}

t.test('batchFromSpans: the body holds exactly the answer\'s handles, in order, with a right content-length', async (t) => {
  const handles = ['0:17:a1b2', '3:9007199254740:ffffffffffffffffffffffffffffffff', '12:0:0'];
  const body = consumeAnswer(handles);
  const spans = scanHandleSpans(body);
  t.same(scanHandles(body), handles);
  const request = new AckRequests(target, 'orders').batchFromSpans(body, spans).toString('latin1');
  const [head, sent] = request.split('\r\n\r\n') as [string, string];
  t.match(head, /^POST \/v1\/topics\/orders\/ack HTTP\/1\.1\r\n/);
  t.equal(Number(/content-length: (\d+)/.exec(head)?.[1]), Buffer.byteLength(sent), 'content-length is the body\'s');
  t.same(JSON.parse(sent), { receipt_handles: handles });
});

t.test('batchFromSpans of one handle', async (t) => {
  const body = consumeAnswer(['5:5:5']);
  const sent = new AckRequests(target, 't').batchFromSpans(body, scanHandleSpans(body)).toString('latin1').split('\r\n\r\n')[1]!;
  t.same(JSON.parse(sent), { receipt_handles: ['5:5:5'] });
});

t.test('batchFromSpans refuses an answer without handles (an empty list is no valid ack body)', async (t) => {
  t.throws(() => new AckRequests(target, 't').batchFromSpans(Buffer.from('{"messages":[]}'), []), /no receipt handles/);
});

t.test('allSettledAnswer is the node\'s batch ack answer when every item is 204', async (t) => {
  t.equal(allSettledAnswer(2).toString(), '{"results":[{"status":204},{"status":204}]}');
  t.equal(allSettledAnswer(100), allSettledAnswer(100), 'built once per count');
  t.same(ackStatuses(allSettledAnswer(2), 2), [204, 204], 'the all-204 answer (taken by one comparison: the result cannot tell, the answer is the same)');
  t.same(ackStatuses(Buffer.from('{"results":[{"status":204},{"status":410,"error":"x"}]}'), 2), [204, 410], 'any other answer scanned');
  t.same(ackStatuses(allSettledAnswer(3), 2), [204, 204, 204], 'an answer for another count is scanned, not taken for this one');
});
