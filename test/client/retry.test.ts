// Goal: the client's retry policy (issue 41 point 7; spec §7's Retry column): a 421 (the partition moved while the
// request was served) is sent again after a doubling back-off from 100 ms up to 2 s, with no Retry-After needed; 429
// and 503 only with Retry-After, after that many seconds; other answers (409, a 502 that may have been applied) are
// not sent again. The producer follows it: a batch answered 421 is sent again and then stored once.
// Method: the policy is read off SvcError; the producer runs over a stand-in client object (no HTTP) whose
// produceBatch answers 421 twice, then 202.
import t from 'tap';
import { Producer, SvcError, type SvcClient } from '../../src/client/index.js';

t.test('421 is retried with a doubling back-off; 429 and 503 after Retry-After; others not', async (t) => {
  const moved = new SvcError(421, 'partition 0 of topic t moved to another node; retry', null, null);
  t.equal(moved.retryable, true, '421 without Retry-After');
  t.same([0, 1, 2, 3, 4, 5, 9].map((attempt) => moved.retryDelayMs(attempt)), [100, 200, 400, 800, 1600, 2000, 2000]);
  t.equal(new SvcError(503, 'owner down', null, null).retryable, false, '503 without Retry-After: not by the policy');
  const busy = new SvcError(503, 'owner down', 2, null);
  t.equal(busy.retryable, true);
  t.equal(busy.retryDelayMs(4), 2000, 'Retry-After wins over the back-off');
  t.equal(new SvcError(429, 'too many', 1, null).retryable, true);
  t.equal(new SvcError(409, 'conflict', null, null).retryable, false);
  t.equal(new SvcError(502, 'no answer from the owner', 1, null).retryable, false, 'a 502 may have been applied');
});

t.test('the producer sends a batch answered 421 again and resolves once it is stored', async (t) => {
  const calls: number[] = [];
  const started = Date.now();
  const client = {
    produceBatch: async (_topic: string, messages: readonly unknown[]) => {
      calls.push(Date.now() - started);
      if (calls.length <= 2) throw new SvcError(421, 'partition 0 of topic t moved to another node; retry', null, null);
      return { accepted: messages.length };
    },
  } as unknown as SvcClient;
  const producer = new Producer(client, 't', { lingerMs: 1 });
  await producer.send({ payload: { n: 1 } });
  await producer.close();
  t.equal(calls.length, 3, 'sent until it was not answered 421');
  t.equal(producer.retries, 2);
  t.ok(calls[2]! - calls[0]! >= 300 - 20, `backed off 100 then 200 ms (${calls.join(', ')} ms)`);
});
