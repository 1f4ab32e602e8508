// The root admin of spec §5: created once, at the first start of a secured cluster, by the founding node with the
// lowest id; the generated password is saved to the data dir before the user is committed and printed once. Front
// thread; front_start.ts asks for the login hint the start-up log line shows.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Piscina } from 'piscina';
import type { LoadedConfig } from '../config.js';
import { BrokerError, refusalText } from '../errors.js';
import type { ApplyResult } from '../metadata/state.js';
import type { MetadataCommand } from '../protocol/metadata_types.js';
import type { ClusterThreadConfig } from '../protocol/thread_messages.js';
import type { BcryptTask } from '../pool/bcrypt_task.js';
import type { FrontServices } from './services.js';

/** A new cluster's first minutes may see a leadership change or no leader (503: nothing applied); without its root
 *  admin nobody could log in, so the create is proposed again, the same user each time, until a root exists or a
 *  refusal other than 503 comes (at most a minute). */
async function proposeRetried(services: FrontServices, command: Extract<MetadataCommand, { type: 'user.create' }>): Promise<ApplyResult> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await services.replica.propose(command);
    } catch (error) {
      if (!(error instanceof BrokerError) || error.status !== 503 || attempt >= rootAdminAttempts) throw error;
      services.log.warn({ err: error, attempt }, 'creating the root admin: retrying');
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const root = [...services.replica.state.users.values()].find((u) => u.root);
      if (root !== undefined) return { ok: true };
    }
  }
}

const rootAdminAttempts = 60;

/** The root admin of a secured cluster is created once, by the lowest founding id; joining nodes never do. */
function createsRootAdmin(cluster: ClusterThreadConfig): boolean {
  if (cluster.join !== null) return false;
  return Math.min(...cluster.bootstrap.map(([id]) => id)) === cluster.nodeId;
}

/** Spec §5: the root admin `admin` is created at the first start of a secured node. Returns the login hint. */
async function ensureRootAdmin(services: FrontServices, authPool: Piscina, loaded: LoadedConfig, dataDir: string, creates: boolean): Promise<string> {
  const passwordFile = join(dataDir, 'admin-password');
  const root = [...services.replica.state.users.values()].find((u) => u.root);
  if (root !== undefined) {
    return `log in as ${root.username} with its password (first generated into ${passwordFile} unless one was given)`;
  }
  if (!creates) return 'log in as admin with the password the founding node with the lowest id generated (its data dir admin-password) or was given';
  const generated = loaded.adminPassword === undefined;
  const password = loaded.adminPassword ?? randomBytes(18).toString('base64url');
  if (generated) {
    // Saved before the user is committed, so a crash in between never leaves a root nobody can log in as.
    await writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  }
  const task: BcryptTask = { op: 'hash', password, cost: services.config['auth.bcrypt_cost'] };
  const passwordHash = (await authPool.run(task)) as string;
  const nowMs = Date.now();
  const result = await proposeRetried(services, {
    type: 'user.create',
    user: { username: 'admin', passwordHash, credentialVersion: 1, grants: [{ action: 'admin' }], root: true, createdAtMs: nowMs, updatedAtMs: nowMs },
  });
  if (!result.ok) throw new Error(`creating the root admin failed: ${refusalText(result.refusal)}`);
  if (generated) {
    // On stderr: stdout carries only the JSON log lines that log shippers parse.
    process.stderr.write(`\nRoot admin created. Log in as user "admin" with password: ${password}\n(saved to ${passwordFile}, mode 0600; this is the only time it is printed)\n\n`);
    return `log in as admin with the password saved in ${passwordFile}`;
  }
  return `log in as admin with the password given by ${loaded.adminPasswordSource === 'file' ? '--admin-password-file' : loaded.adminPasswordSource === 'env' ? 'SVC_ADMIN_PASSWORD' : '--admin-password'}`;
}

/** The login hint for the start-up log; creates the root admin first when this node is the one that does. */
export async function rootAdminHint(services: FrontServices, loaded: LoadedConfig, dataDir: string, cluster: ClusterThreadConfig): Promise<string> {
  if (!services.config['security.enabled']) return 'security is off: no credentials needed';
  await services.replica.whenCaughtUp();
  return ensureRootAdmin(services, services.authPool, loaded, dataDir, createsRootAdmin(cluster));
}
