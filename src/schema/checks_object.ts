// The new version's object keywords: required and its dependencies, property counts, properties, patternProperties,
// additionalProperties (and unevaluatedProperties where it means the same), propertyNames, dependentSchemas. A named
// property is proved against every old subschema that applies to that name; names the old version leaves open
// (an open object) prove nothing, which is why adding a typed property to an open object is refused.
// Pure; called by compatibility.ts.
import { type Checker, refusal, type Refusal } from './checker.js';
import { factsOf, type Flat, lowerCount, typesOf } from './facts.js';
import { atName, maxPropertiesOf, otherPropertiesOf, patternMatches, plainUnevaluated, requiredNames } from './shape.js';
import {
  child, dependentRequiredOf, dependentSchemasOf, keyword, patternEntriesOf, propertyNamesOf, type SchemaNode,
} from './schema_node.js';
import { valueSatisfies } from './value_check.js';

export function checkObjects(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  if (!typesOf(flat).has('object')) return null;
  return checkCounts(flat, node) ?? checkProperties(checker, flat, node, depth) ?? checkPatterns(checker, flat, node, depth)
    ?? checkOthers(checker, flat, node, depth) ?? checkNames(checker, flat, node, depth) ?? checkDependentSchemas(checker, flat, node, depth);
}

function checkCounts(flat: Flat, node: SchemaNode): Refusal | null {
  const present = requiredNames(flat);
  const required = keyword(node, 'required');
  const missing = Array.isArray(required) ? required.find((n) => typeof n === 'string' && !present.has(n)) : undefined;
  if (missing !== undefined) return refusal('required', node, `the old version allows objects without ${JSON.stringify(missing)}`);
  const minProperties = keyword(node, 'minProperties');
  if (typeof minProperties === 'number' && Math.max(present.size, lowerCount(flat, 'minProperties')) < minProperties) {
    return refusal('minProperties', node, `the old version allows objects with fewer than ${minProperties} properties`);
  }
  const maxProperties = keyword(node, 'maxProperties');
  if (typeof maxProperties === 'number' && maxPropertiesOf(flat) > maxProperties) {
    return refusal('maxProperties', node, `the old version allows objects with more than ${maxProperties} properties`);
  }
  for (const [name, needs] of dependentRequiredOf(node)) {
    const olds = flat.nodes.flatMap((n) => dependentRequiredOf(n).get(name) ?? []);
    const need = needs.find((n) => !present.has(n) && !olds.includes(n));
    if (need !== undefined) {
      return refusal(node.doc.dialect === 'draft-07' ? 'dependencies' : 'dependentRequired', node,
        `the old version allows ${JSON.stringify(name)} without ${JSON.stringify(need)}`);
    }
  }
  return null;
}

function checkProperties(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  for (const name of propertyNamesOf(node)) {
    const sub = child(node, 'properties', name);
    if (sub === undefined) continue;
    const olds = atName(flat, name);
    const result = checker.prove(factsOf(olds), sub, depth + 1);
    if (result === null) continue;
    if (olds.length > 0) return result;
    return refusal('properties', sub, `the old version leaves property ${JSON.stringify(name)} open (any value may be there); ` +
      'the new one constrains it. Close the object first (additionalProperties: false), then add optional properties');
  }
  return null;
}

/** Every name a new pattern matches: proved by an old node with the same pattern, or by an old node whose every
 *  route for such a name (its listed names, its patterns, its other-properties schema) is proved. */
function checkPatterns(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  for (const [pattern, sub] of patternEntriesOf(node)) {
    if (sub.schema === true) continue;
    const same = flat.nodes.some((n) => patternEntriesOf(n).some(([p, s]) => p === pattern && checker.prove(factsOf([s]), sub, depth + 1) === null));
    if (same) continue;
    const covered = flat.nodes.some((n) => {
      const listed = propertyNamesOf(n).filter((name) => patternMatches(pattern, name) !== false);
      if (listed.some((name) => checker.prove(factsOf(atName(flat, name)), sub, depth + 1) !== null)) return false;
      if (patternEntriesOf(n).some(([, s]) => checker.prove(factsOf([s]), sub, depth + 1) !== null)) return false;
      const other = otherPropertiesOf(n);
      return other !== undefined && checker.prove(factsOf([other]), sub, depth + 1) === null;
    });
    if (!covered) return refusal('patternProperties', sub, 'the old version allows properties matching this pattern that the new schema refuses');
  }
  return null;
}

/** The new schema for names it neither lists nor matches (additionalProperties, or a plain unevaluatedProperties). */
function checkOthers(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  const plain = plainUnevaluated(node, 'unevaluatedProperties');
  const unevaluated = child(node, 'unevaluatedProperties');
  const additional = child(node, 'additionalProperties');
  if (additional === undefined && unevaluated !== undefined && plain === undefined && unevaluated.schema !== true) {
    return refusal('unevaluatedProperties', node, 'unevaluatedProperties beside applicators is only proved when unchanged');
  }
  const others = additional ?? plain;
  if (others === undefined || others.schema === true) return null;
  const listed = new Set(propertyNamesOf(node));
  const patterns = patternEntriesOf(node).map(([p]) => p);
  const outside = (name: string): boolean => !listed.has(name) && patterns.every((p) => patternMatches(p, name) !== true);
  let first: Refusal | null = null;
  for (const old of flat.nodes) {
    const routes: [SchemaNode[], string][] = propertyNamesOf(old).filter(outside).map((name) => [atName(flat, name), name]);
    for (const [p, s] of patternEntriesOf(old)) if (!patterns.includes(p)) routes.push([[s], p]);
    const oldOthers = otherPropertiesOf(old);
    routes.push([oldOthers === undefined ? [] : [oldOthers], '']);
    const failed = routes.map(([facts]) => checker.prove(factsOf(facts), others, depth + 1)).find((r) => r !== null);
    if (failed === undefined) return null;
    first ??= failed;
  }
  const keywordName = additional !== undefined ? 'additionalProperties' : 'unevaluatedProperties';
  return refusal(keywordName, node, flat.nodes.some((n) => otherPropertiesOf(n) !== undefined)
    ? `the old version allows other properties the new ${keywordName} refuses (${first?.reason ?? 'not proved'})`
    : `the old version allows any other property; the new ${keywordName} limits them (closing an object is not compatible)`);
}

function checkNames(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  const names = child(node, 'propertyNames');
  if (names === undefined || names.schema === true || maxPropertiesOf(flat) === 0) return null;
  if (flat.nodes.some((n) => { const old = child(n, 'propertyNames'); return old !== undefined && checker.prove(factsOf([old]), names, depth + 1) === null; })) return null;
  const closed = flat.nodes.some((n) => otherPropertiesOf(n)?.schema === false && patternEntriesOf(n).length === 0 &&
    propertyNamesOf(n).every((name) => valueSatisfies(name, names) === true || child(n, 'properties', name)?.schema === false));
  return closed ? null : refusal('propertyNames', node, 'the old version allows property names the new propertyNames refuses');
}

function checkDependentSchemas(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  const here = { nodes: flat.nodes, nots: flat.nots, split: flat.split };
  for (const [name, sub] of dependentSchemasOf(node)) {
    if (checker.prove(here, sub, depth) === null) continue;
    const olds = flat.nodes.flatMap((n) => { const s = dependentSchemasOf(n).get(name); return s === undefined ? [] : [s]; });
    if (olds.length > 0 && checker.prove({ ...here, nodes: [...flat.nodes, ...olds] }, sub, depth) === null) continue;
    return refusal(node.doc.dialect === 'draft-07' ? 'dependencies' : 'dependentSchemas', sub,
      `the old version allows objects with ${JSON.stringify(name)} that the new dependent schema refuses`);
  }
  return null;
}
