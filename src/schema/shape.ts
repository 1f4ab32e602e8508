// Facts about the parts of a document: which old subschemas hold for a named property or an array position, which
// properties are surely present, and the bounds on numbers and counts the old version imposes. Pure; called by the
// keyword checks in src/schema.
import { type Flat, typesOf } from './facts.js';
import {
  child, dependentRequiredOf, keyword, patternEntriesOf, prefixItemsOf, propertyNamesOf,
  restItemsOf, type SchemaNode,
} from './schema_node.js';

const regexCache = new Map<string, RegExp | null>();

/** Longest text the checker runs a schema's pattern on. */
const patternInputMax = 128;

/** Whether a pattern is cheap to run on short text: no quantified group (`(a+)+`, `(a|a)*`, the exponential kinds)
 *  and few quantifiers (each adjacent one multiplies backtracking by the text length). Schema authors choose both
 *  the patterns and the names they are run on, so registration must not hang on them. */
function cheapPattern(pattern: string): boolean {
  const plain = pattern.replace(/\\./g, '');
  return !/\)[*+{?]/.test(plain) && (plain.match(/[*+]|\{\d/g) ?? []).length <= 3;
}

/** Whether `name` matches `pattern` as ajv tests it (a unicode RegExp, unanchored), or null when the checker cannot
 *  tell cheaply (the pattern does not compile, may backtrack badly, or the text is long). */
export function patternMatches(pattern: string, name: string): boolean | null {
  if (name.length > patternInputMax || !cheapPattern(pattern)) return null;
  let regex = regexCache.get(pattern);
  if (regex === undefined) {
    try {
      regex = new RegExp(pattern, 'u');
    } catch {
      regex = null;
    }
    if (regexCache.size > 1024) regexCache.clear();
    regexCache.set(pattern, regex);
  }
  return regex === null ? null : regex.test(name);
}

/** In-place applicators: with any of them beside it, `unevaluated*` depends on more than the node's own keywords. */
const inPlaceApplicators = ['allOf', 'anyOf', 'oneOf', 'not', 'if', 'then', 'else', '$ref', '$dynamicRef', 'dependentSchemas'];

/** `unevaluatedProperties`/`unevaluatedItems` when it means what `additionalProperties`/`items` would (no in-place
 *  applicator beside it, and for items no `contains`, which also marks items evaluated in 2020-12). */
export function plainUnevaluated(node: SchemaNode, name: 'unevaluatedProperties' | 'unevaluatedItems'): SchemaNode | undefined {
  if (node.doc.dialect !== '2020-12') return undefined;
  if (inPlaceApplicators.some((k) => keyword(node, k) !== undefined)) return undefined;
  if (name === 'unevaluatedItems' && keyword(node, 'contains') !== undefined) return undefined;
  return child(node, name);
}

/** The schema that one node applies to names matched by neither `properties` nor `patternProperties`. */
export function otherPropertiesOf(node: SchemaNode): SchemaNode | undefined {
  return child(node, 'additionalProperties') ?? plainUnevaluated(node, 'unevaluatedProperties');
}

/** The old subschemas a property named `name` must satisfy, over every node of the facts. */
export function atName(flat: Flat, name: string): SchemaNode[] {
  const out: SchemaNode[] = [];
  for (const node of flat.nodes) {
    const declared = child(node, 'properties', name);
    let matched = declared !== undefined;
    if (declared) out.push(declared);
    for (const [pattern, sub] of patternEntriesOf(node)) {
      const hit = patternMatches(pattern, name);
      if (hit === null) matched = true; // unknown: claim nothing about this name from this node
      if (hit === true) { out.push(sub); matched = true; }
    }
    const other = otherPropertiesOf(node);
    if (!matched && other) out.push(other);
  }
  return out;
}

/** The old subschemas position `index` of an array must satisfy. */
export function atIndex(flat: Flat, index: number): SchemaNode[] {
  const out: SchemaNode[] = [];
  for (const node of flat.nodes) {
    const prefix = prefixItemsOf(node);
    const here = index < prefix.length ? prefix[index] : restItemsOf(node) ?? plainUnevaluated(node, 'unevaluatedItems');
    if (here) out.push(here);
  }
  return out;
}

/** The longest tuple among the facts. */
export function longestPrefix(flat: Flat): number {
  return Math.max(0, ...flat.nodes.map((n) => prefixItemsOf(n).length));
}

/** Names every old object surely carries: `required`, closed under dependentRequired. */
export function requiredNames(flat: Flat): Set<string> {
  const out = new Set<string>();
  for (const node of flat.nodes) {
    const list = keyword(node, 'required');
    if (Array.isArray(list)) list.forEach((n) => { if (typeof n === 'string') out.add(n); });
  }
  for (let round = 0, grew = true; grew && round < 64; round++) {
    grew = false;
    for (const node of flat.nodes) {
      for (const [name, needs] of dependentRequiredOf(node)) {
        if (!out.has(name)) continue;
        for (const n of needs) if (!out.has(n)) { out.add(n); grew = true; }
      }
    }
  }
  return out;
}

/** The most items an old array has: maxItems, or a tuple closed by `items: false`. */
export function maxItemsOf(flat: Flat): number {
  let out = Infinity;
  for (const node of flat.nodes) {
    const max = keyword(node, 'maxItems');
    if (typeof max === 'number') out = Math.min(out, max);
    const rest = restItemsOf(node) ?? plainUnevaluated(node, 'unevaluatedItems');
    if (rest?.schema === false) out = Math.min(out, prefixItemsOf(node).length);
  }
  return out;
}

/** The most properties an old object has: maxProperties, or the names a closed object without patterns lists. */
export function maxPropertiesOf(flat: Flat): number {
  let out = Infinity;
  for (const node of flat.nodes) {
    const max = keyword(node, 'maxProperties');
    if (typeof max === 'number') out = Math.min(out, max);
    if (otherPropertiesOf(node)?.schema === false && patternEntriesOf(node).length === 0) {
      out = Math.min(out, propertyNamesOf(node).filter((n) => child(node, 'properties', n)?.schema !== false).length);
    }
  }
  return out;
}

export interface NumberBound {
  readonly value: number;
  readonly exclusive: boolean;
}

/** The tightest lower (`side` 'min') or upper ('max') bound the facts put on numbers, or null. */
export function numberBound(flat: Flat, side: 'min' | 'max'): NumberBound | null {
  const [inclusive, exclusive] = side === 'min' ? ['minimum', 'exclusiveMinimum'] : ['maximum', 'exclusiveMaximum'];
  const tighter = (a: NumberBound, b: NumberBound): boolean =>
    side === 'min' ? a.value > b.value || (a.value === b.value && a.exclusive) : a.value < b.value || (a.value === b.value && a.exclusive);
  let out: NumberBound | null = null;
  for (const node of flat.nodes) {
    for (const [name, isExclusive] of [[inclusive, false], [exclusive, true]] as const) {
      const value = keyword(node, name);
      if (typeof value !== 'number') continue;
      const bound = { value, exclusive: isExclusive };
      if (out === null || tighter(bound, out)) out = bound;
    }
  }
  const types = typesOf(flat);
  if (out === null || types.has('fraction') || !types.has('integer')) return out;
  // Integers only: an exclusive or fractional bound tightens to the next integer inside it.
  if (side === 'min') return { value: out.exclusive ? Math.floor(out.value) + 1 : Math.ceil(out.value), exclusive: false };
  return { value: out.exclusive ? Math.ceil(out.value) - 1 : Math.floor(out.value), exclusive: false };
}

/** Whether a fact bound implies the new keyword `name` with `limit`. */
export function boundImplies(bound: NumberBound | null, name: string, limit: number): boolean {
  if (bound === null) return false;
  switch (name) {
    case 'minimum': return bound.value >= limit;
    case 'exclusiveMinimum': return bound.value > limit || (bound.value === limit && bound.exclusive);
    case 'maximum': return bound.value <= limit;
    case 'exclusiveMaximum': return bound.value < limit || (bound.value === limit && bound.exclusive);
    default: return false;
  }
}
