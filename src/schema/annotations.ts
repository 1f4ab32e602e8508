// JSON equality and the annotation-free form of a schema: two versions that differ only in annotation keywords
// (title, description, examples, $comment, default, deprecated, readOnly, writeOnly; NOTES 1) accept the same
// documents, and registration answers 200 without a new version for them (spec 3 Schema version, v3.1.0).
// Pure; called by compatibility.ts and by whoever registers schema versions.
import { annotationKeywords, dialectOf, type Dialect, isObject, type JsonObject } from './schema_node.js';

/** JSON value equality as JSON Schema's enum and const use it: key order does not matter, 1 equals 1.0. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  if (!isObject(a) || !isObject(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && jsonEqual(a[k], b[k]));
}

/** JSON text with object keys sorted, so equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (!isObject(value)) return JSON.stringify(value) ?? 'null';
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(',')}}`;
}

const schemaMapKeywords = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
const schemaListKeywords = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
const schemaKeywords = new Set(['additionalProperties', 'propertyNames', 'not', 'if', 'then', 'else', 'contains',
  'unevaluatedItems', 'unevaluatedProperties', 'additionalItems', 'contentSchema']);

/** The schema with every annotation keyword removed at every schema position (never inside enum, const or a
 *  `properties` map's names). Keywords it does not know keep their values verbatim. */
export function stripAnnotations(schema: unknown, depth = 0): unknown {
  if (!isObject(schema) || depth > 200) return schema;
  const out: JsonObject = {};
  for (const [name, value] of Object.entries(schema)) {
    if (annotationKeywords.has(name)) continue;
    out[name] = stripKeywordValue(name, value, depth + 1);
  }
  return out;
}

function stripKeywordValue(name: string, value: unknown, depth: number): unknown {
  if (schemaKeywords.has(name)) return stripAnnotations(value, depth);
  if (schemaListKeywords.has(name) && Array.isArray(value)) return value.map((v) => stripAnnotations(v, depth));
  if (name === 'items') return Array.isArray(value) ? value.map((v) => stripAnnotations(v, depth)) : stripAnnotations(value, depth);
  if ((schemaMapKeywords.has(name) || name === 'dependencies') && isObject(value)) {
    const map: JsonObject = {};
    for (const [key, sub] of Object.entries(value)) map[key] = Array.isArray(sub) ? sub : stripAnnotations(sub, depth);
    return map;
  }
  return value;
}

function withoutSchemaKeyword(root: unknown): unknown {
  if (!isObject(root) || !('$schema' in root)) return root;
  const { $schema: _ignored, ...rest } = root;
  return rest;
}

/** True when the two versions are equal once annotations are removed and both declare the same dialect (an absent
 *  $schema and the 2020-12 URI are the same dialect). Registration then answers 200 and registers nothing. */
export function isAnnotationOnlyChange(oldSchema: unknown, newSchema: unknown): boolean {
  const oldDialect: Dialect | null = dialectOf(oldSchema);
  if (oldDialect === null || oldDialect !== dialectOf(newSchema)) return false;
  return jsonEqual(stripAnnotations(withoutSchemaKeyword(oldSchema)), stripAnnotations(withoutSchemaKeyword(newSchema)));
}
