// The new version's array keywords: item counts, uniqueness, tuple and rest positions (draft-07 `items` arrays and
// `additionalItems` read as 2020-12 `prefixItems` and `items`), contains with its bounds, unevaluatedItems.
// Each position is proved against the old subschemas for the same position. Pure; called by compatibility.ts.
import { type Checker, refusal, type Refusal } from './checker.js';
import { factsOf, type Flat, lowerCount, typesOf } from './facts.js';
import { atIndex, longestPrefix, maxItemsOf, plainUnevaluated } from './shape.js';
import { child, containsBounds, keyword, prefixItemsOf, restItemsOf, type SchemaNode } from './schema_node.js';

export function checkArrays(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  if (!typesOf(flat).has('array')) return null;
  const minItems = keyword(node, 'minItems');
  if (typeof minItems === 'number' && lowerCount(flat, 'minItems') < minItems) {
    return refusal('minItems', node, `the old version allows arrays with fewer than ${minItems} items`);
  }
  const maxItems = keyword(node, 'maxItems');
  if (typeof maxItems === 'number' && maxItemsOf(flat) > maxItems) {
    return refusal('maxItems', node, `the old version allows arrays with more than ${maxItems} items`);
  }
  if (keyword(node, 'uniqueItems') === true && maxItemsOf(flat) > 1 && !flat.nodes.some((n) => keyword(n, 'uniqueItems') === true)) {
    return refusal('uniqueItems', node, 'the old version allows arrays with repeated items');
  }
  return checkItems(checker, flat, node, depth) ?? checkContains(checker, flat, node, depth);
}

function checkItems(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  const prefix = prefixItemsOf(node);
  const plain = plainUnevaluated(node, 'unevaluatedItems');
  const rest = restItemsOf(node) ?? plain;
  const unevaluated = child(node, 'unevaluatedItems');
  if (unevaluated !== undefined && plain === undefined && restItemsOf(node) === undefined && unevaluated.schema !== true) {
    return refusal('unevaluatedItems', node, 'unevaluatedItems beside applicators or contains is only proved when unchanged');
  }
  if (prefix.length === 0 && rest === undefined) return null;
  const tupleEnd = Math.max(prefix.length, longestPrefix(flat));
  const itemsMax = maxItemsOf(flat);
  for (let index = 0; index < tupleEnd && index < itemsMax; index++) {
    const here = index < prefix.length ? prefix[index] : rest;
    if (here === undefined) continue;
    const result = checker.prove(factsOf(atIndex(flat, index)), here, depth + 1);
    if (result !== null) return result;
  }
  if (rest === undefined || tupleEnd >= itemsMax) return null;
  return checker.prove(factsOf(atIndex(flat, tupleEnd)), rest, depth + 1);
}

function checkContains(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  const contains = child(node, 'contains');
  if (contains === undefined) return null;
  const { min, max } = containsBounds(node);
  const olds = flat.nodes.flatMap((n) => {
    const sub = child(n, 'contains');
    return sub === undefined ? [] : [{ sub, bounds: containsBounds(n), tuple: prefixItemsOf(n).length > 0 }];
  });
  if (min > 0) {
    // ajv 8 accepts an empty array under `contains` when a tuple sits beside it (its tuple check leaves the shared
    // verdict true and the contains loop never runs): such an old contains proves nothing unless arrays are non-empty.
    const nonEmpty = lowerCount(flat, 'minItems') >= 1;
    // Some old `contains` that is at least as strict, demanded at least as often.
    const proved = olds.some((o) => o.bounds.min >= min && (!o.tuple || nonEmpty) && checker.prove(factsOf([o.sub]), contains, depth + 1) === null);
    if (!proved) return refusal(keyword(node, 'minContains') === undefined ? 'contains' : 'minContains', node,
      `the old version allows arrays without ${min} item(s) that match the new contains`);
  }
  if (max === Infinity || maxItemsOf(flat) <= max) return null;
  // Items matching the new contains also match an old one that is capped at least as low.
  const capped = olds.some((o) => o.bounds.max <= max && checker.prove(factsOf([contains]), o.sub, depth + 1) === null);
  return capped ? null : refusal('maxContains', node, `the old version allows more than ${max} item(s) matching contains`);
}
