// Goal: the metadata snapshot (src/metadata/snapshot.ts) round-trips every part of the state (members, topics
// with their owners, users with their grants, the credential version counter) and rebuilds the derived name index;
// equal states give identical bytes whatever order their maps were filled in, so replicas can compare snapshots;
// anything that is not a snapshot of this format is refused with an error naming the problem; a record field the
// format does not know makes encoding fail instead of vanishing. A snapshot written by the release before target
// owners existed decodes with target = current and re-encodes to the same bytes; a target that differs is kept.
// Method: build states through applyCommand, encode, decode, compare; then feed damaged and foreign bytes.
import t from 'tap';
import { Packr } from 'msgpackr';
import { decodeMetadataSnapshot, encodeMetadataSnapshot, metadataSnapshotFormat } from '../../src/metadata/snapshot.js';
import type { MetadataCommand, MetadataState, TopicCreateRecord, TopicRecord, UserRecord } from '../../src/protocol/metadata_types.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';
import { answered } from '../helpers/refusal.js';

const packr = new Packr({ useRecords: false, moreTypes: false });

function topic(name: string, id: string, owners: number[], owner?: string): TopicCreateRecord {
  const record: TopicCreateRecord = {
    name, id, partitions: owners.length, retentionMs: 604_800_000, visibilityTimeoutMs: 30_000,
    maxInFlightPerPartition: 1000, maxAckedAheadPerPartition: 10_000, createdAtSec: 1_700_000_123, owners,
  };
  if (owner !== undefined) record.owner = owner;
  return record;
}

function user(username: string, root = false): UserRecord {
  return {
    username, passwordHash: `$2a$10$hash-of-${username}`, credentialVersion: 1,
    grants: root ? [{ action: 'admin' }] : [{ action: 'produce', patterns: ['orders.*', 'events'] }, { action: 'consume' }],
    root, createdAtMs: 1_700_000_000_000, updatedAtMs: 1_700_000_000_500,
  };
}

const commands: MetadataCommand[] = [
  { type: 'member.add', member: { id: 1, apiAddress: 'n1:7942', internalAddress: 'n1:7943', addedAtMs: 1_700_000_000_001 } },
  { type: 'member.add', member: { id: 3, apiAddress: 'n3:7942', internalAddress: 'n3:7943', addedAtMs: 1_700_000_000_003 } },
  { type: 'member.add', member: { id: 2, apiAddress: 'n2:7942', internalAddress: 'n2:7943', addedAtMs: 1_700_000_000_002 } },
  { type: 'user.create', user: user('admin', true) },
  { type: 'user.create', user: user('zoe') },
  { type: 'user.create', user: user('alice') },
  { type: 'topic.create', topic: topic('orders', '00000000000000a1', [1, 2, 3], 'alice') },
  { type: 'topic.create', topic: topic('Events', '00000000000000b2', [3]) },
  { type: 'topic.update', name: 'Events', id: '00000000000000b2', changes: { partitions: 3, newOwners: [1, 2] } },
  { type: 'user.password', username: 'zoe', passwordHash: 'h2', updatedAtMs: 1_700_000_009_000 },
];

function build(order: MetadataCommand[]): MetadataState {
  const state = emptyMetadataState();
  for (const command of order) {
    const result = applyCommand(state, structuredClone(command));
    if (!result.ok) throw new Error(`setup: ${JSON.stringify(result.refusal)}`);
  }
  return state;
}

/** The state with its maps listed in key order, for comparisons that must not depend on insertion order. */
function sorted(state: MetadataState) {
  const entries = <K, V>(map: Map<K, V>) => [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return { topics: entries(state.topics), topicNamesLower: entries(state.topicNamesLower), users: entries(state.users), members: entries(state.members), credentialVersionLast: state.credentialVersionLast };
}

t.test('round trip: the decoded state equals the encoded one and encodes to the same bytes', async (t) => {
  const state = build(commands);
  const bytes = encodeMetadataSnapshot(state);
  t.ok(bytes instanceof Uint8Array);
  const decoded = decodeMetadataSnapshot(bytes);
  t.same(sorted(decoded), sorted(state));
  t.same(decoded, state);
  t.equal(decoded.topicNamesLower.get('events'), 'Events', 'the name index is rebuilt');
  t.same(decoded.topics.get('Events')?.owners, [3, 1, 2]);
  t.equal(decoded.topics.get('orders')?.owner, 'alice');
  t.notOk('owner' in decoded.topics.get('Events')!, 'an absent owner stays absent');
  t.same(decoded.users.get('alice')?.grants, [{ action: 'produce', patterns: ['orders.*', 'events'] }, { action: 'consume' }]);
  t.equal(decoded.credentialVersionLast, 4);
  t.same(Buffer.from(encodeMetadataSnapshot(decoded)), Buffer.from(bytes), 'identical bytes');
  t.same(decodeMetadataSnapshot(encodeMetadataSnapshot(emptyMetadataState())), emptyMetadataState(), 'the empty state too');
});

t.test('the decoded state is a working state machine', async (t) => {
  const decoded = decodeMetadataSnapshot(encodeMetadataSnapshot(build(commands)));
  t.same(applyCommand(decoded, { type: 'topic.create', topic: topic('ORDERS', '00000000000000c3', [1]) }).ok, false, 'case-insensitive uniqueness kept');
  t.same(answered(applyCommand(decoded, { type: 'member.forget', id: 3 })), { ok: false, status: 409, error: 'member 3 owns 2 partitions' });
  t.same(applyCommand(decoded, { type: 'user.create', user: user('bob') }), { ok: true });
  t.equal(decoded.users.get('bob')?.credentialVersion, 5, 'the version counter continues');
});

t.test('equal states give identical bytes whatever order their maps were filled in', async (t) => {
  const a = build(commands);
  const reordered = [commands[2]!, commands[1]!, commands[0]!, commands[3]!, commands[5]!, commands[4]!, commands[7]!, commands[6]!, commands[8]!, commands[9]!];
  const b = build(reordered);
  // user.create hands out versions in apply order: give both the same ones so the states are equal.
  b.users.get('zoe')!.credentialVersion = a.users.get('zoe')!.credentialVersion;
  b.users.get('alice')!.credentialVersion = a.users.get('alice')!.credentialVersion;
  t.same(sorted(a), sorted(b));
  t.not([...a.members.keys()].join(), [...b.members.keys()].join(), 'the maps were filled in another order');
  // Key order inside a record must not matter either.
  const orders = b.topics.get('orders')!;
  const { owner, ...rest } = orders;
  b.topics.set('orders', { owner: owner!, ...rest });
  t.same(Buffer.from(encodeMetadataSnapshot(b)), Buffer.from(encodeMetadataSnapshot(a)));
  b.members.get(2)!.apiAddress = 'moved:7942';
  t.notSame(Buffer.from(encodeMetadataSnapshot(b)), Buffer.from(encodeMetadataSnapshot(a)), 'a real difference shows');
});

t.test('garbage and foreign shapes are refused with an error naming the problem', async (t) => {
  const good = packr.unpack(encodeMetadataSnapshot(build(commands))) as Record<string, any>;
  const damaged = (change: (body: any) => void) => {
    const body = structuredClone(good);
    change(body);
    return new Uint8Array(packr.pack(body));
  };
  const cases: [string, Uint8Array, RegExp][] = [
    ['empty', new Uint8Array(0), /^metadata snapshot: not msgpack/],
    ['truncated', encodeMetadataSnapshot(build(commands)).subarray(0, 40), /^metadata snapshot: not msgpack/],
    ['a number', new Uint8Array(packr.pack(42)), /snapshot: not an object/],
    ['an array', new Uint8Array(packr.pack([1, 2])), /snapshot: not an object/],
    ['another format', damaged((b) => { b.format = metadataSnapshotFormat + 1; }), /format 2 is not the supported 1/],
    ['no format', damaged((b) => { delete b.format; }), /format undefined is not the supported 1/],
    ['unknown top field', damaged((b) => { b.remotes = []; }), /snapshot: unknown field remotes/],
    ['members not an array', damaged((b) => { b.members = {}; }), /members: not an array/],
    ['member twice', damaged((b) => { b.members.push(b.members[0]); }), /members\[3\]: member 1 appears twice/],
    ['member id 0', damaged((b) => { b.members[0].id = 0; }), /members\[0\]\.id: not an integer >= 1/],
    ['owner not a member', damaged((b) => { b.topics[1].owners[0] = 9; }), /topics\[1\]\.owners\[0\]: 9 is not a member/],
    ['owners short', damaged((b) => { b.topics[0].owners.pop(); }), /topics\[0\]: 2 owners for 3 partitions/],
    ['target owners short', damaged((b) => { b.topics[0].targetOwners = [1, 2]; }), /topics\[0\]: 2 target owners for 3 partitions/],
    ['target not a member', damaged((b) => { b.topics[0].targetOwners = [1, 9, 1]; }), /topics\[0\]\.targetOwners\[1\]: 9 is not a member/],
    ['target not an array', damaged((b) => { b.topics[0].targetOwners = 1; }), /topics\[0\]\.targetOwners: not an array/],
    ['bad topic id', damaged((b) => { b.topics[0].id = 'XYZ'; }), /topics\[0\]\.id: not 16 lower-case hex/],
    ['name clash', damaged((b) => { b.topics[1].name = 'EVENTS'; }), /name EVENTS clashes with Events/],
    ['unknown topic field', damaged((b) => { b.topics[0].parent = 'x'; }), /topics\[0\]: unknown field parent/],
    ['string partitions', damaged((b) => { b.topics[0].partitions = '3'; }), /topics\[0\]\.partitions: not an integer/],
    ['bad grant', damaged((b) => { b.users[0].grants[0].action = 'root'; }), /users\[0\]\.grants\[0\]\.action: root is not a grant action/],
    ['root not boolean', damaged((b) => { b.users[0].root = 1; }), /users\[0\]\.root: not a boolean/],
    ['version ahead', damaged((b) => { b.credentialVersionLast = 1; }), /credential version \d+ above the last handed out 1/],
  ];
  for (const [label, bytes, expected] of cases) t.throws(() => decodeMetadataSnapshot(bytes), expected, label);
  const random = new Uint8Array(4096);
  let seed = 12345;
  let refused = 0;
  for (let round = 0; round < 200; round++) {
    for (let i = 0; i < random.length; i++) {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      random[i] = seed >>> 24;
    }
    try {
      decodeMetadataSnapshot(random);
      t.fail(`random bytes decoded (round ${round})`);
    } catch (error) {
      if (/^metadata snapshot: /.test((error as Error).message)) refused += 1;
      else t.fail(`round ${round}: ${(error as Error).message}`);
    }
  }
  t.equal(refused, 200, 'random bytes always refused with a metadata snapshot error');
});

t.test('a record field the format does not know fails the encode', async (t) => {
  const state = build(commands);
  (state.topics.get('orders') as TopicRecord & { parent?: string }).parent = 'elsewhere';
  t.throws(() => encodeMetadataSnapshot(state), /topic field parent has no place in format 1/);
});

/** Written by the release before target owners (commit 775cc1f): members 1 and 2, user admin, topics orders
 *  (owners [1, 2, 1], owner admin) and events (owners [2, 2, 1], retention 0). The encoder then knew no targetOwners. */
const snapshotBeforeTargets = Buffer.from(
  [
    '3gAFpmZvcm1hdAG1Y3JlZGVudGlhbFZlcnNpb25MYXN0AadtZW1iZXJzkt4ABKJpZAGqYXBpQWRkcmVzc6duMTo3OTQyr2ludGVy',
    'bmFsQWRkcmVzc6duMTo3OTQzqWFkZGVkQXRNc8tCeLz+VoAQAN4ABKJpZAKqYXBpQWRkcmVzc6duMjo3OTQyr2ludGVybmFsQWRk',
    'cmVzc6duMjo3OTQzqWFkZGVkQXRNc8tCeLz+VoAgAKZ0b3BpY3OS3gAJpG5hbWWmZXZlbnRzomlksDAwMDAwMDAwMDAwMDAwYjKq',
    'cGFydGl0aW9ucwOrcmV0ZW50aW9uTXMAs3Zpc2liaWxpdHlUaW1lb3V0TXPNdTC3bWF4SW5GbGlnaHRQZXJQYXJ0aXRpb27NBAC5',
    'bWF4QWNrZWRBaGVhZFBlclBhcnRpdGlvbs0EAKxjcmVhdGVkQXRTZWPOZVPyyKZvd25lcnOTAgIB3gAKpG5hbWWmb3JkZXJzomlk',
    'sDAwMDAwMDAwMDAwMDAwYTGqcGFydGl0aW9ucwOrcmV0ZW50aW9uTXPOJAyEALN2aXNpYmlsaXR5VGltZW91dE1zzXUwt21heElu',
    'RmxpZ2h0UGVyUGFydGl0aW9uzQPouW1heEFja2VkQWhlYWRQZXJQYXJ0aXRpb27NJxCsY3JlYXRlZEF0U2VjzmVT8Xulb3duZXKl',
    'YWRtaW6mb3duZXJzkwECAaV1c2Vyc5HeAAeodXNlcm5hbWWlYWRtaW6scGFzc3dvcmRIYXNop2gtYWRtaW6xY3JlZGVudGlhbFZl',
    'cnNpb24BpmdyYW50c5HeAAGmYWN0aW9upWFkbWlupHJvb3TDq2NyZWF0ZWRBdE1zy0J4vP5WgAAAq3VwZGF0ZWRBdE1zy0J4vP5W',
    'gAAA',
  ].join(''),
  'base64',
);

t.test('a snapshot from the release before target owners loads with target = current, to the same bytes', async (t) => {
  const decoded = decodeMetadataSnapshot(snapshotBeforeTargets);
  t.same(decoded.topics.get('orders')?.owners, [1, 2, 1]);
  t.same(decoded.topics.get('orders')?.targetOwners, [1, 2, 1], 'orders: target = current');
  t.same(decoded.topics.get('events')?.targetOwners, [2, 2, 1], 'events: target = current');
  t.not(decoded.topics.get('orders')?.targetOwners, decoded.topics.get('orders')?.owners, 'two arrays, not one shared');
  t.equal(decoded.topics.get('orders')?.owner, 'admin');
  t.same([...decoded.members.keys()], [1, 2]);
  t.equal(decoded.users.get('admin')?.root, true);
  t.same(Buffer.from(encodeMetadataSnapshot(decoded)), snapshotBeforeTargets,
    'equal targets are left out: the bytes are the old release\'s, so its nodes still read this one\'s snapshots');
  const grown = applyCommand(decoded, { type: 'topic.update', name: 'orders', id: '00000000000000a1', changes: { partitions: 4, newOwners: [2] } });
  t.ok(grown.ok, 'the loaded state keeps working');
  t.same(decoded.topics.get('orders')?.targetOwners, [1, 2, 1, 2], 'growth places target and current alike');
});

t.test('a target that differs from the current owner is encoded and kept', async (t) => {
  const state = build(commands);
  state.topics.get('orders')!.targetOwners = [1, 2, 2];
  const bytes = encodeMetadataSnapshot(state);
  const body = packr.unpack(bytes) as { topics: { name: string; targetOwners?: number[] }[] };
  t.same(body.topics.find((topic) => topic.name === 'orders')?.targetOwners, [1, 2, 2], 'written when it differs');
  t.equal(body.topics.find((topic) => topic.name === 'Events')?.targetOwners, undefined, 'left out when equal');
  const decoded = decodeMetadataSnapshot(bytes);
  t.same(decoded.topics.get('orders')?.owners, [1, 2, 3], 'current owners unchanged');
  t.same(decoded.topics.get('orders')?.targetOwners, [1, 2, 2]);
  t.same(Buffer.from(encodeMetadataSnapshot(decoded)), Buffer.from(bytes), 'identical bytes');
});
