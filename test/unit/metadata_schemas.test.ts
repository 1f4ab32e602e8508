// Goal: schema histories in the pure metadata state machine (spec §2 Schema history, §3 Schema version, §8 limits):
// a create with a schema holds version 1, a PATCH's schema group appends version N+1 after the other groups, a
// schema_base_version other than the current one is 409, a version registered between the front's compatibility
// check and the write refuses the change, 1000 versions, 4 MiB per topic and 256 MiB per cluster refuse the next one
// and leave the state as it was, a delete drops the history, and a snapshot carries histories byte for byte.
// Method: apply commands to a fresh state and check results and the state left behind; encode and decode snapshots.
import t from 'tap';
import { unpack } from 'msgpackr';
import { limits } from '../../src/config.js';
import type { MetadataState, TopicCreateRecord } from '../../src/protocol/metadata_types.js';
import { currentSchemaOf } from '../../src/metadata/schemas.js';
import { decodeMetadataSnapshot, encodeMetadataSnapshot } from '../../src/metadata/snapshot.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';

function topic(name: string, id: string): TopicCreateRecord {
  return { name, id, partitions: 3, retentionMs: 0, visibilityTimeoutMs: 30_000, maxInFlightPerPartition: 1024,
    maxAckedAheadPerPartition: 1024, createdAtSec: 1, owners: [1, 1, 1] };
}

function fresh(): MetadataState {
  const state = emptyMetadataState();
  applyCommand(state, { type: 'member.add', member: { id: 1, apiAddress: 'a:1', internalAddress: 'a:2', addedAtMs: 1 } });
  return state;
}

const v1 = '{"type":"object"}';
const v2 = '{"type":["object","array"]}';

function patchSchema(state: MetadataState, document: string, checkedAgainst: number, baseVersion?: number) {
  return applyCommand(state, { type: 'topic.update', name: 's', id: '00000000000000aa',
    changes: { schema: { document, checkedAgainst, ...(baseVersion === undefined ? {} : { baseVersion }) } } });
}

t.test('create with a schema holds version 1; PATCH appends version 2', async (t) => {
  const state = fresh();
  t.ok(applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa'), schema: v1 }).ok);
  t.same(currentSchemaOf(state, '00000000000000aa'), { version: 1, document: v1 });
  t.ok(patchSchema(state, v2, 1).ok);
  t.same(state.schemas.get('00000000000000aa'), { documents: [v1, v2], bytes: v1.length + v2.length });
});

t.test('a create without a schema is version 0; the first PATCH registers version 1', async (t) => {
  const state = fresh();
  t.ok(applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa') }).ok);
  t.same(currentSchemaOf(state, '00000000000000aa'), { version: 0, document: null });
  t.ok(patchSchema(state, v1, 0, 0).ok);
  t.same(currentSchemaOf(state, '00000000000000aa'), { version: 1, document: v1 });
});

t.test('schema_base_version other than current: 409, nothing registered; other groups stay applied', async (t) => {
  const state = fresh();
  applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa'), schema: v1 });
  const result = applyCommand(state, { type: 'topic.update', name: 's', id: '00000000000000aa',
    changes: { retentionMs: 7_200_000, schema: { document: v2, checkedAgainst: 1, baseVersion: 3 } } });
  t.same(result, { ok: false, refusal: { id: 'schemaBaseVersionMismatch', args: [1, 3] } });
  t.equal(state.schemas.get('00000000000000aa')?.documents.length, 1);
  t.equal(state.topics.get('s')?.retentionMs, 7_200_000, 'retention applied before the schema group');
});

t.test('a version registered after the front checked: refused for the front to check again', async (t) => {
  const state = fresh();
  applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa'), schema: v1 });
  t.ok(patchSchema(state, v2, 1).ok);
  t.same(patchSchema(state, '{}', 1), { ok: false, refusal: { id: 'schemaChangedUnderRequest', args: ['s'] } });
  t.equal(state.schemas.get('00000000000000aa')?.documents.length, 2);
});

t.test(`${limits.schema_versions_max} versions: the next is 409`, async (t) => {
  const state = fresh();
  applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa'), schema: '{"maximum":0}' });
  const refused: number[] = [];
  for (let v = 1; v < limits.schema_versions_max; v++) if (!patchSchema(state, `{"maximum":${v}}`, v).ok) refused.push(v + 1);
  t.same(refused, [], `versions 2 to ${limits.schema_versions_max} registered`);
  t.same(patchSchema(state, '{}', limits.schema_versions_max), { ok: false, refusal: { id: 'schemaVersionsFull', args: [limits.schema_versions_max] } });
  t.equal(state.schemas.get('00000000000000aa')?.documents.length, limits.schema_versions_max);
});

t.test('byte budgets: per topic and per cluster, on create and on PATCH', async (t) => {
  const state = fresh();
  const big = `{"description":"${'d'.repeat(200 * 1024)}"}`;
  applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa'), schema: big });
  let version = 1;
  while (state.schemas.get('00000000000000aa')!.bytes + big.length <= limits.schema_topic_history_bytes_max) {
    t.ok(patchSchema(state, big, version++).ok);
  }
  t.same(patchSchema(state, big, version), { ok: false, refusal: { id: 'schemaTopicBudget', args: [limits.schema_topic_history_bytes_max] } });
  // The cluster's budget counts every history: fill it with a history whose byte count says so.
  state.schemas.set('00000000000000bb', { documents: ['{}'], bytes: limits.schema_cluster_history_bytes_max - state.schemas.get('00000000000000aa')!.bytes });
  const created = applyCommand(state, { type: 'topic.create', topic: topic('t', '00000000000000cc'), schema: v1 });
  t.same(created, { ok: false, refusal: { id: 'schemaClusterBudget', args: [limits.schema_cluster_history_bytes_max] } });
  t.notOk(state.topics.has('t'), 'a refused create leaves no topic behind');
});

t.test('delete drops the history; a recreated topic starts at version 0', async (t) => {
  const state = fresh();
  applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa'), schema: v1 });
  t.ok(applyCommand(state, { type: 'topic.delete', name: 's', id: '00000000000000aa' }).ok);
  t.equal(state.schemas.size, 0);
  applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000dd') });
  t.same(currentSchemaOf(state, '00000000000000dd'), { version: 0, document: null });
});

t.test('snapshot: histories round-trip; none leaves the older bytes', async (t) => {
  const state = fresh();
  applyCommand(state, { type: 'topic.create', topic: topic('s', '00000000000000aa') });
  const without = encodeMetadataSnapshot(state);
  t.notOk('schemas' in (unpack(without) as object), 'no schemas key while no topic has a schema');
  patchSchema(state, v1, 0);
  patchSchema(state, v2, 1);
  const decoded = decodeMetadataSnapshot(encodeMetadataSnapshot(state));
  t.same(decoded.schemas.get('00000000000000aa'), { documents: [v1, v2], bytes: v1.length + v2.length });
  t.same(encodeMetadataSnapshot(decoded), encodeMetadataSnapshot(state), 'byte for byte');
});
