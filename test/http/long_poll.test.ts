// Goal: prove the consume long poll (spec 4 GET .../consume wait; spec 8 Consume wait; NOTES 4; spec 3 Lease of a
// message; decisions.md "Consume and ack"): a waiting consume is answered as soon as a message becomes available
// (a produce, a nack, a lease expiry), 204 when its wait passes, a wait above http.max_consume_wait is clamped with
// X-Svc-Wait-Clamped, and a client that goes away while waiting takes no lease.
// Method: one node for the file (a second with http.max_consume_wait=1s for the clamp); a fresh topic per case.
// No latency is promised, so "woken" is told from "answered at its wait's end" by the wait itself: a poll waits
// 10 s (the default maximum) and must be answered before wokenBeforeMs, which leaves seconds for a busy machine.
// A short sleep before a produce lets a poll park first; if it is late the message is simply there already.
import t from 'tap';
import { assertError, NodeWithClient, topicNamer, waitReplay } from '../helpers/replay.js';
import { abortableConsume, ack, consume, consumeMessage, createTopicWith, place, produce, sleep } from '../helpers/consume.js';

// One partition worker whatever the machine: every poll of this node parks on it (the two-worker case has its own test).
const { node, client } = await NodeWithClient.start(t, { args: ['--workers', '1'] });
const nextTopic = topicNamer('poll');
/** A poll of wait=10s answered before this was woken, not timed out: 10 s minus room for a busy machine. */
const wokenBeforeMs = 8_000;

t.test('a waiting consume is woken by a produce, not by the end of its wait', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const waiting = consume(client, topic, '?wait=10s');
  await sleep(300);
  await produce(client, topic, '{"wake":1}');
  const answer = await waiting;
  t.equal(answer.status, 200, `200 (body ${answer.text.slice(0, 200)})`);
  t.same(answer.message?.payload, { wake: 1 }, 'the produced message');
  t.ok(answer.elapsedMs < wokenBeforeMs, `before the 10 s wait ended (${answer.elapsedMs} ms)`);
  t.equal(answer.headers['x-svc-wait-clamped'], undefined, 'no X-Svc-Wait-Clamped under the maximum');
});

t.test('several waiters: each produced message wakes one of them, each gets a different message', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const waiters = Array.from({ length: 3 }, () => consume(client, topic, '?wait=10s'));
  await sleep(300);
  for (let i = 0; i < 3; i++) await produce(client, topic, JSON.stringify({ i }));
  const answers = await Promise.all(waiters);
  t.same(answers.map((a) => a.status), [200, 200, 200], 'all three answered 200');
  t.equal(new Set(answers.map((a) => a.message && place(a.message))).size, 3, 'three different messages');
  t.ok(answers.every((a) => a.elapsedMs < wokenBeforeMs), `all before the wait ended (${answers.map((a) => a.elapsedMs).join(', ')} ms)`);
});

t.test('wait=300ms on an empty topic: 204 after about 300 ms', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const answer = await consume(client, topic, '?wait=300ms');
  t.equal(answer.status, 204, `204 (body ${answer.text.slice(0, 200)})`);
  t.equal(answer.text, '', 'no body');
  t.ok(answer.elapsedMs >= 250, `not before the wait (${answer.elapsedMs} ms)`);
  t.ok(answer.elapsedMs < wokenBeforeMs, `not held to the 10 s maximum (${answer.elapsedMs} ms)`);
  const fractional = await consume(client, topic, '?wait=0.5s');
  t.equal(fractional.status, 204, 'wait=0.5s (Go duration syntax, NOTES 4)');
  t.ok(fractional.elapsedMs >= 450 && fractional.elapsedMs < wokenBeforeMs, `500 ms or more, not the maximum (${fractional.elapsedMs} ms)`);
});

t.test('a wait above the default maximum is clamped to 10s and says so, also on a 200', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  await produce(client, topic, '{"clamped":true}', '?partition=0');
  await waitReplay(client, topic, 0, 0, 5_000);
  const answer = await consume(client, topic, '?wait=1m');
  t.equal(answer.status, 200, 'a message that is there is answered');
  t.ok(answer.elapsedMs < wokenBeforeMs, `without waiting out the 10 s (${answer.elapsedMs} ms)`);
  t.equal(answer.headers['x-svc-wait-clamped'], '10s', 'X-Svc-Wait-Clamped: 10s');
});

t.test('a waiter is woken by a nack of another consumer', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  await produce(client, topic, '{"n":1}');
  const held = await consumeMessage(client, topic);
  const waiting = consume(client, topic, '?wait=10s');
  await sleep(300);
  t.equal((await ack(client, topic, held.receipt_handle, '0')).status, 204, 'the holder nacks');
  const answer = await waiting;
  t.equal(answer.status, 200, 'the waiter gets the message');
  t.equal(answer.message && place(answer.message), place(held), 'the nacked message');
  t.ok(answer.elapsedMs < wokenBeforeMs, `before the 10 s wait ended (${answer.elapsedMs} ms)`);
  t.not(answer.message?.receipt_handle, held.receipt_handle, 'under a new handle');
});

t.test('a waiter is woken by the lease expiry of another consumer', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic, { visibility_timeout_ms: 1000 });
  await produce(client, topic, '{"n":1}');
  // Taken before the lease is asked for, so the lease surely starts after it whatever the answer's delay.
  const leasedAt = Date.now();
  const held = await consumeMessage(client, topic);
  const answer = await consume(client, topic, '?wait=10s');
  const sinceLease = Date.now() - leasedAt;
  t.equal(answer.status, 200, 'the waiter gets the message');
  t.equal(answer.message && place(answer.message), place(held), 'the expired message');
  t.ok(sinceLease >= 990, `not before the 1 s lease ran out (${sinceLease} ms after asking for it)`);
  t.ok(answer.elapsedMs < wokenBeforeMs, `before the 10 s wait ended (${answer.elapsedMs} ms)`);
  t.equal((await ack(client, topic, held.receipt_handle)).status, 410, 'the old handle is gone');
});

t.test('a client that aborts its long poll takes no lease', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const poll = abortableConsume(node.url, node.auth, topic, '?wait=5s');
  await sleep(300);
  poll.abort();
  const result = await poll.done;
  t.ok(result.aborted, 'the poll was aborted');
  await sleep(100);
  await produce(client, topic, '{"after":"abort"}');
  // A lease taken by the gone poll would hide the message for the 30 s visibility timeout: this would answer 204.
  const answer = await consume(client, topic, '?wait=10s');
  t.equal(answer.status, 200, `a fresh consume gets the message (${answer.elapsedMs} ms)`);
  t.same(answer.message?.payload, { after: 'abort' });
});

t.test('a message produced right as its waiter aborts is released, not lost to the gone client', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  for (let round = 0; round < 5; round++) {
    const poll = abortableConsume(node.url, node.auth, topic, '?wait=10s');
    await sleep(100);
    const produced = produce(client, topic, JSON.stringify({ round }));
    poll.abort();
    await produced;
    await poll.done;
    const answer = await consume(client, topic, '?wait=10s');
    t.equal(answer.status, 200, `round ${round}: the message is deliverable (${answer.elapsedMs} ms)`);
    t.same(answer.message?.payload, { round }, `round ${round}: that message`);
    if (answer.message) await ack(client, topic, answer.message.receipt_handle);
  }
});

t.test('a message nacked right as its waiter aborts is released, not lost to the gone client', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  await produce(client, topic, '{"n":1}');
  let held = await consumeMessage(client, topic);
  for (let round = 0; round < 5; round++) {
    const poll = abortableConsume(node.url, node.auth, topic, '?wait=10s');
    await sleep(100);
    const nacked = ack(client, topic, held.receipt_handle, '0');
    poll.abort();
    t.equal((await nacked).status, 204, `round ${round}: nack`);
    await poll.done;
    // Not after a visibility timeout (30 s): a lease lost to the gone poll would make this 204.
    const answer = await consume(client, topic, '?wait=10s');
    t.equal(answer.status, 200, `round ${round}: the message is deliverable again (${answer.elapsedMs} ms)`);
    if (!answer.message) break;
    t.equal(place(answer.message), place(held), `round ${round}: that message`);
    held = answer.message;
  }
});

t.test('with http.max_consume_wait=1s a wait of 10s is clamped: 204 after about 1 s with X-Svc-Wait-Clamped: 1s', async (t) => {
  const { client: shortClient } = await NodeWithClient.start(t, { args: ['--set', 'http.max_consume_wait=1s'] });
  const topic = nextTopic();
  await createTopicWith(shortClient, topic);
  const answer = await consume(shortClient, topic, '?wait=10s');
  t.equal(answer.status, 204, '204');
  t.equal(answer.headers['x-svc-wait-clamped'], '1s', 'X-Svc-Wait-Clamped: 1s');
  t.ok(answer.elapsedMs >= 900, `not before 1 s (${answer.elapsedMs} ms)`);
  t.ok(answer.elapsedMs < wokenBeforeMs, `before 10 s (${answer.elapsedMs} ms)`);
  const within = await consume(shortClient, topic, '?wait=500ms');
  t.equal(within.status, 204, 'a wait under the maximum');
  t.equal(within.headers['x-svc-wait-clamped'], undefined, 'is not clamped');
  const exact = await consume(shortClient, topic, '?wait=1s');
  t.equal(exact.headers['x-svc-wait-clamped'], undefined, 'a wait equal to the maximum is not clamped');
});

t.test('a topic deleted while a long poll waits on it: the poll answers 404 at once', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const waiting = consume(client, topic, '?wait=10s');
  await sleep(300);
  t.equal((await client.req(`/v1/topics/${topic}`, { method: 'DELETE' })).status, 204, 'the topic is deleted');
  const answer = await waiting;
  assertError(t, answer, 404, `topic ${topic} not found`);
  t.ok(answer.elapsedMs < wokenBeforeMs, `before its 10 s wait ended (${answer.elapsedMs} ms)`);
});

t.test('a poll whose wait ended takes nothing later: the next message goes to the next consumer at once', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const ended = await consume(client, topic, '?partition=0&wait=300ms');
  t.equal(ended.status, 204, 'the wait ends empty');
  await produce(client, topic, '{"after":"wait"}', '?partition=0');
  // A lease of it taken by the ended poll would hide it for the 30 s visibility timeout: this would answer 204.
  const next = await consume(client, topic, '?partition=0&wait=10s');
  t.equal(next.status, 200, `the next consume gets it: no lease went to the ended poll (${next.elapsedMs} ms)`);
  t.same(next.message?.payload, { after: 'wait' });
});

t.test('a long poll on one partition is woken by a message of that partition only', async (t) => {
  const topic = nextTopic();
  await createTopicWith(client, topic);
  const untouched = consume(client, topic, '?partition=1&wait=1s');
  const waiting = consume(client, topic, '?partition=2&wait=10s');
  await sleep(300);
  await produce(client, topic, '{"on":0}', '?partition=0');
  const quiet = await untouched;
  t.equal(quiet.status, 204, `the poll on partition 1 stays empty to its wait's end (${quiet.elapsedMs} ms)`);
  await produce(client, topic, '{"on":2}', '?partition=2');
  const answer = await waiting;
  t.equal(answer.status, 200, `200 (body ${answer.text.slice(0, 200)})`);
  t.same(answer.message?.payload, { on: 2 }, "its own partition's message");
  t.equal(answer.message?.partition, 2);
  const other = await consume(client, topic, '?partition=0&wait=10s');
  t.same(other.message?.payload, { on: 0 }, "the other partition's message is still there for its own consumer");
});

t.test('with two partition workers, long polls over the whole topic and on each partition are woken by produces', async (t) => {
  const { client: ownClient } = await NodeWithClient.start(t, { args: ['--workers', '2'] });
  const topic = nextTopic();
  // Eight partitions: over two workers they are all on one only with probability 2/256.
  await createTopicWith(ownClient, topic, { partitions: 8 });
  const perPartition = Array.from({ length: 8 }, (_, p) => consume(ownClient, topic, `?partition=${p}&wait=10s`));
  await sleep(300);
  for (let p = 0; p < 8; p++) await produce(ownClient, topic, JSON.stringify({ p }), `?partition=${p}`);
  const partitionAnswers = await Promise.all(perPartition);
  t.same(partitionAnswers.map((a) => a.status), Array(8).fill(200), 'every partition poll answered 200');
  t.same(partitionAnswers.map((a) => a.message?.payload), Array.from({ length: 8 }, (_, p) => ({ p })), 'each with its partition\'s message');
  t.ok(partitionAnswers.every((a) => a.elapsedMs < wokenBeforeMs), `all before their wait ended (${partitionAnswers.map((a) => a.elapsedMs).join(', ')} ms)`);
  const wholeTopic = Array.from({ length: 3 }, () => consume(ownClient, topic, '?wait=10s'));
  await sleep(300);
  for (let i = 0; i < 3; i++) await produce(ownClient, topic, JSON.stringify({ i }), `?partition=${5 + i}`);
  const topicAnswers = await Promise.all(wholeTopic);
  t.same(topicAnswers.map((a) => a.status), [200, 200, 200], 'every whole-topic poll answered 200');
  t.same(topicAnswers.map((a) => (a.message?.payload as { i: number } | undefined)?.i).sort(), [0, 1, 2], 'the three messages, one each');
  t.ok(topicAnswers.every((a) => a.elapsedMs < wokenBeforeMs), `all before their wait ended (${topicAnswers.map((a) => a.elapsedMs).join(', ')} ms)`);
});

t.test('graceful shutdown answers a waiting long poll at once with 204, then exits 0', async (t) => {
  const { node: own, client: ownClient } = await NodeWithClient.start(t);
  const topic = nextTopic();
  await createTopicWith(ownClient, topic);
  const waiting = consume(ownClient, topic, '?wait=10s');
  await sleep(300);
  const stopped = own.stop();
  const answer = await waiting;
  t.equal(answer.status, 204, 'the waiting consume is answered');
  t.ok(answer.elapsedMs < wokenBeforeMs, `before its 10 s wait ended (${answer.elapsedMs} ms)`);
  t.equal(await stopped, 0, 'the node exits 0');
});
