// Goal: the schema compatibility checker (issue 28 point 2, NOTES 1) over a table of (old, new) pairs covering
// every keyword ajv supports, nested objects, arrays, tuples, combinators, references and both dialects: compatible
// pairs pass, the rest are refused naming the expected keyword and location, and each refusal that is a real
// incompatibility carries a witness document ajv accepts under the old version and refuses under the new one.
// Then annotation-only changes, and the proof budget on an explosion of alternatives.
import t from 'tap';
import { checkCompatible, findInPlaceRefCycle, isAnnotationOnlyChange } from '../../src/schema/compatibility.js';
import { compileSchema } from '../helpers/schema_ajv.js';
import { schemaPairs } from '../helpers/schema_pairs.js';

t.test('the table', async (t) => {
  t.ok(schemaPairs.length >= 80, `${schemaPairs.length} pairs`);
  for (const pair of schemaPairs) {
    const verdict = checkCompatible(pair.old, pair.new);
    if (pair.compatible) {
      t.same(verdict, { compatible: true }, pair.name);
      continue;
    }
    t.equal(verdict.compatible, false, `${pair.name}: refused`);
    if (verdict.compatible) continue;
    t.equal(verdict.keyword, pair.keyword, `${pair.name}: keyword (${verdict.reason})`);
    t.equal(verdict.location, pair.location, `${pair.name}: location`);
    t.ok(verdict.reason.length > 0, `${pair.name}: a reason`);
  }
});

t.test('every table schema compiles with ajv', async (t) => {
  for (const pair of schemaPairs.filter((p) => !p.skipAjv)) {
    t.doesNotThrow(() => compileSchema(pair.old), `${pair.name}: old`);
    t.doesNotThrow(() => compileSchema(pair.new), `${pair.name}: new`);
  }
});

t.test('witnesses: the old version accepts them, the new one does not', async (t) => {
  const withWitness = schemaPairs.filter((p) => 'witness' in p);
  t.ok(withWitness.length >= 40, `${withWitness.length} witnesses`);
  for (const pair of withWitness) {
    t.equal(compileSchema(pair.old)(pair.witness), true, `${pair.name}: old accepts ${JSON.stringify(pair.witness)}`);
    t.equal(compileSchema(pair.new)(pair.witness), false, `${pair.name}: new refuses it`);
  }
});

t.test('every version is compatible with itself', async (t) => {
  for (const pair of schemaPairs.filter((p) => !p.skipAjv)) {
    t.same(checkCompatible(pair.old, pair.old), { compatible: true }, `${pair.name}: old with itself`);
    t.same(checkCompatible(pair.new, pair.new), { compatible: true }, `${pair.name}: new with itself`);
  }
});

t.test('annotation-only changes', async (t) => {
  t.ok(isAnnotationOnlyChange({ type: 'string' }, { type: 'string' }), 'identical');
  t.ok(isAnnotationOnlyChange({ type: 'string', title: 'a' }, { type: 'string', description: 'b', examples: ['x'], default: 'y' }));
  t.ok(isAnnotationOnlyChange({ properties: { a: { type: 'string', deprecated: true, readOnly: true } } },
    { properties: { a: { type: 'string', writeOnly: true, $comment: 'c' } } }), 'nested');
  t.ok(isAnnotationOnlyChange({ type: 'string' }, { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string' }),
    'an absent $schema is 2020-12');
  t.ok(isAnnotationOnlyChange({ required: ['a', 'b'] }, { required: ['a', 'b'] }));
  t.notOk(isAnnotationOnlyChange({ required: ['a', 'b'] }, { required: ['b', 'a'] }), 'array order is a change (registers a version)');
  t.notOk(isAnnotationOnlyChange({ properties: { title: { type: 'string' } } }, { properties: {} }), 'a property named title is no annotation');
  t.notOk(isAnnotationOnlyChange({ enum: [{ description: 1 }] }, { enum: [{}] }), 'enum values are data');
  t.notOk(isAnnotationOnlyChange({ const: { title: 'x' } }, { const: { title: 'y' } }), 'const values are data');
  t.notOk(isAnnotationOnlyChange({ type: 'string' }, { type: 'string', maxLength: 3 }));
  t.notOk(isAnnotationOnlyChange({ type: 'string' }, { $schema: 'http://json-schema.org/draft-07/schema#', type: 'string' }), 'another dialect');
  t.notOk(isAnnotationOnlyChange(true, {}), 'true and {} accept the same, but the text changed');
  t.same(checkCompatible(true, {}), { compatible: true });
});

t.test('an explosion of alternatives is refused within the budget', async (t) => {
  const branches = Array.from({ length: 8 }, (_, i) => ({ type: 'integer', minimum: i }));
  const old = { allOf: Array.from({ length: 8 }, () => ({ anyOf: branches })) };
  // Compatible in truth, but 8^8 cases: the checker must stop and refuse rather than run on.
  const verdict = checkCompatible(old, { type: 'integer', minimum: 0 }, 2_000);
  t.equal(verdict.compatible, false);
  if (!verdict.compatible) t.match(verdict.reason, /too complex to compare within 2000 proof steps/);
  t.same(checkCompatible({ anyOf: branches }, { type: 'integer', minimum: 0 }, 2_000), { compatible: true }, 'a few alternatives fit');
});

t.test('reference loops that never descend into the document', async (t) => {
  const tree = { $defs: { t: { type: 'object', properties: { kids: { type: 'array', items: { $ref: '#/$defs/t' } } } } }, $ref: '#/$defs/t' };
  t.equal(findInPlaceRefCycle(tree), null, 'a tree descends through items');
  t.equal(findInPlaceRefCycle({ properties: { self: { $ref: '#' } } }), null, 'the root through a property');
  t.equal(findInPlaceRefCycle({ allOf: [{ $ref: '#' }] }), '', 'the root through allOf');
  t.match(findInPlaceRefCycle({ $defs: { a: { $ref: '#/$defs/b' }, b: { oneOf: [{ $ref: '#/$defs/a' }] } } }), /^\/\$defs\/(a|b)$/, 'two definitions, never used');
  t.equal(findInPlaceRefCycle({ $schema: 'http://json-schema.org/draft-07/schema#', definitions: { a: { dependencies: { x: { $ref: '#/definitions/a' } } } } }),
    '/definitions/a', 'draft-07 dependencies apply in place');
  t.equal(findInPlaceRefCycle({ $ref: 'https://example.com/elsewhere' }), null, 'unresolved references are refused elsewhere');
});

t.test('a catastrophic pattern cannot stall the checker', async (t) => {
  // The proof runs patterns on property names and enum values; the schema author picks both.
  const name = `${'a'.repeat(40)}b`;
  const old = { type: 'object', properties: { [name]: { type: 'string' } }, patternProperties: { '^(a+)+$': { type: 'integer' } }, additionalProperties: false };
  const verdict = checkCompatible(old, { ...old, properties: { [name]: { type: 'string' }, c: { type: 'string' } } });
  t.equal(verdict.compatible, false, 'refused: whether the new name matches the old pattern is not tried');
  const values = { enum: [name] };
  t.equal(checkCompatible(values, { type: 'string', pattern: '^(a+)+$' }).compatible, false, 'the enum value is not run either');
});
