// The new version's in-place applicators: allOf, anyOf, oneOf, not, if/then/else and $ref, proved at the same
// place in the document. The old version's own alternatives were already split into cases by the caller, so an
// anyOf branch added passes (each old case still finds its branch) and a oneOf branch added passes only when the
// old documents provably match no other branch. Pure; called by compatibility.ts.
import { type Checker, refusal, type Refusal } from './checker.js';
import { factsOf, type Facts, type Flat, flatten, typesOf } from './facts.js';
import { child, keyword, makeDoc, resolveRef, type SchemaNode } from './schema_node.js';

function branches(node: SchemaNode, name: string): SchemaNode[] {
  const list = keyword(node, name);
  if (!Array.isArray(list)) return [];
  return list.map((_, i) => child(node, name, i)).filter((b): b is SchemaNode => b !== undefined);
}

export function checkApplicators(checker: Checker, flat: Flat, node: SchemaNode, depth: number): Refusal | null {
  const here: Facts = { nodes: flat.nodes, nots: flat.nots, split: flat.split };
  for (const branch of branches(node, 'allOf')) {
    const result = checker.prove(here, branch, depth);
    if (result !== null) return result;
  }
  const ref = keyword(node, '$ref');
  if (ref !== undefined) {
    const target = resolveRef(node, ref);
    if (target === null) return refusal('$ref', node, `cannot resolve ${JSON.stringify(ref)} inside the document (only local "#/..." pointers are followed)`);
    const result = checker.prove(here, target, depth);
    if (result !== null) return result;
  }
  return checkAnyOf(checker, here, node, depth) ?? checkOneOf(checker, here, node, depth) ?? checkNot(checker, here, node, depth)
    ?? checkIf(checker, here, node, depth);
}

const typeCaseDoc = makeDoc({}, '2020-12', 'type-case');

/** The facts split by the JSON types they allow (numbers kept whole), so `{"type": ["string", "null"]}` can meet
 *  `anyOf: [{"type": "string"}, {"type": "null"}]` one type at a time; null when they allow a single type. */
function typeCases(here: Facts): Facts[] | null {
  const types = new Set([...typesOf(flatten(here))].map((t) => (t === 'fraction' ? 'number' : t)));
  if (types.has('number')) types.delete('integer');
  if (types.size < 2) return null;
  return [...types].map((t) => ({ ...here, nodes: [...here.nodes, { schema: { type: t }, path: `/${t}`, doc: typeCaseDoc }] }));
}

/** Whether some branch accepts every document of the facts, else the first branch's refusal. */
function someBranch(checker: Checker, here: Facts, list: SchemaNode[], depth: number): Refusal | null {
  let first: Refusal | null = null;
  for (const branch of list) {
    const result = checker.prove(here, branch, depth);
    if (result === null) return null;
    first ??= result;
  }
  return first ?? { keyword: 'anyOf', location: '', reason: 'no branches' };
}

function checkAnyOf(checker: Checker, here: Facts, node: SchemaNode, depth: number): Refusal | null {
  const list = branches(node, 'anyOf');
  if (keyword(node, 'anyOf') === undefined) return null;
  const first = someBranch(checker, here, list, depth);
  if (first === null) return null;
  const cases = typeCases(here);
  if (cases !== null && cases.every((c) => someBranch(checker, c, list, depth) === null)) return null;
  return refusal('anyOf', node, `no branch of the new anyOf accepts every document the old version allows here${first ? ` (first branch: ${first.keyword} at "${first.location}": ${first.reason})` : ''}`);
}

/** Whether one branch accepts every document of the facts and no other branch accepts any. */
function exactlyOneBranch(checker: Checker, here: Facts, list: SchemaNode[], depth: number): boolean {
  for (const [i, branch] of list.entries()) {
    if (checker.prove(here, branch, depth) !== null) continue;
    const others = list.filter((_, j) => j !== i);
    if (others.every((other) => checker.disjoint(here, factsOf([other]), depth))) return true;
  }
  return false;
}

function checkOneOf(checker: Checker, here: Facts, node: SchemaNode, depth: number): Refusal | null {
  const list = branches(node, 'oneOf');
  if (keyword(node, 'oneOf') === undefined) return null;
  if (exactlyOneBranch(checker, here, list, depth)) return null;
  const cases = typeCases(here);
  if (cases !== null && cases.every((c) => exactlyOneBranch(checker, c, list, depth))) return null;
  return refusal('oneOf', node, 'the checker cannot prove that every old document matches exactly one branch of the new oneOf ' +
    '(a document matching two branches fails oneOf; use anyOf, or branches that exclude each other by type, const or a required discriminator)');
}

function checkNot(checker: Checker, here: Facts, node: SchemaNode, depth: number): Refusal | null {
  const excluded = child(node, 'not');
  if (excluded === undefined || checker.disjoint(here, factsOf([excluded]), depth)) return null;
  return refusal('not', node, 'the old version allows documents the new not refuses');
}

function checkIf(checker: Checker, here: Facts, node: SchemaNode, depth: number): Refusal | null {
  const test = child(node, 'if');
  if (test === undefined) return null;
  const thenNode = child(node, 'then');
  const elseNode = child(node, 'else');
  const thenHolds = (): Refusal | null => (thenNode === undefined ? null : checker.prove(here, thenNode, depth));
  const elseHolds = (): Refusal | null => (elseNode === undefined ? null : checker.prove(here, elseNode, depth));
  if (checker.prove(here, test, depth) === null) return thenHolds();
  if (checker.disjoint(here, factsOf([test]), depth)) return elseHolds();
  return thenHolds() ?? elseHolds();
}
