// Goal: fan-out copying as spec §1.9, §3 and §4 (Fan-out children, metrics) state it (issue 30 points 2, 3 and 5):
// every parent message committed after the attach reaches each child exactly once, keys kept, into the child's
// partition of the same index modulo its count, in parent order per partition; a delay child never gets a message
// before the parent committed it plus the delay, and gets it eventually; detach stops copying and a re-attach starts
// from the new attach point without backfill; lag_messages and svc_fanout_lag_messages go to 0 and
// svc_fanout_committed_total counts the copies.
// Method: black box, one secured node for the file, each subtest its own topics. "Not before" is shown by replays
// whose answer arrived before the earliest moment the parent could have committed plus the delay: any of them
// holding the message fails the test. No assertion about speed.
import t from 'tap';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, pollUntil, sleep } from '../helpers/http.js';
import { childrenOf, metricValue, readAll, topicOf, waitCaughtUp, waitTotal, type ReadMessage } from '../helpers/fanout.js';

let node: StartedNode;
let api: Client;

t.before(async () => {
  node = await startNodeFor(t);
  api = new Client(node.url, node.auth);
});

async function create(body: Record<string, unknown>): Promise<void> {
  const res = await api.post('/v1/topics', body);
  if (res.status !== 201) throw new Error(`create ${JSON.stringify(body)}: ${res.status} ${res.text}`);
}

async function batch(topic: string, messages: Record<string, unknown>[]): Promise<void> {
  const res = await api.post(`/v1/topics/${topic}/produce/batch`, JSON.stringify({ messages }), { headers: { 'content-type': 'application/json' } });
  if (res.status !== 202) throw new Error(`batch to ${topic}: ${res.status} ${res.text}`);
}

/** Parent messages by their payload's n. */
function byN(messages: ReadMessage[]): Map<number, ReadMessage> {
  return new Map(messages.map((m) => [(m.payload as { n: number }).n, m]));
}

t.test('every parent message reaches each child once, keys kept, partition = index mod count, in order', async (t) => {
  await create({ name: 'cp-p', partitions: 4 });
  // Messages before the attach are never copied (spec §1.9).
  await batch('cp-p', [{ payload: { n: -1 }, partition: 0 }, { payload: { n: -2 }, partition: 3 }]);
  await waitTotal(api, 'cp-p', 2, 10_000);
  await create({ name: 'cp-same', parent: 'cp-p' });
  await create({ name: 'cp-three', parent: 'cp-p', partitions: 3 });
  await create({ name: 'cp-one', partitions: 3 });
  t.equal((await api.post('/v1/topics/cp-p/children', { child: 'cp-one' })).status, 200, 'attach an existing topic');
  let n = 0;
  for (let round = 0; round < 4; round++) {
    const messages = Array.from({ length: 50 }, () => {
      const i = n++;
      return i % 3 === 0 ? { payload: { n: i }, key: `key-${i % 7}` } : { payload: { n: i }, partition: i % 4, ...(i % 5 === 0 ? { key: `k${i}` } : {}) };
    });
    await batch('cp-p', messages);
    const res = await api.post(`/v1/topics/cp-p/produce?key=single-${round}`, JSON.stringify({ n: n++ }), { headers: { 'content-type': 'application/json' } });
    t.equal(res.status, 202);
  }
  // lag_messages counts committed parent messages: wait for the parent to commit everything first.
  t.equal(await waitTotal(api, 'cp-p', n + 2, 20_000), n + 2, 'the parent committed every message');
  t.ok(await waitCaughtUp(api, 'cp-p', 30_000), 'every child catches up (lag_messages 0)');
  const parent = (await readAll(api, 'cp-p')).filter((m) => (m.payload as { n: number }).n >= 0);
  t.equal(parent.length, n, 'the parent holds every message');
  for (const [child, count] of [['cp-same', 4], ['cp-three', 3], ['cp-one', 3]] as const) {
    // lag 0 means every copy is synced to the ingress log; the child's worker may still be writing the last ones.
    await waitTotal(api, child, n, 20_000);
    const copies = await readAll(api, child);
    const ns = copies.map((m) => (m.payload as { n: number }).n);
    t.equal(copies.length, n, `${child}: one copy per parent message after the attach`);
    t.equal(new Set(ns).size, ns.length, `${child}: no message twice`);
    t.notOk(ns.some((x) => x < 0), `${child}: nothing from before the attach`);
    const fromParent = byN(parent);
    const wrong = copies.filter((m) => {
      const p = fromParent.get((m.payload as { n: number }).n);
      return p === undefined || p.key !== m.key || p.partition % count !== m.partition;
    });
    t.same(wrong, [], `${child}: keys kept, partition = parent partition mod ${count}`);
    // Per parent partition, the copies keep the parent's order.
    for (let p = 0; p < 4; p++) {
      const parentOrder = parent.filter((m) => m.partition === p).map((m) => (m.payload as { n: number }).n);
      const childOrder = copies.filter((m) => fromParent.get((m.payload as { n: number }).n)!.partition === p).map((m) => (m.payload as { n: number }).n);
      t.same(childOrder, parentOrder, `${child}: parent partition ${p} in parent order`);
    }
    t.equal(await metricValue(api, 'svc_fanout_committed_total', { parent: 'cp-p', child }), n, `${child}: svc_fanout_committed_total`);
    t.equal(await metricValue(api, 'svc_fanout_lag_messages', { parent: 'cp-p', child }), 0, `${child}: svc_fanout_lag_messages 0`);
  }
});

t.test('a child keeps its own consumers: consuming the child leaves the parent unread', async (t) => {
  await create({ name: 'cc-p', partitions: 3 });
  await create({ name: 'cc-c', parent: 'cc-p' });
  await batch('cc-p', [{ payload: { n: 0 }, partition: 1 }]);
  await waitTotal(api, 'cc-c', 1, 10_000);
  const got = await api.get('/v1/topics/cc-c/consume');
  t.equal(got.status, 200, 'the copy is consumable in the child');
  t.same(got.json().payload, { n: 0 });
  t.equal(await metricValue(api, 'svc_consumer_lag_messages', { topic: 'cc-p', partition: '1' }), 1, 'the parent still has its message unacked');
});

t.test('a delay child never gets a message before commit + delay, and gets each eventually', async (t) => {
  // Long enough that the batch's answer comes well before the copies are due, however busy the machine: the probes
  // below need time before commit + delay to look in.
  const delayMs = 5_000;
  await create({ name: 'cd-p', partitions: 3 });
  await create({ name: 'cd-d', parent: 'cd-p', fanout_delay_ms: delayMs, partitions: 3 });
  await create({ name: 'cd-now', parent: 'cd-p', partitions: 3 });
  const sentAtMs = Date.now();
  await batch('cd-p', [{ payload: { n: 0 }, partition: 0, key: 'a' }, { payload: { n: 1 }, partition: 1 }, { payload: { n: 2 }, partition: 0 }]);
  // The parent commits at or after sentAtMs: an answer that arrived before sentAtMs + delay and holds a copy is early.
  let early = 0;
  let probes = 0;
  while (Date.now() < sentAtMs + delayMs - 100) {
    const res = await api.get('/v1/topics/cd-d/consume?partition=0&offset=0');
    const arrivedMs = Date.now();
    probes++;
    if (res.status === 200 && arrivedMs < sentAtMs + delayMs) early++;
    await sleep(50);
  }
  t.ok(probes > 0, 'probed the delay child before its messages were due');
  t.equal(early, 0, 'no copy visible before commit + delay');
  const lagDuring = (await childrenOf(api, 'cd-p')).find((c) => c.name === 'cd-d');
  t.equal(lagDuring?.delay_ms, delayMs);
  t.equal(await waitTotal(api, 'cd-d', 3, 30_000), 3, 'the delay child gets all three');
  t.ok(await waitCaughtUp(api, 'cd-p', 30_000), 'the delay child catches up');
  const copies = await readAll(api, 'cd-d');
  t.same(copies.map((m) => [m.partition, (m.payload as { n: number }).n, m.key]).sort(), [[0, 0, 'a'], [0, 2, null], [1, 1, null]]);
  // A copy's timestamp is when it reached the child: never before the earliest due second.
  for (const m of copies) t.ok(m.timestamp >= Math.floor((sentAtMs + delayMs) / 1000), `copy ${JSON.stringify(m.payload)} stamped at or after its due second`);
  t.equal((await readAll(api, 'cd-now')).length, 3, 'the ordinary sibling got all three');
});

t.test('detach stops copying; a re-attach starts at the new attach point without backfill', async (t) => {
  await create({ name: 'cr-p', partitions: 3 });
  await create({ name: 'cr-c', parent: 'cr-p' });
  await create({ name: 'cr-witness', parent: 'cr-p' });
  await batch('cr-p', [0, 1, 2].map((n) => ({ payload: { n }, partition: n % 2 })));
  await waitTotal(api, 'cr-p', 3, 20_000);
  t.ok(await waitCaughtUp(api, 'cr-p', 20_000));
  t.equal(await waitTotal(api, 'cr-c', 3, 20_000), 3);
  t.equal((await api.delete('/v1/topics/cr-p/children/cr-c')).status, 204, 'detach');
  await batch('cr-p', [3, 4].map((n) => ({ payload: { n }, partition: n % 2 })));
  t.equal(await waitTotal(api, 'cr-witness', 5, 20_000), 5, 'the attached sibling got the messages after the detach');
  t.ok(await waitCaughtUp(api, 'cr-p', 20_000));
  t.same((await readAll(api, 'cr-c')).map((m) => (m.payload as { n: number }).n).sort(), [0, 1, 2], 'the detached child got nothing more');
  const attached = await api.post('/v1/topics/cr-p/children', { child: 'cr-c' });
  t.equal(attached.status, 200, 're-attach');
  t.same((await topicOf(api, 'cr-c')).attach_offsets, [3, 2, 0], 'the new attach point');
  await batch('cr-p', [5, 6].map((n) => ({ payload: { n }, partition: n % 2 })));
  t.equal(await waitTotal(api, 'cr-c', 5, 20_000), 5);
  t.ok(await waitCaughtUp(api, 'cr-p', 20_000), 'lag 0 after the re-attach');
  t.same((await readAll(api, 'cr-c')).map((m) => (m.payload as { n: number }).n).sort(), [0, 1, 2, 5, 6], 'no backfill of 3 and 4');
});

t.test('deleting a child stops its copies; the parent and its other children go on', async (t) => {
  await create({ name: 'cx-p', partitions: 3 });
  await create({ name: 'cx-gone', parent: 'cx-p' });
  await create({ name: 'cx-stays', parent: 'cx-p' });
  await batch('cx-p', [{ payload: { n: 0 }, partition: 0 }]);
  await waitTotal(api, 'cx-p', 1, 20_000);
  t.ok(await waitCaughtUp(api, 'cx-p', 20_000));
  t.equal((await api.delete('/v1/topics/cx-gone')).status, 204);
  await batch('cx-p', [{ payload: { n: 1 }, partition: 1 }]);
  t.equal(await waitTotal(api, 'cx-stays', 2, 20_000), 2);
  t.same((await childrenOf(api, 'cx-p')).map((c) => c.name), ['cx-stays']);
  const recreated = await pollUntil(async () => ((await api.post('/v1/topics', { name: 'cx-gone', partitions: 3 })).status === 201 ? true : undefined), 5_000);
  t.ok(recreated, 'the name is free again');
  await sleep(300);
  t.equal((await readAll(api, 'cx-gone')).length, 0, 'a topic recreated under the name gets no copies');
});
