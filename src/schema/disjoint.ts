// Proves that no document satisfies two sets of facts at once: the question behind `not` and `oneOf` in a new
// version (a oneOf branch added is a widening only when no old document also matches another branch). Sound and
// incomplete: false means "not proved". Pure; called through the Checker by the applicator checks.
import type { Checker } from './checker.js';
import { factsOf, type Facts, finiteValues, type Flat, flatten, splitCases, typesOf } from './facts.js';
import { atName, numberBound, requiredNames } from './shape.js';
import { valueSatisfies } from './value_check.js';

/** Past this many descents the proof gives up (recursive schemas can require properties without end). */
const disjointDepthMax = 80;

export function provedDisjoint(checker: Checker, a: Facts, b: Facts, depth: number): boolean {
  if (depth > disjointDepthMax) return false;
  const flatA = flatten(a);
  const flatB = flatten(b);
  if (flatA.unsat || flatB.unsat) return true;
  const casesA = splitCases(flatA);
  if (casesA !== null) return casesA.every((c) => checker.disjoint(c, flatB, depth));
  const casesB = splitCases(flatB);
  if (casesB !== null) return casesB.every((c) => checker.disjoint(flatA, c, depth));
  const typesB = typesOf(flatB);
  const common = [...typesOf(flatA)].filter((t) => typesB.has(t));
  if (common.length === 0) return true;
  if (valuesRefused(flatA, flatB) || valuesRefused(flatB, flatA)) return true;
  // One side is inside something the other side excludes with `not`.
  if (flatA.nots.some((excluded) => checker.prove(flatB, excluded, depth) === null)) return true;
  if (flatB.nots.some((excluded) => checker.prove(flatA, excluded, depth) === null)) return true;
  if (common.every((t) => t === 'integer' || t === 'fraction') && rangesApart(flatA, flatB)) return true;
  if (common.length === 1 && common[0] === 'object') return propertyApart(checker, flatA, flatB, depth);
  return false;
}

/** Every value one side allows is refused by some subschema of the other. */
function valuesRefused(from: Flat, against: Flat): boolean {
  const values = finiteValues(from);
  return values !== null && values.every((v) => against.nodes.some((n) => valueSatisfies(v, n) === false));
}

function rangesApart(a: Flat, b: Flat): boolean {
  const below = (low: Flat, high: Flat): boolean => {
    const max = numberBound(low, 'max');
    const min = numberBound(high, 'min');
    return max !== null && min !== null && (max.value < min.value || (max.value === min.value && (max.exclusive || min.exclusive)));
  };
  return below(a, b) || below(b, a);
}

/** Objects on both sides, a property one side requires, and values for it that cannot meet (a discriminator). */
function propertyApart(checker: Checker, a: Flat, b: Flat, depth: number): boolean {
  const names = new Set([...requiredNames(a), ...requiredNames(b)]);
  for (const name of names) {
    const left = atName(a, name);
    const right = atName(b, name);
    if (left.length > 0 && right.length > 0 && checker.disjoint(factsOf(left), factsOf(right), depth + 1)) return true;
  }
  return false;
}
