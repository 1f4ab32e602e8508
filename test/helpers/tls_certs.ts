// Test certificates for the node-to-node mutual TLS (cluster.tls_*), made by the `openssl` command in a temp dir:
// a CA, and node certificates it signs for 127.0.0.1 and localhost, valid now or with given past dates (through
// `openssl ca -startdate -enddate`, which OpenSSL 3.0 has; `x509 -not_after` needs 3.4). Test code only; imports
// nothing from src/. scripts/install-proxies.sh installs openssl where it is missing.
import { execFile } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A CA's files and the dir its database lives in. */
export interface TestCa {
  dir: string;
  certFile: string;
  keyFile: string;
}

/** What a node is given: --cluster-tls-cert, --cluster-tls-key, --cluster-tls-ca. */
export interface NodeTlsFiles {
  certFile: string;
  keyFile: string;
  caFile: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  await run('openssl', args, { cwd, timeout: 30_000 });
}

const newEcKey = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** A CA in dir/name: valid from now for 10 years, or over exactly `dates` (openssl's YYYYMMDDHHMMSSZ), in the past
 *  for an expired one. Self-signed (`openssl ca -selfsign`, which takes both forms), or an intermediate of signer. */
export async function makeCa(dir: string, name: string, dates?: { start: string; end: string }, signer?: TestCa): Promise<TestCa> {
  const caDir = join(dir, name);
  await mkdir(join(caDir, 'db'), { recursive: true });
  await writeFile(join(caDir, 'db', 'index.txt'), '');
  await writeFile(join(caDir, 'db', 'serial'), '1000\n');
  await writeFile(join(caDir, 'ca.cnf'), [
    '[ca]', 'default_ca = test_ca', '[test_ca]', 'database = db/index.txt', 'serial = db/serial', 'new_certs_dir = db',
    'default_md = sha256', 'policy = any', 'unique_subject = no', 'copy_extensions = none',
    '[any]', 'commonName = supplied',
    '[authority]', 'basicConstraints = critical,CA:TRUE', 'keyUsage = critical,keyCertSign,cRLSign', 'subjectKeyIdentifier = hash',
    '[node]', 'subjectAltName = IP:127.0.0.1,DNS:localhost', 'extendedKeyUsage = serverAuth,clientAuth',
    'basicConstraints = CA:FALSE', '',
  ].join('\n'));
  await openssl(['req', '-new', ...newEcKey, '-keyout', 'ca.key', '-out', 'ca.csr', '-subj', `/CN=${name}`], caDir);
  const span = dates === undefined ? ['-days', '3650'] : ['-startdate', dates.start, '-enddate', dates.end];
  if (signer === undefined) {
    await openssl(['ca', '-batch', '-config', 'ca.cnf', '-selfsign', '-keyfile', 'ca.key', '-in', 'ca.csr', '-out', 'ca.pem',
      '-extensions', 'authority', '-notext', ...span], caDir);
  } else {
    await openssl(['ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.pem', '-keyfile', 'ca.key', '-in', join(caDir, 'ca.csr'),
      '-out', join(caDir, 'ca.pem'), '-extensions', 'authority', '-notext', ...span], signer.dir);
  }
  return { dir: caDir, certFile: join(caDir, 'ca.pem'), keyFile: join(caDir, 'ca.key') };
}

/**
 * A node certificate signed by ca, for 127.0.0.1 and localhost (the addresses tests dial). Without dates it is
 * valid from now for 30 days; with them (openssl's YYYYMMDDHHMMSSZ) it covers exactly that span, in the past for an
 * expired one.
 */
export async function makeNodeCert(ca: TestCa, name: string, dates?: { start: string; end: string }): Promise<NodeTlsFiles> {
  const keyFile = join(ca.dir, `${name}.key`);
  const certFile = join(ca.dir, `${name}.pem`);
  await openssl(['req', '-new', ...newEcKey, '-keyout', keyFile, '-out', `${name}.csr`, '-subj', `/CN=${name}`], ca.dir);
  const span = dates === undefined ? ['-days', '30'] : ['-startdate', dates.start, '-enddate', dates.end];
  await openssl(['ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.pem', '-keyfile', 'ca.key', '-in', `${name}.csr`,
    '-out', certFile, '-extensions', 'node', '-notext', ...span], ca.dir);
  return { certFile, keyFile, caFile: ca.certFile };
}

/** The three flags of a node's TLS files. */
export function tlsArgs(files: NodeTlsFiles): string[] {
  return ['--cluster-tls-cert', files.certFile, '--cluster-tls-key', files.keyFile, '--cluster-tls-ca', files.caFile];
}
