// Goal: the example deploy/nginx/broker.conf works in front of a 3-node cluster (spec 5.3: TLS ends in front of
// the service; issue 27 points 8 and 9): over HTTPS through nginx, single, chunked and gzip batch produce answer
// 202; a body over 16 MiB answers the spec's JSON 413 and a header block over 64 KiB a plain-text 431; methods the
// API does not use answer 405 with Allow from nginx; HTTP/1.0, 60 header fields and lowercase methods get an
// answer (the node's parser would drop them unanswered); a malformed chunked body is refused by nginx and stores
// nothing; nginx's passive health check takes a killed node out while every request still succeeds; a 10 s long
// poll gets a message produced during the wait, and the ack settles it.
// Method: the committed config file, only its placeholders replaced (test/helpers/proxy.ts), run by Debian's
// nginx on a free loopback port with a CA and certificate made by openssl. The long poll and ack are pinned to a
// partition, which any node forwards to its owner (issue 29).
// Fails, never skips, without nginx or openssl: scripts/install-proxies.sh installs them.
import t from 'tap';
import { TestCluster } from '../helpers/cluster.js';
import {
  adminHeaders, clusterCases, httpsSend, makeCertificates, startNginx,
} from '../helpers/proxy.js';

const expectations = { lowercaseMethodStatus: 400, manyHeadersStatus: 200 };

t.test('nginx in front of a 3-node cluster', async (t) => {
  const certs = await makeCertificates(t);
  const cluster = await TestCluster.create(t, 3);
  await cluster.startAll();
  const leader = await cluster.agreedLeader(15_000);
  if (leader === undefined) return t.fail('the 3 nodes agree on a leader within 15 s');
  // Partitions go to live members with a registered record: every node then owns one of a 3-partition topic, so
  // a round-robin produce (no partition given) is served by whichever node nginx picks.
  t.ok(await cluster.membersAlive(leader), '3 alive members');
  const proxy = await startNginx(t, cluster.running().map((id) => `127.0.0.1:${cluster.nodes.get(id)!.port}`), certs);

  await clusterCases(t, cluster, leader, proxy, 'nx', 1, expectations);

  // Passive health check: a killed node refuses connections; nginx passes each request (a produce too: nothing was
  // sent) to the next node and marks the dead one failed for fail_timeout.
  await cluster.kill(3);
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) {
    statuses.push((await httpsSend(proxy, 'GET', '/readyz')).status);
    statuses.push((await httpsSend(proxy, 'POST', '/v1/topics/nx-main/produce', { headers: adminHeaders({ 'content-type': 'application/json' }), body: `{"after":${i}}` })).status);
  }
  t.same(statuses, Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? 200 : 202)), `with node 3 killed, every request succeeds (${statuses.join(',')})`);
  const log = await proxy.output();
  t.match(log, /connect\(\) failed \(111: Connection refused\)/, 'nginx saw node 3 refuse a connection');
  t.match(log, /upstream server temporarily disabled/, 'and took it out (max_fails)');
});
