// Goal: the example deploy/haproxy/haproxy.cfg works in front of a 3-node cluster (spec 5.3: TLS ends in front of
// the service; issue 27 points 8 and 9): over HTTPS through HAProxy, single, chunked and gzip batch produce answer
// 202; a body over 16 MiB answers the node's JSON 413, which the client (still sending) reads, and a header block
// over 64 KiB a plain-text 431 from HAProxy; methods the API does not use, lowercase ones
// included, answer 405 with Allow from HAProxy; HTTP/1.0 is served (through the config's internal HTTP/2 hop) and 60
// header fields served (HAProxy forwards only the fields the node reads), where the node's parser would drop both
// unanswered; a malformed chunked
// body is refused by HAProxy and stores nothing; HAProxy's HTTP/1.1 check of GET /readyz marks every node UP (its
// default HTTP/1.0 check would mark them all DOWN), marks a killed node DOWN, and requests keep succeeding; a 10 s
// long poll gets a message produced during the wait, and the ack settles it.
// Method: the committed config file, only its placeholders replaced (test/helpers/proxy.ts), run by Debian's
// HAProxy on a free loopback port with a CA and certificate made by openssl; server states read from its stats
// socket. The long poll and ack are pinned to a partition, which any node forwards to its owner (issue 29).
// Fails, never skips, without haproxy or openssl: scripts/install-proxies.sh installs them.
import t from 'tap';
import { TestCluster, eventually } from '../helpers/cluster.js';
import {
  adminHeaders, clusterCases, httpsSend, makeCertificates, startHaproxy,
} from '../helpers/proxy.js';

const expectations = { lowercaseMethodStatus: 405, manyHeadersStatus: 200 };

t.test('HAProxy in front of a 3-node cluster', async (t) => {
  const certs = await makeCertificates(t);
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(15_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 15 s');
  // Partitions go to live members with a registered record: every node then owns one of a 3-partition topic, so
  // a round-robin produce (no partition given) is served by whichever node HAProxy picks.
  t.ok(await cluster.membersAlive(leader), '3 alive members');
  const proxy = await startHaproxy(t, cluster.running().map((id) => `127.0.0.1:${cluster.nodes.get(id)!.port}`), certs);

  // The check runs every 2 s; L7OK means GET /readyz over HTTP/1.1 answered 200 (an HTTP/1.0 check gets nothing).
  const allUp = await eventually(async () => [...(await proxy.serverStatus()).values()].filter((s) => s === 'UP L7OK').length === 3, 10_000);
  t.ok(allUp, `every node UP by its HTTP/1.1 /readyz check (${JSON.stringify([...(await proxy.serverStatus()).entries()])})`);

  await clusterCases(t, cluster, leader, proxy, 'hx', 10, expectations);

  // Active health check: a killed node fails its checks and is marked DOWN (fall 2, inter 2 s); a request sent to it
  // before that finds its connection refused and is retried on another node (retry-on conn-failure, redispatch).
  await cluster.kill(3);
  const statuses: number[] = [];
  for (let i = 0; i < 3; i++) {
    statuses.push((await httpsSend(proxy, 'GET', '/readyz')).status);
    statuses.push((await httpsSend(proxy, 'POST', '/v1/topics/hx-main/produce', { headers: adminHeaders({ 'content-type': 'application/json' }), body: `{"after":${i}}` })).status);
  }
  t.same(statuses, [200, 202, 200, 202, 200, 202], `right after node 3 is killed, every request succeeds (${statuses.join(',')})`);
  const down = await eventually(async () => (await proxy.serverStatus()).get('node3')?.startsWith('DOWN') === true, 15_000);
  t.ok(down, `node 3 marked DOWN by its check (${JSON.stringify([...(await proxy.serverStatus()).entries()])})`);
  const others = await proxy.serverStatus();
  t.same([others.get('node1'), others.get('node2')], ['UP L7OK', 'UP L7OK'], 'nodes 1 and 2 stay UP');
  for (let i = 0; i < 3; i++) {
    const res = await httpsSend(proxy, 'POST', '/v1/topics/hx-main/produce', { headers: adminHeaders({ 'content-type': 'application/json' }), body: `{"down":${i}}` });
    t.equal(res.status, 202, `produce with node 3 DOWN: 202 (${res.text.slice(0, 120)})`);
  }
});
