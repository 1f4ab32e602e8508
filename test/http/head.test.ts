// Goal: a HEAD answer never carries a body (RFC 9110 §9.3.2; issue 27 point 7): /healthz and /readyz answer HEAD as
// they answer GET, without the body; every other route answers 405 with Allow and no body. The request that follows
// on the same connection is answered on its own, so a keep-alive client or a proxy never reads a body as the next
// answer.
// Method: black box with a raw socket: a HEAD and a GET /healthz sent together on one connection; the bytes read
// must be exactly two answers, the first with no body.
import t from 'tap';
import { rawExchange } from '../helpers/http.js';
import { startNodeFor } from '../helpers/node.js';

const node = await startNodeFor(t);

/** Everything the node sends back for the given requests on one connection, once `answers` answers ended (the last
 *  is a GET /healthz: complete once its JSON body closed). */
async function exchange(text: string, answers: number, timeoutMs = 5000): Promise<string> {
  const done = (raw: string): boolean => (raw.match(/HTTP\/1\.1 /g)?.length ?? 0) >= answers && raw.endsWith('}');
  return (await rawExchange(node.port, [text], { timeoutMs, done })).bytes;
}

function splitAnswers(raw: string): { status: number; headers: string; rest: string }[] {
  return raw.split(/(?=HTTP\/1\.1 \d{3} )/).filter((part) => part !== '').map((part) => {
    const end = part.indexOf('\r\n\r\n');
    return { status: Number(part.slice(9, 12)), headers: part.slice(0, end), rest: part.slice(end + 4) };
  });
}

const followUp = 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n';

for (const path of ['/healthz', '/readyz']) {
  t.test(`HEAD ${path}: the GET answer's status and headers, no body`, async (t) => {
    const raw = await exchange(`HEAD ${path} HTTP/1.1\r\nHost: x\r\n\r\n${followUp}`, 2);
    const [head, next] = splitAnswers(raw);
    t.equal(head?.status, 200, raw);
    t.match(head?.headers ?? '', /\r\nContent-Type: application\/json/i, 'the GET answer\'s content type');
    t.notMatch(head?.headers ?? '', /Content-Length/i, 'no length of a body that is not sent');
    t.equal(head?.rest, '', 'no body after the HEAD answer');
    t.equal(next?.status, 200, 'the next request on the connection answered on its own');
    t.match(next?.rest ?? '', /^\{.*\}$/, 'with its own body');
  });
}

t.test('HEAD of any other route: 405 with Allow, no body', async (t) => {
  const raw = await exchange(`HEAD /v1/topics HTTP/1.1\r\nHost: x\r\nAuthorization: ${node.auth}\r\n\r\n${followUp}`, 2);
  const [head, next] = splitAnswers(raw);
  t.equal(head?.status, 405, raw);
  t.match(head?.headers ?? '', /\r\nAllow: POST, GET(\r\n|$)/);
  t.equal(head?.rest, '', 'no body after the HEAD answer');
  t.equal(next?.status, 200);
});

t.test('/healthz lists HEAD among its methods in a 405', async (t) => {
  const raw = await exchange('DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n' + followUp, 2);
  const [refused] = splitAnswers(raw);
  t.equal(refused?.status, 405, raw);
  t.match(refused?.headers ?? '', /\r\nAllow: GET, HEAD(\r\n|$)/);
});
