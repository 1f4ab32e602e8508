// Goal: prove the leased consume (spec 4 GET /v1/topics/{topic}/consume without offset; spec 2 Message; spec 3
// Lease of a message; spec 7 and 8; NOTES 4 and 12; decisions.md "Consume and ack"): 204 when nothing is there,
// the Message fields with a receipt handle, one lease holder per message, the partition filter, fairness over
// partitions, the parameter refusals, batch consume (max), the per-identity consume cap (429), and the
// max_in_flight_per_partition and max_acked_ahead_per_partition caps.
// Method: one node for the file (a second, with http.max_consume_in_flight_per_identity=2, only for the 429 case);
// a fresh topic per case. A message is consumable only after its commit, which follows the 202 asynchronously
// (spec 1.2), so consumes that expect a message long-poll (wait=10s); cases that need everything committed first
// wait for the last offset by replay. No latency is promised: a bound on elapsed time only tells an answer given at
// once from one held for a wait of 10 s, with seconds of room for a busy machine.
import t from 'tap';
import { NodeWithClient, assertError, topicNamer, topicPath, waitReplay, type Client } from '../helpers/replay.js';
import {
  abortableConsume, ack, clientHeader, consume, consumeMessage, createTopicWith, parseHandle, place, produce, sleep,
  type ConsumeAnswer, type ConsumedMessage,
} from '../helpers/consume.js';

const { client } = await NodeWithClient.start(t);
const nextTopic = topicNamer('consume');
/** An answer before this was not held for a wait of 10 s (nor for the default maximum): room for a busy machine. */
const notHeldMs = 8_000;

/** Produces `count` pinned messages to `partition` and waits until the last one is committed. */
async function producePinned(topic: string, partition: number, count: number, tag = 'm'): Promise<void> {
  for (let i = 0; i < count; i++) await produce(client, topic, JSON.stringify({ tag, partition, i }), `?partition=${partition}`);
  const last = await waitReplay(client, topic, partition, count - 1, 5_000);
  if (last.status !== 200) throw new Error(`partition ${partition} offset ${count - 1} not committed: ${last.status}`);
}

t.test('an empty topic answers 204 with no body (wait=0 and no wait)', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  for (const query of ['', '?wait=0', '?wait=0s', '?partition=2']) {
    const answer = await consume(client, topic, query);
    t.equal(answer.status, 204, `204 for "${query}" (body ${answer.text.slice(0, 200)})`);
    t.equal(answer.text, '', 'no body');
    t.ok(answer.elapsedMs < notHeldMs, `answered without a wait (${answer.elapsedMs} ms)`);
  }
});

t.test('a consumed Message carries every field, the payload as produced and a receipt handle', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const producedAtSec = Math.floor(Date.now() / 1000);
  // Raw text: the big integer must come back digit for digit (a JSON payload is kept byte for byte).
  await produce(client, topic, '{"a":[1,2,{"b":null}],"big":12345678901234567890}', '?key=k1&partition=1');
  const answer = await consume(client, topic, '?wait=2s');
  t.equal(answer.status, 200, `200 (body ${answer.text.slice(0, 200)})`);
  t.ok((answer.headers['content-type'] ?? '').startsWith('application/json'), 'JSON answer');
  const body = answer.message as unknown as Record<string, unknown>;
  t.same(Object.keys(body).sort(), ['key', 'offset', 'partition', 'payload', 'receipt_handle', 'timestamp', 'topic'],
    `fields: ${answer.text}`);
  t.equal(body.topic, topic);
  t.equal(body.partition, 1);
  t.equal(body.offset, 0);
  t.equal(body.key, 'k1');
  t.ok(answer.text.includes('"big":12345678901234567890'), `payload digits kept: ${answer.text}`);
  t.same((body.payload as { a: unknown }).a, [1, 2, { b: null }]);
  t.ok(Number.isInteger(body.timestamp), 'timestamp is an integer');
  const timestamp = body.timestamp as number;
  t.ok(timestamp >= producedAtSec - 2 && timestamp <= Math.floor(Date.now() / 1000) + 2, `timestamp ${timestamp} in Unix seconds`);
  const handle = parseHandle(body.receipt_handle);
  t.ok(handle, `receipt_handle is partition:offset:<12 hex> (${String(body.receipt_handle)})`);
  t.equal(handle?.partition, 1, 'handle names the partition');
  t.equal(handle?.offset, 0, 'handle names the offset');
});

t.test('text and binary payloads; no key field without a key', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  await produce(client, topic, 'plain text, not JSON', '?partition=0', 'application/octet-stream');
  await produce(client, topic, Buffer.from([0xff, 0x00, 0xfe]), '?partition=2', 'application/octet-stream');
  const seen = new Map<number, ConsumedMessage>();
  for (let i = 0; i < 2; i++) {
    const message = await consumeMessage(client, topic);
    seen.set(message.partition, message);
  }
  const text = seen.get(0);
  t.equal(text?.payload, 'plain text, not JSON', 'non-JSON UTF-8 comes back as a string (NOTES 3)');
  t.notOk(text && 'key' in text, 'no key field');
  t.notOk(text && 'payload_encoding' in text, 'no payload_encoding on text');
  const binary = seen.get(2);
  t.equal(binary?.payload, Buffer.from([0xff, 0x00, 0xfe]).toString('base64'), 'binary comes back base64 (NOTES 3)');
  t.equal(binary?.payload_encoding, 'base64', 'with payload_encoding base64');
});

t.test('each message is leased to one consumer at a time', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const count = 12;
  for (let i = 0; i < count; i++) await produce(client, topic, JSON.stringify({ i }));
  const places = new Set<string>();
  const handles = new Set<string>();
  // Half of them concurrently: the node must not hand one message to two waiting consumers.
  const concurrent = await Promise.all(Array.from({ length: count / 2 }, () => consumeMessage(client, topic)));
  const rest: ConsumedMessage[] = [];
  for (let i = 0; i < count / 2; i++) rest.push(await consumeMessage(client, topic));
  for (const message of [...concurrent, ...rest]) {
    places.add(place(message));
    handles.add(message.receipt_handle);
  }
  t.equal(places.size, count, `${count} distinct (partition, offset) (${[...places].join(' ')})`);
  t.equal(handles.size, count, 'distinct receipt handles');
  const more = await consume(client, topic, '?wait=0');
  t.equal(more.status, 204, `the (N+1)th consume is 204 while all are leased (body ${more.text.slice(0, 200)})`);
});

t.test('partition= takes messages of that partition only', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  await producePinned(topic, 0, 3, 'p0');
  await producePinned(topic, 2, 3, 'p2');
  for (let i = 0; i < 3; i++) {
    const message = await consumeMessage(client, topic, '?partition=2&wait=1s');
    t.equal(message.partition, 2, `message ${i} from partition 2`);
    t.equal(parseHandle(message.receipt_handle)?.partition, 2, 'its handle names partition 2');
  }
  t.equal((await consume(client, topic, '?partition=2')).status, 204, 'partition 2 exhausted: 204 although partition 0 has messages');
  t.equal((await consume(client, topic, '?partition=1')).status, 204, 'empty partition 1: 204');
  const fromZero = await consumeMessage(client, topic, '?partition=0');
  t.equal(fromZero.partition, 0, 'partition 0 still delivers');
});

t.test('partitions are visited so none starves', async (t) => {
  const topic = nextTopic();
  const partitions = 6;
  await createTopicWith(client, topic, { partitions });
  for (let p = 0; p < partitions; p++) await producePinned(topic, p, 5, `p${p}`);
  const seen = new Set<number>();
  for (let i = 0; i < partitions; i++) seen.add((await consumeMessage(client, topic, '?wait=0')).partition);
  t.ok(seen.size >= 3, `${partitions} consumes over ${partitions} partitions with 5 messages each reach several partitions (${[...seen].join(',')})`);
  const all = new Set<string>();
  for (let i = partitions; i < partitions * 5; i++) all.add(place(await consumeMessage(client, topic, '?wait=0')));
  t.equal(all.size, partitions * 5 - partitions, 'the rest are all delivered, each once');
  t.equal((await consume(client, topic)).status, 204, 'then 204');
});

t.test('parameter refusals are 400; unknown topic 404; no credentials 401', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const cases: [string, string, Record<string, string>][] = [
    ['?wait=-1s', 'wait', {}],
    ['?wait=abc', 'wait', {}],
    ['?wait=10', 'wait', {}],
    ['?partition=3', 'partition', {}],
    ['?partition=-1', 'partition', {}],
    ['?partition=abc', 'partition', {}],
    ['?max=0', 'max', clientHeader],
    ['?max=101', 'max', clientHeader],
    ['?max=abc', 'max', clientHeader],
    ['?max=5', 'x-svc-client', {}],
    ['?max=5&partition=0&offset=0', 'max', clientHeader],
    ['?offset=0', 'partition', {}],
    ['?wait=1s&wait=2s', 'wait', {}],
  ];
  for (const [query, mentions, headers] of cases) {
    const answer = await consume(client, topic, query, headers);
    t.test(query, async (t) => assertError(t, answer, 400, mentions));
  }
  assertError(t, await consume(client, `${topic}-missing`), 404);
  assertError(t, await consume(client, `${topic}-missing`, '?max=3', clientHeader), 404);
  const anonymous = await client.req(`${topicPath(topic)}/consume`, { noAuth: true });
  t.equal(anonymous.status, 401, 'no credentials: 401');
});

t.test('batch consume: {"messages": [...]} each with its own lease, without waiting to fill', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  for (let i = 0; i < 3; i++) await produce(client, topic, JSON.stringify({ i }), `?partition=${i}`);
  for (let p = 0; p < 3; p++) await waitReplay(client, topic, p, 0, 5_000);
  const answer = await consume(client, topic, '?max=10&wait=10s', clientHeader);
  t.equal(answer.status, 200, `200 (body ${answer.text.slice(0, 200)})`);
  t.ok(answer.elapsedMs < notHeldMs, `answered without waiting to fill 10 or for wait=10s (${answer.elapsedMs} ms)`);
  t.ok((answer.headers['content-type'] ?? '').startsWith('application/json'), 'JSON answer');
  const body = JSON.parse(answer.text) as Record<string, unknown>;
  t.same(Object.keys(body), ['messages'], 'an object with messages');
  const messages = answer.messages ?? [];
  t.equal(messages.length, 3, 'the 3 available messages');
  t.equal(new Set(messages.map((m) => m.receipt_handle)).size, messages.length, 'each has its own receipt_handle');
  t.equal(new Set(messages.map(place)).size, messages.length, 'distinct messages');
  for (const message of messages) {
    t.equal(message.topic, topic);
    const handle = parseHandle(message.receipt_handle);
    t.equal(handle && place(handle), place(message), `handle ${message.receipt_handle} names its message`);
  }
  t.equal((await consume(client, topic, '?max=10', clientHeader)).status, 204, 'all leased: a batch consume is 204');
  const waited = await consume(client, topic, '?max=10&wait=300ms', clientHeader);
  t.equal(waited.status, 204, 'a batch consume with wait=300ms and nothing available: 204');
  t.ok(waited.elapsedMs >= 250, `after its wait, like a single consume (${waited.elapsedMs} ms)`);
  const acked = await ack(client, topic, messages[1]!.receipt_handle);
  t.equal(acked.status, 204, 'one lease of the batch acks on its own');
  t.equal((await consume(client, topic, '?max=1', clientHeader)).status, 204, 'two still leased, one acked: nothing to lease');
  await produce(client, topic, '{"late":true}', '?partition=1');
  const single = await consume(client, topic, '?max=1&wait=10s', clientHeader);
  t.equal(single.status, 200, `max=1 answers 200 (body ${single.text.slice(0, 200)})`);
  t.equal(single.messages?.length, 1, 'in the batch shape with one message');
  t.same(single.messages?.[0]?.payload, { late: true }, 'the new message');
});

t.test('batch consume: at most max messages, the partition filter applies', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  await producePinned(topic, 1, 5);
  await producePinned(topic, 2, 2);
  const two = await consume(client, topic, '?max=2&partition=1', clientHeader);
  t.equal(two.status, 200);
  t.equal(two.messages?.length, 2, 'max=2: two messages');
  const rest = await consume(client, topic, '?max=100&partition=1', clientHeader);
  t.equal(rest.messages?.length, 3, 'max=100 with 3 left in partition 1: three');
  const all = [...(two.messages ?? []), ...(rest.messages ?? [])];
  t.ok(all.every((m) => m.partition === 1), 'all from partition 1');
  t.same(all.map((m) => m.offset).sort(), [0, 1, 2, 3, 4], 'each offset once');
  t.equal((await consume(client, topic, '?max=100&partition=1', clientHeader)).status, 204, 'partition 1 exhausted: 204');
  const other = await consume(client, topic, '?max=100', clientHeader);
  t.equal(other.messages?.length, 2, 'the two of partition 2 without the filter');
});

t.test('max_in_flight_per_partition caps the leases of one partition; a PATCH raising it lets more through', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic, { partitions: 3, max_in_flight_per_partition: 2 });
  await producePinned(topic, 0, 5);
  const first = await consumeMessage(client, topic, '?partition=0');
  const second = await consumeMessage(client, topic, '?partition=0');
  t.not(place(first), place(second), 'two leases of partition 0');
  t.equal((await consume(client, topic, '?partition=0')).status, 204, 'the third consume of partition 0 is 204 (cap 2)');
  t.equal((await consume(client, topic)).status, 204, 'also without partition=');
  t.equal((await ack(client, topic, first.receipt_handle)).status, 204, 'ack one lease');
  const third = await consume(client, topic, '?partition=0');
  t.equal(third.status, 200, 'after the ack the next consume gets one');
  t.equal((await consume(client, topic, '?partition=0')).status, 204, 'and the cap holds again');

  const patched = await client.req(topicPath(topic), {
    method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ max_in_flight_per_partition: 10 }),
  });
  t.equal(patched.status, 200, `PATCH raises the cap (body ${patched.text.slice(0, 200)})`);
  // The new cap reaches the partition owner through the metadata log: poll for it, up to 15 s.
  const more: ConsumedMessage[] = [];
  const deadline = Date.now() + 15_000;
  while (more.length < 2 && Date.now() < deadline) {
    const answer = await consume(client, topic, '?partition=0');
    if (answer.status === 200 && answer.message) more.push(answer.message);
    else await sleep(50);
  }
  t.equal(more.length, 2, 'the two remaining messages come through while 2 are still leased');
  const places = new Set([second, third.message, ...more].filter((m) => m !== undefined).map((m) => place(m!)));
  t.equal(places.size, 4, 'four distinct leased messages');
});

t.test('max_acked_ahead_per_partition stops new offsets; a nacked lease is still redelivered (NOTES 12)', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic, { partitions: 3, max_acked_ahead_per_partition: 2 });
  await producePinned(topic, 0, 5);
  const oldest = await consumeMessage(client, topic, '?partition=0');
  t.equal(oldest.offset, 0, 'lease offset 0 and hold it');
  for (const expected of [1, 2]) {
    const message = await consumeMessage(client, topic, '?partition=0');
    t.equal(message.offset, expected, `lease offset ${expected}`);
    t.equal((await ack(client, topic, message.receipt_handle)).status, 204, `ack offset ${expected}`);
  }
  t.equal((await consume(client, topic, '?partition=0')).status, 204, '2 acks above the oldest unacked: nothing new (204)');
  t.equal((await consume(client, topic)).status, 204, 'also without partition=');

  t.equal((await ack(client, topic, oldest.receipt_handle, '0')).status, 204, 'nack offset 0');
  const again = await consume(client, topic, '?partition=0');
  t.equal(again.status, 200, 'the nacked offset 0 is redelivered although the acked-ahead cap is reached');
  t.equal(again.message?.offset, 0, 'offset 0 again');
  t.not(again.message?.receipt_handle, oldest.receipt_handle, 'under a new handle');
  t.equal((await consume(client, topic, '?partition=0')).status, 204, 'still nothing new');

  t.equal((await ack(client, topic, again.message!.receipt_handle)).status, 204, 'ack offset 0');
  const next = await consume(client, topic, '?partition=0');
  t.equal(next.status, 200, 'with offset 0 acked new offsets flow again');
  t.equal(next.message?.offset, 3, 'offset 3');
});

t.test('max_acked_ahead_per_partition: an expired lease is still redelivered (NOTES 12)', async (t) => {
  const topic = nextTopic();
  // A 5 s lease: the four requests before the 204 below must fit in it, on however busy a machine.
  await createTopicWith(client, topic, { partitions: 3, max_acked_ahead_per_partition: 2, visibility_timeout_ms: 5_000 });
  await producePinned(topic, 0, 5);
  const leasedAt = Date.now();
  const oldest = await consumeMessage(client, topic, '?partition=0');
  for (let i = 0; i < 2; i++) {
    const message = await consumeMessage(client, topic, '?partition=0');
    t.equal((await ack(client, topic, message.receipt_handle)).status, 204, `ack offset ${message.offset}`);
  }
  const blocked = await consume(client, topic, '?partition=0');
  t.equal(blocked.status, 204, `nothing new while the cap is reached (${Date.now() - leasedAt} ms into the lease)`);
  // A long poll: the lease expiry wakes it (the 5 s lease ends before its 10 s wait).
  const redelivered = await consume(client, topic, '?partition=0&wait=10s');
  t.equal(redelivered.status, 200, 'the expired lease is redelivered although the acked-ahead cap is reached');
  t.equal(redelivered.message && place(redelivered.message), place(oldest), 'the same message');
  t.not(redelivered.message?.receipt_handle, oldest.receipt_handle, 'under a new handle');
  t.equal((await ack(client, topic, redelivered.message!.receipt_handle)).status, 204, 'ack it');
  const next = await consume(client, topic, '?partition=0');
  t.equal(next.status, 200, 'new offsets flow again');
  t.equal(next.message?.offset, 3, 'offset 3');
});

/** A consume (query, batch when it has max) asked until it answers 429 (held polls reached the node), up to 15 s. */
async function refusedWhileHeld(cappedClient: Client, topic: string, query = ''): Promise<ConsumeAnswer> {
  const headers = query.includes('max=') ? clientHeader : {};
  let answer = await consume(cappedClient, topic, query, headers);
  for (const deadline = Date.now() + 15_000; answer.status !== 429 && Date.now() < deadline; answer = await consume(cappedClient, topic, query, headers)) {
    await sleep(50);
  }
  return answer;
}

t.test('429 over http.max_consume_in_flight_per_identity; long polls count while waiting', async (t) => {
  const { node: capped, client: cappedClient } = await NodeWithClient.start(t, {
    // Held polls of 20 s (over the default 10 s maximum): on a busy machine a new connection can take seconds to be
    // authenticated and parked, and each poll must still be held when the consumes below are refused.
    args: ['--set', 'http.max_consume_in_flight_per_identity=2', '--set', 'http.max_consume_wait=20s'],
  });
  const topic = nextTopic();
  await createTopicWith(cappedClient, topic);
  const polls = [abortableConsume(capped.url, capped.auth, topic, '?wait=20s'), abortableConsume(capped.url, capped.auth, topic, '?wait=20s')];
  // Until both polls reached the node a consume is within the cap (and answers 204 at once): ask until refused.
  const third = await refusedWhileHeld(cappedClient, topic);
  assertError(t, third, 429, 'consume');
  t.ok(third.headers['retry-after'] !== undefined, `Retry-After is sent (spec 7, 429 messages) (got ${third.headers['retry-after']})`);
  t.ok(third.elapsedMs < 15_000, `not held until a slot frees, 20 s on (${third.elapsedMs} ms)`);
  const batch = await consume(cappedClient, topic, '?max=1', clientHeader);
  t.equal(batch.status, 429, 'a batch consume also gets 429');
  const results = await Promise.all(polls.map((poll) => poll.done));
  for (const result of results) {
    t.equal(result.status, 204, 'the held long poll ends 204');
    t.ok(result.elapsedMs >= 19_900, `after its wait (${result.elapsedMs} ms)`);
  }
  const after = await consume(cappedClient, topic);
  t.equal(after.status, 204, 'with the polls answered a consume is accepted again');
  // A batch consume counts as its max clamped to the cap (spec 8): beside one held poll, max=5 counts 2 and is over.
  const one = abortableConsume(capped.url, capped.auth, topic, '?wait=20s');
  t.equal((await refusedWhileHeld(cappedClient, topic, '?max=5')).status, 429, 'one held poll + a batch of max=5: 429');
  t.equal((await consume(cappedClient, topic)).status, 204, 'one held poll + a single consume: within the cap');
  t.equal((await one.done).status, 204, 'the held poll ends 204');
  // Aborted waits give their slots back.
  const aborted = [abortableConsume(capped.url, capped.auth, topic, '?wait=20s'), abortableConsume(capped.url, capped.auth, topic, '?wait=20s')];
  t.equal((await refusedWhileHeld(cappedClient, topic)).status, 429, 'two held polls again: 429');
  for (const poll of aborted) poll.abort();
  await Promise.all(aborted.map((poll) => poll.done));
  let status = 0;
  const deadline = Date.now() + 8_000;
  while (Date.now() < deadline) {
    status = (await consume(cappedClient, topic)).status;
    if (status === 204) break;
    await sleep(50);
  }
  t.equal(status, 204, 'after the clients went away their slots are free');
});
