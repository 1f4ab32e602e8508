// The table of (old, new) schema versions the compatibility tests share: the verdict the checker must give, the
// keyword and location of a refusal, and for a refusal that is a real incompatibility a witness document that the
// old version accepts and the new one refuses (checked with ajv). Used by test/unit/schema_compatibility*.test.ts.

export interface SchemaPair {
  readonly name: string;
  readonly old: unknown;
  readonly new: unknown;
  readonly compatible: boolean;
  readonly keyword?: string;
  readonly location?: string;
  /** Accepted by old, refused by new: proof that the refusal is not mere caution. */
  readonly witness?: unknown;
  /** ajv cannot compile one side (the point of the pair is that the checker refuses it). */
  readonly skipAjv?: boolean;
}

const d7 = 'http://json-schema.org/draft-07/schema#';
const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  ({ type: 'object', properties, ...extra });
const closed = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  obj(properties, { additionalProperties: false, ...extra });
const str = { type: 'string' };
const int = { type: 'integer' };
const num = { type: 'number' };
const arr = (extra: Record<string, unknown>): Record<string, unknown> => ({ type: 'array', ...extra });
const tree = (node: Record<string, unknown>): Record<string, unknown> => ({ $defs: { t: node }, $ref: '#/$defs/t' });
const treeNode = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> =>
  obj({ ...properties, kids: arr({ items: { $ref: '#/$defs/t' } }) }, extra);
const ifKind = { properties: { kind: { const: 'a' } }, required: ['kind'] };

export const schemaPairs: readonly SchemaPair[] = [
  // type
  { name: 'type extended with null', old: str, new: { type: ['string', 'null'] }, compatible: true },
  { name: 'integer widened to number', old: int, new: num, compatible: true },
  { name: 'number narrowed to integer', old: num, new: int, compatible: false, keyword: 'type', location: '', witness: 1.5 },
  { name: 'type added to an empty schema', old: {}, new: str, compatible: false, keyword: 'type', location: '', witness: 1 },
  { name: 'type removed', old: str, new: {}, compatible: true },
  { name: 'null dropped from a type list', old: { type: ['string', 'null'] }, new: str, compatible: false, keyword: 'type', location: '', witness: null },
  // enum and const
  { name: 'enum extended', old: { enum: ['a', 'b'] }, new: { enum: ['a', 'b', 'c'] }, compatible: true },
  { name: 'enum removed', old: { type: 'string', enum: ['a'] }, new: str, compatible: true },
  { name: 'enum narrowed', old: { enum: ['a', 'b'] }, new: { enum: ['a'] }, compatible: false, keyword: 'enum', location: '', witness: 'b' },
  { name: 'const turned into an enum holding it', old: { const: 5 }, new: { enum: [5, 6] }, compatible: true },
  { name: 'const removed', old: { type: 'integer', const: 5 }, new: int, compatible: true },
  { name: 'const changed', old: { const: 5 }, new: { const: 6 }, compatible: false, keyword: 'const', location: '', witness: 5 },
  { name: 'enum added', old: str, new: { type: 'string', enum: ['a'] }, compatible: false, keyword: 'enum', location: '', witness: 'zz' },
  { name: 'enum replaced by a type covering it', old: { enum: ['a', 1] }, new: { type: ['string', 'integer'] }, compatible: true },
  { name: 'enum values inside a new bound', old: { enum: [1, 2, 3] }, new: { type: 'integer', maximum: 3 }, compatible: true },
  { name: 'enum values matching a new pattern', old: { enum: ['ab', 'cd'] }, new: { type: 'string', pattern: '^[a-z]+$' }, compatible: true },
  // numbers
  { name: 'minimum relaxed', old: { type: 'number', minimum: 5 }, new: { type: 'number', minimum: 0 }, compatible: true },
  { name: 'minimum raised', old: { type: 'number', minimum: 0 }, new: { type: 'number', minimum: 5 }, compatible: false, keyword: 'minimum', location: '', witness: 1 },
  { name: 'maximum removed', old: { type: 'number', maximum: 5 }, new: num, compatible: true },
  { name: 'maximum added', old: num, new: { type: 'number', maximum: 10 }, compatible: false, keyword: 'maximum', location: '', witness: 11 },
  { name: 'exclusiveMinimum to the same minimum', old: { type: 'number', exclusiveMinimum: 0 }, new: { type: 'number', minimum: 0 }, compatible: true },
  { name: 'minimum to the same exclusiveMinimum', old: { type: 'number', minimum: 0 }, new: { type: 'number', exclusiveMinimum: 0 }, compatible: false, keyword: 'exclusiveMinimum', location: '', witness: 0 },
  { name: 'integer exclusiveMaximum 10 is maximum 9', old: { type: 'integer', exclusiveMaximum: 10 }, new: { type: 'integer', maximum: 9 }, compatible: true },
  { name: 'number exclusiveMaximum 10 is not maximum 9', old: { type: 'number', exclusiveMaximum: 10 }, new: { type: 'number', maximum: 9 }, compatible: false, keyword: 'maximum', location: '', witness: 9.5 },
  { name: 'exclusiveMaximum relaxed', old: { type: 'number', exclusiveMaximum: 5 }, new: { type: 'number', exclusiveMaximum: 7 }, compatible: true },
  { name: 'multipleOf unchanged beside a new description', old: { type: 'number', multipleOf: 0.5 }, new: { type: 'number', multipleOf: 0.5, description: 'halves' }, compatible: true },
  { name: 'multipleOf to a divisor, bounded integers', old: { type: 'integer', minimum: 0, maximum: 1000, multipleOf: 10 }, new: { type: 'integer', minimum: 0, maximum: 1000, multipleOf: 5 }, compatible: true },
  { name: 'multipleOf to a divisor, unbounded (floating point)', old: { type: 'number', multipleOf: 10 }, new: { type: 'number', multipleOf: 5 }, compatible: false, keyword: 'multipleOf', location: '', witness: 9.9e21 },
  { name: 'multipleOf to a non-divisor', old: { type: 'integer', multipleOf: 10 }, new: { type: 'integer', multipleOf: 3 }, compatible: false, keyword: 'multipleOf', location: '', witness: 10 },
  { name: 'multipleOf added', old: num, new: { type: 'number', multipleOf: 2 }, compatible: false, keyword: 'multipleOf', location: '', witness: 3 },
  { name: 'multipleOf removed', old: { type: 'number', multipleOf: 2 }, new: num, compatible: true },
  // strings
  { name: 'minLength relaxed', old: { type: 'string', minLength: 3 }, new: { type: 'string', minLength: 1 }, compatible: true },
  { name: 'minLength raised', old: { type: 'string', minLength: 1 }, new: { type: 'string', minLength: 3 }, compatible: false, keyword: 'minLength', location: '', witness: 'ab' },
  { name: 'maxLength relaxed', old: { type: 'string', maxLength: 5 }, new: { type: 'string', maxLength: 10 }, compatible: true },
  { name: 'maxLength lowered', old: { type: 'string', maxLength: 10 }, new: { type: 'string', maxLength: 5 }, compatible: false, keyword: 'maxLength', location: '', witness: 'abcdefg' },
  { name: 'pattern removed', old: { type: 'string', pattern: '^[a-z]+$' }, new: str, compatible: true },
  { name: 'pattern added', old: str, new: { type: 'string', pattern: '^[a-z]+$' }, compatible: false, keyword: 'pattern', location: '', witness: 'A' },
  { name: 'pattern changed (even to a wider one: not provable)', old: { type: 'string', pattern: '^[a-z]+$' }, new: { type: 'string', pattern: '^[a-z0-9]+$' }, compatible: false, keyword: 'pattern', location: '' },
  { name: 'format removed', old: { type: 'string', format: 'email' }, new: str, compatible: true },
  { name: 'format added', old: str, new: { type: 'string', format: 'email' }, compatible: false, keyword: 'format', location: '', witness: 'nope' },
  { name: 'string bounds on a non-string type are vacuous', old: int, new: { type: 'integer', maxLength: 2, pattern: '^x$' }, compatible: true },
  // arrays, tuples
  { name: 'items widened', old: arr({ items: int }), new: arr({ items: num }), compatible: true },
  { name: 'items narrowed', old: arr({ items: num }), new: arr({ items: int }), compatible: false, keyword: 'type', location: '/items', witness: [1.5] },
  { name: 'items removed', old: arr({ items: int }), new: arr({}), compatible: true },
  { name: 'items added', old: arr({}), new: arr({ items: str }), compatible: false, keyword: 'type', location: '/items', witness: [1] },
  { name: 'minItems relaxed', old: arr({ minItems: 2 }), new: arr({ minItems: 1 }), compatible: true },
  { name: 'minItems raised', old: arr({ minItems: 1 }), new: arr({ minItems: 2 }), compatible: false, keyword: 'minItems', location: '', witness: [1] },
  { name: 'maxItems relaxed', old: arr({ maxItems: 3 }), new: arr({ maxItems: 5 }), compatible: true },
  { name: 'maxItems lowered', old: arr({ maxItems: 5 }), new: arr({ maxItems: 3 }), compatible: false, keyword: 'maxItems', location: '', witness: [1, 2, 3, 4] },
  { name: 'closed tuple extended', old: arr({ prefixItems: [str], items: false }), new: arr({ prefixItems: [str, num], items: false }), compatible: true },
  { name: 'open tuple extended', old: arr({ prefixItems: [str] }), new: arr({ prefixItems: [str, num] }), compatible: false, keyword: 'type', location: '/prefixItems/1', witness: ['a', 'b'] },
  { name: 'tuple closed', old: arr({ prefixItems: [str] }), new: arr({ prefixItems: [str], items: false }), compatible: false, keyword: 'items', location: '/items', witness: ['a', 1] },
  { name: 'tuple opened', old: arr({ prefixItems: [str], items: false }), new: arr({ prefixItems: [str] }), compatible: true },
  { name: 'position removed from an open tuple', old: arr({ prefixItems: [str, num] }), new: arr({ prefixItems: [str] }), compatible: true },
  { name: 'position removed from a closed tuple', old: arr({ prefixItems: [str, num], items: false }), new: arr({ prefixItems: [str], items: false }), compatible: false, keyword: 'items', location: '/items', witness: ['a', 1] },
  { name: 'position added, covered by the old rest', old: arr({ prefixItems: [str], items: int }), new: arr({ prefixItems: [str, num], items: int }), compatible: true },
  { name: 'tuple position widened', old: arr({ prefixItems: [str], items: false }), new: arr({ prefixItems: [{ type: ['string', 'null'] }], items: false }), compatible: true },
  { name: 'tuple rest narrowed', old: arr({ prefixItems: [str], items: num }), new: arr({ prefixItems: [str], items: int }), compatible: false, keyword: 'type', location: '/items', witness: ['a', 0.5] },
  { name: 'contains relaxed', old: arr({ contains: int }), new: arr({ contains: num }), compatible: true },
  { name: 'contains added', old: arr({}), new: arr({ contains: int }), compatible: false, keyword: 'contains', location: '', witness: [] },
  { name: 'minContains relaxed', old: arr({ contains: int, minContains: 2 }), new: arr({ contains: int, minContains: 1 }), compatible: true },
  { name: 'minContains raised', old: arr({ contains: int }), new: arr({ contains: int, minContains: 2 }), compatible: false, keyword: 'minContains', location: '', witness: [1] },
  { name: 'tuple removed beside contains (ajv 8 lets [] through contains beside a tuple)', old: arr({ contains: int, prefixItems: [str] }), new: arr({ contains: int }), compatible: false, keyword: 'contains', location: '', witness: [] },
  { name: 'tuple removed beside contains, arrays never empty', old: arr({ contains: int, prefixItems: [str], minItems: 1 }), new: arr({ contains: int, minItems: 1 }), compatible: true },
  { name: 'maxContains added', old: arr({ contains: int }), new: arr({ contains: int, maxContains: 1 }), compatible: false, keyword: 'maxContains', location: '', witness: [1, 2] },
  { name: 'maxContains relaxed', old: arr({ contains: int, maxContains: 1 }), new: arr({ contains: int, maxContains: 3 }), compatible: true },
  { name: 'uniqueItems removed', old: arr({ uniqueItems: true }), new: arr({}), compatible: true },
  { name: 'uniqueItems added', old: arr({}), new: arr({ uniqueItems: true }), compatible: false, keyword: 'uniqueItems', location: '', witness: [1, 1] },
  { name: 'uniqueItems added to arrays of at most one item', old: arr({ maxItems: 1 }), new: arr({ maxItems: 1, uniqueItems: true }), compatible: true },
  { name: 'unevaluatedItems false removed', old: arr({ prefixItems: [str], unevaluatedItems: false }), new: arr({ prefixItems: [str] }), compatible: true },
  { name: 'unevaluatedItems false added to a tuple', old: arr({ prefixItems: [str] }), new: arr({ prefixItems: [str], unevaluatedItems: false }), compatible: false, keyword: 'unevaluatedItems', location: '/unevaluatedItems', witness: ['a', 1] },
  // objects
  { name: 'required entry dropped', old: obj({ a: str }, { required: ['a'] }), new: obj({ a: str }), compatible: true },
  { name: 'required entry added', old: obj({ a: str }), new: obj({ a: str }, { required: ['a'] }), compatible: false, keyword: 'required', location: '', witness: {} },
  { name: 'required property with a default (Confluent accepts; not a widening)', old: obj({ a: str }), new: obj({ a: { type: 'string', default: 'x' } }, { required: ['a'] }), compatible: false, keyword: 'required', location: '', witness: {} },
  { name: 'optional property added to a closed object', old: closed({ a: str }), new: closed({ a: str, b: int }), compatible: true },
  { name: 'optional property named like an Object.prototype member added to a closed object', old: closed({ a: str }), new: closed({ a: str, toString: str, constructor: int }), compatible: true },
  { name: 'typed property added to an open object', old: obj({ a: str }), new: obj({ a: str, b: str }), compatible: false, keyword: 'properties', location: '/properties/b', witness: { b: 1 } },
  { name: 'unconstrained property added to an open object', old: obj({ a: str }), new: obj({ a: str, b: { description: 'free' }, c: true }), compatible: true },
  { name: 'object closed', old: { type: 'object' }, new: { type: 'object', additionalProperties: false }, compatible: false, keyword: 'additionalProperties', location: '', witness: { z: 1 } },
  { name: 'object opened', old: closed({ a: str }), new: obj({ a: str }), compatible: true },
  { name: 'additionalProperties widened', old: { type: 'object', additionalProperties: int }, new: { type: 'object', additionalProperties: num }, compatible: true },
  { name: 'additionalProperties narrowed', old: { type: 'object', additionalProperties: num }, new: { type: 'object', additionalProperties: int }, compatible: false, keyword: 'additionalProperties', location: '', witness: { z: 1.5 } },
  { name: 'property removed from a closed object', old: closed({ a: str, b: str }), new: closed({ a: str }), compatible: false, keyword: 'additionalProperties', location: '', witness: { b: 'x' } },
  { name: 'property removed from an open object', old: obj({ a: str, b: int }), new: obj({ a: str }), compatible: true },
  { name: 'property added, covered by the old additionalProperties', old: obj({ a: str }, { additionalProperties: int }), new: obj({ a: str, b: num }, { additionalProperties: int }), compatible: true },
  { name: 'property added, not covered by the old additionalProperties', old: obj({ a: str }, { additionalProperties: int }), new: obj({ a: str, b: str }, { additionalProperties: int }), compatible: false, keyword: 'type', location: '/properties/b', witness: { b: 1 } },
  { name: 'property removed, covered by the new additionalProperties', old: obj({ a: str, b: int }, { additionalProperties: num }), new: obj({ a: str }, { additionalProperties: num }), compatible: true },
  { name: 'property removed, not covered by the new additionalProperties', old: obj({ a: str, b: str }, { additionalProperties: num }), new: obj({ a: str }, { additionalProperties: num }), compatible: false, keyword: 'additionalProperties', location: '', witness: { b: 'x' } },
  { name: 'property type widened', old: obj({ a: int }), new: obj({ a: num }), compatible: true },
  { name: 'nested property narrowed', old: obj({ a: obj({ b: str }) }), new: obj({ a: obj({ b: { type: 'string', maxLength: 3 } }) }), compatible: false, keyword: 'maxLength', location: '/properties/a/properties/b', witness: { a: { b: 'abcdef' } } },
  { name: 'nested optional property added to a closed object', old: obj({ a: closed({ b: str }) }), new: obj({ a: closed({ b: str, c: { type: 'boolean' } }) }), compatible: true },
  { name: 'patternProperties widened', old: { type: 'object', patternProperties: { '^x_': int } }, new: { type: 'object', patternProperties: { '^x_': num } }, compatible: true },
  { name: 'patternProperties added to an open object', old: { type: 'object' }, new: { type: 'object', patternProperties: { '^x_': int } }, compatible: false, keyword: 'patternProperties', location: '/patternProperties/^x_', witness: { x_1: 'a' } },
  { name: 'patternProperties removed', old: { type: 'object', patternProperties: { '^x_': int } }, new: { type: 'object' }, compatible: true },
  { name: 'property outside the patterns added to a closed object', old: { type: 'object', patternProperties: { '^x_': int }, additionalProperties: false }, new: { type: 'object', properties: { y: str }, patternProperties: { '^x_': int }, additionalProperties: false }, compatible: true },
  { name: 'propertyNames relaxed', old: { type: 'object', propertyNames: { type: 'string', maxLength: 3 } }, new: { type: 'object', propertyNames: { type: 'string', maxLength: 5 } }, compatible: true },
  { name: 'propertyNames added', old: { type: 'object' }, new: { type: 'object', propertyNames: { type: 'string', maxLength: 3 } }, compatible: false, keyword: 'propertyNames', location: '', witness: { abcdef: 1 } },
  { name: 'propertyNames added to a closed object whose names fit', old: closed({ ab: str }), new: closed({ ab: str }, { propertyNames: { type: 'string', maxLength: 3 } }), compatible: true },
  { name: 'dependentRequired removed', old: { type: 'object', dependentRequired: { a: ['b'] } }, new: { type: 'object' }, compatible: true },
  { name: 'dependentRequired added', old: { type: 'object' }, new: { type: 'object', dependentRequired: { a: ['b'] } }, compatible: false, keyword: 'dependentRequired', location: '', witness: { a: 1 } },
  { name: 'dependentRequired already implied by required', old: { type: 'object', required: ['a', 'b'] }, new: { type: 'object', required: ['a', 'b'], dependentRequired: { a: ['b'] } }, compatible: true },
  { name: 'dependentSchemas removed', old: { type: 'object', dependentSchemas: { a: { required: ['b'] } } }, new: { type: 'object' }, compatible: true },
  { name: 'dependentSchemas added', old: { type: 'object' }, new: { type: 'object', dependentSchemas: { a: { required: ['b'] } } }, compatible: false, keyword: 'dependentSchemas', location: '/dependentSchemas/a', witness: { a: 1 } },
  { name: 'dependentSchemas relaxed', old: { type: 'object', dependentSchemas: { a: { required: ['b', 'c'] } } }, new: { type: 'object', dependentSchemas: { a: { required: ['b'] } } }, compatible: true },
  { name: 'minProperties relaxed', old: { type: 'object', minProperties: 2 }, new: { type: 'object', minProperties: 1 }, compatible: true },
  { name: 'maxProperties added', old: { type: 'object' }, new: { type: 'object', maxProperties: 1 }, compatible: false, keyword: 'maxProperties', location: '', witness: { a: 1, b: 2 } },
  { name: 'maxProperties implied by a closed object', old: closed({ a: str, b: str }), new: closed({ a: str, b: str }, { maxProperties: 2 }), compatible: true },
  { name: 'unevaluatedProperties false removed', old: obj({ a: str }, { unevaluatedProperties: false }), new: obj({ a: str }), compatible: true },
  { name: 'unevaluatedProperties false added', old: obj({ a: str }), new: obj({ a: str }, { unevaluatedProperties: false }), compatible: false, keyword: 'unevaluatedProperties', location: '', witness: { z: 1 } },
  { name: 'optional property added under unevaluatedProperties false', old: obj({ a: str }, { unevaluatedProperties: false }), new: obj({ a: str, b: int }, { unevaluatedProperties: false }), compatible: true },
  { name: 'unevaluatedProperties beside allOf added', old: { type: 'object' }, new: { type: 'object', allOf: [{ properties: { a: true } }], unevaluatedProperties: false }, compatible: false, keyword: 'unevaluatedProperties', location: '', witness: { z: 1 } },
  // combinators
  { name: 'anyOf branch added', old: { anyOf: [str, int] }, new: { anyOf: [str, int, { type: 'boolean' }] }, compatible: true },
  { name: 'anyOf branch removed', old: { anyOf: [str, int] }, new: { anyOf: [str] }, compatible: false, keyword: 'anyOf', location: '', witness: 1 },
  { name: 'anyOf old branches covered by one type', old: { anyOf: [{ type: 'string', maxLength: 3 }, int] }, new: { type: ['string', 'number'] }, compatible: true },
  { name: 'oneOf branch added, disjoint by type', old: { oneOf: [str, num] }, new: { oneOf: [str, num, { type: 'boolean' }] }, compatible: true },
  { name: 'oneOf branch added, overlapping', old: { oneOf: [str, num] }, new: { oneOf: [str, num, int] }, compatible: false, keyword: 'oneOf', location: '', witness: 1 },
  { name: 'oneOf branch added, disjoint by a required discriminator', old: { oneOf: [obj({ kind: { const: 'a' }, x: int }, { required: ['kind'] })] }, new: { oneOf: [obj({ kind: { const: 'a' }, x: int }, { required: ['kind'] }), obj({ kind: { const: 'b' }, y: str }, { required: ['kind'] })] }, compatible: true },
  { name: 'type list turned into anyOf of its types', old: { type: ['string', 'null'] }, new: { anyOf: [str, { type: 'null' }] }, compatible: true },
  { name: 'type list turned into oneOf of its types', old: { type: ['string', 'integer', 'null'], maxLength: 3 }, new: { oneOf: [{ type: 'string', maxLength: 3 }, num, { type: 'null' }] }, compatible: true },
  { name: 'type list into a oneOf that loses a type', old: { type: ['string', 'null'] }, new: { oneOf: [str, { type: 'boolean' }] }, compatible: false, keyword: 'oneOf', location: '', witness: null },
  { name: 'oneOf turned into anyOf', old: { oneOf: [str, int] }, new: { anyOf: [str, int] }, compatible: true },
  { name: 'anyOf turned into an overlapping oneOf', old: { anyOf: [num, int] }, new: { oneOf: [num, int] }, compatible: false, keyword: 'oneOf', location: '', witness: 1 },
  { name: 'allOf branch removed', old: { allOf: [str, { minLength: 2 }] }, new: { allOf: [str] }, compatible: true },
  { name: 'allOf branch added', old: str, new: { allOf: [str, { minLength: 2 }] }, compatible: false, keyword: 'minLength', location: '/allOf/1', witness: 'a' },
  { name: 'allOf facts flattened', old: { allOf: [obj({ a: int }), { required: ['a'] }] }, new: obj({ a: num }, { required: ['a'] }), compatible: true },
  { name: 'not narrowed (excludes less)', old: { not: { type: ['string', 'null'] } }, new: { not: str }, compatible: true },
  { name: 'not widened (excludes more)', old: { not: str }, new: { not: { type: ['string', 'null'] } }, compatible: false, keyword: 'not', location: '', witness: null },
  { name: 'not added', old: {}, new: { not: str }, compatible: false, keyword: 'not', location: '', witness: 'a' },
  { name: 'not added, disjoint from the type', old: int, new: { type: 'integer', not: str }, compatible: true },
  { name: 'then relaxed', old: { type: 'object', if: ifKind, then: { required: ['x', 'y'] } }, new: { type: 'object', if: ifKind, then: { required: ['x'] } }, compatible: true },
  { name: 'if/then added', old: { type: 'object' }, new: { type: 'object', if: { required: ['a'] }, then: { required: ['b'] } }, compatible: false, keyword: 'required', location: '/then', witness: { a: 1 } },
  { name: 'else widened', old: { if: int, then: { minimum: 0 }, else: str }, new: { if: int, then: { minimum: 0 }, else: { type: ['string', 'null'] } }, compatible: true },
  { name: 'if/then/else collapsed into anyOf', old: { if: str, then: { maxLength: 3 }, else: int }, new: { anyOf: [str, int] }, compatible: true },
  // references
  { name: '$ref target widened', old: { $defs: { a: int }, $ref: '#/$defs/a' }, new: { $defs: { a: num }, $ref: '#/$defs/a' }, compatible: true },
  { name: '$ref target narrowed', old: { $defs: { a: num }, $ref: '#/$defs/a' }, new: { $defs: { a: int }, $ref: '#/$defs/a' }, compatible: false, keyword: 'type', location: '/$defs/a', witness: 1.5 },
  { name: '$ref to another document', old: str, new: { $ref: 'https://example.com/s.json' }, compatible: false, keyword: '$ref', location: '', skipAjv: true },
  { name: 'inline schema moved behind $ref', old: str, new: { $defs: { s: str }, $ref: '#/$defs/s' }, compatible: true },
  { name: 'recursive tree unchanged', old: tree(treeNode({ v: num })), new: tree(treeNode({ v: num })), compatible: true },
  { name: 'recursive closed tree gains an optional property', old: tree(treeNode({ v: num }, { additionalProperties: false })), new: tree(treeNode({ v: num, n: str }, { additionalProperties: false })), compatible: true },
  { name: 'recursive tree narrowed deep down', old: tree(treeNode({ v: num })), new: tree(treeNode({ v: int })), compatible: false, keyword: 'type', location: '/$defs/t/properties/v', witness: { kids: [{ v: 1.5 }] } },
  { name: 'reference loop without descent', old: { type: 'object' }, new: { $defs: { t: { anyOf: [{ type: 'object' }, { $ref: '#/$defs/t' }] } }, $ref: '#/$defs/t' }, compatible: false, keyword: '$ref', location: '/$defs/t' },
  { name: 'reference loop through not and if', old: { type: 'object' }, new: { $defs: { t: { not: { if: { $ref: '#/$defs/t' }, then: int, else: num } } }, $ref: '#/$defs/t' }, compatible: false, keyword: '$ref', location: '/$defs/t' },
  // nesting
  { name: 'array of closed objects gains an optional property', old: arr({ items: closed({ a: str }) }), new: arr({ items: closed({ a: str, b: num }) }), compatible: true },
  { name: 'array of open objects gains a typed property', old: arr({ items: obj({ a: str }) }), new: arr({ items: obj({ a: str, b: num }) }), compatible: false, keyword: 'properties', location: '/items/properties/b', witness: [{ b: 'x' }] },
  { name: 'object of tuples widened', old: obj({ p: arr({ prefixItems: [num, num], items: false }) }), new: obj({ p: arr({ prefixItems: [num, num, num], items: false }) }), compatible: true },
  // draft-07
  { name: 'draft-07 closed tuple extended', old: { $schema: d7, type: 'array', items: [str], additionalItems: false }, new: { $schema: d7, type: 'array', items: [str, num], additionalItems: false }, compatible: true },
  { name: 'draft-07 additionalItems added', old: { $schema: d7, type: 'array', items: [str] }, new: { $schema: d7, type: 'array', items: [str], additionalItems: str }, compatible: false, keyword: 'type', location: '/additionalItems', witness: ['a', 1] },
  { name: 'draft-07 definitions target widened', old: { $schema: d7, definitions: { a: int }, $ref: '#/definitions/a' }, new: { $schema: d7, definitions: { a: num }, $ref: '#/definitions/a' }, compatible: true },
  { name: 'draft-07 dependencies added', old: { $schema: d7, type: 'object' }, new: { $schema: d7, type: 'object', dependencies: { a: ['b'] } }, compatible: false, keyword: 'dependencies', location: '', witness: { a: 1 } },
  { name: 'draft-07 tuple to the same 2020-12 tuple', old: { $schema: d7, type: 'array', items: [str], additionalItems: false }, new: arr({ prefixItems: [str], items: false }), compatible: true },
  { name: 'draft-07 tuple read as 2020-12 items', old: { $schema: d7, type: 'array', items: [str] }, new: arr({ items: str }), compatible: false, keyword: 'type', location: '/items', witness: ['a', 1] },
  // whole documents
  { name: 'annotations only', old: obj({ a: str }, { title: 'T' }), new: obj({ a: { type: 'string', description: 'd', examples: ['x'] } }, { title: 'U', $comment: 'c' }), compatible: true },
  { name: 'new version true', old: str, new: true, compatible: true },
  { name: 'old version false', old: false, new: str, compatible: true },
  { name: 'new version false', old: str, new: false, compatible: false, keyword: 'false', location: '', witness: 'a' },
  { name: 'unknown keyword', old: str, new: { type: 'string', nullable: true }, compatible: false, keyword: 'nullable', location: '', skipAjv: true },
  { name: 'unsupported dialect', old: str, new: { $schema: 'http://json-schema.org/draft-04/schema#', type: 'string' }, compatible: false, keyword: '$schema', location: '', skipAjv: true },
];
