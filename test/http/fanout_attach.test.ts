// Goal: fan-out attach and detach as spec §3 (Topic role, attach rules), §4 (POST /v1/topics with parent and
// fanout_delay_ms, Fan-out children routes, DELETE topic, Produce), §8 (delay and children limits) and NOTES 7 and 14
// state them (issue 30 point 1 and the metadata rules of point 3): every Topic fan-out field, every status code, the
// children listing and its lag, re-attach starting fresh, and the 409 of a direct produce to a
// delay child with its rejection counter.
// Method: black box. One secured node for the whole file, the root admin as caller; each subtest uses its own topic
// names. Messages produced to a parent are awaited through get-topic's high watermarks before an attach reads them.
import t, { type Test } from 'tap';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, assertError, pollUntil } from '../helpers/http.js';
import { metricSample } from '../helpers/metric_sample.js';

let node: StartedNode;
let api: Client;
const hourMs = 3_600_000;
const delayMax = 31_536_000_000;

t.before(async () => {
  node = await startNodeFor(t);
  api = new Client(node.url, node.auth);
});

async function create(t: Test, body: Record<string, unknown>): Promise<Record<string, any>> {
  const res = await api.post('/v1/topics', body);
  t.equal(res.status, 201, `create ${String(body.name)} (got ${res.text.slice(0, 200)})`);
  return res.json();
}

async function read(name: string): Promise<Record<string, any>> {
  const res = await api.get(`/v1/topics/${name}`);
  if (res.status !== 200) throw new Error(`GET ${name}: ${res.status} ${res.text}`);
  return res.json();
}

async function attach(t: Test, parent: string, body: Record<string, unknown>, status = 200): Promise<Record<string, any>> {
  const res = await api.post(`/v1/topics/${parent}/children`, body);
  t.equal(res.status, status, `attach ${JSON.stringify(body)} to ${parent} (got ${res.text.slice(0, 200)})`);
  return res.status === 200 ? res.json() : {};
}

/** Produces n messages to partition p and waits until the partition's high watermark shows them. */
async function produce(t: Test, topic: string, partition: number, n: number): Promise<void> {
  const before = (await read(topic)).partition_stats[partition].high_watermark as number;
  for (let i = 0; i < n; i++) {
    const res = await api.post(`/v1/topics/${topic}/produce?partition=${partition}`, `{"n":${i}}`);
    t.equal(res.status, 202, `produce to ${topic}/${partition}`);
  }
  const seen = await pollUntil(async () => {
    const hw = (await read(topic)).partition_stats[partition].high_watermark as number;
    return hw >= before + n ? hw : undefined;
  }, 10_000);
  t.equal(seen, before + n, `${topic}/${partition} committed ${n} more`);
}

async function children(name: string): Promise<Record<string, any>> {
  const res = await api.get(`/v1/topics/${name}/children`);
  if (res.status !== 200) throw new Error(`GET children of ${name}: ${res.status} ${res.text}`);
  return res.json();
}

t.test('create with parent: 201 child with every fan-out field; the parent lists it', async (t) => {
  await create(t, { name: 'fa-p', partitions: 4 });
  await produce(t, 'fa-p', 1, 2);
  const child = await create(t, { name: 'fa-c', parent: 'fa-p' });
  t.equal(child.role, 'child');
  t.equal(child.parent, 'fa-p');
  t.equal(child.partitions, 4, 'default partitions: the parent count');
  t.match(child.attach_epoch, /^[0-9a-f]{16}$/);
  t.same(child.attach_offsets, [0, 2, 0, 0], 'the parent high watermark per partition');
  t.notOk('fanout_delay_ms' in child, 'no delay');
  t.notOk('children' in child);
  const parent = await read('fa-p');
  t.equal(parent.role, 'parent');
  t.same(parent.children, ['fa-c']);
  t.notOk('parent' in parent || 'attach_epoch' in parent || 'attach_offsets' in parent, 'no child fields on a parent');
  const again = await read('fa-c');
  t.same([again.role, again.parent, again.attach_epoch, again.attach_offsets], ['child', 'fa-p', child.attach_epoch, [0, 2, 0, 0]]);
  const listed = (await api.get('/v1/topics')).json().topics.find((x: { name: string }) => x.name === 'fa-c');
  t.equal(listed?.role, 'child', 'the listing carries role too');
  const delay = await create(t, { name: 'fa-d', parent: 'fa-p', fanout_delay_ms: 60_000, partitions: 3 });
  t.equal(delay.fanout_delay_ms, 60_000);
  t.equal(delay.partitions, 3, 'an explicit count wins');
  t.same((await read('fa-p')).children, ['fa-c', 'fa-d'], 'attach order');
  t.same(await children('fa-p'), { parent: 'fa-p', children: [
    { name: 'fa-c', delay_ms: 0, lag_messages: 0, lag_complete: true },
    { name: 'fa-d', delay_ms: 60_000, lag_messages: 0, lag_complete: true },
  ] });
});

t.test('create with parent: 404, 400 and 409 refusals; a refused attach part creates nothing', async (t) => {
  assertError(t, await api.post('/v1/topics', { name: 'fb-x', parent: 'fb-none' }), 404, 'fb-none', 'missing parent');
  await create(t, { name: 'fb-p', retention_ms: 2 * hourMs });
  assertError(t, await api.post('/v1/topics', { name: 'fb-x', fanout_delay_ms: 5 }), 400, 'fanout_delay_ms', 'delay without parent');
  assertError(t, await api.post('/v1/topics', { name: 'fb-x', parent: 'fb-p', fanout_delay_ms: delayMax + 1 }), 400, 'fanout_delay_ms', 'over the maximum');
  assertError(t, await api.post('/v1/topics', { name: 'fb-x', parent: 'fb-p', fanout_delay_ms: -1 }), 400, 'fanout_delay_ms', 'negative');
  assertError(t, await api.post('/v1/topics', { name: 'fb-x', parent: 'fb-p', fanout_delay_ms: hourMs + 1 }), 409, 'retention', 'retention cannot hold');
  assertError(t, await api.post('/v1/topics', { name: 'fb-x', parent: 'fb-p', schema: { type: 'object' } }), 409, 'schema history', 'schema under a parent without');
  t.equal((await api.get('/v1/topics/fb-x')).status, 404, 'the refused creates left no topic');
  const exact = await create(t, { name: 'fb-x', parent: 'fb-p', fanout_delay_ms: hourMs });
  t.equal(exact.fanout_delay_ms, hourMs, 'retention exactly delay + 1 hour holds');
  assertError(t, await api.post('/v1/topics', { name: 'fb-g', parent: 'fb-x' }), 409, 'child', 'no grandchildren');
  t.equal((await api.get('/v1/topics/fb-g')).status, 404);
  assertError(t, await api.post('/v1/topics', { name: 'fb-x', parent: 'fb-p' }), 409, 'exists', 'name exists');
});

t.test('attach route: 200 parent Topic; body rules; 404; rules of spec §3 as 409', async (t) => {
  await create(t, { name: 'fc-p', retention_ms: 0 });
  await produce(t, 'fc-p', 2, 3);
  await create(t, { name: 'fc-a' });
  await create(t, { name: 'fc-b' });
  await create(t, { name: 'fc-q' });
  const parent = await attach(t, 'fc-p', { child: 'fc-a' });
  t.equal(parent.name, 'fc-p');
  t.equal(parent.role, 'parent');
  t.same(parent.children, ['fc-a']);
  const child = await read('fc-a');
  t.same(child.attach_offsets, [0, 0, 3]);
  assertError(t, await api.post('/v1/topics/fc-p/children', { child: 'fc-b', fanout_delay_ms: 5 }), 400, 'fanout_delay_ms', 'the create field');
  assertError(t, await api.post('/v1/topics/fc-p/children', { child: 'fc-b', delay_ms: delayMax + 1 }), 400, 'delay_ms', 'over max');
  assertError(t, await api.post('/v1/topics/fc-p/children', { child: 'fc-b', delay_ms: 'x' }), 400, 'delay_ms', 'not an integer');
  assertError(t, await api.post('/v1/topics/fc-p/children', {}), 400, 'child', 'child missing');
  assertError(t, await api.post('/v1/topics/fc-p/children', { child: 'fc-b', bogus: 1 }), 400, 'bogus', 'unknown field');
  assertError(t, await api.post('/v1/topics/fc-p/children', { child: 'fc-none' }), 404, 'fc-none', 'child missing');
  assertError(t, await api.post('/v1/topics/fc-none/children', { child: 'fc-b' }), 404, 'fc-none', 'parent missing');
  assertError(t, await api.post('/v1/topics/fc-q/children', { child: 'fc-a' }), 409, 'already a child', 'one parent per child');
  assertError(t, await api.post('/v1/topics/fc-p/children', { child: 'fc-a' }), 409, 'already a child', 'not twice');
  assertError(t, await api.post('/v1/topics/fc-a/children', { child: 'fc-b' }), 409, 'a child has no children', 'child as parent');
  assertError(t, await api.post('/v1/topics/fc-q/children', { child: 'fc-p' }), 409, 'a child has no children', 'parent as child');
  assertError(t, await api.post('/v1/topics/fc-b/children', { child: 'fc-b' }), 409, 'itself', 'self');
  const big = await api.post('/v1/topics/fc-p/children', Buffer.alloc(1_048_577, 0x20), { contentType: 'application/json' });
  t.equal(big.status, 400, 'spec §8: oversized attach body is 400');
  const withDelay = await attach(t, 'fc-p', { child: 'fc-b', delay_ms: delayMax });
  t.same(withDelay.children, ['fc-a', 'fc-b'], 'retention 0 holds the longest delay');
  t.equal((await read('fc-b')).fanout_delay_ms, delayMax);
});

t.test('detach: 204, child standalone with its messages; 404 when not linked; re-attach starts fresh', async (t) => {
  await create(t, { name: 'fd-p' });
  await create(t, { name: 'fd-c', parent: 'fd-p' });
  const first = await read('fd-c');
  await produce(t, 'fd-c', 0, 1);
  await produce(t, 'fd-p', 0, 2);
  // Copying (issue 30 point 2) takes the lag to 0: both parent messages are copied into the child.
  const listed = await pollUntil(async () => {
    const entry = (await children('fd-p')).children[0];
    return entry?.lag_messages === 0 ? entry : undefined;
  }, 10_000);
  t.same(listed, { name: 'fd-c', delay_ms: 0, lag_messages: 0, lag_complete: true }, 'lag: every parent message above the attach point copied');
  await pollUntil(async () => ((await read('fd-c')).partition_stats[0].high_watermark >= 3 ? true : undefined), 10_000);
  t.equal((await api.delete('/v1/topics/fd-p/children/fd-c')).status, 204);
  const child = await read('fd-c');
  t.equal(child.role, 'standalone');
  t.notOk('parent' in child || 'attach_epoch' in child || 'attach_offsets' in child, 'no child fields');
  t.equal(child.partition_stats[0].high_watermark, 3, 'the child keeps its messages (its own and the two copies)');
  const parent = await read('fd-p');
  t.equal(parent.role, 'standalone', 'NOTES 7: the last child gone, the parent is standalone');
  t.notOk('children' in parent);
  t.same(await children('fd-p'), { parent: 'fd-p', children: [] });
  assertError(t, await api.delete('/v1/topics/fd-p/children/fd-c'), 404, 'not a child', 'not linked');
  assertError(t, await api.delete('/v1/topics/fd-p/children/fd-none'), 404, 'fd-none', 'no such child');
  assertError(t, await api.delete('/v1/topics/fd-none/children/fd-c'), 404, 'fd-none', 'no such parent');
  await attach(t, 'fd-p', { child: 'fd-c' });
  const again = await read('fd-c');
  t.not(again.attach_epoch, first.attach_epoch, 'a new epoch');
  t.same(again.attach_offsets, [2, 0, 0], 'the new attach point');
  t.same((await children('fd-p')).children[0].lag_messages, 0, 'nothing to copy from before the attach');
});

t.test('schemas: adopted, equal or refused; the parent manages the child schema while attached', async (t) => {
  const v1 = { type: 'object' };
  const v2 = { type: ['object', 'array'] };
  await create(t, { name: 'fe-p', schema: v1 });
  const adopted = await create(t, { name: 'fe-c', parent: 'fe-p' });
  t.same([adopted.schema_version, adopted.schema], [1, v1], 'a create without schema adopts the parent history');
  await create(t, { name: 'fe-same', schema: v1 });
  await create(t, { name: 'fe-other', schema: v2 });
  await attach(t, 'fe-p', { child: 'fe-same' });
  assertError(t, await api.post('/v1/topics/fe-p/children', { child: 'fe-other' }), 409, 'schema history', 'different history');
  assertError(t, await api.patch('/v1/topics/fe-c', { schema: v2 }), 409, 'managed by its parent', 'PATCH of a child schema');
  const mixed = await api.patch('/v1/topics/fe-c', { retention_ms: 2 * hourMs, schema: v2 });
  assertError(t, mixed, 409, 'managed', 'retention group then the managed schema');
  t.equal((await read('fe-c')).retention_ms, 2 * hourMs, 'the earlier group stays applied');
  t.equal((await api.patch('/v1/topics/fe-p', { schema: v2 })).status, 200);
  for (const name of ['fe-c', 'fe-same']) {
    const history = (await api.get(`/v1/topics/${name}/schema`)).json();
    t.same(history.versions.map((v: { schema: unknown }) => v.schema), [v1, v2], `${name} follows its parent`);
  }
  t.equal((await api.delete('/v1/topics/fe-p/children/fe-c')).status, 204);
  const v3 = { type: ['object', 'array', 'string'] };
  t.equal((await api.patch('/v1/topics/fe-c', { schema: v3 })).status, 200, 'detached: manages its schema again');
  t.equal((await api.get('/v1/topics/fe-c/schema')).json().version, 3, 'history kept across the detach');
  t.equal((await api.get('/v1/topics/fe-p/schema')).json().version, 2, 'the parent is untouched');
});

t.test('delay children: parent retention PATCH below delay + 1 hour is 409; direct produce is 409 and counted', async (t) => {
  await create(t, { name: 'ff-p', retention_ms: 3 * hourMs });
  await create(t, { name: 'ff-d', parent: 'ff-p', fanout_delay_ms: 2 * hourMs });
  await create(t, { name: 'ff-o', parent: 'ff-p' });
  assertError(t, await api.patch('/v1/topics/ff-p', { retention_ms: 3 * hourMs - 1 }), 409, 'retention', 'lowered below');
  t.equal((await read('ff-p')).retention_ms, 3 * hourMs, 'unchanged');
  t.equal((await api.patch('/v1/topics/ff-p', { retention_ms: 4 * hourMs })).status, 200, 'raising is fine');
  t.equal((await api.patch('/v1/topics/ff-d', { retention_ms: hourMs })).status, 200, "the child's own retention is free");
  t.equal((await api.patch('/v1/topics/ff-d', { fanout_delay_ms: 1 })).status, 400, 'the delay cannot change');
  assertError(t, await api.post('/v1/topics/ff-d/produce', '{}'), 409, 'delay child', 'single produce');
  assertError(t, await api.post('/v1/topics/ff-d/produce/batch', { messages: [{ payload: 1 }] }), 409, 'delay child', 'batch produce');
  t.equal((await api.post('/v1/topics/ff-o/produce', '{}')).status, 202, 'an ordinary child takes direct produce');
  const metrics = (await api.get('/metrics')).text;
  t.equal(metricSample(metrics, 'svc_produce_rejections_total', { topic: 'ff-d', reason: 'delayed_child' }), 2, 'both refusals counted');
  t.equal((await api.delete('/v1/topics/ff-p/children/ff-d')).status, 204);
  t.equal((await api.post('/v1/topics/ff-d/produce', '{}')).status, 202, 'detached: an ordinary topic');
});

t.test('deleting a parent removes its links; deleting a child unlinks it', async (t) => {
  await create(t, { name: 'fg-p' });
  await create(t, { name: 'fg-a', parent: 'fg-p' });
  await create(t, { name: 'fg-b', parent: 'fg-p' });
  t.equal((await api.delete('/v1/topics/fg-a')).status, 204);
  t.same((await read('fg-p')).children, ['fg-b']);
  t.equal((await api.delete('/v1/topics/fg-p')).status, 204);
  const orphan = await read('fg-b');
  t.equal(orphan.role, 'standalone');
  t.notOk('parent' in orphan);
  await create(t, { name: 'fg-p' });
  t.equal((await read('fg-p')).role, 'standalone', 'a recreated parent has no children');
  await attach(t, 'fg-p', { child: 'fg-b' });
});

t.test('a parent takes at most 108 children (409 for the next)', async (t) => {
  await create(t, { name: 'fh-p' });
  for (let i = 0; i < 108; i++) {
    const res = await api.post('/v1/topics', { name: `fh-c${i}`, parent: 'fh-p' });
    if (res.status !== 201) t.fail(`child ${i}: ${res.status} ${res.text}`);
  }
  t.equal((await read('fh-p')).children.length, 108);
  assertError(t, await api.post('/v1/topics', { name: 'fh-over', parent: 'fh-p' }), 409, '108', 'create of the 109th');
  await create(t, { name: 'fh-over' });
  assertError(t, await api.post('/v1/topics/fh-p/children', { child: 'fh-over' }), 409, '108', 'attach of the 109th');
});

t.test("a parent's growth gives its children an attach offset of 0 per new partition; listing a missing parent is 404", async (t) => {
  await create(t, { name: 'fi-p' });
  await produce(t, 'fi-p', 0, 1);
  await create(t, { name: 'fi-c', parent: 'fi-p', partitions: 3 });
  t.equal((await api.patch('/v1/topics/fi-p', { partitions: 5 })).status, 200);
  const child = await read('fi-c');
  t.same(child.attach_offsets, [1, 0, 0, 0, 0], 'one offset per parent partition');
  t.equal(child.partitions, 3, "the child's own count is its own");
  assertError(t, await api.get('/v1/topics/fi-none/children'), 404, 'fi-none', 'no such parent');
});
