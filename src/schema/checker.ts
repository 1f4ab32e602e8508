// The shared shape of the compatibility checker's parts: a refusal (keyword, JSON-pointer location in the new
// version, reason) and the two recursive questions every keyword check may ask. Pure; the parts are wired together
// in compatibility.ts and called on registration of a schema version.
import type { Facts } from './facts.js';
import type { SchemaNode } from './schema_node.js';

export interface Refusal {
  readonly keyword: string;
  /** JSON pointer (RFC 6901) into the new version; '' is its root. */
  readonly location: string;
  readonly reason: string;
}

export interface Checker {
  /** Null when every document the facts allow is accepted by `node` (of the new version), else why not. `depth`
   *  counts descents into the document (properties, items), which recursion through $ref must make. */
  prove(facts: Facts, node: SchemaNode, depth: number): Refusal | null;
  /** True only when no document satisfies both sets of facts. */
  disjoint(a: Facts, b: Facts, depth: number): boolean;
}

export function refusal(keyword: string, node: SchemaNode, reason: string): Refusal {
  return { keyword, location: node.path, reason };
}

/** Readable rendering of a value in a reason, cut short. */
export function shown(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
