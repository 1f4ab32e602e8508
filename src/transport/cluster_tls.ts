// Mutual TLS of the node-to-node port (cluster.tls_cert_file, tls_key_file, tls_ca_file): reading and checking
// the three PEM files, the node:tls options of the listener and of a dial, and the certificate end dates the front
// reports (svc_raft_tls_cert_not_after_seconds, /readyz degraded). main.ts reads the files at boot on the front
// thread; the node-link thread's PeerTransport builds its listener and dials from the bytes it is handed.
import { open } from 'node:fs/promises';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { isIP } from 'node:net';
import { createSecureContext, type ConnectionOptions, type SecureContext, type TlsOptions } from 'node:tls';

/**
 * TLS 1.3 only: both ends are nodes of this release on Node 20's OpenSSL 3, so no older peer needs 1.2; 1.3 has
 * forward secrecy and AEAD ciphers by construction (no cipher list to get wrong) and a shorter handshake.
 */
export const clusterTlsMinVersion = 'TLSv1.3';
/** A PEM file larger than this is taken for a wrong path rather than read whole. */
const pemFileBytesMax = 1024 * 1024;

/** The PEM bytes of this node's certificate (chain), its private key and the cluster CA bundle. Plain bytes, so
 *  they cross to the node-link thread in its workerData. */
export interface ClusterTlsMaterial {
  cert: Uint8Array;
  key: Uint8Array;
  ca: Uint8Array;
}

export interface ClusterTlsFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

/** Unix milliseconds of notAfter: the leaf (first certificate of the cert file) and the CA (the earliest of the CA
 *  file's certificates, since trust in peers signed under it ends then). */
export interface ClusterTlsDates {
  leafNotAfterMs: number;
  caNotAfterMs: number;
}

export interface LoadedClusterTls {
  material: ClusterTlsMaterial;
  dates: ClusterTlsDates;
}

async function readPemFile(path: string, setting: string): Promise<Buffer> {
  try {
    const handle = await open(path, 'r');
    try {
      const { size } = await handle.stat();
      if (size > pemFileBytesMax) throw new Error(`larger than ${pemFileBytesMax} bytes`);
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  } catch (error) {
    throw new Error(`${setting} ${path}: cannot be read (${(error as Error).message})`);
  }
}

/** Every certificate of a PEM bundle, in order; throws naming the setting when there is none or one is broken. */
export function pemCertificates(pem: Uint8Array, what: string): X509Certificate[] {
  const blocks = Buffer.from(pem).toString('latin1').match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error(`${what}: holds no PEM certificate`);
  return blocks.map((block) => {
    try {
      return new X509Certificate(block);
    } catch (error) {
      throw new Error(`${what}: a certificate cannot be parsed (${(error as Error).message})`);
    }
  });
}

/**
 * Reads and checks the three files: the key must be the leaf's, and the leaf must be signed by a certificate of the
 * CA file, so a node given the wrong files stops at start with the reason instead of failing every handshake.
 * An expired certificate is accepted: the node starts and reports it (/readyz degraded).
 */
export async function readClusterTlsFiles(files: ClusterTlsFiles): Promise<LoadedClusterTls> {
  const [cert, key, ca] = await Promise.all([
    readPemFile(files.certFile, 'cluster.tls_cert_file'),
    readPemFile(files.keyFile, 'cluster.tls_key_file'),
    readPemFile(files.caFile, 'cluster.tls_ca_file'),
  ]);
  const chain = pemCertificates(cert, `cluster.tls_cert_file ${files.certFile}`);
  const leaf = chain[0]!;
  const cas = pemCertificates(ca, `cluster.tls_ca_file ${files.caFile}`);
  let privateKey;
  try {
    privateKey = createPrivateKey(key);
  } catch (error) {
    throw new Error(`cluster.tls_key_file ${files.keyFile}: not a PEM private key (${(error as Error).message})`);
  }
  if (!leaf.checkPrivateKey(privateKey)) {
    throw new Error(`cluster.tls_key_file ${files.keyFile}: is not the key of the certificate in ${files.certFile}`);
  }
  if (!chainsToCa(chain, cas)) {
    throw new Error(`cluster.tls_cert_file ${files.certFile}: is not signed by a certificate in ${files.caFile}`);
  }
  const material = { cert: new Uint8Array(cert), key: new Uint8Array(key), ca: new Uint8Array(ca) };
  // Fails here, not at the first dial, on what OpenSSL refuses (a key type or size below its security level).
  clusterTlsClientContext(material);
  const notAfter = (certificate: X509Certificate): number => Date.parse(certificate.validTo);
  return { material, dates: { leafNotAfterMs: notAfter(leaf), caNotAfterMs: Math.min(...cas.map(notAfter)) } };
}

/** The node's TLS files from its settings (config.ts requires all three or none); null without them. The error of
 *  a file that cannot be used names the setting and the path. */
export async function readClusterTlsSettings(config: {
  readonly 'cluster.tls_cert_file': string;
  readonly 'cluster.tls_key_file': string;
  readonly 'cluster.tls_ca_file': string;
}): Promise<LoadedClusterTls | null> {
  if (config['cluster.tls_cert_file'] === '') return null;
  return readClusterTlsFiles({
    certFile: config['cluster.tls_cert_file'],
    keyFile: config['cluster.tls_key_file'],
    caFile: config['cluster.tls_ca_file'],
  });
}

function signs(issuer: X509Certificate, subject: X509Certificate): boolean {
  return subject.checkIssued(issuer) && subject.verify(issuer.publicKey);
}

/** Whether the leaf (chain[0]) is signed by a CA certificate, directly or through intermediates of the cert file
 *  (a chain file: leaf first, then the certificates between it and the root the CA file holds). */
function chainsToCa(chain: X509Certificate[], cas: X509Certificate[]): boolean {
  let current = chain[0]!;
  for (let step = 0; step < chain.length; step++) {
    if (cas.some((authority) => signs(authority, current))) return true;
    const next = chain.find((candidate) => candidate !== current && signs(candidate, current));
    if (next === undefined) return false;
    current = next;
  }
  return false;
}

/** The listener's options: a peer must present a certificate of the cluster CA, or the handshake fails. */
export function clusterTlsServerOptions(material: ClusterTlsMaterial, handshakeTimeoutMs: number): TlsOptions {
  return {
    cert: Buffer.from(material.cert),
    key: Buffer.from(material.key),
    ca: Buffer.from(material.ca),
    requestCert: true,
    rejectUnauthorized: true,
    minVersion: clusterTlsMinVersion,
    handshakeTimeout: handshakeTimeoutMs,
  };
}

/** The context every dial shares: our certificate for the peer to check, the cluster CA to check the peer's. */
export function clusterTlsClientContext(material: ClusterTlsMaterial): SecureContext {
  return createSecureContext({
    cert: Buffer.from(material.cert),
    key: Buffer.from(material.key),
    ca: Buffer.from(material.ca),
    minVersion: clusterTlsMinVersion,
  });
}

/** A dial's options. The peer's certificate must name the dialled host (an IP or DNS subjectAltName), which
 *  node:tls checks by default; SNI carries a host name only, never an IP address. */
export function clusterTlsDialOptions(context: SecureContext, host: string, port: number): ConnectionOptions {
  const options: ConnectionOptions = { host, port, secureContext: context, rejectUnauthorized: true };
  if (isIP(host) === 0) options.servername = host;
  return options;
}

/** The /readyz degraded entries (spec §4) for these dates at nowMs: an expired leaf, an expired CA. */
export function clusterTlsDegraded(dates: ClusterTlsDates | null, nowMs: number): string[] {
  if (dates === null) return [];
  const degraded: string[] = [];
  if (dates.leafNotAfterMs < nowMs) degraded.push('raft_tls_certificate_expired');
  if (dates.caNotAfterMs < nowMs) degraded.push('raft_tls_ca_expired');
  return degraded;
}
