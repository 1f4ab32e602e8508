// Goal: fan-out links are durable metadata (spec §1.11): after a restart a node answers the same roles, children (in
// attach order), parents, epochs, attach offsets and delays, both when it replays its metadata log and when it
// loads them from a snapshot (cluster.snapshot_entries=2 compacts after every other entry).
// Method: black box on one secured node restarted on its data dir (RestartableNode); the fan-out fields of every
// topic are read before the stop and compared after the start.
import t from 'tap';
import { RestartableNode } from '../helpers/node.js';
import { Client } from '../helpers/http.js';

const fields = ['role', 'children', 'parent', 'attach_epoch', 'fanout_delay_ms', 'attach_offsets', 'schema_version'] as const;

async function fanoutView(api: Client, names: string[]): Promise<Record<string, unknown>[]> {
  const views: Record<string, unknown>[] = [];
  for (const name of names) {
    const res = await api.get(`/v1/topics/${name}`);
    if (res.status !== 200) throw new Error(`GET ${name}: ${res.status} ${res.text}`);
    const topic = res.json();
    views.push(Object.fromEntries(fields.filter((f) => f in topic).map((f) => [f, topic[f]])));
  }
  return views;
}

for (const [label, args] of [['log replay', []], ['snapshot', ['--set', 'cluster.snapshot_entries=2']]] as const) {
  t.test(`links survive a restart (${label})`, async (t) => {
    const restartable = await RestartableNode.create(t, { args: [...args] });
    let node = await restartable.start();
    let api = new Client(node.url, node.auth);
    const must = async (status: number, res: Promise<{ status: number; text: string }>) => {
      const answer = await res;
      t.equal(answer.status, status, answer.text.slice(0, 160));
    };
    await must(201, api.post('/v1/topics', { name: 'fr-p', schema: { type: 'object' }, retention_ms: 0 }));
    await must(202, api.post('/v1/topics/fr-p/produce?partition=1', '{}'));
    await must(201, api.post('/v1/topics', { name: 'fr-a' }));
    await must(201, api.post('/v1/topics', { name: 'fr-b' }));
    await must(201, api.post('/v1/topics', { name: 'fr-d', parent: 'fr-p', fanout_delay_ms: 90_000 }));
    await must(200, api.post('/v1/topics/fr-p/children', { child: 'fr-b' }));
    await must(200, api.post('/v1/topics/fr-p/children', { child: 'fr-a' }));
    await must(204, api.delete('/v1/topics/fr-p/children/fr-b'));
    const names = ['fr-p', 'fr-a', 'fr-b', 'fr-d'];
    const before = await fanoutView(api, names);
    t.same(before[0], { role: 'parent', children: ['fr-d', 'fr-a'], schema_version: 1 }, 'the parent before');
    t.equal(await node.stop(), 0, 'clean stop');
    node = await restartable.start();
    api = new Client(node.url, node.auth);
    t.same(await fanoutView(api, names), before, 'every fan-out field as before');
    const delayed = await api.post('/v1/topics/fr-d/produce', '{}');
    t.equal(delayed.status, 409, 'the delay child still refuses a direct produce');
  });
}
