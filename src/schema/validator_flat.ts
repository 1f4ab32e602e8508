// A byte-level fast path for the commonest produce schema, a flat closed object (properties of type integer, number,
// string, boolean or null with numeric and length bounds, required, additionalProperties false): it answers "valid"
// straight from a payload's bytes, without JSON.parse or building the object, and "not sure" for anything else, which
// then takes the full check (validators.ts). It never answers valid where ajv would refuse: the tests compare it with
// ajv on drawn payloads. Pure; the batch checks on the front thread and in the schema pool use it.
import { lastStringEscaped, scanNumber, scanString, skipJsonSpace } from '../util/json_scan.js';

type Kind = 'integer' | 'number' | 'string' | 'boolean' | 'null';

interface FieldRule {
  key: Uint8Array;
  kind: Kind;
  minimum: number;
  maximum: number;
  exclusiveMinimum: number;
  exclusiveMaximum: number;
  minLength: number;
  maxLength: number;
  required: boolean;
}

export interface FlatPlan {
  fields: FieldRule[];
  requiredCount: number;
}

const annotations = new Set(['title', 'description', '$comment', 'examples', 'default', 'deprecated', 'readOnly', 'writeOnly']);
const rootKeys = new Set(['$schema', 'type', 'properties', 'required', 'additionalProperties', ...annotations]);
const bounds = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'minLength', 'maxLength'] as const;
const fieldKeys = new Set<string>(['type', ...bounds, ...annotations]);
const kinds = new Set<string>(['integer', 'number', 'string', 'boolean', 'null']);
const encoder = new TextEncoder();

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** The plan of a document this fast path covers, or null. */
export function flatPlanOf(schema: unknown): FlatPlan | null {
  if (!isObject(schema) || schema.type !== 'object' || schema.additionalProperties !== false || !isObject(schema.properties)) return null;
  if (Object.keys(schema).some((key) => !rootKeys.has(key))) return null;
  const required = schema.required ?? [];
  if (!Array.isArray(required) || !required.every((name) => typeof name === 'string' && Object.hasOwn(schema.properties as object, name))) return null;
  const fields: FieldRule[] = [];
  // Seen properties are bits of one number.
  if (Object.keys(schema.properties).length > 30) return null;
  for (const [name, sub] of Object.entries(schema.properties)) {
    if (name === '__proto__' || !isObject(sub) || typeof sub.type !== 'string' || !kinds.has(sub.type)) return null;
    if (Object.keys(sub).some((key) => !fieldKeys.has(key))) return null;
    if (bounds.some((bound) => sub[bound] !== undefined && typeof sub[bound] !== 'number')) return null;
    const bound = (name: (typeof bounds)[number], otherwise: number): number => (sub[name] as number | undefined) ?? otherwise;
    fields.push({
      key: encoder.encode(name), kind: sub.type as Kind, required: required.includes(name),
      minimum: bound('minimum', -Infinity), maximum: bound('maximum', Infinity),
      exclusiveMinimum: bound('exclusiveMinimum', -Infinity), exclusiveMaximum: bound('exclusiveMaximum', Infinity),
      minLength: bound('minLength', 0), maxLength: bound('maxLength', Infinity),
    });
  }
  return { fields, requiredCount: new Set(required).size };
}

/** True only when the payload (bytes [start, end), known to be one JSON text in valid UTF-8 and followed, if at all, by
 *  a byte that is not JSON space) certainly passes the plan. */
export function flatPlanAccepts(plan: FlatPlan, bytes: Uint8Array, start = 0, end = bytes.length): boolean {
  const objectEnd = flatPlanEnd(plan, bytes, start, end);
  return objectEnd >= 0 && skipJsonSpace(bytes, objectEnd) === end;
}

/** The index past the object at start (after JSON space) when it certainly passes the plan and ends by `end`, else -1.
 *  The bytes from start must be valid UTF-8; what follows the object is not read, so a batch body's scan can check a
 *  payload in place of walking it (batch_produce_body.ts): an answer >= 0 also means the object is valid JSON. */
export function flatPlanEnd(plan: FlatPlan, bytes: Uint8Array, start: number, end: number): number {
  let at = skipJsonSpace(bytes, start);
  if (bytes[at] !== 0x7b) return -1;
  at = skipJsonSpace(bytes, at + 1);
  let seen = 0;
  let required = 0;
  let field = -1;
  if (bytes[at] !== 0x7d) {
    for (;;) {
      field = fieldAt(plan, bytes, at, field + 1);
      if (field < 0 || (seen & (1 << field)) !== 0) return -1;
      seen |= 1 << field;
      const rule = plan.fields[field]!;
      if (rule.required) required++;
      at = skipJsonSpace(bytes, at + rule.key.length + 2);
      if (bytes[at] !== 0x3a) return -1;
      at = valueEnd(rule, bytes, skipJsonSpace(bytes, at + 1), end);
      if (at < 0) return -1;
      at = skipJsonSpace(bytes, at);
      if (bytes[at] === 0x7d) break;
      if (bytes[at] !== 0x2c) return -1;
      at = skipJsonSpace(bytes, at + 1);
    }
  }
  return at < end && required === plan.requiredCount ? at + 1 : -1;
}

/** The field whose key token (quotes included, no escape) starts at `at`, or -1. Field `likely` is tried first:
 *  payloads mostly list their properties in the schema's order. */
function fieldAt(plan: FlatPlan, bytes: Uint8Array, at: number, likely: number): number {
  if (bytes[at] !== 0x22) return -1;
  const fields = plan.fields;
  if (likely < fields.length && keyAt(fields[likely]!.key, bytes, at)) return likely;
  for (let f = 0; f < fields.length; f++) if (f !== likely && keyAt(fields[f]!.key, bytes, at)) return f;
  return -1;
}

function keyAt(key: Uint8Array, bytes: Uint8Array, at: number): boolean {
  if (bytes[at + key.length + 1] !== 0x22) return false;
  for (let i = 0; i < key.length; i++) if (bytes[at + 1 + i] !== key[i]) return false;
  return true;
}

/** The index past a value at `at` that certainly passes rule, or -1. */
function valueEnd(rule: FieldRule, bytes: Uint8Array, at: number, end: number): number {
  switch (rule.kind) {
    case 'string':
      return stringEnd(rule, bytes, at, end);
    case 'boolean':
      return literalEnd(bytes, at, 'true') >= 0 ? at + 4 : literalEnd(bytes, at, 'false');
    case 'null':
      return literalEnd(bytes, at, 'null');
    default:
      return numberEnd(rule, bytes, at);
  }
}

function literalEnd(bytes: Uint8Array, at: number, literal: string): number {
  for (let i = 0; i < literal.length; i++) if (bytes[at + i] !== literal.charCodeAt(i)) return -1;
  return at + literal.length;
}

/** A string without escapes within the length bounds, counted in code points as ajv counts them. */
function stringEnd(rule: FieldRule, bytes: Uint8Array, at: number, end: number): number {
  if (bytes[at] !== 0x22) return -1;
  // scanString refuses raw control characters and bad escapes; the bytes are UTF-8 (the caller's promise).
  const after = scanString(bytes, at);
  if (after < 0 || after > end || lastStringEscaped) return -1;
  const length = after - at - 2;
  // A UTF-8 string has from a quarter of its bytes to all of them in code points: count only when a bound lies between.
  if (length <= rule.maxLength && rule.minLength * 4 <= length) return after;
  let codePoints = 0;
  for (let i = at + 1; i < after - 1; i++) if ((bytes[i]! & 0xc0) !== 0x80) codePoints++;
  return codePoints >= rule.minLength && codePoints <= rule.maxLength ? after : -1;
}

/** A finite number of the rule's kind within its bounds; integers only as plain digits (at most 15). */
function numberEnd(rule: FieldRule, bytes: Uint8Array, at: number): number {
  // The common case in one pass: up to 15 plain digits, no leading zero, no fraction or exponent after them.
  const negative = bytes[at] === 0x2d;
  const first = negative ? at + 1 : at;
  let i = first;
  let digits = 0;
  for (let b = bytes[i]; b !== undefined && b >= 0x30 && b <= 0x39 && i - first < 15; b = bytes[++i]) digits = digits * 10 + (b - 0x30);
  const next = bytes[i];
  const plain = i > first && (bytes[first] !== 0x30 || i === first + 1) && next !== 0x2e && next !== 0x65 && next !== 0x45
    && !(next !== undefined && next >= 0x30 && next <= 0x39);
  // Up to 15 digits the sum is exact, as JSON.parse's value is; -0 stays -0 as it does there.
  if (plain) return withinBounds(rule, negative ? -digits : digits) ? i : -1;
  if (rule.kind === 'integer') return -1;
  const end = scanNumber(bytes, at);
  if (end < 0) return -1;
  return withinBounds(rule, Number(String.fromCharCode(...bytes.subarray(at, end)))) ? end : -1;
}

function withinBounds(rule: FieldRule, value: number): boolean {
  return Number.isFinite(value) && value >= rule.minimum && value <= rule.maximum && value > rule.exclusiveMinimum && value < rule.exclusiveMaximum;
}
