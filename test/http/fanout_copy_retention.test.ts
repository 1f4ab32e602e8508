// Goal: spec §4 metrics svc_fanout_child_dropped_messages (issue 30 point 5): parent records the parent's retention
// deleted before they were copied are counted per parent, child and partition, the copy cursor skips to the oldest
// kept offset, and the child's lag still goes to 0.
// Method: black box, one node whose front clock runs two hours behind its workers' (test/helpers/front_clock_shift.ts):
// messages are stamped two hours old, so the parent's retention (one hour and ten seconds, the least a delay child of
// 10 s allows) deletes them at its next check (every second in test_min), while the delay child waits 10 s for them.
import t from 'tap';
import { pathToFileURL } from 'node:url';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { startNodeFor } from '../helpers/node.js';
import { Client, pollUntil } from '../helpers/http.js';
import { childrenOf, metricValue, topicOf } from '../helpers/fanout.js';

const preload = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '../helpers/front_clock_shift.js')).href;

t.test('records retention deleted before they were copied are counted dropped; the lag goes to 0', async (t) => {
  const node = await startNodeFor(t, { env: { NODE_OPTIONS: `--import=${preload}`, BROKER_TEST_FRONT_CLOCK_SHIFT_MS: String(-2 * 3_600_000) } });
  const api = new Client(node.url, node.auth);
  const delayMs = 10_000;
  t.equal((await api.post('/v1/topics', { name: 'rd-p', partitions: 3, retention_ms: 3_600_000 + delayMs })).status, 201);
  t.equal((await api.post('/v1/topics', { name: 'rd-d', parent: 'rd-p', fanout_delay_ms: delayMs })).status, 201);
  const messages = Array.from({ length: 5 }, (_, n) => ({ payload: { n }, partition: 1 }));
  const res = await api.post('/v1/topics/rd-p/produce/batch', JSON.stringify({ messages }), { headers: { 'content-type': 'application/json' } });
  t.equal(res.status, 202);
  const gone = await pollUntil(async () => {
    const stats = (await topicOf(api, 'rd-p')).partition_stats[1];
    return stats.high_watermark === 5 && stats.oldest_offset === 5 ? true : undefined;
  }, 20_000, 200);
  t.ok(gone, 'the parent committed the five records and its retention deleted them');
  const dropped = await pollUntil(async () => {
    const value = await metricValue(api, 'svc_fanout_child_dropped_messages', { parent: 'rd-p', child: 'rd-d', partition: '1' });
    return value > 0 ? value : undefined;
  }, 30_000, 200);
  t.equal(dropped, 5, 'svc_fanout_child_dropped_messages counts the five');
  t.equal(await metricValue(api, 'svc_fanout_lag_messages', { parent: 'rd-p', child: 'rd-d', partition: '1' }), 0, 'no lag left');
  t.same((await childrenOf(api, 'rd-p')).map((c) => c.lag_messages), [0], 'lag_messages 0: the cursor skipped to the oldest kept offset');
  t.equal((await topicOf(api, 'rd-d')).partition_stats[1].high_watermark, 0, 'the child got none of them');
  t.equal(await metricValue(api, 'svc_fanout_committed_total', { parent: 'rd-p', child: 'rd-d' }), 0, 'nothing counted copied');
});
