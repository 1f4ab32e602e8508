// Goal: schema registration over HTTP (spec §3 Schema version, §4 create, PATCH, get-topic, GET .../schema, §8
// limits; NOTES 1; issue 28 point 1): a create with a schema holds version 1; PATCH registers a compatible new version,
// refuses an incompatible one with 400 naming keyword and location, registers nothing for an identical or
// annotation-only one (200); schema_base_version other than current is 409; documents ajv cannot compile, over
// 256 KiB, deeper than 64 levels, with a catastrophic pattern, or null are 400 and change nothing; the 4 MiB history
// budget is 409; a deleted topic's history goes with it.
// Method: black box on a started node as the root admin.
import t from 'tap';
import { Client, assertError } from '../helpers/http.js';
import { startNodeFor } from '../helpers/node.js';

const node = await startNodeFor(t);
const client = new Client(node.url, node.auth);

const closed = { type: 'object', properties: { id: { type: 'integer' } }, required: ['id'], additionalProperties: false };
const widened = { ...closed, properties: { id: { type: 'integer' }, note: { type: 'string' } } };

async function history(topic: string): Promise<{ version: number; versions: { version: number; schema: unknown }[] }> {
  const res = await client.get(`/v1/topics/${topic}/schema`);
  if (res.status !== 200) throw new Error(`schema history: ${res.status} ${res.text}`);
  return res.json() as { version: number; versions: { version: number; schema: unknown }[] };
}

t.test('create with a schema: version 1 in create, get-topic and the history', async (t) => {
  const created = await client.post('/v1/topics', { name: 'sr-created', schema: closed });
  t.equal(created.status, 201, created.text);
  t.match(created.json(), { schema_version: 1, schema: closed });
  t.match((await client.get('/v1/topics/sr-created')).json(), { schema_version: 1, schema: closed });
  t.same(await history('sr-created'), { topic: 'sr-created', version: 1, versions: [{ version: 1, schema: closed }] });
});

t.test('a topic without a schema: version 0, no schema field, empty history', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-none' })).status, 201);
  const got = (await client.get('/v1/topics/sr-none')).json() as Record<string, unknown>;
  t.equal(got.schema_version, 0);
  t.notOk('schema' in got);
  t.same(await history('sr-none'), { topic: 'sr-none', version: 0, versions: [] });
});

const unregistrable: [string, unknown, string][] = [
  ['null', null, 'schema'],
  ['an array', [1], 'schema'],
  ['a type ajv does not know', { type: 'objec' }, 'compile'],
  ['an unknown keyword (strict mode)', { type: 'object', colour: 'red' }, 'unknown keyword'],
  ['over 256 KiB', { type: 'object', description: 'd'.repeat(256 * 1024) }, '262144 bytes'],
  ['deeper than 64 levels', nested(65), '64 levels'],
  ['a catastrophic pattern', { type: 'string', pattern: '^(a+)+$' }, 'pattern at /pattern'],
];
function nested(levels: number): unknown {
  let schema: Record<string, unknown> = { type: 'object' };
  for (let i = 1; i < levels; i++) schema = { type: 'object', properties: { n: schema } };
  return schema;
}
for (const [what, schema, mentions] of unregistrable) {
  t.test(`create with ${what}: 400, no topic`, async (t) => {
    const name = `sr-bad-${unregistrable.findIndex(([w]) => w === what)}`;
    assertError(t, await client.post('/v1/topics', { name, schema }), 400, mentions);
    t.equal((await client.get(`/v1/topics/${name}`)).status, 404);
  });
}

t.test('schema true is a document: version 1', async (t) => {
  const created = await client.post('/v1/topics', { name: 'sr-true', schema: true });
  t.equal(created.status, 201, created.text);
  t.same(await history('sr-true'), { topic: 'sr-true', version: 1, versions: [{ version: 1, schema: true }] });
});

t.test('schema_base_version that is not a non-negative integer: 400, nothing registered', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-base-bad', schema: closed })).status, 201);
  for (const base of [-1, 1.5, '1', null]) {
    assertError(t, await client.patch('/v1/topics/sr-base-bad', { schema: widened, schema_base_version: base }), 400, 'schema_base_version');
  }
  t.equal((await history('sr-base-bad')).version, 1);
});

t.test('a draft-07 document is accepted through $schema', async (t) => {
  const schema = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', items: [{ type: 'string' }] };
  const created = await client.post('/v1/topics', { name: 'sr-draft07', schema });
  t.equal(created.status, 201, created.text);
});

t.test('PATCH: compatible registers N+1; incompatible 400 naming keyword and location; annotations 200', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-patch', schema: closed })).status, 201);
  const compatible = await client.patch('/v1/topics/sr-patch', { schema: widened });
  t.equal(compatible.status, 200, compatible.text);
  t.match(compatible.json(), { schema_version: 2, schema: widened });
  const narrowed = { ...widened, required: ['id', 'note'] };
  assertError(t, await client.patch('/v1/topics/sr-patch', { schema: narrowed }), 400, 'required at');
  const annotated = await client.patch('/v1/topics/sr-patch', { schema: { ...widened, title: 'orders', description: 'why' } });
  t.equal(annotated.status, 200, annotated.text);
  t.equal((annotated.json() as { schema_version: number }).schema_version, 2, 'annotation-only registers nothing');
  const same = await client.patch('/v1/topics/sr-patch', { schema: widened });
  t.equal((same.json() as { schema_version: number }).schema_version, 2, 'identical registers nothing');
  t.same((await history('sr-patch')).versions.map((v) => v.version), [1, 2]);
});

t.test('the open-object surprise: adding a typed property to an open object is refused', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-open', schema: { type: 'object' } })).status, 201);
  assertError(t, await client.patch('/v1/topics/sr-open', { schema: { type: 'object', properties: { a: { type: 'string' } } } }), 400, 'properties at /properties/a');
});

t.test('schema_base_version: other than current 409; equal 200', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-base', schema: closed })).status, 201);
  assertError(t, await client.patch('/v1/topics/sr-base', { schema: widened, schema_base_version: 0 }), 409, 'schema_base_version');
  t.equal((await history('sr-base')).version, 1, 'nothing registered');
  const matched = await client.patch('/v1/topics/sr-base', { schema: widened, schema_base_version: 1 });
  t.equal(matched.status, 200, matched.text);
  t.equal((matched.json() as { schema_version: number }).schema_version, 2);
});

t.test('PATCH groups: retention applies before a refused schema group', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-groups', schema: closed })).status, 201);
  assertError(t, await client.patch('/v1/topics/sr-groups', { retention_ms: 7_200_000, schema: { type: 'string' } }), 400, 'schema');
  t.equal(((await client.get('/v1/topics/sr-groups')).json() as { retention_ms: number }).retention_ms, 7_200_000);
  assertError(t, await client.patch('/v1/topics/sr-groups', { schema: null }), 400, 'schema');
});

t.test('a first schema by PATCH is version 1; the 4 MiB history budget answers 409', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-budget' })).status, 201);
  const big = (maximum: number) => ({ type: 'integer', maximum, description: 'd'.repeat(250 * 1024) });
  const first = await client.patch('/v1/topics/sr-budget', { schema: big(1) });
  t.equal((first.json() as { schema_version: number }).schema_version, 1, first.text);
  let status = 200;
  let version = 1;
  for (let maximum = 2; status === 200 && maximum < 40; maximum++) {
    const res = await client.patch('/v1/topics/sr-budget', { schema: big(maximum) });
    status = res.status;
    if (status === 200) version++;
    else assertError(t, res, 409, 'schema history');
  }
  t.equal(status, 409, 'refused once the history would pass 4 MiB');
  t.equal(version, 16, '16 versions of 250 KiB fit in 4 MiB');
  t.equal((await history('sr-budget')).version, 16);
});

t.test('delete takes the history; a recreated topic starts at version 0', async (t) => {
  t.equal((await client.post('/v1/topics', { name: 'sr-gone', schema: closed })).status, 201);
  t.equal((await client.delete('/v1/topics/sr-gone')).status, 204);
  t.equal((await client.post('/v1/topics', { name: 'sr-gone' })).status, 201);
  t.same(await history('sr-gone'), { topic: 'sr-gone', version: 0, versions: [] });
});
