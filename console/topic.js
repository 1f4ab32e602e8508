// A topic's page: its settings, partition statistics, fan-out children with their lag, a produce form for test
// messages, a peek that replays one record by partition and offset (never a lease: nothing is taken from
// consumers), and the schema history.
import { api, topicPath } from './api.js';
import { field, fields, h, message, pretty, show, table } from './dom.js';
import { errorBox, stillCurrent } from './page.js';

function when(seconds) {
  return typeof seconds === 'number' ? new Date(seconds * 1000).toISOString().replace('.000Z', 'Z') : '';
}

function retention(ms) {
  return ms === 0 ? 'forever' : `${ms / 3_600_000} h`;
}

export async function renderTopic(el, name, token) {
  show(el, h('h1', null, `Topic ${name}`), h('p', { className: 'muted' }, 'Loading…'));
  try {
    const topic = (await api('GET', topicPath(name))).data;
    if (!stillCurrent(token)) return;
    const stats = h('section', { className: 'panel', id: 'stats' });
    const refresh = () => refreshStats(stats, name, token);
    show(el,
      h('h1', null, `Topic ${name} `, h('button', { className: 'plain', type: 'button', onclick: refresh }, 'Refresh')),
      h('section', { className: 'panel' }, h('h2', null, 'Settings'), settings(topic)),
      stats,
      producePanel(name, topic.partitions, refresh),
      peekPanel(name, topic),
      schemaPanel(name));
    drawStats(stats, name, topic);
  } catch (error) {
    if (stillCurrent(token)) show(el, h('h1', null, `Topic ${name}`), errorBox(error), h('a', { href: '#/topics' }, 'Back to topics'));
  }
}

function settings(topic) {
  return fields([
    ['ID', topic.id], ['Owner', topic.owner ?? '(none)'], ['Role', topic.role], ['Partitions', String(topic.partitions)],
    ['Retention', retention(topic.retention_ms)], ['Visibility timeout', `${topic.visibility_timeout_ms} ms`],
    ['Max in flight / partition', String(topic.max_in_flight_per_partition)],
    ['Max acked ahead / partition', String(topic.max_acked_ahead_per_partition)], ['Created', when(topic.created_at)],
    ['Parent', topic.parent], ['Fan-out delay', topic.fanout_delay_ms === undefined ? undefined : `${topic.fanout_delay_ms} ms`],
    ['Schema version', String(topic.schema_version ?? 0)],
  ]);
}

async function refreshStats(panel, name, token) {
  try {
    const topic = (await api('GET', topicPath(name))).data;
    if (stillCurrent(token)) await drawStats(panel, name, topic);
  } catch (error) {
    if (stillCurrent(token)) show(panel, h('h2', null, 'Partitions'), errorBox(error));
  }
}

async function drawStats(panel, name, topic) {
  const rows = (topic.partition_stats ?? []).map((p) => [p.index, p.owner_node,
    p.status === 'ok' ? 'ok' : h('span', { className: 'bad' }, `${p.status} (${p.owner_liveness ?? '?'})`),
    p.oldest_offset, p.high_watermark, p.next_offset, p.high_watermark - p.oldest_offset, p.size_bytes, p.segments, when(p.oldest_segment_at)]);
  const parts = [h('h2', null, 'Partitions'), topic.partial ? message('error', 'Partial: some partition owners are down.') : null,
    table(['#Partition', 'Owner node', 'Status', '#Oldest offset', '#High watermark', '#Next offset', '#Messages held', '#Bytes',
      '#Segments', 'Oldest segment'], rows, { id: 'partitions' })];
  if (topic.role === 'parent') parts.push(await childrenTable(name));
  show(panel, parts);
}

async function childrenTable(name) {
  try {
    const { data } = await api('GET', topicPath(name, '/children'));
    const rows = data.children.map((c) => [h('a', { href: `#/topic/${encodeURIComponent(c.name)}` }, c.name), c.delay_ms,
      c.lag_complete ? c.lag_messages : `at least ${c.lag_messages}`, c.state ?? '']);
    return h('div', null, h('h2', null, 'Fan-out children'), table(['Child', '#Delay ms', '#Lag (messages not yet copied)', 'State'], rows, { id: 'children' }));
  } catch (error) {
    return h('div', null, h('h2', null, 'Fan-out children'), errorBox(error));
  }
}

function producePanel(name, partitions, afterProduce) {
  const body = h('textarea', { name: 'body', placeholder: '{"hello": "world"}' });
  const type = h('select', { name: 'content-type' }, h('option', { value: 'application/json' }, 'JSON'),
    h('option', { value: 'application/octet-stream' }, 'raw bytes (text as UTF-8)'));
  const key = h('input', { name: 'key', placeholder: '(none)' });
  const partition = h('input', { name: 'partition', type: 'number', min: 0, max: partitions - 1, placeholder: '(by key or spread)' });
  const status = h('div', { id: 'produce-status' });
  const form = h('form', { id: 'produce', onsubmit: async (e) => {
    e.preventDefault();
    const query = new URLSearchParams();
    if (key.value !== '') query.set('key', key.value);
    if (partition.value !== '') query.set('partition', partition.value);
    const q = query.toString() === '' ? '' : `?${query}`;
    try {
      const res = await api('POST', topicPath(name, `/produce${q}`), { raw: body.value, contentType: type.value });
      show(status, message('ok', `Accepted (${res.status}): synced to the node's ingress log.`));
      afterProduce();
    } catch (error) {
      show(status, errorBox(error));
    }
  } }, field('Message', body), field('Content type', type), field('Key', key), field('Partition', partition),
  h('button', { type: 'submit' }, 'Produce'));
  return h('section', { className: 'panel' }, h('h2', null, 'Produce a test message'), form, status);
}

function peekPanel(name, topic) {
  const partition = h('select', { name: 'partition' },
    Array.from({ length: topic.partitions }, (_, i) => h('option', { value: String(i) }, String(i))));
  const firstOffset = () => topic.partition_stats?.find((p) => p.index === Number(partition.value))?.oldest_offset ?? 0;
  const offset = h('input', { name: 'offset', type: 'number', min: 0, value: String(firstOffset()) });
  partition.addEventListener('change', () => (offset.value = String(firstOffset())));
  const result = h('div', { id: 'peek-result' });
  const peek = async (step) => {
    offset.value = String(Math.max(0, Number(offset.value) + step));
    show(result, h('p', { className: 'muted' }, 'Reading…'));
    try {
      const res = await api('GET', topicPath(name, `/consume?partition=${partition.value}&offset=${offset.value}`));
      show(result, res.status === 204 ? message('ok', 'No record at this offset yet (past the end).') : record(res.data));
    } catch (error) {
      show(result, error.status === 410 ? message('error', '410: this offset has aged out of retention.') : errorBox(error));
    }
  };
  const form = h('form', { id: 'peek', onsubmit: (e) => { e.preventDefault(); void peek(0); } },
    field('Partition', partition), field('Offset', offset), h('button', { type: 'submit' }, 'Peek'),
    h('button', { type: 'button', className: 'plain', onclick: () => peek(-1) }, '← Previous'),
    h('button', { type: 'button', className: 'plain', onclick: () => peek(1) }, 'Next →'));
  return h('section', { className: 'panel' }, h('h2', null, 'Peek'),
    h('p', { className: 'muted' }, 'Replays one stored record by partition and offset; takes no lease, so consumers are not affected.'),
    form, result);
}

function record(msg) {
  const rest = Object.entries(msg).filter(([k]) => k !== 'payload').map(([k, v]) => [k, k === 'timestamp' ? `${v} (${when(v)})` : String(v)]);
  return h('div', { className: 'record' }, fields(rest), h('h3', null, 'Payload'),
    typeof msg.payload === 'string' ? h('pre', null, msg.payload) : pretty(msg.payload));
}

function schemaPanel(name) {
  const panel = h('section', { className: 'panel', id: 'schema' }, h('h2', null, 'Schema history'), h('p', { className: 'muted' }, 'Loading…'));
  api('GET', topicPath(name, '/schema')).then(({ data }) => {
    const versions = [...data.versions].reverse();
    show(panel, h('h2', null, `Schema history (current version ${data.version})`),
      versions.length === 0 ? h('p', { className: 'muted' }, 'No schema: any payload is accepted.')
        : versions.map((v) => h('details', { open: v.version === data.version }, h('summary', null, `Version ${v.version}`), pretty(v.schema))));
  }, (error) => show(panel, h('h2', null, 'Schema history'), errorBox(error)));
  return panel;
}
