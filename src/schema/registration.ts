// Whether a schema document may become a topic's next version (spec §3 Schema version, §8 Schema document; NOTES 1):
// at most 256 KiB and 64 levels, compiled by ajv, no pattern that could take exponential time, and, after a first
// version, identical or annotation-only (nothing to register) or provably compatible with the current version.
// Runs on a work pool thread (src/pool/schema_prepare_task.ts): compiling and proving cost too much for the front.
import { limits } from '../config.js';
import { compileSchema } from './ajv_compile.js';
import { canonicalJson, isAnnotationOnlyChange } from './annotations.js';
import { checkCompatible } from './compatibility.js';
import { findInPlaceRefCycle } from './ref_cycles.js';

import safeRegex from 'safe-regex2';

const isSafeRegex = safeRegex as unknown as (pattern: string) => boolean;

export interface SchemaCandidate {
  /** The request's `schema` value: an object or true (the front refused anything else). */
  document: unknown;
  /** The current version's canonical text, or null without a schema. */
  current: string | null;
}

export type PreparedSchema =
  /** text: the document as stored; compatible: against the current version (always true for a first version). */
  | { kind: 'register'; text: string; compatible: true }
  | { kind: 'register'; text: string; compatible: false; refusal: string }
  /** Identical to the current version, or different only in annotations: registers nothing (v3.1.0). */
  | { kind: 'unchanged' }
  /** Not registrable at all: the 400's text. */
  | { kind: 'refused'; refusal: string };

export function prepareSchema(candidate: SchemaCandidate): PreparedSchema {
  const text = JSON.stringify(candidate.document);
  if (Buffer.byteLength(text) > limits.schema_doc_bytes_max) {
    return { kind: 'refused', refusal: `schema: larger than ${limits.schema_doc_bytes_max} bytes` };
  }
  if (depthOf(candidate.document, 0) > limits.schema_doc_depth_max) {
    return { kind: 'refused', refusal: `schema: nested deeper than ${limits.schema_doc_depth_max} levels` };
  }
  try {
    compileSchema(candidate.document);
  } catch (error) {
    return { kind: 'refused', refusal: `schema: not a schema ajv can compile: ${(error as Error).message}` };
  }
  // ajv compiles a $ref loop that never descends, then overflows its stack validating against it.
  const loop = findInPlaceRefCycle(candidate.document);
  if (loop !== null) return { kind: 'refused', refusal: `schema: $ref at ${loop || '/'}: refers back to itself without descending` };
  const unsafe = unsafePattern(candidate.document, '');
  if (unsafe !== null) return { kind: 'refused', refusal: `schema: pattern at ${unsafe || '/'}: could take exponential time (nested quantifiers)` };
  if (candidate.current === null) return { kind: 'register', text, compatible: true };
  const current: unknown = JSON.parse(candidate.current);
  if (canonicalJson(current) === canonicalJson(candidate.document) || isAnnotationOnlyChange(current, candidate.document)) {
    return { kind: 'unchanged' };
  }
  const verdict = checkCompatible(current, candidate.document);
  if (verdict.compatible) return { kind: 'register', text, compatible: true };
  const refusal = `schema: not compatible with the current version: ${verdict.keyword} at ${verdict.location || '/'}: ${verdict.reason}`;
  return { kind: 'register', text, compatible: false, refusal };
}

/** Levels of objects and arrays; a scalar is 0. Stops counting past the limit. */
function depthOf(value: unknown, depth: number): number {
  if (value === null || typeof value !== 'object' || depth > limits.schema_doc_depth_max) return depth;
  let deepest = depth + 1;
  for (const child of Object.values(value)) deepest = Math.max(deepest, depthOf(child, depth + 1));
  return deepest;
}

/** The JSON pointer of the first `pattern` (or patternProperties key) whose regex has nested quantifiers, or null. */
function unsafePattern(node: unknown, pointer: string): string | null {
  if (node === null || typeof node !== 'object') return null;
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries()) {
      const found = unsafePattern(item, `${pointer}/${i}`);
      if (found !== null) return found;
    }
    return null;
  }
  const object = node as Record<string, unknown>;
  if (typeof object.pattern === 'string' && !isSafeRegex(object.pattern)) return `${pointer}/pattern`;
  const patternProperties = object.patternProperties;
  if (patternProperties !== null && typeof patternProperties === 'object') {
    for (const key of Object.keys(patternProperties)) {
      if (!isSafeRegex(key)) return `${pointer}/patternProperties/${escapePointer(key)}`;
    }
  }
  for (const [key, child] of Object.entries(object)) {
    // enum and const hold data, not schemas: a string named "pattern" there is no regex.
    if (key === 'enum' || key === 'const') continue;
    const found = unsafePattern(child, `${pointer}/${escapePointer(key)}`);
    if (found !== null) return found;
  }
  return null;
}

function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}
