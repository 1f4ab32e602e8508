// Goal: the project's client retries a 421 (spec §7: the partition moved to another node while the request was on
// its way, issue 41) like a 503 with Retry-After: the consumer loop backs off and consumes again without reporting
// an error, and a batch ack answered 421 is sent again. Method: a loopback HTTP stub that answers the first consume
// and the first ack with 421, then as a node would; the stub counts what it got.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import t from 'tap';
import { Consumer, SvcClient, SvcError } from '../../src/client/index.js';
import { pollUntil } from '../helpers/http.js';

/** fetch (undici) itself sends a request answered 421 once more on a new connection: past that, the client's own
 *  retry is what is tested. */
const movedAnswers = 3;

interface Seen { consumes: number; acks: number; acked: string[] }

function stub(seen: Seen): (req: IncomingMessage, res: ServerResponse) => void {
  const moved = (res: ServerResponse): void => {
    res.writeHead(421, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'partition 0 of topic t moved to another node; retry' }));
  };
  return (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      if (req.url!.includes('/consume')) {
        seen.consumes += 1;
        if (seen.consumes <= movedAnswers) return moved(res);
        if (seen.consumes > movedAnswers + 1) return void res.writeHead(204).end();
        const message = { topic: 't', partition: 0, offset: 0, payload: { n: 1 }, receipt_handle: 'h-1', timestamp: 1767225600000 };
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ messages: [message] }));
      }
      if (req.url!.includes('/ack') && body !== '') {
        seen.acks += 1;
        if (seen.acks <= movedAnswers) return moved(res);
        const handles = (JSON.parse(body) as { receipt_handles: string[] }).receipt_handles;
        seen.acked.push(...handles);
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results: handles.map(() => ({ status: 204 })) }));
      }
      // A lease extension (no body) is not what this test is about.
      if (req.url!.includes('/ack')) return void res.writeHead(204).end();
      res.writeHead(404).end();
    });
  };
}

t.test('a 421 is retried: the consume and the ack both reach the message', async (t) => {
  const seen: Seen = { consumes: 0, acks: 0, acked: [] };
  const server = createServer(stub(seen));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  const client = new SvcClient({ url: `http://127.0.0.1:${port}` });
  const errors: unknown[] = [];
  const handled: number[] = [];
  const consumer = new Consumer(client, 't', async (message) => {
    handled.push((message.payload as { n: number }).n);
  }, { visibilityTimeoutMs: 30_000, waitMs: 50, ackLingerMs: 1, onError: (error) => errors.push(error) });
  await consumer.start();
  await pollUntil(async () => (seen.acked.length > 0 ? true : undefined), 10_000, 20);
  await consumer.stop();
  t.same(handled, [1], 'the message after the 421 was handled');
  t.same(seen.acked, ['h-1'], 'the ack answered 421 was sent again');
  t.equal(seen.acks, movedAnswers + 1, 'the batch ack was sent until it was not answered 421');
  t.ok(seen.consumes > movedAnswers, 'the consume answered 421 was followed by another');
  t.equal(errors.filter((e) => e instanceof SvcError && e.status === 421).length, 0, 'no 421 reached onError');
  t.equal(new SvcError(421, 'moved', null, null).retryable, true);
});
