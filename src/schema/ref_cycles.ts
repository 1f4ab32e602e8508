// Finds a `$ref` that can lead back to itself without descending into the document (through allOf, anyOf, oneOf,
// not, if/then/else, dependentSchemas or other references only). ajv compiles such a schema, then recurses without
// end on the documents that reach the loop. The compatibility checker refuses a new version that has one (its proof
// reasons about schemas that terminate), and registration may refuse it outright. Pure; no I/O.
import { child, dependentSchemasOf, dialectOf, isObject, keyword, makeDoc, nodeKey, resolveRef, rootNode, type SchemaNode } from './schema_node.js';

const inPlaceLists = ['allOf', 'anyOf', 'oneOf'];
const inPlaceSingles = ['not', 'if', 'then', 'else'];
const descentSingles = ['items', 'additionalItems', 'additionalProperties', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties'];
const descentLists = ['prefixItems', 'items'];
const descentMaps = ['properties', 'patternProperties', '$defs', 'definitions'];

/** Subschemas applied to the same document as `node`. */
function inPlaceChildren(node: SchemaNode): SchemaNode[] {
  const out: SchemaNode[] = [];
  for (const name of inPlaceLists) {
    const list = keyword(node, name);
    if (Array.isArray(list)) list.forEach((_, i) => { const c = child(node, name, i); if (c) out.push(c); });
  }
  for (const name of inPlaceSingles) { const c = child(node, name); if (c) out.push(c); }
  out.push(...dependentSchemasOf(node).values());
  const ref = keyword(node, '$ref');
  if (ref !== undefined) { const target = resolveRef(node, ref); if (target) out.push(target); }
  return out;
}

/** Every subschema of a node, in place or below (definitions included), for the walk over the whole document. */
function allChildren(node: SchemaNode): SchemaNode[] {
  const out = inPlaceChildren(node).filter((c) => c.path.startsWith(node.path + '/'));
  for (const name of descentSingles) { const c = child(node, name); if (c) out.push(c); }
  for (const name of descentLists) {
    const list = keyword(node, name);
    if (Array.isArray(list)) list.forEach((_, i) => { const c = child(node, name, i); if (c) out.push(c); });
  }
  for (const name of descentMaps) {
    const map = keyword(node, name);
    if (isObject(map)) Object.keys(map).forEach((k) => { const c = child(node, name, k); if (c) out.push(c); });
  }
  return out;
}

/** The location of a subschema on such a loop, or null when every reference loop descends into the document. */
export function findInPlaceRefCycle(schema: unknown): string | null {
  const dialect = dialectOf(schema);
  if (dialect === null) return null;
  const nodes: SchemaNode[] = [];
  const seen = new Set<string>();
  const pending = [rootNode(makeDoc(schema, dialect, 'cycle'))];
  while (pending.length > 0 && nodes.length < 100_000) {
    const node = pending.pop()!;
    if (seen.has(nodeKey(node)) || !isObject(node.schema)) continue;
    seen.add(nodeKey(node));
    nodes.push(node);
    pending.push(...allChildren(node));
  }
  // Iterative depth-first search over in-place edges: a grey node met again closes a loop.
  const state = new Map<string, 'grey' | 'black'>();
  for (const start of nodes) {
    if (state.has(nodeKey(start))) continue;
    const stack: { node: SchemaNode; next: SchemaNode[] }[] = [{ node: start, next: inPlaceChildren(start) }];
    state.set(nodeKey(start), 'grey');
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const following = top.next.pop();
      if (following === undefined) { state.set(nodeKey(top.node), 'black'); stack.pop(); continue; }
      const mark = state.get(nodeKey(following));
      if (mark === 'grey') return following.path;
      if (mark === undefined && isObject(following.schema)) {
        state.set(nodeKey(following), 'grey');
        stack.push({ node: following, next: inPlaceChildren(following) });
      }
    }
  }
  return null;
}
