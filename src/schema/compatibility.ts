// Schema compatibility (spec 1.10, 3 Schema version; NOTES 1): a new version is compatible when it accepts every
// document the current version accepts. The proof is structural and conservative: each keyword of the new version
// must follow from what the old version guarantees at the same place; whatever cannot be proved is refused, naming
// the keyword and its JSON-pointer location in the new version. Pure (no I/O, no clock); runs on whichever thread
// registers a schema version, called by topic create/PATCH handling. See docs/schemas.md for what passes.
import { canonicalJson, isAnnotationOnlyChange, stripAnnotations } from './annotations.js';
import { type Checker, refusal, type Refusal } from './checker.js';
import { checkApplicators } from './checks_applicators.js';
import { checkArrays } from './checks_array.js';
import { checkObjects } from './checks_object.js';
import { checkNumbers, checkStrings, checkType, checkValues } from './checks_scalar.js';
import { provedDisjoint } from './disjoint.js';
import { type Facts, factsOf, finiteValues, type Flat, flatten, splitCases } from './facts.js';
import {
  dialectOf, inertKeywords, isObject, makeDoc, nodeKey, rootNode, type SchemaNode, validatingKeywords,
} from './schema_node.js';
import { findInPlaceRefCycle } from './ref_cycles.js';
import { valueSatisfies } from './value_check.js';

export { isAnnotationOnlyChange } from './annotations.js';
export type { Refusal } from './checker.js';
export { findInPlaceRefCycle } from './ref_cycles.js';

export type Compatibility = { compatible: true } | ({ compatible: false } & Refusal);

/** Proof steps per check: enough for any realistic pair of schemas; past it the change is refused, not guessed. */
export const proofStepsMax = 10_000;
/** Document descents per proof path; schemas nest at most 64 levels (spec 8), recursion closes far sooner. */
const proofDepthMax = 256;
/** Nested proof questions at once: bounds the stack when alternatives and references keep asking new questions at
 *  the same place (each distinct, so the loop check does not stop them). */
const proofNestingMax = 400;

class BudgetExceeded extends Error {
  constructor(readonly node: SchemaNode | null) {
    super('compatibility proof budget exceeded');
  }
}

/** Whether `newSchema` accepts every document `oldSchema` accepts; if not proved, the first keyword that failed.
 *  `stepsMax` bounds the work (tests lower it). */
export function checkCompatible(oldSchema: unknown, newSchema: unknown, stepsMax = proofStepsMax): Compatibility {
  const newDialect = dialectOf(newSchema);
  if (newDialect === null) return { compatible: false, keyword: '$schema', location: '', reason: 'the new version declares a dialect other than 2020-12 or draft-07' };
  const oldDialect = dialectOf(oldSchema);
  if (oldDialect === null) return { compatible: false, keyword: '$schema', location: '', reason: 'the current version declares a dialect other than 2020-12 or draft-07' };
  if (isAnnotationOnlyChange(oldSchema, newSchema)) return { compatible: true };
  const loop = findInPlaceRefCycle(newSchema);
  if (loop !== null) return { compatible: false, keyword: '$ref', location: loop, reason: 'a reference here leads back to itself without descending into the document, so validation would never end' };
  const oldRoot = rootNode(makeDoc(oldSchema, oldDialect, 'old'));
  const newRoot = rootNode(makeDoc(newSchema, newDialect, 'new'));
  try {
    const result = new Proof(stepsMax).prove(factsOf([oldRoot]), newRoot, 0);
    return result === null ? { compatible: true } : { compatible: false, ...result };
  } catch (error) {
    if (!(error instanceof BudgetExceeded)) throw error;
    // Name the new version's subschema being compared when the budget ran out (reverse questions name old ones).
    const at = error.node?.doc.tag === 'new' ? error.node : newRoot;
    const first = isObject(at.schema) ? Object.keys(at.schema).find((k) => !inertKeywords.has(k)) : undefined;
    return { compatible: false, keyword: first ?? '$ref', location: at.path,
      reason: `the schemas are too complex to compare within ${stepsMax} proof steps and ${proofNestingMax} nested questions` };
  }
}

/** One compatibility check: its step budget, the proofs in progress (for recursion through $ref) and a cache. */
class Proof implements Checker {
  private steps = 0;
  private nesting = 0;
  private readonly active = new Map<string, number>();
  private readonly canonical = new Map<string, string | null>();

  constructor(private readonly stepsMax: number) {}

  prove(facts: Facts, node: SchemaNode, depth: number): Refusal | null {
    this.spend(node);
    this.nesting += 1;
    try {
      return this.proveNested(facts, node, depth);
    } finally {
      this.nesting -= 1;
    }
  }

  private proveNested(facts: Facts, node: SchemaNode, depth: number): Refusal | null {
    if (node.schema === true) return null;
    const flat = flatten(facts);
    if (flat.unsat) return null;
    if (node.schema === false) return falseRefusal(node);
    if (!isObject(node.schema)) return refusal('type', node, 'not a schema (an object or a boolean)');
    if (this.identical(flat, node)) return null;
    const cases = splitCases(flat);
    if (cases !== null) {
      for (const c of cases) {
        const result = this.prove(c, node, depth);
        if (result !== null) return result;
      }
      return null;
    }
    if (depth > proofDepthMax) return refusal('$ref', node, 'the documents nest deeper than the checker follows');
    const key = `${flat.nodes.map(nodeKey).sort().join(',')}|${flat.nots.map(nodeKey).sort().join(',')}|${nodeKey(node)}`;
    const since = this.active.get(key);
    // The same question again, deeper in the document: assume it (induction on document size).
    if (since !== undefined) return since < depth ? null : refusal('$ref', node, 'a reference loops without descending into the document');
    this.active.set(key, depth);
    try {
      return this.proveKeywords(flat, node, depth);
    } finally {
      this.active.delete(key);
    }
  }

  disjoint(a: Facts, b: Facts, depth: number): boolean {
    this.spend(null);
    this.nesting += 1;
    try {
      return provedDisjoint(this, a, b, depth);
    } finally {
      this.nesting -= 1;
    }
  }

  private proveKeywords(flat: Flat, node: SchemaNode, depth: number): Refusal | null {
    const values = finiteValues(flat);
    if (values !== null && values.every((v) => valueSatisfies(v, node) === true)) return null;
    const known = validatingKeywords[node.doc.dialect];
    for (const name of Object.keys(node.schema as object)) {
      if (!inertKeywords.has(name) && !known.has(name)) return refusal(name, node, `the checker does not know the keyword ${JSON.stringify(name)} in ${node.doc.dialect}`);
    }
    return checkType(flat, node) ?? checkValues(flat, node) ?? checkNumbers(flat, node) ?? checkStrings(flat, node)
      ?? checkArrays(this, flat, node, depth) ?? checkObjects(this, flat, node, depth) ?? checkApplicators(this, flat, node, depth);
  }

  private spend(node: SchemaNode | null): void {
    this.steps += 1;
    if (this.steps > this.stepsMax || this.nesting > proofNestingMax) throw new BudgetExceeded(node);
  }

  /** A new subschema equal (annotations aside, same dialect, no references) to an old one that holds here. */
  private identical(flat: Flat, node: SchemaNode): boolean {
    const mine = this.canonicalOf(node);
    return mine !== null && flat.nodes.some((n) => n.doc.dialect === node.doc.dialect && this.canonicalOf(n) === mine);
  }

  private canonicalOf(node: SchemaNode): string | null {
    const key = nodeKey(node);
    let text = this.canonical.get(key);
    if (text === undefined) {
      const stripped = canonicalJson(stripAnnotations(node.schema));
      text = /"\$(ref|dynamicRef|recursiveRef)"/.test(stripped) ? null : stripped;
      this.canonical.set(key, text);
    }
    return text;
  }
}

const containerKeywords = new Set(['properties', 'patternProperties', 'dependentSchemas', 'dependencies', '$defs', 'definitions',
  'allOf', 'anyOf', 'oneOf', 'prefixItems']);

/** A new `false` subschema where the old version allows something: named by the keyword that holds it. */
function falseRefusal(node: SchemaNode): Refusal {
  if (node.path === '') return refusal('false', node, 'the new version accepts nothing; the old version accepts some documents');
  const tokens = node.path.split('/');
  const last = tokens[tokens.length - 1] ?? '';
  const parent = tokens[tokens.length - 2] ?? '';
  const keyword = containerKeywords.has(parent) || (parent === 'items' && /^\d+$/.test(last)) ? parent : last;
  return refusal(keyword, node, 'the new version refuses every value here; the old version allows some');
}
