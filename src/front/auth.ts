// HTTP Basic authentication on the front thread (spec §5.1-5.3). bcrypt runs in a piscina pool with
// auth.verify_slots threads; a verified credential is cached under a SHA-256 of the Authorization value
// together with the user's credential version, so bcrypt runs once per password and version, not per
// request, and a password change invalidates the entry at once (the version moves). Lives as long as the node.
import { hash, randomBytes } from 'node:crypto';
import { Piscina } from 'piscina';
import { errors } from '../errors.js';
import type { UserRecord } from '../protocol/metadata_types.js';
import type { BcryptTask } from '../pool/bcrypt_task.js';
import type { LoginThrottle } from './login_throttle.js';
import type { MetadataReplica } from './metadata_replica.js';

interface CachedCredential {
  username: string;
  credentialVersion: number;
}

/** Bounds the cache's memory; a full cache starts over (a miss costs one bcrypt). */
const cachedCredentialsMax = 65_536;

/** A valid bcrypt hash (cost 10) that no password matches, compared for unknown users so they take as long as
 *  known ones. With another auth.bcrypt_cost it serves only until a dummy of that cost is hashed at start. */
const unknownUserHashCost10 = '$2a$10$CwTycUXWue0Thq9StjUM0uJ8.c/FBDmSXz1hJFZ6mJsY4zO0C2n7e';
const unknownUserHashCost = 10;

export class Authenticator {
  private readonly cache = new Map<string, CachedCredential>();
  private readonly verifying = new Map<string, Promise<UserRecord>>();
  private unknownUserHash = unknownUserHashCost10;
  /** The last Authorization value checked and its cache key: a producer fleet sends one credential on every request,
   *  and the digest is most of what a cached check costs. Only the one value is held, as each request holds it anyway. */
  private lastAuthorization = '';
  private lastCacheKey = '';

  constructor(
    private readonly replica: MetadataReplica,
    private readonly pool: Piscina,
    private readonly throttle: LoginThrottle,
    bcryptCost = unknownUserHashCost,
  ) {
    // Passwords set on this node are hashed at auth.bcrypt_cost; an unknown user's check must cost the same.
    if (bcryptCost !== unknownUserHashCost) {
      const task: BcryptTask = { op: 'hash', password: randomBytes(18).toString('base64'), cost: bcryptCost };
      pool.run(task).then((hash: string) => (this.unknownUserHash = hash), () => undefined);
    }
  }

  /** The user named by a valid Authorization header; synchronous when cached. Throws or rejects 401. */
  check(authorization: string): UserRecord | Promise<UserRecord> {
    let cacheKey = this.lastCacheKey;
    if (authorization !== this.lastAuthorization) {
      // One-shot crypto.hash: no Hash object per request on the hot path.
      cacheKey = hash('sha256', authorization, 'base64');
      this.lastAuthorization = authorization;
      this.lastCacheKey = cacheKey;
    }
    const cached = this.cache.get(cacheKey);
    if (cached !== undefined) {
      const user = this.replica.state.users.get(cached.username);
      if (user !== undefined && user.credentialVersion === cached.credentialVersion) {
        if (!this.throttle.idle) {
          this.throttle.admit(user.username, false, Date.now());
          // NOTES 11: a success resets the count, also when it was verified earlier.
          this.throttle.recordSuccess(user.username);
        }
        return user;
      }
      this.cache.delete(cacheKey);
    }
    let pending = this.verifying.get(cacheKey);
    if (pending === undefined) {
      pending = this.verify(authorization, cacheKey).finally(() => this.verifying.delete(cacheKey));
      this.verifying.set(cacheKey, pending);
    }
    return pending;
  }

  private async verify(authorization: string, cacheKey: string): Promise<UserRecord> {
    const credentials = parseBasic(authorization);
    if (credentials === null) throw errors.unauthorized();
    const user = this.replica.state.users.get(credentials.username);
    if (user !== undefined) this.throttle.admit(user.username, true, Date.now());
    const hash = user?.passwordHash ?? this.unknownUserHash;
    const matches = await bcryptCompare(this.pool, credentials.password, hash);
    if (user === undefined) throw errors.unauthorized();
    if (!matches) {
      this.throttle.recordFailure(user.username, Date.now());
      throw errors.unauthorized();
    }
    this.throttle.recordSuccess(user.username);
    // Re-read: the user may have changed while bcrypt ran; cache only what was verified.
    const current = this.replica.state.users.get(user.username);
    if (current === undefined || current.passwordHash !== user.passwordHash) throw errors.unauthorized();
    if (this.cache.size >= cachedCredentialsMax) this.cache.clear();
    this.cache.set(cacheKey, { username: current.username, credentialVersion: current.credentialVersion });
    return current;
  }
}

/** Whether password matches a bcrypt hash, checked in the bcrypt pool; a pool failure is authentication unavailable. */
export async function bcryptCompare(pool: Piscina, password: string, hash: string): Promise<boolean> {
  try {
    return (await pool.run({ op: 'compare', password, hash } satisfies BcryptTask)) as boolean;
  } catch {
    throw errors.authenticationUnavailable();
  }
}

/** A bcrypt hash of password at cost, made in the bcrypt pool; a pool failure is authentication unavailable. */
export async function bcryptHash(pool: Piscina, password: string, cost: number): Promise<string> {
  try {
    return (await pool.run({ op: 'hash', password, cost } satisfies BcryptTask)) as string;
  } catch {
    throw errors.authenticationUnavailable();
  }
}

export function parseBasic(authorization: string): { username: string; password: string } | null {
  // Strict base64 (RFC 7617, RFC 4648 §4): padding only at the end, so bytes after it do not decode to the same user.
  const match = /^Basic +((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?) *$/i.exec(authorization);
  if (match === null) return null;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return null;
  return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
