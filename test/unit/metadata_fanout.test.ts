// Goal: fan-out links in the pure metadata state machine (spec §3 Topic role and attach rules, §8 Children per
// parent, NOTES 7): attach of an existing topic and a create with parent, every attach rule refused with its catalog
// id and nothing changed, schema adoption and the parent's versions reaching its children, detach and delete, the
// delay-versus-retention rule at attach and at a later PATCH, a parent's growth, and a snapshot carrying links
// byte for byte (and no bytes at all without links), and a damaged one refused.
// Method: apply commands to a fresh state and check results and the state left behind; encode and decode snapshots.
import t from 'tap';
import { Packr } from 'msgpackr';
import { limits } from '../../src/config.js';
import type { FanoutAttach, MetadataState, TopicCreateRecord } from '../../src/protocol/metadata_types.js';
import { linkOf, roleOf } from '../../src/metadata/fanout.js';
import { fillOwners } from '../../src/metadata/placement.js';
import { decodeMetadataSnapshot, encodeMetadataSnapshot } from '../../src/metadata/snapshot.js';
import { applyCommand, emptyMetadataState } from '../../src/metadata/state.js';

const hourMs = 3_600_000;

function idOf(name: string): string {
  return Buffer.from(name).toString('hex').padEnd(16, '0').slice(0, 16);
}

function topic(name: string, retentionMs = 0, partitions = 3): TopicCreateRecord {
  return { name, id: idOf(name), partitions, retentionMs, visibilityTimeoutMs: 30_000, maxInFlightPerPartition: 1024,
    maxAckedAheadPerPartition: 1024, createdAtSec: 1, owners: Array<number>(partitions).fill(1) };
}

function fresh(...names: string[]): MetadataState {
  const state = emptyMetadataState();
  applyCommand(state, { type: 'member.add', member: { id: 1, apiAddress: 'a:1', internalAddress: 'a:2', addedAtMs: 1 } });
  for (const name of names) applyCommand(state, { type: 'topic.create', topic: topic(name) });
  return state;
}

function attachOf(parent: string, extra: Partial<FanoutAttach> = {}): FanoutAttach {
  return { parent, parentId: idOf(parent), epoch: 'e1', attachOffsets: [5, 0, 7], ...extra };
}

function attach(state: MetadataState, parent: string, child: string, extra: Partial<FanoutAttach> = {}) {
  return applyCommand(state, { type: 'fanout.attach', child, childId: idOf(child), attach: attachOf(parent, extra) });
}

function refusalId(result: ReturnType<typeof applyCommand>): string | undefined {
  return result.ok ? undefined : result.refusal.id;
}

t.test('attach makes a parent and a child; children keep attach order; detach of the last makes it standalone', async (t) => {
  const state = fresh('p', 'a', 'b');
  const result = attach(state, 'p', 'b');
  t.ok(result.ok && result.topic?.name === 'p', 'the result is the parent');
  t.ok(attach(state, 'p', 'a', { epoch: 'e2' }).ok);
  t.equal(roleOf(state, idOf('p')), 'parent');
  t.equal(roleOf(state, idOf('a')), 'child');
  t.same(state.fanout.get(idOf('p'))?.children.map((c) => c.child), ['b', 'a'], 'attach order');
  t.same(linkOf(state, idOf('a'))?.link, { child: 'a', childId: idOf('a'), epoch: 'e2', attachOffsets: [5, 0, 7] });
  t.ok(applyCommand(state, { type: 'fanout.detach', parent: 'p', parentId: idOf('p'), child: 'b', childId: idOf('b') }).ok);
  t.equal(roleOf(state, idOf('b')), 'standalone');
  t.equal(roleOf(state, idOf('p')), 'parent', 'still has a child');
  t.ok(applyCommand(state, { type: 'fanout.detach', parent: 'p', parentId: idOf('p'), child: 'a', childId: idOf('a') }).ok);
  t.equal(roleOf(state, idOf('p')), 'standalone', 'NOTES 7: last child gone');
  t.equal(state.fanout.size + state.fanoutParentOf.size, 0);
  const again = applyCommand(state, { type: 'fanout.detach', parent: 'p', parentId: idOf('p'), child: 'a', childId: idOf('a') });
  t.equal(refusalId(again), 'notLinked');
});

t.test('every attach rule refuses and leaves the state as it was', async (t) => {
  const state = fresh('p', 'c', 'q', 'x');
  t.ok(attach(state, 'p', 'c').ok);
  const before = encodeMetadataSnapshot(state);
  t.equal(refusalId(attach(state, 'q', 'c')), 'fanoutHasParent', 'one parent per child');
  t.equal(refusalId(attach(state, 'p', 'c')), 'fanoutHasParent', 'not twice under the same parent');
  t.equal(refusalId(attach(state, 'q', 'p')), 'fanoutChildIsParent', 'a parent is never a child');
  t.equal(refusalId(attach(state, 'c', 'x')), 'fanoutParentIsChild', 'a child takes no children');
  t.equal(refusalId(attach(state, 'x', 'x')), 'fanoutSelf');
  t.equal(refusalId(attach(state, 'p', 'nope')), 'topicNotFound');
  t.equal(refusalId(applyCommand(state, { type: 'fanout.attach', child: 'x', childId: idOf('x'), attach: { ...attachOf('p'), parentId: 'ffffffffffffffff' } })),
    'fanoutTopicChanged', 'parent recreated under the request');
  t.same(Buffer.from(encodeMetadataSnapshot(state)), Buffer.from(before), 'nothing changed');
});

t.test(`a parent takes at most ${limits.fanout_children_max} children`, async (t) => {
  const names = Array.from({ length: limits.fanout_children_max + 1 }, (_, i) => `k${i}`);
  const state = fresh('p', ...names);
  for (const name of names.slice(0, -1)) t.ok(attach(state, 'p', name).ok || t.fail(name));
  t.equal(refusalId(attach(state, 'p', names.at(-1)!)), 'fanoutChildrenFull');
});

t.test('delay: the parent retention must hold the delay plus one hour, at attach and at a later PATCH', async (t) => {
  const state = fresh('c', 'd');
  applyCommand(state, { type: 'topic.create', topic: topic('p', 3 * hourMs) });
  t.equal(refusalId(attach(state, 'p', 'c', { delayMs: 2 * hourMs + 1 })), 'fanoutDelayRetention');
  t.ok(attach(state, 'p', 'c', { delayMs: 2 * hourMs }).ok, 'exactly delay + 1 h');
  t.equal(linkOf(state, idOf('c'))?.link.delayMs, 2 * hourMs);
  const lower = applyCommand(state, { type: 'topic.update', name: 'p', id: idOf('p'), changes: { retentionMs: 3 * hourMs - 1, maxInFlightPerPartition: 7 } });
  t.equal(refusalId(lower), 'fanoutDelayRetention');
  t.equal(state.topics.get('p')?.retentionMs, 3 * hourMs, 'retention kept');
  t.equal(state.topics.get('p')?.maxInFlightPerPartition, 1024, 'later groups not applied');
  t.ok(applyCommand(state, { type: 'topic.update', name: 'p', id: idOf('p'), changes: { retentionMs: 0 } }).ok, '0 keeps forever');
  t.ok(attach(state, 'p', 'd').ok);
  t.notOk('delayMs' in linkOf(state, idOf('d'))!.link, 'an ordinary child has no delay');
});

t.test('schemas: a child without one adopts the parent history; equal histories attach; others refuse', async (t) => {
  const v1 = '{"type":"object"}';
  const v2 = '{"type":["object","array"]}';
  const state = fresh('plain', 'c');
  applyCommand(state, { type: 'topic.create', topic: topic('p'), schema: v1 });
  applyCommand(state, { type: 'topic.create', topic: topic('same'), schema: v1 });
  applyCommand(state, { type: 'topic.create', topic: topic('other'), schema: v2 });
  t.equal(refusalId(attach(state, 'plain', 'same')), 'fanoutSchemaMismatch', 'child with schema under parent without');
  t.equal(refusalId(attach(state, 'p', 'other')), 'fanoutSchemaMismatch', 'different history');
  t.ok(attach(state, 'p', 'same').ok, 'identical history');
  t.ok(attach(state, 'p', 'c').ok, 'no schema: adopts');
  t.same(state.schemas.get(idOf('c'))?.documents, [v1]);
  const patch = (name: string) => applyCommand(state, { type: 'topic.update', name, id: idOf(name), changes: { schema: { document: v2, checkedAgainst: 1 } } });
  t.equal(refusalId(patch('c')), 'childSchemaManaged', 'the parent manages the child schema');
  t.ok(patch('p').ok);
  t.same(state.schemas.get(idOf('c'))?.documents, [v1, v2], 'the parent version reached the child');
  t.same(state.schemas.get(idOf('same'))?.documents, [v1, v2]);
  applyCommand(state, { type: 'fanout.detach', parent: 'p', parentId: idOf('p'), child: 'c', childId: idOf('c') });
  t.same(state.schemas.get(idOf('c'))?.documents, [v1, v2], 'detach keeps the history');
  const v3 = '{"type":["object","array","string"]}';
  const own = applyCommand(state, { type: 'topic.update', name: 'c', id: idOf('c'), changes: { schema: { document: v3, checkedAgainst: 2 } } });
  t.ok(own.ok, 'a detached child manages its schema again');
  t.same(state.schemas.get(idOf('p'))?.documents, [v1, v2], 'the former parent is untouched');
});

t.test('a create with parent is all or nothing', async (t) => {
  const state = fresh('p', 'c0');
  attach(state, 'p', 'c0');
  const created = applyCommand(state, { type: 'topic.create', topic: topic('c1'), attach: attachOf('p', { delayMs: 10 }) });
  t.ok(created.ok && created.topic?.name === 'c1', 'the result is the child');
  t.same(state.fanout.get(idOf('p'))?.children.map((c) => c.child), ['c0', 'c1']);
  const grandchild = applyCommand(state, { type: 'topic.create', topic: topic('g'), attach: attachOf('c1') });
  t.equal(refusalId(grandchild), 'fanoutParentIsChild');
  t.notOk(state.topics.has('g'), 'the refused create created nothing');
  const schemaMismatch = applyCommand(state, { type: 'topic.create', topic: topic('s'), schema: '{}', attach: attachOf('p') });
  t.equal(refusalId(schemaMismatch), 'fanoutSchemaMismatch');
  t.notOk(state.topics.has('s') || state.schemas.has(idOf('s')), 'neither topic nor schema');
});

t.test('growth pads attach offsets; delete unlinks a child, or every child of a parent', async (t) => {
  const state = fresh('p', 'a', 'b');
  attach(state, 'p', 'a');
  attach(state, 'p', 'b', { attachOffsets: [1] });
  t.same(linkOf(state, idOf('b'))?.link.attachOffsets, [1, 0, 0], 'offsets read before a growth: new partitions start at 0');
  applyCommand(state, { type: 'topic.update', name: 'p', id: idOf('p'), changes: { partitions: 5, newOwners: [1, 1] } });
  t.same(linkOf(state, idOf('a'))?.link.attachOffsets, [5, 0, 7, 0, 0]);
  applyCommand(state, { type: 'topic.delete', name: 'a', id: idOf('a') });
  t.same(state.fanout.get(idOf('p'))?.children.map((c) => c.child), ['b']);
  applyCommand(state, { type: 'topic.delete', name: 'p', id: idOf('p') });
  t.equal(roleOf(state, idOf('b')), 'standalone');
  t.equal(state.fanout.size + state.fanoutParentOf.size, 0);
});

t.test('snapshots carry links byte for byte and leave them out while there are none', async (t) => {
  const state = fresh('p', 'a', 'b');
  const without = encodeMetadataSnapshot(state);
  attach(state, 'p', 'b', { delayMs: 1000 });
  attach(state, 'p', 'a');
  const bytes = encodeMetadataSnapshot(state);
  const decoded = decodeMetadataSnapshot(bytes);
  t.same(decoded.fanout, state.fanout);
  t.same(decoded.fanoutParentOf, state.fanoutParentOf, 'the derived index is rebuilt');
  t.same(Buffer.from(encodeMetadataSnapshot(decoded)), Buffer.from(bytes), 'identical bytes');
  applyCommand(state, { type: 'fanout.detach', parent: 'p', parentId: idOf('p'), child: 'a', childId: idOf('a') });
  applyCommand(state, { type: 'fanout.detach', parent: 'p', parentId: idOf('p'), child: 'b', childId: idOf('b') });
  t.same(Buffer.from(encodeMetadataSnapshot(state)), Buffer.from(without), 'no links: the bytes of a state that never had any');
});

t.test('placement keeps a child created with parent off the parent nodes where it can (spec §4 POST /v1/topics)', async (t) => {
  const state = fresh('p');
  applyCommand(state, { type: 'member.add', member: { id: 2, apiAddress: 'b:1', internalAddress: 'b:2', addedAtMs: 1 } });
  const create = { type: 'topic.create' as const, topic: { ...topic('c'), owners: [] }, attach: attachOf('p') };
  const placed = fillOwners(state, create, [1, 2]);
  t.same(placed.type === 'topic.create' && placed.topic.owners, [2, 2, 2], 'member 2 takes every partition');
  const alone = fillOwners(state, create, [1]);
  t.same(alone.type === 'topic.create' && alone.topic.owners, [1, 1, 1], 'only the parent node is live: it takes them');
});

t.test('a snapshot whose links break a rule is refused with an error naming it', async (t) => {
  const packr = new Packr({ useRecords: false, moreTypes: false });
  const state = fresh('p', 'a', 'b');
  attach(state, 'p', 'a', { delayMs: 5 });
  const good = packr.unpack(encodeMetadataSnapshot(state)) as Record<string, any>;
  const damaged = (change: (body: any) => void): Uint8Array => {
    const body = structuredClone(good);
    change(body);
    return new Uint8Array(packr.pack(body));
  };
  const cases: [string, Uint8Array, RegExp][] = [
    ['unknown parent', damaged((b) => { b.fanout[0].parentId = 'ffffffffffffffff'; }), /fanout\[0\]: topic ffffffffffffffff named p is not/],
    ['wrong parent name', damaged((b) => { b.fanout[0].parent = 'q'; }), /named q is not in the snapshot/],
    ['unknown child', damaged((b) => { b.fanout[0].children[0].child = 'zz'; }), /child .* named zz is not in the snapshot/],
    ['no children', damaged((b) => { b.fanout[0].children = []; }), /fanout\[0\]: 0 children/],
    ['child twice', damaged((b) => { b.fanout[0].children.push(b.fanout[0].children[0]); }), /has two parents/],
    ['offsets short', damaged((b) => { b.fanout[0].children[0].attachOffsets.pop(); }), /2 attach offsets for 3 parent partitions/],
    ['delay 0', damaged((b) => { b.fanout[0].children[0].delayMs = 0; }), /delayMs: not an integer >= 1/],
    ['unknown link field', damaged((b) => { b.fanout[0].children[0].cursor = 1; }), /unknown field cursor/],
    ['grandchild', damaged((b) => { b.fanout.push({ parentId: idOf('a'), parent: 'a', children: [{ ...b.fanout[0].children[0], child: 'b', childId: idOf('b') }] }); }),
      /both a child .* and a parent/],
  ];
  t.ok(decodeMetadataSnapshot(damaged(() => undefined)).fanout.size === 1, 'the undamaged body decodes');
  for (const [what, bytes, message] of cases) t.throws(() => decodeMetadataSnapshot(bytes), message, what);
});
