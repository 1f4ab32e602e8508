// Checks one JSON value against a schema node, as far as scalar keywords decide it: true (accepted), false
// (refused) or null (this module cannot tell). The checker uses it when the old version allows finitely many
// values (const, enum) and for property names. Arithmetic mirrors ajv's so a verdict here is ajv's verdict.
// Pure; called by compatibility.ts, disjoint.ts and the object checks.
import { jsonEqual } from './annotations.js';
import { typeTokens, valueType } from './facts.js';
import { patternMatches } from './shape.js';
import { child, inertKeywords, isObject, keyword, resolveRef, type SchemaNode } from './schema_node.js';

export type Verdict = boolean | null;

const objectKeywords = new Set(['properties', 'patternProperties', 'additionalProperties', 'propertyNames', 'required',
  'dependentRequired', 'dependentSchemas', 'dependencies', 'minProperties', 'maxProperties', 'unevaluatedProperties']);
const arrayKeywords = new Set(['items', 'prefixItems', 'additionalItems', 'contains', 'minContains', 'maxContains',
  'minItems', 'maxItems', 'uniqueItems', 'unevaluatedItems']);
const numberKeywords = new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']);
const stringKeywords = new Set(['minLength', 'maxLength', 'pattern']);

function and(a: Verdict, b: Verdict): Verdict {
  if (a === false || b === false) return false;
  return a === null || b === null ? null : true;
}

export function valueSatisfies(value: unknown, node: SchemaNode, depth = 0): Verdict {
  if (typeof node.schema === 'boolean') return node.schema;
  if (!isObject(node.schema) || depth > 32) return null;
  const ref = keyword(node, '$ref');
  let result: Verdict = true;
  for (const name of Object.keys(node.schema)) {
    if (inertKeywords.has(name) || name === '$ref') continue;
    result = and(result, keywordHolds(value, node, name, depth));
    if (result === false && ref === undefined) return false;
  }
  if (ref === undefined) return result;
  const target = resolveRef(node, ref);
  const viaRef = target === null ? null : valueSatisfies(value, target, depth + 1);
  // draft-07 validators may ignore $ref's siblings: then only the target can refuse, and both must accept.
  if (node.doc.dialect === 'draft-07') return viaRef === false ? false : viaRef === true && result === true ? true : null;
  return and(result, viaRef);
}

function keywordHolds(value: unknown, node: SchemaNode, name: string, depth: number): Verdict {
  const arg = keyword(node, name);
  if (objectKeywords.has(name)) return isObject(value) ? null : true;
  if (arrayKeywords.has(name)) return Array.isArray(value) ? null : true;
  if (numberKeywords.has(name)) return typeof value === 'number' && typeof arg === 'number' ? numberHolds(value, name, arg) : typeof value === 'number' ? null : true;
  if (stringKeywords.has(name)) return typeof value === 'string' ? stringHolds(value, name, arg) : true;
  switch (name) {
    case 'type': {
      const tokens = typeTokens(arg);
      return tokens === null ? null : tokens.has(valueType(value));
    }
    case 'enum': return Array.isArray(arg) ? arg.some((x) => jsonEqual(x, value)) : null;
    case 'const': return jsonEqual(arg, value);
    case 'format': return typeof value === 'string' || typeof value === 'number' ? null : true;
    case 'then': case 'else': return true; // judged with `if`
    default: return combinatorHolds(value, node, name, depth);
  }
}

function numberHolds(value: number, name: string, limit: number): Verdict {
  switch (name) {
    case 'minimum': return value >= limit;
    case 'maximum': return value <= limit;
    case 'exclusiveMinimum': return value > limit;
    case 'exclusiveMaximum': return value < limit;
    default: {
      if (limit === 0) return false;
      const ratio = value / limit;
      return ratio === parseInt(String(ratio), 10);
    }
  }
}

function stringHolds(value: string, name: string, arg: unknown): Verdict {
  if (name === 'pattern') return typeof arg === 'string' ? patternMatches(arg, value) : null;
  if (typeof arg !== 'number') return null;
  const length = [...value].length; // ajv counts code points
  return name === 'minLength' ? length >= arg : length <= arg;
}

function combinatorHolds(value: unknown, node: SchemaNode, name: string, depth: number): Verdict {
  const arg = keyword(node, name);
  const branches = Array.isArray(arg) ? arg.map((_, i) => child(node, name, i)) : [];
  const verdicts = (): Verdict[] => branches.map((b) => (b === undefined ? null : valueSatisfies(value, b, depth + 1)));
  switch (name) {
    case 'allOf': return verdicts().reduce<Verdict>(and, true);
    case 'anyOf': {
      const all = verdicts();
      return all.includes(true) ? true : all.every((v) => v === false) ? false : null;
    }
    case 'oneOf': {
      const all = verdicts();
      return all.includes(null) ? null : all.filter((v) => v === true).length === 1;
    }
    case 'not': {
      const inner = child(node, 'not');
      const verdict = inner === undefined ? null : valueSatisfies(value, inner, depth + 1);
      return verdict === null ? null : !verdict;
    }
    case 'if': {
      const test = child(node, 'if');
      const verdict = test === undefined ? null : valueSatisfies(value, test, depth + 1);
      if (verdict === null) return null;
      const next = child(node, verdict ? 'then' : 'else');
      return next === undefined ? true : valueSatisfies(value, next, depth + 1);
    }
    default: return null;
  }
}
