// Goal: a topic delete removes its files on every node (spec §4 DELETE topic: "deletes metadata and data on every
// node"; issue 29 point 7): with every node up, each owner's `<data-dir>/topics/<id>/` goes; a node that was down when
// the delete committed keeps its files until it comes back and removes them once its replica applies the delete (from
// log entries, or from a snapshot the leader installs after compacting its log past the delete); and a
// topic recreated under the same name (a new id), even while that node was down, never shows an old record through
// any node, not even one another node held for a stopped owner across the delete and handed over afterwards.
// Method: black box on 3 real node processes on loopback, reading their data dirs. Produce goes to each partition's
// owner; the down node is SIGKILLed and started again on its data dir.
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';

interface Topic { id: string; partition_stats: { owner_node: string; next_offset: number }[] }

async function topicOf(cluster: TestCluster, via: number, name: string): Promise<Topic> {
  const res = await cluster.client(via).get(`/v1/topics/${name}`);
  if (res.status !== 200) throw new Error(`get ${name} through node ${via}: ${res.status} ${res.text}`);
  return res.json() as Topic;
}

function topicDir(cluster: TestCluster, node: number, id: string): string {
  return join(cluster.specs.get(node)!.dataDir, 'topics', id);
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(() => true, () => false);
}

/** Creates `name`, stores one message in each partition at its owner and waits until each is readable there. */
async function filledTopic(t: Test, cluster: TestCluster, via: number, name: string, partitions: number): Promise<{ id: string; owners: number[] }> {
  t.equal((await cluster.client(via).post('/v1/topics', { name, partitions })).status, 201, `create ${name}`);
  t.ok(await cluster.visibleOnAll(`/v1/topics/${name}`, 10_000), `${name} on every node`);
  const topic = await topicOf(cluster, via, name);
  const owners = topic.partition_stats.map((p) => Number(p.owner_node));
  for (let p = 0; p < partitions; p++) {
    t.equal((await cluster.client(owners[p]!).post(`/v1/topics/${name}/produce?partition=${p}`, { old: p })).status, 202);
  }
  for (let p = 0; p < partitions; p++) {
    const stored = await eventually(async () => (await cluster.client(owners[p]!).get(`/v1/topics/${name}/consume?partition=${p}&offset=0`)).status === 200, 5_000);
    t.ok(stored, `${name} partition ${p} stored at its owner ${owners[p]}`);
  }
  return { id: topic.id, owners };
}

/** Recreated `name` shows nothing old through every running node: every partition empty, no replay, no consume. */
async function nothingOld(t: Test, cluster: TestCluster, name: string, oldId: string): Promise<void> {
  for (const via of cluster.running()) {
    const topic = await topicOf(cluster, via, name);
    t.not(topic.id, oldId, `node ${via}: the recreated topic has a new id`);
    t.same(topic.partition_stats.map((p) => p.next_offset), topic.partition_stats.map(() => 0), `node ${via}: every partition empty`);
    for (let p = 0; p < topic.partition_stats.length; p++) {
      const replay = await cluster.client(via).get(`/v1/topics/${name}/consume?partition=${p}&offset=0`);
      t.equal(replay.status, 204, `node ${via}: replay of partition ${p} offset 0 finds no record`);
    }
    t.equal((await cluster.client(via).get(`/v1/topics/${name}/consume`)).status, 204, `node ${via}: a consume finds nothing`);
  }
}

t.test('with every node up, a delete removes the files on every owner; a recreated topic starts empty', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.ok(await cluster.membersAlive(leader));
  const { id, owners } = await filledTopic(t, cluster, leader, 'everywhere', 6);
  t.same([...new Set(owners)].sort(), [1, 2, 3], 'every node owns a partition');
  for (const node of [1, 2, 3]) t.ok(await exists(topicDir(cluster, node, id)), `node ${node} holds the topic's directory`);

  const via = cluster.follower(leader);
  t.equal((await cluster.client(via).delete('/v1/topics/everywhere')).status, 204, 'delete through a follower');
  for (const node of [1, 2, 3]) {
    t.ok(await eventually(async () => !(await exists(topicDir(cluster, node, id))), 10_000), `node ${node}: the directory is gone`);
  }
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'everywhere', partitions: 6 })).status, 201, 'recreated');
  t.ok(await cluster.visibleOnAll('/v1/topics/everywhere', 10_000));
  await nothingOld(t, cluster, 'everywhere', id);
});

/** Topics created on node via, in parallel batches of 10, so the leader's log grows past cluster.snapshot_entries. */
async function fillers(t: Test, cluster: TestCluster, via: number, count: number): Promise<void> {
  for (let batch = 0; batch * 10 < count; batch++) {
    const names = Array.from({ length: Math.min(10, count - batch * 10) }, (_, i) => `filler-${batch * 10 + i}`);
    const statuses = await Promise.all(names.map(async (name) => (await cluster.client(via).post('/v1/topics', { name })).status));
    t.same(statuses.filter((status) => status !== 201), [], `filler batch ${batch}: every create 201`);
  }
}

/** A node down when the delete commits removes the files when it is back and its replica applies the delete. With
 *  throughSnapshot the leader's log is compacted past the delete while the node is down, and the leader is restarted
 *  before the node comes back (as test/cluster/snapshot_catch_up.test.ts does: a running transport keeps the appends
 *  it queued for the down node and would deliver them), so the node learns of the delete from an installed snapshot. */
async function deleteWhileDown(t: Test, throughSnapshot: boolean): Promise<void> {
  const cluster = await TestCluster.create(t, 3, throughSnapshot ? ['--set', 'cluster.snapshot_entries=20'] : []);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(30_000);
  if (leader === undefined) return void t.fail('a leader within 30 s');
  t.ok(await cluster.allReady(30_000), 'all 3 ready');
  t.ok(await cluster.membersAlive(leader));
  const { id, owners } = await filledTopic(t, cluster, leader, 'downdel', 6);
  const victim = cluster.follower(leader);
  t.ok(owners.includes(victim), `node ${victim} owns a partition`);
  t.ok(await exists(topicDir(cluster, victim, id)), `node ${victim} holds the topic's directory`);

  await cluster.kill(victim);
  t.equal((await cluster.client(leader).delete('/v1/topics/downdel')).status, 204, 'the delete commits with the node down');
  for (const node of cluster.running()) {
    t.ok(await eventually(async () => !(await exists(topicDir(cluster, node, id))), 10_000), `node ${node} (up): the directory is gone`);
  }
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'downdel', partitions: 6 })).status, 201, 'recreated while the node is down');
  t.ok(await exists(topicDir(cluster, victim, id)), `node ${victim} (down): its files are still there`);
  if (throughSnapshot) {
    await fillers(t, cluster, leader, 40);
    await cluster.kill(leader);
    await cluster.start(leader);
    t.ok(await cluster.agreedLeader(30_000) !== undefined, 'a leader again after the leader\'s restart');
  }

  await cluster.start(victim);
  t.ok(await eventually(async () => !(await exists(topicDir(cluster, victim, id))), 15_000), `node ${victim}: the directory is gone once it is back`);
  t.ok(await cluster.allReady(30_000), 'all 3 ready again');
  t.ok(await cluster.visibleOnAll('/v1/topics/downdel', 10_000));
  await nothingOld(t, cluster, 'downdel', id);
  t.equal(cluster.output(victim).includes('installed a snapshot from the leader'), throughSnapshot,
    throughSnapshot ? 'the node learnt of the delete from an installed snapshot' : 'the node learnt of the delete from log entries');
}

t.test('a node down during the delete removes the files when it comes back (log entries)', async (t) => {
  await deleteWhileDown(t, false);
});

t.test('a node down during the delete removes the files when it comes back (snapshot from the leader)', async (t) => {
  await deleteWhileDown(t, true);
});

t.test('a message held for a stopped owner when its topic is deleted and recreated never reaches the new topic', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.ok(await cluster.membersAlive(leader));
  const { id, owners } = await filledTopic(t, cluster, leader, 'held', 3);
  const stoppedId = cluster.follower(leader);
  const partition = owners.indexOf(stoppedId);
  t.ok(partition >= 0, `node ${stoppedId} owns a partition`);
  const stopped = cluster.nodes.get(stoppedId)!.process;
  stopped.kill('SIGSTOP');
  let held: number;
  let deleted: number;
  let recreated: number;
  try {
    // Taken by the leader and owed to the stopped owner (before membership marks it dead).
    held = (await cluster.client(leader).post(`/v1/topics/held/produce?partition=${partition}`, { old: 'held' })).status;
    deleted = (await cluster.client(leader).delete('/v1/topics/held')).status;
    recreated = (await cluster.client(leader).post('/v1/topics', { name: 'held', partitions: 3 })).status;
  } finally {
    stopped.kill('SIGCONT');
  }
  t.equal(held, 202, 'the produce for the stopped owner is taken');
  t.equal(deleted, 204, 'the delete commits while the owner is stopped');
  t.equal(recreated, 201, 'recreated while the owner is stopped');
  const handedOff = await eventually(async () => {
    const res = await cluster.client(leader).get('/v1/cluster/members?detail=true', { timeoutMs: 10_000 });
    const members = (res.json() as { members: { id: string; ingress_messages_not_handed_off?: number }[] }).members;
    return members.find((m) => m.id === String(leader))?.ingress_messages_not_handed_off === 0;
  }, 20_000);
  t.ok(handedOff, 'the leader handed the held message over once the owner ran again');
  for (const node of [1, 2, 3]) {
    t.ok(await eventually(async () => !(await exists(topicDir(cluster, node, id))), 10_000), `node ${node}: the old topic's directory is gone`);
  }
  t.ok(await cluster.visibleOnAll('/v1/topics/held', 10_000));
  await nothingOld(t, cluster, 'held', id);
});
