// Goal: spec §4 PATCH /v1/topics/{topic} applies its field groups one at a time in order (retention, caps,
// partitions, schema) with no transaction: the first failing group answers its error and the groups before it stay
// applied, the groups after it are not applied (issue 26 point 8a).
// Method: black box. One secured node for the whole file; each subtest uses its own topic, PATCHes a body whose
// later group fails, asserts the 400 and its {error} shape, then reads the topic back with GET.
import t, { type Test } from 'tap';
import { startNodeFor, type StartedNode } from '../helpers/node.js';
import { Client, assertError } from '../helpers/http.js';

let node: StartedNode;
let api: Client;

t.before(async () => {
  node = await startNodeFor(t);
  api = new Client(node.url, node.auth);
});

async function create(t: Test, name: string): Promise<void> {
  const res = await api.post('/v1/topics', { name });
  t.equal(res.status, 201, `create ${name} (got ${res.text.slice(0, 200)})`);
}

async function read(t: Test, name: string): Promise<Record<string, unknown>> {
  const res = await api.get(`/v1/topics/${name}`);
  t.equal(res.status, 200, `GET ${name} (got ${res.text.slice(0, 200)})`);
  return res.json();
}

t.test('retention applies, then partitions not larger answers 400', async (t) => {
  await create(t, 'pg-retention-then-partitions');
  const res = await api.patch('/v1/topics/pg-retention-then-partitions', { retention_ms: 7_200_000, partitions: 3 });
  assertError(t, res, 400, 'partitions', 'partitions 3 on a 3-partition topic');
  const topic = await read(t, 'pg-retention-then-partitions');
  t.equal(topic.retention_ms, 7_200_000, 'the retention group stayed applied');
  t.equal(topic.partitions, 3, 'partitions unchanged');
});

t.test('caps apply, then partitions over the maximum answers 400', async (t) => {
  await create(t, 'pg-caps-then-partitions');
  const body = { max_in_flight_per_partition: 5, max_acked_ahead_per_partition: 7, partitions: 109 };
  assertError(t, await api.patch('/v1/topics/pg-caps-then-partitions', body), 400, 'partitions', 'partitions 109');
  const topic = await read(t, 'pg-caps-then-partitions');
  t.equal(topic.max_in_flight_per_partition, 5, 'max_in_flight_per_partition stayed applied');
  t.equal(topic.max_acked_ahead_per_partition, 7, 'max_acked_ahead_per_partition stayed applied');
  t.equal(topic.partitions, 3, 'partitions unchanged');
  t.equal(topic.retention_ms, 604_800_000, 'retention untouched (not in the body)');
});

t.test('retention applies, then a failing caps group applies neither cap nor partitions', async (t) => {
  await create(t, 'pg-retention-then-caps');
  const body = { retention_ms: 3_600_000, max_in_flight_per_partition: 9, max_acked_ahead_per_partition: -1, partitions: 5 };
  assertError(t, await api.patch('/v1/topics/pg-retention-then-caps', body), 400, 'max_acked_ahead_per_partition', 'negative cap');
  const topic = await read(t, 'pg-retention-then-caps');
  t.equal(topic.retention_ms, 3_600_000, 'the retention group stayed applied');
  t.equal(topic.max_in_flight_per_partition, 1024, 'the caps group is one group: its valid cap is not applied either');
  t.equal(topic.partitions, 3, 'the partitions group after the failure is not applied');
});

t.test('a failing retention applies nothing after it', async (t) => {
  await create(t, 'pg-retention-fails');
  const body = { retention_ms: 3_599_999, max_in_flight_per_partition: 5, partitions: 5 };
  assertError(t, await api.patch('/v1/topics/pg-retention-fails', body), 400, 'retention_ms', 'short retention');
  const topic = await read(t, 'pg-retention-fails');
  t.equal(topic.retention_ms, 604_800_000, 'retention unchanged');
  t.equal(topic.max_in_flight_per_partition, 1024, 'caps not applied');
  t.equal(topic.partitions, 3, 'partitions not applied');
});

t.test('every group before a null schema applies', async (t) => {
  await create(t, 'pg-schema-null');
  const body = { retention_ms: 7_200_000, max_in_flight_per_partition: 5, partitions: 4, schema: null };
  assertError(t, await api.patch('/v1/topics/pg-schema-null', body), 400, 'schema', 'schema null');
  const topic = await read(t, 'pg-schema-null');
  t.equal(topic.retention_ms, 7_200_000, 'retention applied');
  t.equal(topic.max_in_flight_per_partition, 5, 'caps applied');
  t.equal(topic.partitions, 4, 'partitions applied');
});
