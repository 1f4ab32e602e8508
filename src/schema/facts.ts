// What the old version is known to guarantee at one place in a document: a set of old subschemas that all hold
// (a conjunction) and a set that must not hold (from `not`). Flattening follows allOf and $ref; alternatives
// (anyOf, oneOf, if/then/else) are split into cases. Every fact drawn here must really follow from the old schema:
// dropping a fact is always safe, inventing one never is. Pure; called by compatibility.ts and disjoint.ts.
import { jsonEqual } from './annotations.js';
import { child, inertKeywords, isObject, keyword, nodeKey, resolveRef, type SchemaNode } from './schema_node.js';

export interface Facts {
  readonly nodes: readonly SchemaNode[];
  readonly nots: readonly SchemaNode[];
  /** Keys of nodes whose alternatives were already split, so a case is not split again. */
  readonly split: ReadonlySet<string>;
}

export interface Flat extends Facts {
  /** Some old subschema here is `false`: no document reaches this place, anything new holds. */
  readonly unsat: boolean;
}

/** Above this many nodes further facts are dropped (safe) to keep the work bounded. */
const flatNodesMax = 256;

export function factsOf(nodes: readonly SchemaNode[]): Facts {
  return { nodes, nots: [], split: new Set() };
}

/** The facts with allOf branches and $ref targets added and `not` subschemas moved to nots. A draft-07 node with
 *  $ref contributes only the target: validators differ on whether its siblings apply, so they prove nothing. */
export function flatten(facts: Facts): Flat {
  const nodes: SchemaNode[] = [];
  const nots: SchemaNode[] = [...facts.nots];
  const seen = new Set<string>();
  const queue = [...facts.nodes];
  let unsat = false;
  while (queue.length > 0 && nodes.length < flatNodesMax) {
    const node = queue.shift()!;
    if (node.schema === false) unsat = true;
    if (!isObject(node.schema) || seen.has(nodeKey(node))) continue;
    seen.add(nodeKey(node));
    const ref = keyword(node, '$ref');
    if (ref !== undefined) {
      const target = resolveRef(node, ref);
      if (target !== null) queue.push(target);
      if (node.doc.dialect === 'draft-07') continue;
    }
    nodes.push(node);
    const allOf = keyword(node, 'allOf');
    if (Array.isArray(allOf)) allOf.forEach((_, i) => { const b = child(node, 'allOf', i); if (b) queue.push(b); });
    const not = child(node, 'not');
    if (not !== undefined) nots.push(not);
  }
  return { nodes, nots, split: facts.split, unsat };
}

/** The cases of the first not-yet-split alternative among the facts (anyOf/oneOf: one case per branch; if/then/else:
 *  `if` and `then`, or `not if` and `else`), or null when there is none. Each case over-approximates its documents. */
export function splitCases(flat: Flat): Facts[] | null {
  for (const node of flat.nodes) {
    const key = nodeKey(node);
    for (const name of ['anyOf', 'oneOf']) {
      const list = keyword(node, name);
      if (!Array.isArray(list) || flat.split.has(`${key}/${name}`)) continue;
      const split = new Set([...flat.split, `${key}/${name}`]);
      return list.flatMap((_, i) => {
        const branch = child(node, name, i);
        return branch === undefined ? [] : [{ nodes: [...flat.nodes, branch], nots: flat.nots, split }];
      });
    }
    const ifNode = child(node, 'if');
    if (ifNode !== undefined && !flat.split.has(`${key}/if`)) {
      const split = new Set([...flat.split, `${key}/if`]);
      const thenNode = child(node, 'then');
      const elseNode = child(node, 'else');
      return [
        { nodes: [...flat.nodes, ifNode, ...(thenNode ? [thenNode] : [])], nots: flat.nots, split },
        { nodes: [...flat.nodes, ...(elseNode ? [elseNode] : [])], nots: [...flat.nots, ifNode], split },
      ];
    }
  }
  return null;
}

/** JSON Schema types with numbers split in two, so that `integer` is a subset of `number`. */
export type TypeToken = 'null' | 'boolean' | 'object' | 'array' | 'string' | 'integer' | 'fraction';
export const allTypes: readonly TypeToken[] = ['null', 'boolean', 'object', 'array', 'string', 'integer', 'fraction'];

export function typeTokens(value: unknown): Set<TypeToken> | null {
  const names = typeof value === 'string' ? [value] : Array.isArray(value) ? value : null;
  if (names === null) return null;
  const out = new Set<TypeToken>();
  for (const name of names) {
    if (name === 'number') { out.add('integer'); out.add('fraction'); }
    else if (allTypes.includes(name as TypeToken) && name !== 'fraction') out.add(name as TypeToken);
    else return null; // not a JSON Schema type: claim nothing from it
  }
  return out;
}

export function valueType(value: unknown): TypeToken {
  if (value === null) return 'null';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'fraction';
  if (Array.isArray(value)) return 'array';
  return typeof value as TypeToken;
}

/** The types a schema node alone admits, from `type`, `const` and `enum`. */
export function nodeTypes(node: SchemaNode): ReadonlySet<TypeToken> {
  if (!isObject(node.schema)) return node.schema === false ? new Set() : new Set(allTypes);
  return computeNodeTypes(node);
}

const typesCache = new WeakMap<Flat, ReadonlySet<TypeToken>>();

function computeNodeTypes(node: SchemaNode): Set<TypeToken> {
  let out = new Set<TypeToken>(allTypes);
  const keep = (allowed: Set<TypeToken>): void => { out = new Set([...out].filter((t) => allowed.has(t))); };
  const declared = typeTokens(keyword(node, 'type'));
  if (declared !== null) keep(declared);
  const constValue = keyword(node, 'const');
  if (isObject(node.schema) && Object.hasOwn(node.schema, 'const')) keep(new Set([valueType(constValue)]));
  const list = keyword(node, 'enum');
  if (Array.isArray(list)) keep(new Set(list.map(valueType)));
  const step = keyword(node, 'multipleOf');
  if (step === 1) out.delete('fraction'); // x / 1 is exact: only integers pass
  return out;
}

/** The types the facts admit; a `not` holding only `type` takes its types away. */
export function typesOf(flat: Flat): ReadonlySet<TypeToken> {
  let known = typesCache.get(flat);
  if (known === undefined) {
    known = computeTypes(flat);
    typesCache.set(flat, known);
  }
  return known;
}

function computeTypes(flat: Flat): Set<TypeToken> {
  if (flat.unsat) return new Set();
  let out = new Set<TypeToken>(allTypes);
  for (const node of flat.nodes) {
    const allowed = nodeTypes(node);
    out = new Set([...out].filter((t) => allowed.has(t)));
  }
  for (const not of flat.nots) {
    if (!isObject(not.schema)) continue;
    const validating = Object.keys(not.schema).filter((k) => !inertKeywords.has(k));
    const declared = typeTokens(not.schema.type);
    if (declared !== null && validating.length === 1 && validating[0] === 'type') out = new Set([...out].filter((t) => !declared.has(t)));
  }
  return out;
}

/** The finite list of values the facts allow (from const and enum), or null when they allow infinitely many. */
export function finiteValues(flat: Flat): unknown[] | null {
  let values: unknown[] | null = null;
  for (const node of flat.nodes) {
    let here: unknown[] | null = null;
    if (isObject(node.schema) && Object.hasOwn(node.schema, 'const')) here = [node.schema.const];
    else if (Array.isArray(keyword(node, 'enum'))) here = keyword(node, 'enum') as unknown[];
    if (here === null) continue;
    values = values === null ? [...here] : values.filter((v) => here!.some((h) => jsonEqual(v, h)));
  }
  return values;
}

/** The largest value of a lower-bound keyword among the facts (0 when none). */
export function lowerCount(flat: Flat, name: string): number {
  let out = 0;
  for (const node of flat.nodes) {
    const value = keyword(node, name);
    if (typeof value === 'number' && value > out) out = value;
  }
  return out;
}

/** The smallest value of an upper-bound keyword among the facts (Infinity when none). */
export function upperCount(flat: Flat, name: string): number {
  let out = Infinity;
  for (const node of flat.nodes) {
    const value = keyword(node, name);
    if (typeof value === 'number' && value < out) out = value;
  }
  return out;
}
