// Schema documents as the compatibility checker reads them: the dialect of a document, a node (one subschema at a
// JSON pointer), its children under the draft-07 and 2020-12 spellings, local $ref resolution, and the stripping of
// annotation keywords. Pure: no I/O, no clock. Runs on whichever thread registers a schema version; called by
// compatibility.ts and the other files of src/schema.

export type Dialect = '2020-12' | 'draft-07';

/** One schema document: its root, its dialect, and whether `#/...` references in it point into its root. */
export interface SchemaDoc {
  readonly root: unknown;
  readonly dialect: Dialect;
  /** False when a subschema carries its own $id: a `#/...` reference under it would resolve elsewhere. */
  readonly refsLocal: boolean;
  /** 'old' or 'new': keeps node keys of the two documents apart. */
  readonly tag: string;
}

/** A subschema: a boolean or an object, found at `path` (a JSON pointer; '' is the root). */
export interface SchemaNode {
  readonly schema: unknown;
  readonly path: string;
  readonly doc: SchemaDoc;
}

export type JsonObject = Record<string, unknown>;

/** Keywords that never change which documents a schema accepts (NOTES 1 names the first eight). */
export const annotationKeywords: ReadonlySet<string> = new Set([
  'title', 'description', 'examples', '$comment', 'default', 'deprecated', 'readOnly', 'writeOnly',
]);

/** Keywords that validate nothing themselves: annotations, identifiers, definitions and content hints (ajv does not
 *  assert the content keywords). */
export const inertKeywords: ReadonlySet<string> = new Set([
  ...annotationKeywords, '$schema', '$id', '$defs', 'definitions', '$anchor', '$dynamicAnchor', '$vocabulary',
  'contentEncoding', 'contentMediaType', 'contentSchema',
]);

const commonKeywords = [
  'type', 'enum', 'const', 'multipleOf', 'maximum', 'exclusiveMaximum', 'minimum', 'exclusiveMinimum', 'maxLength',
  'minLength', 'pattern', 'format', 'maxItems', 'minItems', 'uniqueItems', 'contains', 'maxProperties',
  'minProperties', 'required', 'properties', 'patternProperties', 'additionalProperties', 'propertyNames', 'allOf',
  'anyOf', 'oneOf', 'not', 'if', 'then', 'else', '$ref', 'items',
];

/** The validating keywords each dialect defines; anything else in a new version is refused. */
export const validatingKeywords: Readonly<Record<Dialect, ReadonlySet<string>>> = {
  '2020-12': new Set([...commonKeywords, 'prefixItems', 'maxContains', 'minContains', 'dependentRequired',
    'dependentSchemas', 'unevaluatedItems', 'unevaluatedProperties']),
  'draft-07': new Set([...commonKeywords, 'additionalItems', 'dependencies']),
};

export function isObject(value: unknown): value is JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The dialect a root declares through $schema (none means 2020-12), or null for a dialect the broker does not take. */
export function dialectOf(root: unknown): Dialect | null {
  if (!isObject(root) || root.$schema === undefined) return '2020-12';
  const declared = root.$schema;
  if (typeof declared !== 'string') return null;
  if (/^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/.test(declared)) return '2020-12';
  if (/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/.test(declared)) return 'draft-07';
  return null;
}

export function makeDoc(root: unknown, dialect: Dialect, tag: string): SchemaDoc {
  return { root, dialect, tag, refsLocal: !hasNestedId(root, 0) };
}

/** Whether any object below the root holds a `$id` key (also inside values: being wrong that way only refuses). */
function hasNestedId(value: unknown, depth: number): boolean {
  if (depth > 200) return true;
  if (Array.isArray(value)) return value.some((item) => hasNestedId(item, depth + 1));
  if (!isObject(value)) return false;
  if (depth > 0 && '$id' in value) return true;
  return Object.values(value).some((item) => hasNestedId(item, depth + 1));
}

export function rootNode(doc: SchemaDoc): SchemaNode {
  return { schema: doc.root, path: '', doc };
}

export function nodeKey(node: SchemaNode): string {
  return `${node.doc.tag}#${node.path}`;
}

function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The child at `tokens` below `node`, when it is there and is a schema (a boolean or an object). */
export function child(node: SchemaNode, ...tokens: (string | number)[]): SchemaNode | undefined {
  let value: unknown = node.schema;
  let path = node.path;
  for (const token of tokens) {
    if (Array.isArray(value) && typeof token === 'number') value = value[token];
    else if (isObject(value) && typeof token === 'string' && Object.hasOwn(value, token)) value = value[token];
    else return undefined;
    path += `/${escapeToken(String(token))}`;
  }
  if (typeof value !== 'boolean' && !isObject(value)) return undefined;
  return { schema: value, path, doc: node.doc };
}

/** The schema's own keyword value, or undefined (also for boolean schemas). */
export function keyword(node: SchemaNode, name: string): unknown {
  return isObject(node.schema) && Object.hasOwn(node.schema, name) ? node.schema[name] : undefined;
}

/** The node a local `$ref` names, or null when it cannot be resolved inside the same document. */
export function resolveRef(node: SchemaNode, ref: unknown): SchemaNode | null {
  if (typeof ref !== 'string' || !node.doc.refsLocal) return null;
  const root = rootNode(node.doc);
  if (ref === '#') return root;
  if (!ref.startsWith('#/')) return null;
  let tokens: string[];
  try {
    tokens = ref.slice(2).split('/').map((t) => decodeURIComponent(t).replace(/~1/g, '/').replace(/~0/g, '~'));
  } catch {
    return null;
  }
  let value: unknown = node.doc.root;
  for (const token of tokens) {
    if (Array.isArray(value) && /^(0|[1-9]\d*)$/.test(token)) value = value[Number(token)];
    else if (isObject(value) && Object.hasOwn(value, token)) value = value[token];
    else return null;
  }
  if (typeof value !== 'boolean' && !isObject(value)) return null;
  return { schema: value, path: tokens.map((t) => `/${escapeToken(t)}`).join(''), doc: node.doc };
}

/** Tuple positions: 2020-12 `prefixItems`, or a draft-07 `items` array. */
export function prefixItemsOf(node: SchemaNode): SchemaNode[] {
  const name = node.doc.dialect === '2020-12' ? 'prefixItems' : 'items';
  const list = keyword(node, name);
  if (!Array.isArray(list)) return [];
  return list.map((_, i) => child(node, name, i)).filter((c): c is SchemaNode => c !== undefined);
}

/** The schema for positions past the tuple: 2020-12 `items`, draft-07 `additionalItems` after an `items` array or
 *  `items` as a single schema. */
export function restItemsOf(node: SchemaNode): SchemaNode | undefined {
  if (node.doc.dialect === '2020-12') return child(node, 'items');
  return Array.isArray(keyword(node, 'items')) ? child(node, 'additionalItems') : child(node, 'items');
}

/** 2020-12 `dependentRequired`, or the array entries of draft-07 `dependencies`. */
export function dependentRequiredOf(node: SchemaNode): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const value = keyword(node, node.doc.dialect === '2020-12' ? 'dependentRequired' : 'dependencies');
  if (!isObject(value)) return out;
  for (const [name, list] of Object.entries(value)) {
    if (Array.isArray(list)) out.set(name, list.filter((x): x is string => typeof x === 'string'));
  }
  return out;
}

/** 2020-12 `dependentSchemas`, or the schema entries of draft-07 `dependencies`. */
export function dependentSchemasOf(node: SchemaNode): Map<string, SchemaNode> {
  const out = new Map<string, SchemaNode>();
  const name = node.doc.dialect === '2020-12' ? 'dependentSchemas' : 'dependencies';
  const value = keyword(node, name);
  if (!isObject(value)) return out;
  for (const key of Object.keys(value)) {
    const sub = child(node, name, key);
    if (sub !== undefined) out.set(key, sub);
  }
  return out;
}

/** minContains and maxContains (2020-12 only; draft-07 `contains` means at least one). */
export function containsBounds(node: SchemaNode): { min: number; max: number } {
  if (node.doc.dialect !== '2020-12') return { min: 1, max: Infinity };
  const min = keyword(node, 'minContains');
  const max = keyword(node, 'maxContains');
  return { min: typeof min === 'number' ? min : 1, max: typeof max === 'number' ? max : Infinity };
}

/** The names a node's own `properties` lists. */
export function propertyNamesOf(node: SchemaNode): string[] {
  const value = keyword(node, 'properties');
  return isObject(value) ? Object.keys(value) : [];
}

/** The `patternProperties` entries of a node, as [pattern, subschema]. */
export function patternEntriesOf(node: SchemaNode): [string, SchemaNode][] {
  const value = keyword(node, 'patternProperties');
  if (!isObject(value)) return [];
  return Object.keys(value).flatMap((p) => {
    const sub = child(node, 'patternProperties', p);
    return sub === undefined ? [] : [[p, sub] as [string, SchemaNode]];
  });
}
