// Goal: issue 30's crash proof of fan-out copying (spec §1.9, §1.2): a node killed with SIGKILL while a parent with
// three children (one a delay child) takes load stores, after its restart, every parent record in each child exactly
// once: copies re-sent from an older persisted copy cursor are recognised by their source and not stored again, and
// records the kill caught before they were copied are copied after the restart.
// Method: black box, two kill cycles on one data dir. Four producers send batches of 20 to the parent until a random
// 150-500 ms have passed or 1,200 messages were sent in the cycle, then SIGKILL; restart; after the second cycle the
// parent and each child are read back whole by replay and compared by the ids the payloads carry.
import t from 'tap';
import { RestartableNode, type StartedNode } from '../helpers/node.js';
import { Client } from '../helpers/http.js';
import { readAll, waitCaughtUp, waitTotal } from '../helpers/fanout.js';

const children = ['kc-a', 'kc-b', 'kc-d'];

async function load(api: Client, nextId: { value: number }, untilMs: number, cap: number): Promise<Set<number>> {
  const acked = new Set<number>();
  const startId = nextId.value;
  const producer = async (): Promise<void> => {
    while (Date.now() < untilMs && nextId.value - startId < cap) {
      const ids = Array.from({ length: 20 }, () => nextId.value++);
      const messages = ids.map((id) => ({ payload: { id }, key: `k${id % 11}` }));
      try {
        const res = await api.post('/v1/topics/kc-p/produce/batch', JSON.stringify({ messages }), { headers: { 'content-type': 'application/json' } });
        if (res.status === 202) for (const id of ids) acked.add(id);
      } catch {
        return; // the node is gone
      }
    }
  };
  await Promise.all([producer(), producer(), producer(), producer()]);
  return acked;
}

async function killDuringLoad(node: StartedNode, nextId: { value: number }): Promise<Set<number>> {
  const api = new Client(node.url, node.auth);
  const killAtMs = Date.now() + 150 + Math.floor(Math.random() * 350);
  const loading = load(api, nextId, Date.now() + 5_000, 1_200);
  while (Date.now() < killAtMs) await new Promise((resolve) => setTimeout(resolve, 20));
  await node.kill();
  return loading;
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
    for (const id of await killDuringLoad(node, nextId)) acked.add(id);
    node = await restartable.start();
    api = new Client(node.url, node.auth);
    t.comment(`cycle ${cycle}: ${acked.size} acknowledged of ${nextId.value} sent`);
  }
  t.ok(acked.size > 0, 'some batches were acknowledged before the kills');
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
