// Random one-step edits of a schema document for the compatibility property test: widenings, narrowings and
// rewrites at a random subschema, so the checker meets changes nobody wrote into the table. The edit never decides
// the verdict; the test asks the checker, then ajv checks each claimed compatibility on drawn documents.
import { Prng } from './prng.js';

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => v !== null && typeof v === 'object' && !Array.isArray(v);

const subschemaKeys = ['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedProperties', 'unevaluatedItems', 'additionalItems'];
const subschemaListKeys = ['allOf', 'anyOf', 'oneOf', 'prefixItems'];
const subschemaMapKeys = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];

/** Every object subschema of a document, with a setter replacing it. */
function subschemas(root: unknown): { node: Json; replace: (next: unknown) => void }[] {
  const out: { node: Json; replace: (next: unknown) => void }[] = [];
  const visit = (node: unknown, replace: (next: unknown) => void, depth: number): void => {
    if (!isObj(node) || depth > 12) return;
    out.push({ node, replace });
    for (const key of subschemaKeys) if (key in node) visit(node[key], (next) => { node[key] = next; }, depth + 1);
    for (const key of subschemaListKeys) {
      const list = node[key];
      if (Array.isArray(list)) list.forEach((item, i) => visit(item, (next) => { list[i] = next; }, depth + 1));
    }
    for (const key of subschemaMapKeys) {
      const map = node[key];
      if (isObj(map)) Object.keys(map).forEach((name) => visit(map[name], (next) => { map[name] = next; }, depth + 1));
    }
  };
  visit(root, () => undefined, 0);
  return out;
}

const small: unknown[] = [
  { type: 'string' }, { type: 'integer' }, { type: 'number', minimum: 0 }, {}, true, { enum: [1, 'a'] },
  { type: 'string', maxLength: 2 }, { type: 'object' }, { type: 'array', items: { type: 'integer' } }, { type: 'null' },
  { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false },
];
const types = ['string', 'integer', 'number', 'null', 'boolean', 'object', 'array'];
const numeric = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties', 'multipleOf', 'minContains', 'maxContains'];

/** One random edit of a deep copy of `schema` (the copy is returned; the input is untouched). */
export function mutate(schema: unknown, prng: Prng, names: string[]): unknown {
  const copy = structuredClone(schema);
  if (!isObj(copy)) return prng.pick(small);
  const { node, replace } = prng.pick(subschemas(copy));
  const keys = Object.keys(node).filter((k) => k !== '$schema' && k !== '$defs' && k !== 'definitions');
  const edits: (() => void)[] = [
    () => { if (keys.length > 0) delete node[prng.pick(keys)]; },
    () => { const k = prng.pick(numeric); const v = node[k]; node[k] = typeof v === 'number' ? Math.max(k === 'multipleOf' ? 1 : 0, v + prng.pick([-2, -1, 1, 2, v])) : prng.int(k === 'multipleOf' ? 1 : 0, 4); },
    () => { node.type = prng.chance(0.5) ? prng.pick(types) : [...new Set([...(Array.isArray(node.type) ? node.type : typeof node.type === 'string' ? [node.type] : []), prng.pick(types)])]; },
    () => { node.enum = [...(Array.isArray(node.enum) ? node.enum : []), prng.pick([1, 'a', null, 'b', 2.5])]; },
    () => { if (Array.isArray(node.enum) && node.enum.length > 1) node.enum = node.enum.slice(1); },
    () => { node.additionalProperties = prng.chance(0.5) ? false : prng.pick(small); },
    () => { node.properties = { ...(isObj(node.properties) ? node.properties : {}), [prng.pick(names)]: prng.pick(small) }; },
    () => { node.required = [...new Set([...(Array.isArray(node.required) ? node.required : []), prng.pick(names)])]; },
    () => { if (Array.isArray(node.required) && node.required.length > 0) node.required = node.required.slice(1); },
    () => { replace({ anyOf: [structuredClone(node), prng.pick(small)] }); },
    () => { replace({ oneOf: [structuredClone(node), prng.pick(small)] }); },
    () => { const list = node.anyOf ?? node.oneOf; if (Array.isArray(list)) list.push(prng.pick(small)); else node.allOf = [prng.pick(small)]; },
    () => { replace(prng.chance(0.5) ? true : prng.pick(small)); },
    () => { node.items = prng.pick(small); },
    () => { node.not = prng.pick(small); },
    () => { node.pattern = prng.pick(['^a', '^[a-z]+$', 'b']); },
    () => { node.patternProperties = { [prng.pick(['^x_', '^a', 'b$'])]: prng.pick(small) }; },
    () => { node.if = prng.pick(small); node.then = prng.pick(small); if (prng.chance(0.5)) node.else = prng.pick(small); },
    () => { node.prefixItems = [prng.pick(small), prng.pick(small)].slice(0, prng.int(1, 2)); },
    () => { node.contains = prng.pick(small); },
    () => { node.dependentRequired = { [prng.pick(names)]: [prng.pick(names)] }; },
    () => { node.dependentSchemas = { [prng.pick(names)]: prng.pick(small) }; },
    () => { node[prng.pick(['unevaluatedProperties', 'unevaluatedItems', 'propertyNames'])] = prng.chance(0.5) ? false : prng.pick(small); },
    () => { node.const = prng.pick([1, 'a', null, { a: 'x' }]); },
    () => { node.uniqueItems = prng.chance(0.7); },
  ];
  prng.pick(edits)();
  return copy;
}

const leaves = (prng: Prng): unknown[] => [
  { type: 'string' }, { type: 'integer' }, { type: 'number', minimum: prng.int(-2, 2) }, { type: 'string', maxLength: prng.int(0, 3) },
  { enum: [1, 'a', null] }, { const: prng.pick(['a', 'b', 1]) }, { type: 'null' }, { type: 'boolean' }, true, {},
  { type: ['string', 'null'] }, { type: 'integer', multipleOf: prng.pick([1, 2, 3]) },
];

/** A random 2020-12 schema of a few levels: objects (open or closed, patterns, required), arrays (tuples, contains),
 *  combinators, if/then/else, dependencies and local references. */
export function randomSchema(prng: Prng, names: string[], depth = 0): unknown {
  if (depth > 3 || prng.chance(0.35)) return prng.pick(leaves(prng));
  const sub = (): unknown => randomSchema(prng, names, depth + 1);
  switch (prng.int(0, 8)) {
    case 0: {
      const properties: Json = {};
      for (let i = prng.int(0, 3); i > 0; i--) properties[prng.pick(names)] = sub();
      const s: Json = { type: 'object', properties };
      if (prng.chance(0.5)) s.additionalProperties = prng.chance(0.6) ? false : sub();
      if (prng.chance(0.4)) s.required = [prng.pick(names)];
      if (prng.chance(0.2)) s.patternProperties = { '^x_': sub() };
      return s;
    }
    case 1: {
      const s: Json = { type: 'array' };
      if (prng.chance(0.5)) s.prefixItems = [sub(), sub()].slice(0, prng.int(1, 2));
      if (prng.chance(0.6)) s.items = prng.chance(0.3) ? false : sub();
      if (prng.chance(0.3)) s.contains = sub();
      if (prng.chance(0.3)) s.maxItems = prng.int(0, 3);
      if (prng.chance(0.2)) s.uniqueItems = true;
      return s;
    }
    case 2: return { anyOf: [sub(), sub()] };
    case 3: return { oneOf: [sub(), sub()] };
    case 4: return { allOf: [sub(), sub()] };
    case 5: return { not: sub() };
    case 6: return { if: sub(), then: sub(), else: sub() };
    case 7: return { type: 'object', dependentRequired: { [prng.pick(names)]: [prng.pick(names)] }, dependentSchemas: { [prng.pick(names)]: sub() }, minProperties: prng.int(0, 2) };
    default: return { $defs: { t: sub() }, $ref: '#/$defs/t' };
  }
}
