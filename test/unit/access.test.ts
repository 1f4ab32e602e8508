// Goal: the pure access rules of spec §5 (src/front/access.ts): grant patterns, who reads, manages, produces to,
// consumes from and creates a topic, security off passing everything (NOTES 8); the field rules of spec §2 User and
// Grant (username, password bytes in UTF-8, grant shapes); each no-escalation rule (spec §5, NOTES 9). Also, for
// issue 5 point 5, that an unknown user's password is checked in the bcrypt pool exactly like a known user's (a
// compare against a dummy hash), without timing anything: the pool is a fake that records what it is asked.
// Method: table-driven calls on plain records; the Authenticator runs against a fake replica and a fake pool.
import t from 'tap';
import {
  canManageTopic, canReadTopic, currentPasswordRequired, grantGivable, hasGrant, isAdmin, parseGrants, passwordChangeRefusal,
  passwordRule, patternCovers, patternMatches, userCreateRefusal, userDeleteRefusal, userGrantsRefusal, usernameRule,
} from '../../src/front/access.js';
import { Authenticator } from '../../src/front/auth.js';
import { LoginThrottle } from '../../src/front/login_throttle.js';
import type { Grant, TopicRecord, UserRecord } from '../../src/protocol/metadata_types.js';

function user(username: string, grants: Grant[], root = false): UserRecord {
  return { username, passwordHash: '$2a$10$x', credentialVersion: 1, grants, root, createdAtMs: 0, updatedAtMs: 0 };
}
function topic(name: string, owner?: string): TopicRecord {
  const record: TopicRecord = { name, id: '0123456789abcdef', partitions: 3, retentionMs: 0, visibilityTimeoutMs: 30_000,
    maxInFlightPerPartition: 1024, maxAckedAheadPerPartition: 1024, createdAtSec: 0, owners: [1, 1, 1], targetOwners: [1, 1, 1] };
  if (owner !== undefined) record.owner = owner;
  return record;
}

const root = user('admin', [{ action: 'admin' }], true);
const admin = user('ops', [{ action: 'admin' }]);
const producer = user('prod', [{ action: 'produce', patterns: ['orders.*', 'audit'] }]);
const consumer = user('cons', [{ action: 'consume', patterns: ['orders.eu'] }]);
const creator = user('maker', [{ action: 'create', patterns: ['team-a.*'] }]);
const nobody = user('nobody', []);

t.test('patternMatches: a name, a prefix with one trailing *, or * for every topic', async (t) => {
  const cases: [string, string, boolean][] = [
    ['orders', 'orders', true], ['orders', 'orders2', false], ['orders', 'Orders', false],
    ['orders.*', 'orders.eu', true], ['orders.*', 'orders.', true], ['orders.*', 'orders', false],
    ['*', 'anything', true], ['ord*', 'orders', true], ['ord*', 'xord', false],
  ];
  for (const [pattern, name, expected] of cases) t.equal(patternMatches(pattern, name), expected, `${pattern} ~ ${name}`);
});

t.test('grants and ownership decide topic access; admin and security off pass everything', async (t) => {
  const orders = topic('orders.eu', 'maker');
  const ownerless = topic('orders.us');
  t.ok(hasGrant(producer, 'produce', 'orders.eu'));
  t.notOk(hasGrant(producer, 'consume', 'orders.eu'), 'a produce grant is not a consume grant');
  t.ok(hasGrant(consumer, 'consume', 'orders.eu'));
  t.notOk(hasGrant(consumer, 'consume', 'orders.us'));
  t.ok(hasGrant(creator, 'create', 'team-a.x'));
  t.notOk(hasGrant(creator, 'create', 'team-b.x'));
  for (const caller of [root, admin, undefined]) {
    t.ok(hasGrant(caller, 'produce', 'x') && hasGrant(caller, 'consume', 'x') && hasGrant(caller, 'create', 'x'), `${caller?.username ?? 'security off'} holds every grant`);
    t.ok(canReadTopic(caller, ownerless) && canManageTopic(caller, ownerless), `${caller?.username ?? 'security off'} reads and manages`);
  }
  t.ok(canReadTopic(producer, orders), 'any grant on the topic reads it');
  t.ok(canReadTopic(consumer, orders));
  t.notOk(canReadTopic(creator, ownerless), 'a create grant on other names does not');
  t.ok(canReadTopic(creator, orders), 'ownership reads');
  t.notOk(canReadTopic(nobody, orders));
  t.ok(canManageTopic(creator, orders), 'the owner manages');
  t.notOk(canManageTopic(producer, orders), 'a grant does not manage');
  t.notOk(canManageTopic(creator, ownerless), 'a topic without owner: admins only');
  t.ok(isAdmin(undefined) && isAdmin(admin) && isAdmin(root));
  t.notOk(isAdmin(producer));
});

t.test('usernameRule and passwordRule (spec §2 User, §8)', async (t) => {
  for (const ok of ['a', 'A-z_0.9', 'x'.repeat(64), '...']) t.equal(usernameRule(ok), null, `${ok} is valid`);
  for (const bad of ['', 'x'.repeat(65), '.', '..', 'a b', 'é', 'a/b', 'a:b']) {
    t.equal(usernameRule(bad)?.status, 400, `${JSON.stringify(bad)} is 400`);
  }
  t.equal(passwordRule('password', 'x'.repeat(72)), null, '72 ASCII bytes');
  t.equal(passwordRule('password', 'é'.repeat(36)), null, '36 two-byte characters are 72 bytes');
  t.equal(passwordRule('password', 'é'.repeat(37))?.status, 400, '37 two-byte characters are 74 bytes');
  t.equal(passwordRule('password', 'x'.repeat(73))?.status, 400);
  t.equal(passwordRule('password', '')?.status, 400);
  t.match(passwordRule('new_password', '')?.message, /^new_password: /, 'the error names the field');
});

t.test('parseGrants: shapes, patterns and the admin grant (spec §2 Grant)', async (t) => {
  t.same(parseGrants([]), { grants: [] });
  t.same(parseGrants([{ action: 'produce', patterns: ['a', 'b.*', '*'] }, { action: 'admin' }, { action: 'admin', patterns: [] }]),
    { grants: [{ action: 'produce', patterns: ['a', 'b.*', '*'] }, { action: 'admin' }, { action: 'admin' }] });
  t.same(parseGrants([{ action: 'consume', patterns: ['x'.repeat(255)] }]), { grants: [{ action: 'consume', patterns: ['x'.repeat(255)] }] });
  const invalid: [string, unknown][] = [
    ['produce without patterns', [{ action: 'produce' }]],
    ['consume with no pattern', [{ action: 'consume', patterns: [] }]],
    ['admin with a pattern', [{ action: 'admin', patterns: ['*'] }]],
    ['* in the middle', [{ action: 'create', patterns: ['a*b'] }]],
    ['* twice', [{ action: 'create', patterns: ['a**'] }]],
    ['leading * with more', [{ action: 'create', patterns: ['*a'] }]],
    ['bad character', [{ action: 'create', patterns: ['a/b'] }]],
    ['empty pattern', [{ action: 'create', patterns: [''] }]],
    ['256 characters', [{ action: 'create', patterns: ['x'.repeat(256)] }]],
    ['unknown action', [{ action: 'delete', patterns: ['a'] }]],
  ];
  for (const [what, value] of invalid) {
    const parsed = parseGrants(value);
    t.ok('invalid' in parsed, `${what}: invalid`);
    if ('invalid' in parsed) t.equal(parsed.invalid.status, 400);
  }
  const malformed: [string, unknown][] = [
    ['not an array', { action: 'admin' }],
    ['a string item', ['admin']],
    ['unknown field', [{ action: 'admin', extra: 1 }]],
    ['action missing', [{ patterns: ['a'] }]],
    ['patterns not strings', [{ action: 'produce', patterns: [1] }]],
  ];
  for (const [what, value] of malformed) {
    const parsed = parseGrants(value);
    t.ok('malformed' in parsed, `${what}: malformed`);
    if ('malformed' in parsed) t.equal(parsed.malformed.status, 400);
  }
  const star = parseGrants([{ action: 'create', patterns: ['ok', 'a*b'] }]);
  t.match('invalid' in star ? star.invalid.message : '', /grants\[0\]\.patterns\[1\]: .*only once, at the end/, 'the error names the pattern and the rule');
});

t.test('no escalation (spec §5, NOTES 9)', async (t) => {
  const adminGrant: Grant[] = [{ action: 'admin' }];
  const produceGrant: Grant[] = [{ action: 'produce', patterns: ['*'] }];
  t.equal(userCreateRefusal(root, adminGrant), null, 'root gives admin');
  t.equal(userCreateRefusal(admin, adminGrant)?.status, 403, 'another admin does not');
  t.equal(userCreateRefusal(admin, produceGrant), null, 'an admin gives every other grant');
  t.equal(userCreateRefusal(undefined, adminGrant), null, 'security off: every check passes');

  t.equal(userDeleteRefusal(root, root)?.status, 403, 'root cannot be deleted, not even by root');
  t.equal(userDeleteRefusal(undefined, root)?.status, 403, 'not with security off either');
  t.equal(userDeleteRefusal(admin, admin)?.status, 403, 'no one deletes their own account');
  t.equal(userDeleteRefusal(admin, producer), null);

  t.equal(userGrantsRefusal(root, root, adminGrant)?.status, 403, "root's grants never change");
  t.equal(userGrantsRefusal(admin, admin, [])?.status, 403, 'no one changes their own grants');
  t.equal(userGrantsRefusal(admin, producer, adminGrant)?.status, 403, 'admin given by a non-root');
  t.equal(userGrantsRefusal(root, producer, adminGrant), null, 'admin given by root');
  t.equal(userGrantsRefusal(admin, producer, produceGrant), null);
  t.equal(userGrantsRefusal(undefined, producer, adminGrant), null, 'security off');

  t.equal(passwordChangeRefusal(producer, 'prod', producer), null, 'a non-admin changes their own');
  t.equal(passwordChangeRefusal(producer, 'cons', consumer)?.status, 403, "but nobody else's");
  t.equal(passwordChangeRefusal(producer, 'ghost', undefined)?.status, 403, 'not even a missing one (no 404 oracle)');
  t.equal(passwordChangeRefusal(admin, 'prod', producer), null, 'an admin resets a password');
  t.equal(passwordChangeRefusal(admin, 'admin', root)?.status, 403, "only root changes root's password");
  t.equal(passwordChangeRefusal(root, 'admin', root), null);
  t.equal(passwordChangeRefusal(undefined, 'admin', root), null, 'security off');
  t.ok(currentPasswordRequired(producer));
  t.notOk(currentPasswordRequired(admin));
  t.notOk(currentPasswordRequired(undefined));
});

t.test('grantGivable: a grant one does not hold cannot be given', async (t) => {
  t.ok(patternCovers('orders.*', 'orders.eu'));
  t.ok(patternCovers('orders.*', 'orders.eu*'));
  t.ok(patternCovers('*', 'anything*'));
  t.notOk(patternCovers('orders.eu', 'orders.*'));
  t.notOk(patternCovers('orders.eu*', 'orders.*'));
  t.ok(grantGivable(producer, { action: 'produce', patterns: ['orders.eu', 'audit'] }));
  t.notOk(grantGivable(producer, { action: 'produce', patterns: ['orders.eu', 'billing'] }));
  t.notOk(grantGivable(producer, { action: 'consume', patterns: ['orders.eu'] }));
  t.notOk(grantGivable(admin, { action: 'admin' }));
  t.ok(grantGivable(root, { action: 'admin' }));
  t.ok(grantGivable(admin, { action: 'create', patterns: ['*'] }));
});

t.test('an unknown user is checked in the bcrypt pool like a known one (issue 5 point 5, no timing)', async (t) => {
  const tasks: { op: string; password?: string; hash?: string }[] = [];
  const pool = { run: async (task: { op: string; password: string; hash: string }) => (tasks.push(task), false) };
  const known = user('known', []);
  known.passwordHash = '$2a$10$knownknownknownknownkuXWue0Thq9StjUM0uJ8.c/FBDmSXz1h';
  const replica = { state: { users: new Map([[known.username, known]]) } };
  const throttle = new LoginThrottle({ failedLoginThreshold: 5, retryIntervalMs: 12_000, checkBudget: 32, checkRefillPerSecond: 4 }, 0);
  const authenticator = new Authenticator(replica as never, pool as never, throttle);
  const basic = (u: string, p: string) => 'Basic ' + Buffer.from(`${u}:${p}`).toString('base64');
  const statusOf = async (answer: unknown): Promise<number> => {
    try {
      await answer;
      return 200;
    } catch (error) {
      return (error as { status?: number }).status ?? 0;
    }
  };
  t.equal(await statusOf(authenticator.check(basic('known', 'wrong'))), 401, 'known user, wrong password: 401');
  t.equal(await statusOf(authenticator.check(basic('ghost', 'wrong'))), 401, 'unknown user: 401');
  t.equal(tasks.length, 2, 'both went through the pool');
  t.same(tasks.map((task) => task.op), ['compare', 'compare']);
  t.equal(tasks[0]!.hash, known.passwordHash, 'the known user against its hash');
  t.match(tasks[1]!.hash, /^\$2a\$10\$.{53}$/, 'the unknown user against a dummy bcrypt hash of the same cost');
});
