// Goal: every malformed or unusual request is answered with no 5xx (but a 503 with Retry-After, and 501 for features
// not built yet), the node stays up with bounded memory, and a refused request stores nothing: what
// the fuzzed topic holds is exactly what its 202s accepted (issue 27 "Shown by"). Raw-byte requests whose fate uWS's
// parser decides (docs/decisions.md "What the HTTP parser decides") may go unanswered: they are counted apart, per
// class, and must still store nothing.
// Method: black box. test/helpers/edge_fuzz.ts builds requests from a seed (a fifth of them raw bytes from
// edge_fuzz_raw.ts); 8 at a time, each on its own connection. A short run is part of npm test; FUZZ_REQUESTS=20000
// runs the full one, SEED=<n> replays a seed. Issue 27 asks for answers within a second; no latency is promised by the
// contract and a busy machine stretches it, so answers slower than that are reported (t.comment), and only a request
// left without an answer for 10 s fails.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { fuzzRequest, type FuzzRequest } from '../helpers/edge_fuzz.js';
import { rawFuzzRequest, type RawFuzzRequest } from '../helpers/edge_fuzz_raw.js';
import { Client, pollUntil, rawExchange, send, type HttpResponse } from '../helpers/http.js';
import { startNodeFor } from '../helpers/node.js';
import { Prng } from '../helpers/prng.js';

const requests = Number(process.env.FUZZ_REQUESTS ?? 800);
const seed = Number(process.env.SEED ?? 26_27);
const concurrency = 8;
const node = await startNodeFor(t);
const client = new Client(node.url, node.auth);

async function rssMiB(): Promise<number> {
  const status = await readFile(`/proc/${node.process.pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? NaN) / 1024;
}

async function storedInFuzz(): Promise<number> {
  const topic = (await client.get('/v1/topics/fuzz')).json() as { partition_stats: { next_offset: number }[] };
  return topic.partition_stats.reduce((sum, p) => sum + p.next_offset, 0);
}

interface Tally { accepted: number; answered: number; slow: string[]; late: string[]; server: string[]; wrong: string[]; byParser: Record<string, number> }

/** A request slower than this is reported as late (issue 27's second); its answer is still awaited (up to lateMs, past
 *  which it fails as unanswered) so that what it stored is counted too. */
const answerMs = 1000;
const lateMs = 10_000;

/** The status of the first answer on a raw connection, or 0 when none came within timeoutMs. */
async function sendRaw(request: RawFuzzRequest, timeoutMs: number): Promise<number> {
  const done = (raw: string): boolean => /^HTTP\/1\.1 \d{3} [^]*?\r\n\r\n/.test(raw);
  const { bytes } = await rawExchange(node.port, request.parts, { timeoutMs, done });
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(bytes)?.[1] ?? 0);
}

async function sendOneRaw(request: RawFuzzRequest, tally: Tally): Promise<void> {
  // The parser's classes are counted after a second; the others are awaited longer, their lateness noted.
  const startedMs = Date.now();
  const status = await sendRaw(request, request.parser ? answerMs : lateMs);
  const tookMs = Date.now() - startedMs;
  if (status === 0) {
    if (request.parser) tally.byParser[request.className] = (tally.byParser[request.className] ?? 0) + 1;
    else tally.slow.push(`raw ${request.className}: no answer within ${lateMs} ms`);
    return;
  }
  if (tookMs > answerMs) tally.late.push(`raw ${request.className}: answered ${status} after ${tookMs} ms`);
  tally.answered++;
  if (status >= 500 && status !== 501 && status !== 503) tally.server.push(`raw ${request.className} -> ${status}`);
  if (request.expect !== undefined && status !== request.expect) tally.wrong.push(`raw ${request.className} -> ${status}`);
  if (status === 202 && request.produces) tally.accepted += 1;
}

async function sendOne(request: FuzzRequest, tally: Tally): Promise<void> {
  let res: HttpResponse;
  const startedMs = Date.now();
  try {
    res = await send(node.url, request.method, request.path, {
      auth: node.auth, body: request.body, headers: request.headers, timeoutMs: lateMs,
      ...(request.contentType === undefined ? {} : { contentType: request.contentType }),
    });
  } catch (error) {
    tally.slow.push(`${request.method} ${request.path}: ${error instanceof Error ? error.message : String(error)}`);
    return;
  }
  const tookMs = Date.now() - startedMs;
  if (tookMs > answerMs) tally.late.push(`${request.method} ${request.path}: answered ${res.status} after ${tookMs} ms`);
  tally.answered++;
  // 501 answers the fields and routes of features not built yet (schemas, fan-out), as decisions.md says.
  const expected = res.status === 501 || (res.status === 503 && res.headers['retry-after'] !== undefined);
  if (res.status >= 500 && !expected) {
    tally.server.push(`${request.method} ${request.path} -> ${res.status} ${res.text.slice(0, 120)}`);
  }
  if (res.status === 202 && request.produces === 'single') tally.accepted += 1;
  if (res.status === 202 && request.produces === 'batch') tally.accepted += (res.json() as { accepted: number }).accepted;
}

t.test(`SEED=${seed}: ${requests} fuzzed requests`, async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'fuzz', partitions: 3 })).status, 201);
  const rssBefore = await rssMiB();
  const prng = new Prng(seed);
  const queue = Array.from({ length: requests }, () => (prng.chance(0.2) ? rawFuzzRequest(prng, node.auth) : fuzzRequest(prng)));
  const tally: Tally = { accepted: 0, answered: 0, slow: [], late: [], server: [], wrong: [], byParser: {} };
  const startedMs = Date.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let request = queue.shift(); request !== undefined; request = queue.shift()) {
      if ('parts' in request) await sendOneRaw(request, tally);
      else await sendOne(request, tally);
    }
  }));
  const seconds = (Date.now() - startedMs) / 1000;
  t.same(tally.slow, [], `every request answered (${tally.answered} in ${seconds.toFixed(1)} s)`);
  t.comment(`${tally.late.length} answered after more than ${answerMs} ms${tally.late.length > 0 ? `: ${tally.late.slice(0, 10).join('; ')}` : ''}`);
  t.same(tally.server, [], 'no 5xx but a 503 with Retry-After or a 501');
  t.same(tally.wrong, [], 'raw requests with a fixed answer got it');
  t.comment(`left unanswered by uWS's parser, per class: ${JSON.stringify(tally.byParser)}`);
  t.equal((await client.get('/healthz')).status, 200, 'the node is up');
  const stored = await pollUntil(async () => ((await storedInFuzz()) === tally.accepted ? tally.accepted : undefined), 30_000, 100);
  t.equal(stored ?? (await storedInFuzz()), tally.accepted, `the topic holds what 202s accepted (${tally.accepted}), nothing more`);
  const grown = (await rssMiB()) - rssBefore;
  t.ok(grown < 512, `RSS grew ${grown.toFixed(0)} MiB (${rssBefore.toFixed(0)} MiB before)`);
});
