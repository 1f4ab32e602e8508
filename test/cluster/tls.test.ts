// Goal: mutual TLS between nodes (issue 31 point 5, spec §4 Health and metrics): 3 nodes with certificates of one
// CA elect a leader, replicate a topic create and forward a produce over it, export
// svc_raft_tls_cert_not_after_seconds for the leaf and the CA with the certificates' dates, and log no
// "unencrypted" warning; a node whose certificate another CA signed cannot join (the members refuse its connections,
// never list it, and log why); a node with TLS settings cannot join a cluster without them; a node whose certificate
// has expired answers /readyz 200 with degraded raft_tls_certificate_expired (and raft_tls_ca_expired when its CA
// has too); a node without TLS logs that its internal port is unencrypted and exports no such series; a key that is
// not the certificate's, or one TLS setting alone, ends the start with status 2 and the reason. Method: black box on real node processes on loopback; certificates made by openssl
// in a temp dir (expired ones with `openssl ca [-selfsign] -startdate -enddate`).
import t from 'tap';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TestCluster, eventually } from '../helpers/cluster.js';
import { Client } from '../helpers/http.js';
import { makeDataDir, removeDataDir, startNode } from '../helpers/node.js';
import { makeCa, makeNodeCert, tlsArgs, type NodeTlsFiles } from '../helpers/tls_certs.js';

interface Stats { index: number; owner_node: string; next_offset: number }

const dir = await mkdtemp(join(tmpdir(), 'svc-tls-cluster-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const ca = await makeCa(dir, 'cluster-ca');
const nodeFiles = new Map<number, NodeTlsFiles>();
for (const id of [1, 2, 3]) nodeFiles.set(id, await makeNodeCert(ca, `node-${id}`));
const argsOf = (id: number): string[] => (nodeFiles.has(id) ? tlsArgs(nodeFiles.get(id)!) : []);

async function notAfterSeconds(pemFile: string): Promise<number> {
  return Math.floor(Date.parse(new X509Certificate(await readFile(pemFile)).validTo) / 1000);
}

function gauge(metrics: string, kind: string): number | undefined {
  const match = new RegExp(`^svc_raft_tls_cert_not_after_seconds\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(metrics);
  return match === null ? undefined : Number(match[1]);
}

t.test('3 nodes over mutual TLS: leader, replicated create, forwarded produce, certificate dates', async (t) => {
  const cluster = await TestCluster.create(t, 3, [], { argsOf });
  await cluster.startAll();
  const leader = await cluster.agreedLeader(15_000);
  if (leader === undefined) return t.fail('a leader within 15 s');
  t.ok(await cluster.allReady(15_000), 'all 3 ready');
  t.ok(await cluster.membersAlive(leader), 'the leader lists all 3 alive');
  await cluster.settled();
  t.equal((await cluster.client(leader).post('/v1/topics', { name: 'sealed', partitions: 3 })).status, 201);
  t.ok(await cluster.visibleOnAll('/v1/topics/sealed', 10_000), 'the create replicated to every node');
  const owners = ((await cluster.client(leader).get('/v1/topics/sealed')).json() as { partition_stats: Stats[] })
    .partition_stats.map((p) => Number(p.owner_node));
  const via = [1, 2, 3].find((id) => id !== owners[0])!;
  // At once, no retry: every node's copy of the leader's liveness view lists every member alive (settled above).
  t.equal((await cluster.client(via).post('/v1/topics/sealed/produce?partition=0', { over: 'tls' })).status, 202,
    `produce to partition 0 (owner ${owners[0]}) through node ${via}`);
  const stored = await eventually(async () => {
    const res = await cluster.client(owners[0]!).get('/v1/topics/sealed/consume?partition=0&offset=0');
    return res.status === 200 && JSON.stringify((res.json() as { payload: unknown }).payload) === '{"over":"tls"}';
  }, 10_000, 200);
  t.ok(stored, 'the owner stored the forwarded message');

  const leafSeconds = await notAfterSeconds(nodeFiles.get(via)!.certFile);
  const caSeconds = await notAfterSeconds(ca.certFile);
  const metrics = (await cluster.client(via).get('/metrics')).text;
  t.equal(gauge(metrics, 'leaf'), leafSeconds, 'the leaf notAfter in unix seconds');
  t.equal(gauge(metrics, 'ca'), caSeconds, 'the CA notAfter in unix seconds');
  const ready = await cluster.readyz(via);
  t.same(ready.body, { status: 'ready' }, 'valid certificates: no degraded field');
  for (const id of [1, 2, 3]) {
    t.match(cluster.output(id), /"tls":true[^\n]*node-to-node listener open|node-to-node listener open[^\n]*"tls":true/, `node ${id} listens with TLS`);
    t.notMatch(cluster.output(id), 'unencrypted', `node ${id} does not warn of an unencrypted port`);
  }

  const otherCa = await makeCa(dir, 'other-ca');
  const foreign = await makeNodeCert(otherCa, 'node-4');
  // It trusts both CAs (its own, as its start check wants, and the cluster's), so the refusal is the members' own:
  // its certificate is not of their CA.
  const bothCas = join(dir, 'both-cas.pem');
  await writeFile(bothCas, Buffer.concat([await readFile(otherCa.certFile), await readFile(ca.certFile)]));
  await cluster.join(4, leader, tlsArgs({ ...foreign, caFile: bothCas }));
  const refused = await eventually(async () => /client certificate refused[^\n]*node-to-node TLS handshake refused/.test(cluster.output(leader)), 30_000, 100);
  t.ok(refused, 'the member logs that it refused the client certificate');
  let listed = false;
  for (let i = 0; i < 10; i++) {
    listed ||= (await cluster.members(leader))?.some((m) => m.id === '4') ?? false;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.notOk(listed, 'the members never list node 4');
  t.notMatch(cluster.output(4), /node-to-node connection open/, 'node 4 opened no connection');
});

t.test('a node with TLS settings does not connect to a cluster without them', async (t) => {
  const cluster = await TestCluster.create(t, 1);
  await cluster.start(1);
  t.ok(await cluster.allReady(15_000));
  t.match(cluster.output(1), /node-to-node port is unencrypted/, 'the plain node says its port is unencrypted');
  t.same((await cluster.readyz(1)).body, { status: 'ready' });
  t.notMatch((await cluster.client(1).get('/metrics')).text, 'svc_raft_tls_cert_not_after_seconds', 'no TLS, no series');
  await cluster.join(2, 1, tlsArgs(nodeFiles.get(2)!));
  const refused = await eventually(async () => /node-to-node connection refused/.test(cluster.output(1)), 30_000, 100);
  t.ok(refused, 'the plain node refuses what the TLS node sends');
  let listed = false;
  for (let i = 0; i < 10; i++) {
    listed ||= (await cluster.members(1))?.some((m) => m.id === '2') ?? false;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  t.notOk(listed, 'node 2 never becomes a member');
  t.notMatch(cluster.output(2), /node-to-node connection open/, 'node 2 opened no connection');
});

t.test('an expired leaf, then an expired CA: /readyz 200 with degraded, the metric shows the dates', async (t) => {
  const expired = await makeNodeCert(ca, 'node-expired', { start: '20200101000000Z', end: '20200201000000Z' });
  const cluster = await TestCluster.create(t, 1, [], { argsOf: () => tlsArgs(expired) });
  await cluster.start(1);
  const ready = await cluster.readyzBecomes(1, 200, 15_000);
  t.same(ready?.body, { status: 'ready', degraded: ['raft_tls_certificate_expired'] });
  const metrics = (await new Client(cluster.nodes.get(1)!.url, cluster.auth).get('/metrics')).text;
  t.equal(gauge(metrics, 'leaf'), Date.UTC(2020, 1, 1) / 1000);

  const oldCa = await makeCa(dir, 'old-ca', { start: '20200101000000Z', end: '20200301000000Z' });
  const underOldCa = await makeNodeCert(oldCa, 'node-old-ca', { start: '20200101000000Z', end: '20200201000000Z' });
  const second = await TestCluster.create(t, 1, [], { argsOf: () => tlsArgs(underOldCa) });
  await second.start(1);
  const both = await second.readyzBecomes(1, 200, 15_000);
  t.same(both?.body, { status: 'ready', degraded: ['raft_tls_certificate_expired', 'raft_tls_ca_expired'] });
  const secondMetrics = (await new Client(second.nodes.get(1)!.url, second.auth).get('/metrics')).text;
  t.equal(gauge(secondMetrics, 'ca'), Date.UTC(2020, 2, 1) / 1000);
});

t.test('wrong TLS files end the start with status 2 and the reason', async (t) => {
  const dataDir = await makeDataDir();
  t.teardown(() => removeDataDir(dataDir));
  const mismatched = { ...nodeFiles.get(1)!, keyFile: nodeFiles.get(2)!.keyFile };
  await t.rejects(startNode({ dataDir, args: tlsArgs(mismatched) }),
    /exited with 2 before listening:\s*cluster\.tls_key_file \S+: is not the key of the certificate in /);
  await t.rejects(startNode({ dataDir, args: ['--cluster-tls-cert', nodeFiles.get(1)!.certFile] }),
    /exited with 2 before listening:\s*config: cluster\.tls_cert_file given without cluster\.tls_key_file and cluster\.tls_ca_file/);
});
