// Goal: issue 30's crash proof of fan-out copying (spec §1.9, §1.2): a node killed with SIGKILL while a parent with
// three children (one a delay child) takes load stores, after its restart, every parent record in each child exactly
// once: copies re-sent from an older persisted copy cursor are recognised by their source and not stored again, and
// records the kill caught before they were copied are copied after the restart.
// Method: black box, two kill cycles on one data dir. Four producers send batches of 20 to the parent, each its next
// as soon as one is answered, until the node is gone; the node is SIGKILLed once a random 200 to 800 records of the
// cycle were acknowledged, so the kill lands with every producer's batch in flight and copies of the acknowledged
// records under way. Each batch's outcome is counted: 202, refused (any other answer: none is expected), or no
// answer (the kill). Restart; after the second cycle the parent and each child are read back whole by replay and
// compared by the ids the payloads carry.
import t from 'tap';
import { RestartableNode, type StartedNode } from '../helpers/node.js';
import { Client, pollUntil } from '../helpers/http.js';
import { readAll, waitCaughtUp, waitTotal } from '../helpers/fanout.js';

const children = ['kc-a', 'kc-b', 'kc-d'];
const producers = 4;

interface Outcomes {
  acked: Set<number>;
  /** Answers other than 202, by status. */
  refused: number[];
  /** Batches the kill left without an answer (a producer stops at its first). */
  unanswered: number;
}

/** One producer: batches of 20 until a batch gets no answer (the node is gone), at most 5,000 batches. */
async function produceUntilGone(api: Client, nextId: { value: number }, outcomes: Outcomes): Promise<void> {
  for (let batch = 0; batch < 5_000; batch++) {
    const ids = Array.from({ length: 20 }, () => nextId.value++);
    const messages = ids.map((id) => ({ payload: { id }, key: `k${id % 11}` }));
    try {
      const res = await api.post('/v1/topics/kc-p/produce/batch', JSON.stringify({ messages }), { headers: { 'content-type': 'application/json' } });
      if (res.status === 202) for (const id of ids) outcomes.acked.add(id);
      else outcomes.refused.push(res.status);
    } catch {
      outcomes.unanswered++;
      return;
    }
  }
}

async function killDuringLoad(node: StartedNode, nextId: { value: number }): Promise<Outcomes & { killAfter: number; underLoad: boolean }> {
  const api = new Client(node.url, node.auth);
  const outcomes: Outcomes = { acked: new Set(), refused: [], unanswered: 0 };
  const killAfter = 200 + Math.floor(Math.random() * 600);
  const loading = Promise.all(Array.from({ length: producers }, () => produceUntilGone(api, nextId, outcomes)));
  const underLoad = (await pollUntil(async () => (outcomes.acked.size >= killAfter ? true : undefined), 60_000, 5)) === true;
  await node.kill();
  await loading;
  return { ...outcomes, killAfter, underLoad };
}

t.test('SIGKILL under load: every parent record in each child exactly once after restarts', async (t) => {
  const restartable = await RestartableNode.create(t);
  let node = await restartable.start();
  let api = new Client(node.url, node.auth);
  t.equal((await api.post('/v1/topics', { name: 'kc-p', partitions: 3 })).status, 201);
  t.equal((await api.post('/v1/topics', { name: 'kc-a', parent: 'kc-p' })).status, 201);
  t.equal((await api.post('/v1/topics', { name: 'kc-b', parent: 'kc-p', partitions: 5 })).status, 201);
  t.equal((await api.post('/v1/topics', { name: 'kc-d', parent: 'kc-p', fanout_delay_ms: 1_000 })).status, 201);
  const nextId = { value: 0 };
  const acked = new Set<number>();
  for (let cycle = 1; cycle <= 2; cycle++) {
    const outcomes = await killDuringLoad(node, nextId);
    t.ok(outcomes.underLoad, `cycle ${cycle}: ${outcomes.killAfter} records acknowledged before the kill`);
    t.equal(outcomes.unanswered, producers, `cycle ${cycle}: the kill left every producer's batch in flight unanswered`);
    t.same(outcomes.refused, [], `cycle ${cycle}: no batch refused`);
    for (const id of outcomes.acked) acked.add(id);
    node = await restartable.start();
    api = new Client(node.url, node.auth);
    t.comment(`cycle ${cycle}: ${outcomes.acked.size} acknowledged, ${outcomes.unanswered} batches unanswered; ${acked.size} of ${nextId.value} sent in all`);
  }
  t.ok(await waitTotal(api, 'kc-p', acked.size, 20_000) >= acked.size, 'the parent holds at least every acknowledged record');
  t.ok(await waitCaughtUp(api, 'kc-p', 60_000), 'every child caught up after the restart');
  const parentIds = (await readAll(api, 'kc-p')).map((m) => (m.payload as { id: number }).id);
  const parentSet = new Set(parentIds);
  t.equal(parentSet.size, parentIds.length, 'the parent stored no record twice');
  t.same([...acked].filter((id) => !parentSet.has(id)).slice(0, 10), [], 'every acknowledged record is in the parent');
  for (const child of children) {
    t.equal(await waitTotal(api, child, parentIds.length, 20_000), parentIds.length, `${child}: as many records as the parent`);
    const ids = (await readAll(api, child)).map((m) => (m.payload as { id: number }).id);
    const seen = new Map<number, number>();
    for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1);
    t.same([...seen].filter(([, n]) => n > 1).slice(0, 10), [], `${child}: no record twice`);
    t.same(parentIds.filter((id) => !seen.has(id)).slice(0, 10), [], `${child}: no parent record missing`);
    t.same(ids.filter((id) => !parentSet.has(id)).slice(0, 10), [], `${child}: nothing the parent does not hold`);
  }
});
