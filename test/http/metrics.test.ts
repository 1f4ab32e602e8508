// Goal: /metrics (spec §4 Health and metrics, §5.4): needs credentials on the API port, answers Prometheus text
// with the svc_* series this node keeps, consumer lag is high watermark minus the acked frontier, and consumed
// counts every message handed out under a lease (a redelivery again, a replay never); the request-duration histogram
// counts each routed answer once by route, and a single node reports itself leader, ready and its only member alive;
// every series is named svc_, process_ or go_ (spec §4) and every value is written as the text format spells it.
// Method: black box on a started node; produce, consume and ack, then scrape.
import t from 'tap';
import { startNodeFor } from '../helpers/node.js';

const node = await startNodeFor(t);
const auth = { authorization: node.auth };
const json = { ...auth, 'content-type': 'application/json' };

async function scrape(): Promise<string> {
  const res = await fetch(`${node.url}/metrics`, { headers: auth });
  t.equal(res.status, 200);
  t.match(res.headers.get('content-type') ?? '', /^text\/plain/);
  return res.text();
}

function sample(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

t.test('metrics need credentials on the API port', async (t) => {
  const res = await fetch(`${node.url}/metrics`);
  t.equal(res.status, 401);
  t.equal(res.headers.get('www-authenticate'), 'Basic realm="svc"');
});

t.test('produced counts, consumer lag and the ingress latch', async (t) => {
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'm1' }) })).status, 201);
  for (let i = 0; i < 3; i++) {
    const res = await fetch(`${node.url}/v1/topics/m1/produce?partition=1`, { method: 'POST', headers: json, body: `{"i":${i}}` });
    t.equal(res.status, 202);
  }
  // The hand-off to the partition is asynchronous: wait until the consume sees a message (bounded).
  let handle: string | undefined;
  for (let attempt = 0; attempt < 50 && handle === undefined; attempt++) {
    const res = await fetch(`${node.url}/v1/topics/m1/consume?wait=100ms`, { headers: auth });
    if (res.status === 200) handle = ((await res.json()) as { receipt_handle: string }).receipt_handle;
  }
  t.ok(handle, 'a message was consumed');
  const ack = await fetch(`${node.url}/v1/topics/m1/ack?receipt_handle=${handle}`, { method: 'POST', headers: { ...auth, 'x-svc-client': 't' } });
  t.equal(ack.status, 204);
  const text = await scrape();
  t.equal(sample(text, 'svc_messages_produced_total', 'topic="m1",partition="1"'), 3);
  t.equal(sample(text, 'svc_consumer_lag_messages', 'topic="m1",partition="1"'), 2, 'three committed, one acked');
  t.equal(sample(text, 'svc_messages_consumed_total', 'topic="m1",partition="1"'), 1, 'one message handed out under a lease');
  t.match(text, /\nsvc_ingress_wal_failed 0\n/);
  t.match(text, /\nsvc_topics_total 1\n/);
  // The metadata log index this node applied: the create above is in it, and another create moves it on.
  const applied = Number(/\nsvc_raft_applied_index (\d+)\n/.exec(text)?.[1] ?? NaN);
  t.ok(applied >= 1, `svc_raft_applied_index ${applied}`);
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'm1-next' }) })).status, 201);
  const after = Number(/\nsvc_raft_applied_index (\d+)\n/.exec(await scrape())?.[1] ?? NaN);
  t.ok(after > applied, `svc_raft_applied_index moved on with a create (${applied} -> ${after})`);
  t.equal(sample(text, 'svc_http_requests_total', 'route="/v1/topics/{topic}/produce",method="POST",status="202"'), 3, 'three produces answered 202');
});

t.test('consumed counts each hand-out under a lease: batches and redeliveries, never a replay', async (t) => {
  const client = { ...auth, 'x-svc-client': 't' };
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'm2' }) })).status, 201);
  for (let i = 0; i < 2; i++) {
    t.equal((await fetch(`${node.url}/v1/topics/m2/produce?partition=0`, { method: 'POST', headers: json, body: `{"i":${i}}` })).status, 202);
  }
  let handles: string[] = [];
  for (let attempt = 0; attempt < 50 && handles.length < 2; attempt++) {
    const res = await fetch(`${node.url}/v1/topics/m2/consume?partition=0&max=2&wait=100ms`, { headers: client });
    if (res.status === 200) handles = handles.concat(((await res.json()) as { messages: { receipt_handle: string }[] }).messages.map((m) => m.receipt_handle));
  }
  t.equal(handles.length, 2, 'both messages leased');
  t.equal(sample(await scrape(), 'svc_messages_consumed_total', 'topic="m2",partition="0"'), 2);
  const nack = await fetch(`${node.url}/v1/topics/m2/ack?extend=0&receipt_handle=${handles[0]}`, { method: 'POST', headers: client });
  t.equal(nack.status, 204);
  const again = await fetch(`${node.url}/v1/topics/m2/consume?partition=0&wait=1s`, { headers: auth });
  t.equal(again.status, 200, 'the nacked message is delivered again');
  const replay = await fetch(`${node.url}/v1/topics/m2/consume?partition=0&offset=0`, { headers: auth });
  t.equal(replay.status, 200, 'a replay reads the record');
  t.equal(sample(await scrape(), 'svc_messages_consumed_total', 'topic="m2",partition="0"'), 3, 'the redelivery counts, the replay does not');
});

t.test('svc_topic_bytes: the bytes this node holds per topic, as get-topic counts them; 0 when empty, gone when deleted', async (t) => {
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'm3', partitions: 4 }) })).status, 201);
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'm3-empty' }) })).status, 201);
  t.equal(sample(await scrape(), 'svc_topic_bytes', 'topic="m3-empty"'), 0, 'a topic with no message holds 0 bytes');
  const sizeOnDisk = async (): Promise<number> => {
    const topic = (await (await fetch(`${node.url}/v1/topics/m3`, { headers: auth })).json()) as { partition_stats: { size_bytes: number }[] };
    return topic.partition_stats.reduce((sum, p) => sum + p.size_bytes, 0);
  };
  const agreed = async (): Promise<number | undefined> => {
    // Bounded by a deadline, not a count: the records reach their partitions in the background, and partition gauges
    // refresh every 5 s (spec §8), so on a busy machine this takes a while.
    for (const deadline = Date.now() + 30_000; Date.now() < deadline;) {
      const before = await sizeOnDisk();
      const metric = sample(await scrape(), 'svc_topic_bytes', 'topic="m3"');
      if (before > 0 && metric === before && (await sizeOnDisk()) === before) return metric;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return undefined;
  };
  for (let i = 0; i < 8; i++) {
    t.equal((await fetch(`${node.url}/v1/topics/m3/produce`, { method: 'POST', headers: json, body: `{"i":${i},"pad":"${'x'.repeat(200)}"}` })).status, 202);
  }
  const first = await agreed();
  t.ok(first !== undefined && first > 8 * 200, `svc_topic_bytes equals the partitions' size_bytes and holds the payloads (${first})`);
  for (let i = 0; i < 8; i++) {
    t.equal((await fetch(`${node.url}/v1/topics/m3/produce`, { method: 'POST', headers: json, body: `{"j":${i},"pad":"${'y'.repeat(200)}"}` })).status, 202);
  }
  const second = await agreed();
  t.ok(second !== undefined && first !== undefined && second >= first + 8 * 200, `it grows with more messages (${first} -> ${second})`);
  t.equal((await fetch(`${node.url}/v1/topics/m3`, { method: 'DELETE', headers: auth })).status, 204);
  t.equal(sample(await scrape(), 'svc_topic_bytes', 'topic="m3"'), undefined, 'a deleted topic has no series');
});

t.test('svc_http_request_duration_seconds: one observation per routed answer, by route; leader, ready, members', async (t) => {
  t.equal((await fetch(`${node.url}/v1/topics`, { method: 'POST', headers: json, body: JSON.stringify({ name: 'm4' }) })).status, 201);
  const route = 'route="/v1/topics/{topic}/produce"';
  const before = sample(await scrape(), 'svc_http_request_duration_seconds_count', route) ?? 0;
  for (let i = 0; i < 5; i++) {
    t.equal((await fetch(`${node.url}/v1/topics/m4/produce`, { method: 'POST', headers: json, body: `{"i":${i}}` })).status, 202);
  }
  const text = await scrape();
  t.equal(sample(text, 'svc_http_request_duration_seconds_count', route), before + 5, 'five more produce answers timed');
  const inf = sample(text, 'svc_http_request_duration_seconds_bucket', `le="+Inf",${route}`);
  t.equal(inf, before + 5, 'the +Inf bucket holds every observation');
  const buckets = text.split('\n').filter((l) => l.startsWith('svc_http_request_duration_seconds_bucket{') && l.includes(route))
    .map((l) => Number(l.slice(l.lastIndexOf(' ') + 1)));
  t.ok(buckets.length >= 16, `${buckets.length} buckets`);
  t.ok(buckets.every((count, i) => i === 0 || count >= buckets[i - 1]!), 'buckets are cumulative');
  t.ok((sample(text, 'svc_http_request_duration_seconds_sum', route) ?? -1) > 0, 'the durations add up to more than 0 s');
  t.match(text, /\nsvc_raft_leader 1\n/, 'a single node leads');
  t.match(text, /\nsvc_node_ready 1\n/, 'and is ready');
  t.equal(sample(text, 'svc_cluster_members', 'liveness="alive"'), 1);
  t.equal(sample(text, 'svc_cluster_members', 'liveness="dead"'), 0);
  t.match(text, /\nprocess_resident_memory_bytes \d+/, 'standard process series');
  t.match(text, /\nsvc_nodejs_heap_size_used_bytes \d+/, 'the Node.js runtime series, under svc_');
});

/** Prometheus text format sample values: a Go float (what ParseFloat reads, as prom-client writes it), or NaN, +Inf,
 *  -Inf spelled so. */
const sampleValue = /^(?:[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|NaN|[+-]Inf)$/;

t.test('only svc_, process_ and go_ series; every value spelled as the text format spells it, NaN included', async (t) => {
  const badNames = new Set<string>();
  const badValues: string[] = [];
  let nonFinite = 0;
  const check = (text: string): void => {
    for (const line of text.split('\n')) {
      if (line === '') continue;
      const comment = /^# (?:HELP|TYPE) (\S+)/.exec(line);
      const name = comment !== null ? comment[1]! : /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)?.[0] ?? line;
      if (!/^(?:svc|process|go)_/.test(name)) badNames.add(name);
      if (line.startsWith('#')) continue;
      const value = line.slice(line.lastIndexOf(' ') + 1);
      if (!sampleValue.test(value)) badValues.push(line);
      if (/^[+-]?(?:inf|nan)$/i.test(value)) nonFinite++;
    }
  };
  // The runtime's event loop delay mean is NaN when no delay was sampled since the previous scrape (each scrape resets
  // the monitor, which samples every 10 ms): scrapes sent together give one. Bounded.
  for (let burst = 0; burst < 50 && nonFinite === 0; burst++) {
    for (const text of await Promise.all([scrape(), scrape(), scrape()])) check(text);
  }
  t.same([...badNames], [], 'no series named outside svc_, process_ and go_');
  t.same(badValues, [], 'no sample value outside the format');
  t.ok(nonFinite > 0, `the scrapes held a non-finite value to check (${nonFinite})`);
});
