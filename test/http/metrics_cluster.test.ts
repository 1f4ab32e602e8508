// Goal: the series the alert rules and the dashboard read for the cluster's health (deploy/prometheus/rules.yml
// SvcNoRaftLeader, SvcMemberDead, SvcNodeNotReady) say what they claim in the states they alert on: on a healthy
// 3-node cluster exactly one node has svc_raft_leader 1, every node is ready with 3 members alive; a killed node
// shows as dead in svc_cluster_members; with a majority gone the last node reports no leader and not ready.
// Method: black box on 3 real node processes on loopback (member_dead_after 2 s), scraping each node's /metrics;
// every wait bounded.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

t.test('leader, readiness and member liveness series on a 3-node cluster', async (t) => {
  const { cluster, leader } = await TestCluster.started(t, 3);
  t.ok(await cluster.membersAlive(leader), '3 alive members');
  const scrape = async (id: number): Promise<string> => (await cluster.client(id).get('/metrics')).text;

  const healthy = await eventually(async () => {
    const texts = await Promise.all([1, 2, 3].map(scrape));
    return texts.every((text, i) => value(text, 'svc_raft_leader') === (i + 1 === leader ? 1 : 0)
      && value(text, 'svc_node_ready') === 1 && value(text, 'svc_cluster_members{liveness="alive"}') === 3
      && value(text, 'svc_cluster_members{liveness="dead"}') === 0);
  }, 10_000, 200);
  t.ok(healthy, `node ${leader} alone has svc_raft_leader 1; every node ready with 3 members alive`);

  const followers = [1, 2, 3].filter((id) => id !== leader);
  await cluster.kill(followers[0]!);
  const dead = await eventually(async () => {
    const text = await scrape(leader);
    return value(text, 'svc_cluster_members{liveness="dead"}') === 1 && value(text, 'svc_cluster_members{liveness="alive"}') === 2;
  }, 15_000, 200);
  t.ok(dead, `the leader reports node ${followers[0]} dead: 1 dead, 2 alive`);
  t.equal(value(await scrape(leader), 'svc_raft_leader'), 1, 'the leader still leads with 2 of 3 voters');

  await cluster.kill(followers[1]!);
  const leaderless = await eventually(async () => {
    const text = await scrape(leader);
    return value(text, 'svc_raft_leader') === 0 && value(text, 'svc_node_ready') === 0;
  }, 20_000, 250);
  t.ok(leaderless, 'with 2 of 3 nodes gone the last one leads no more and is not ready');
  const readyz = await cluster.client(leader).get('/readyz');
  t.equal(readyz.status, 503, '/readyz agrees');
});
