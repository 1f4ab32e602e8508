// Goal: a node that was down while the leader compacted its log catches up through a snapshot (issue 6 "Shown
// by": "a restarted node catches up (also through a snapshot)"): with cluster.snapshot_entries=20, a follower is
// stopped (SIGTERM, exit code 0), 60 topics are created on the other two, the leader is SIGKILLed and started again
// (see Method), the follower is started again on its data dir: it logs that it installed a snapshot from the leader, lists all 60 topics (and the earlier ones), answers
// /readyz 200 and takes writes; SIGKILLed and started once more, it still has everything (the installed snapshot was
// stored).
// Method: black box on 3 real node processes on loopback (test/helpers/cluster.ts); topics are created 10 at a
// time on the leader; the listing is read page by page. Why the leader restarts: the node-to-node transport keeps
// up to 1024 messages queued for a peer that is down and delivers them when it comes back, so the appends the leader
// sent while the follower was down (entries 9, 10, ... one by one) would rebuild the follower's log without any
// snapshot. A leader process started afresh has no such queue and must send its snapshot (the compacted entries are
// gone from its log).
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import type { Client } from '../helpers/http.js';

const topicCount = 60;

/** Every topic name node lists, page by page. */
async function allTopicNames(client: Client): Promise<string[]> {
  const names: string[] = [];
  let token = '';
  for (let page = 0; page < 100; page++) {
    const res = await client.get(`/v1/topics${token === '' ? '' : `?page_token=${token}`}`);
    if (res.status !== 200) throw new Error(`GET /v1/topics: ${res.status} ${res.text}`);
    const body = res.json() as { topics: { name: string }[]; next_page_token: string };
    names.push(...body.topics.map((topic) => topic.name));
    token = body.next_page_token;
    if (token === '') break;
  }
  return names;
}

t.test('a follower down during compaction catches up through a snapshot', async (t) => {
  const cluster = await TestCluster.create(t, 3, ['--set', 'cluster.snapshot_entries=20']);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'snap-early' })).status, 201, 'a topic the stopped node has');
  t.ok(await cluster.visibleOnAll('/v1/topics/snap-early', 10_000), 'replicated');

  const down = cluster.follower(leader);
  const exitCode = await cluster.stop(down);
  t.equal(exitCode, 0, `node ${down} stopped by SIGTERM with exit code 0`);

  const expected = ['snap-early'];
  for (let batch = 0; batch < topicCount / 10; batch++) {
    const names = Array.from({ length: 10 }, (_, i) => `snap-${String(batch * 10 + i).padStart(2, '0')}`);
    const answers = await Promise.all(names.map((name) => cluster.client(leader).post('/v1/topics', { name })));
    const bad = answers.filter((res) => res.status !== 201).map((res) => `${res.status} ${res.text}`);
    t.same(bad, [], `batch ${batch}: 10 creates answer 201`);
    expected.push(...names);
  }
  expected.sort();
  const survivor = cluster.running().find((id) => id !== leader)!;
  t.ok(await cluster.visibleOnAll(`/v1/topics/snap-${topicCount - 1}`, 10_000, [survivor]), 'the other follower has them');

  await cluster.kill(leader);
  await cluster.start(leader);
  const twoAgree = await cluster.agreedLeader(30_000);
  t.ok(twoAgree !== undefined, `the two running nodes agree on a leader again (${twoAgree})`);
  t.ok(await cluster.visibleOnAll(`/v1/topics/snap-${topicCount - 1}`, 10_000), 'the restarted leader still has every topic');

  await cluster.start(down);
  const ready = await cluster.readyzBecomes(down, 200, 20_000);
  t.ok(ready !== undefined, `the restarted node ${down} answers /readyz 200 (after ${ready?.elapsedMs} ms)`);
  const hasAll = await eventually(async () => (await allTopicNames(cluster.client(down))).length === expected.length, 10_000);
  t.ok(hasAll, `the restarted node lists ${expected.length} topics`);
  t.same(await allTopicNames(cluster.client(down)), expected, 'exactly the topics of the cluster, in name order');
  t.match(cluster.output(down), /installed a snapshot from the leader/, 'its log says it installed a snapshot from the leader');
  const leaderTopic = (await cluster.client(leader).get('/v1/topics/snap-33')).json();
  const downTopic = (await cluster.client(down).get('/v1/topics/snap-33')).json();
  t.equal(downTopic.id, leaderTopic.id, 'the same topic id as on the leader');

  const created = await cluster.client(down).post('/v1/topics', { name: 'snap-after' });
  t.equal(created.status, 201, `a write on the restarted node: 201 (${created.text.slice(0, 120)})`);
  t.ok(await cluster.visibleOnAll('/v1/topics/snap-after', 10_000), 'visible on all 3');
  expected.push('snap-after');
  expected.sort();

  // From its own stored state this time: SIGKILL and start again.
  await cluster.kill(down);
  await cluster.start(down);
  t.ok(await cluster.readyzBecomes(down, 200, 20_000), 'after SIGKILL and a second start: /readyz 200');
  t.same(await allTopicNames(cluster.client(down)), expected, 'it still lists every topic');
});
