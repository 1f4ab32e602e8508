// Goal: mutual TLS on the node-to-node transport (cluster_tls.ts): two transports with certificates of one CA talk
// (messages and requests, the HMAC handshake inside TLS); a certificate of another CA, a plain peer, or a TLS dial
// to a plain listener never opens a connection, and the refusing side logs why; a chain through an intermediate CA
// works; the files are checked at load and their end dates read; the /readyz degraded entries follow the dates.
// Method: real transports on 127.0.0.1 port 0 and certificates made by openssl in a temp dir; every wait is bounded.
import t from 'tap';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clusterTlsDegraded, readClusterTlsFiles, type ClusterTlsMaterial } from '../../src/transport/cluster_tls.js';
import { makeCa, makeNodeCert, type NodeTlsFiles } from '../helpers/tls_certs.js';
import { meshOf, sleep, startNode, waitFor } from './transport_helpers.js';

const dir = await mkdtemp(join(tmpdir(), 'svc-tls-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));
const ca = await makeCa(dir, 'cluster-ca');
const otherCa = await makeCa(dir, 'other-ca');
const files = {
  a: await makeNodeCert(ca, 'node-1'),
  b: await makeNodeCert(ca, 'node-2'),
  foreign: await makeNodeCert(otherCa, 'node-3'),
};

async function material(f: NodeTlsFiles): Promise<ClusterTlsMaterial> {
  return (await readClusterTlsFiles(f)).material;
}

t.test('two transports with certificates of one CA exchange messages and requests', async (t) => {
  const a = await startNode(t, 1, { tls: await material(files.a) });
  const b = await startNode(t, 2, { tls: await material(files.b), onRequest: async (from, body) => ({ from, body }) });
  meshOf([a, b]);
  a.channel.send(2, { hello: 'over tls' });
  await waitFor(() => b.received.length === 1, 'the message');
  t.same(b.received[0], [1, { hello: 'over tls' }]);
  t.same(await a.channel.request(2, { op: 'echo' }, 2000), { from: 1, body: { op: 'echo' } });
  t.same(a.transport.connectedPeers(), [2]);
});

t.test('a certificate of another CA is refused, and the acceptor logs why', async (t) => {
  const member = await startNode(t, 1, { tls: await material(files.a) });
  const stranger = await startNode(t, 3, { tls: { ...(await material(files.foreign)), ca: (await material(files.a)).ca } });
  stranger.transport.setPeer(1, member.address);
  stranger.channel.send(1, { join: 'me' });
  await waitFor(() => member.log.find((l) => l.msg === 'node-to-node TLS handshake refused') !== undefined, 'the refusal log');
  const line = member.log.find((l) => l.msg === 'node-to-node TLS handshake refused');
  t.match(String(line?.obj['reason']), /certificate/i, `the reason names the certificate: ${String(line?.obj['reason'])}`);
  await waitFor(() => stranger.log.find((l) => l.msg === 'node-to-node dial failed') !== undefined, 'the dial failure');
  await sleep(200);
  t.same(member.received, [], 'nothing from the stranger arrived');
  t.same(member.transport.connectedPeers(), []);
  t.same(stranger.transport.connectedPeers(), []);
});

t.test('a dial to a node of another CA fails, and the dialer logs why', async (t) => {
  const member = await startNode(t, 1, { tls: await material(files.a) });
  const stranger = await startNode(t, 3, { tls: await material(files.foreign) });
  member.transport.setPeer(3, stranger.address);
  member.channel.send(3, { to: 'stranger' });
  await waitFor(() => member.log.find((l) => l.msg === 'node-to-node dial failed') !== undefined, 'the dial failure');
  const line = member.log.find((l) => l.msg === 'node-to-node dial failed');
  t.match(String(line?.obj['reason']), /certificate|verify/i, `the dialer says why: ${String(line?.obj['reason'])}`);
  t.same(stranger.received, []);
  t.same(member.transport.connectedPeers(), []);
});

t.test('TLS and plain nodes never connect, either way', async (t) => {
  const secure = await startNode(t, 1, { tls: await material(files.a) });
  const plain = await startNode(t, 2);
  plain.transport.setPeer(1, secure.address);
  secure.transport.setPeer(2, plain.address);
  plain.channel.send(1, { from: 'plain' });
  await waitFor(() => secure.log.find((l) => l.msg === 'node-to-node TLS handshake refused') !== undefined, 'refusal at the TLS node');
  secure.channel.send(2, { from: 'secure' });
  await waitFor(() => plain.log.find((l) => l.msg === 'node-to-node connection refused') !== undefined, 'refusal at the plain node');
  const atSecure = secure.log.find((l) => l.msg === 'node-to-node TLS handshake refused');
  const atPlain = plain.log.find((l) => l.msg === 'node-to-node connection refused');
  t.match(String(atSecure?.obj['reason']), /wrong version number|http request|unknown protocol|packet length/i,
    `the TLS node says it was no TLS: ${String(atSecure?.obj['reason'])}`);
  t.equal(atPlain?.obj['reason'], 'frame too large', 'the plain node reads the ClientHello as an oversize frame');
  await sleep(200);
  t.same(secure.received, []);
  t.same(plain.received, []);
  t.same(secure.transport.connectedPeers(), []);
  t.same(plain.transport.connectedPeers(), []);
});

t.test('the files are checked at load; the end dates are read', async (t) => {
  const loaded = await readClusterTlsFiles(files.a);
  const inDays = (loaded.dates.leafNotAfterMs - Date.now()) / 86_400_000;
  t.ok(inDays > 29 && inDays <= 30, `the leaf ends in 30 days (${inDays})`);
  t.ok(loaded.dates.caNotAfterMs > loaded.dates.leafNotAfterMs, 'the CA outlives the leaf');
  const expired = await makeNodeCert(ca, 'node-old', { start: '20200101000000Z', end: '20200201000000Z' });
  t.equal((await readClusterTlsFiles(expired)).dates.leafNotAfterMs, Date.UTC(2020, 1, 1), 'an expired leaf still loads');
  await t.rejects(readClusterTlsFiles({ ...files.a, keyFile: files.b.keyFile }), /is not the key of the certificate/);
  await t.rejects(readClusterTlsFiles({ ...files.foreign, caFile: ca.certFile }), /is not signed by a certificate in/);
  await t.rejects(readClusterTlsFiles({ ...files.a, caFile: join(dir, 'missing.pem') }), /cluster\.tls_ca_file .*cannot be read/);
  await t.rejects(readClusterTlsFiles({ ...files.a, certFile: files.a.keyFile }), /cluster\.tls_cert_file .*holds no PEM certificate/);
});

t.test('a certificate chain through an intermediate CA loads and talks to a node signed by the root', async (t) => {
  const intermediate = await makeCa(dir, 'intermediate-ca', undefined, ca);
  const leaf = await makeNodeCert(intermediate, 'node-5');
  const chainFile = join(dir, 'node-5-chain.pem');
  await writeFile(chainFile, Buffer.concat([await readFile(leaf.certFile), await readFile(intermediate.certFile)]));
  await t.rejects(readClusterTlsFiles({ ...leaf, caFile: ca.certFile }), /is not signed by a certificate in/, 'the leaf alone does not reach the root');
  const chained = await material({ ...leaf, certFile: chainFile, caFile: ca.certFile });
  const a = await startNode(t, 5, { tls: chained });
  const b = await startNode(t, 2, { tls: await material(files.b) });
  meshOf([a, b]);
  a.channel.send(2, 'via the chain');
  b.channel.send(5, 'to the chain');
  await waitFor(() => b.received.length === 1 && a.received.length === 1, 'both messages');
  t.same([a.received, b.received], [[[2, 'to the chain']], [[5, 'via the chain']]]);
});

t.test('degraded entries follow the end dates', async (t) => {
  const now = Date.UTC(2030, 0, 1);
  t.same(clusterTlsDegraded(null, now), [], 'no TLS, nothing to report');
  t.same(clusterTlsDegraded({ leafNotAfterMs: now + 1, caNotAfterMs: now + 1 }, now), []);
  t.same(clusterTlsDegraded({ leafNotAfterMs: now, caNotAfterMs: now }, now), [], 'valid through notAfter itself');
  t.same(clusterTlsDegraded({ leafNotAfterMs: now - 1, caNotAfterMs: now + 1 }, now), ['raft_tls_certificate_expired']);
  t.same(clusterTlsDegraded({ leafNotAfterMs: now - 1, caNotAfterMs: now - 1 }, now),
    ['raft_tls_certificate_expired', 'raft_tls_ca_expired']);
});
