// Validators of topic schema versions for produce (spec §4 Produce, NOTES 1): compiled as registration compiles them
// (ajv_compile.ts), once per (topic, version), kept in bounded caches; the wording of a refusal; which schemas are
// costly. Compiling costs milliseconds, so only the schema pool's
// threads compile (pool/schema_validate_task.ts); the front thread runs the code they generate
// (front/schema_validation.ts). Pure.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { limits } from '../config.js';
import { compileSchemaWithSource } from './ajv_compile.js';
import { readPayloadJson } from './payload_json.js';
import { PayloadKind } from '../protocol/ingress_frame.js';
import { flatPlanAccepts, type FlatPlan } from './validator_flat.js';

/** Payloads over this validate in the schema pool, whatever the schema (spec §8 Schema validation capacity). */
export const frontPayloadBytesMax = 16 * 1024;
/** Documents over this are costly. */
const cheapDocumentBytesMax = 16 * 1024;
/** Keywords whose cost is not linear in the payload: regular expressions (pattern, patternProperties, and the formats
 *  ajv checks by one), and uniqueItems (pairwise deep equality). */
const costlyKeywords = ['pattern', 'patternProperties', 'format', 'uniqueItems'] as const;

/** Whether a document validates only in the schema pool, and the costly keyword it uses first, if any. */
export interface SchemaCost {
  costly: boolean;
  keyword: string | null;
}

/** Runs on the front thread once per version: a big document is costly by its size alone and is not parsed here (its
 *  keyword, only for an overrun's wording, is then found by its quoted name in the text). */
export function schemaCostOf(document: string): SchemaCost {
  if (Buffer.byteLength(document) > cheapDocumentBytesMax) {
    return { costly: true, keyword: costlyKeywords.find((keyword) => document.includes(`"${keyword}"`)) ?? null };
  }
  const keyword = costlyKeywordIn(JSON.parse(document), 0);
  return { costly: keyword !== null, keyword };
}

/** Any key named like a costly keyword counts, a property of that name included: a false alarm only costs a pool trip. */
function costlyKeywordIn(value: unknown, depth: number): string | null {
  if (typeof value !== 'object' || value === null || depth > limits.schema_doc_depth_max) return null;
  if (!Array.isArray(value)) {
    for (const keyword of costlyKeywords) if (Object.hasOwn(value, keyword)) return keyword;
  }
  for (const child of Object.values(value)) {
    const found = costlyKeywordIn(child, depth + 1);
    if (found !== null) return found;
  }
  return null;
}

/** A validator of one stored document with its generated code (ajv_compile.ts: a fresh ajv instance each, so no
 *  compiled schema outlives its cache entry); throws ajv's error when it does not compile. */
export function compileDocument(document: string): { validate: ValidateFunction; source: () => string } {
  return compileSchemaWithSource(JSON.parse(document));
}

/** Null when the payload is one JSON text the validator accepts, else the refusal (`payload: ...`, `schema: ...`). */
export function payloadRefusal(bytes: Uint8Array, validate: ValidateFunction): string | null {
  const read = readPayloadJson(bytes, limits.schema_payload_depth_max);
  if (!read.ok) return read.rule;
  if (validate(read.value) === true) return null;
  return schemaErrorText(validate.errors?.[0]);
}

/** A refusal of one payload of a produce: index 0 for a single produce. */
export interface PayloadRefusal {
  index: number;
  rule: string;
}

/** The first refused payload of a batch, in order, or null. */
export function batchRefusal(
  records: readonly { payload: Uint8Array; payloadKind: PayloadKind }[], validate: ValidateFunction, onPayload?: (index: number) => void,
  joined?: Uint8Array, plan: FlatPlan | null = null,
): PayloadRefusal | null {
  if (plan !== null) return planRefusal(records, validate, plan, onPayload);
  const values = jsonValuesAtOnce(records, joined);
  for (let i = 0; i < records.length; i++) {
    onPayload?.(i);
    if (values === null) {
      const rule = payloadRefusal(records[i]!.payload, validate);
      if (rule !== null) return { index: i, rule };
    } else if (validate(values[i]) !== true) {
      return { index: i, rule: schemaErrorText(validate.errors?.[0]) };
    }
  }
  return null;
}

/** batchRefusal over joinPayloads' bytes with a flat plan, taking no view of a payload the plan accepts. */
export function joinedRefusal(
  joined: Uint8Array, ends: Int32Array, validate: ValidateFunction, plan: FlatPlan, onPayload: (index: number) => void,
): PayloadRefusal | null {
  let start = 1;
  for (let i = 0; i < ends.length; i++) {
    onPayload(i);
    const end = ends[i]!;
    if (!flatPlanAccepts(plan, joined, start, end)) {
      const rule = payloadRefusal(joined.subarray(start, end), validate);
      if (rule !== null) return { index: i, rule };
    }
    start = end + 1;
  }
  return null;
}

/** batchRefusal with a flat plan: a payload it certainly accepts needs no parse; any other is read and checked. */
function planRefusal(
  records: readonly { payload: Uint8Array; payloadKind: PayloadKind }[], validate: ValidateFunction, plan: FlatPlan,
  onPayload?: (index: number) => void,
): PayloadRefusal | null {
  for (let i = 0; i < records.length; i++) {
    onPayload?.(i);
    const { payload, payloadKind } = records[i]!;
    if (payloadKind === PayloadKind.Json && flatPlanAccepts(plan, payload)) continue;
    const rule = payloadRefusal(payload, validate);
    if (rule !== null) return { index: i, rule };
  }
  return null;
}

/**
 * The values of payloads that are all JSON texts (kind Json: valid UTF-8, one text, so no byte-order mark and no raw
 * control character), read as one array by one JSON.parse: about 2.5x cheaper than a parse each for small payloads.
 * Null when one is not JSON or the nesting is too deep; the caller then reads them one by one, which names the payload
 * and its rule.
 */
function jsonValuesAtOnce(records: readonly { payload: Uint8Array; payloadKind: PayloadKind }[], joined?: Uint8Array): unknown[] | null {
  for (const record of records) if (record.payloadKind !== PayloadKind.Json) return null;
  const read = readPayloadJson(joined ?? joinPayloads(records.map((record) => record.payload)).joined, limits.schema_payload_depth_max + 1);
  return read.ok && Array.isArray(read.value) && read.value.length === records.length ? read.value : null;
}

/** The payloads as the bytes of a JSON array of them, `[p0,p1,...]` (one copy of each), and where each ends: payload i
 *  is [ends[i-1] + 1 (1 for the first), ends[i]). A typed array, not a list: a port clones 1,000 numbers of a list
 *  one by one (about 56 µs measured), the typed array in one copy. */
export function joinPayloads(payloads: readonly Uint8Array[]): { joined: Uint8Array<ArrayBuffer>; ends: Int32Array } {
  let bytes = 1;
  for (const payload of payloads) bytes += payload.byteLength + 1;
  const joined = new Uint8Array(new ArrayBuffer(Math.max(2, bytes)));
  const ends = new Int32Array(payloads.length);
  joined[0] = 0x5b;
  let at = 1;
  payloads.forEach((payload, i) => {
    joined.set(payload, at);
    at += payload.byteLength;
    ends[i] = at;
    joined[at++] = 0x2c;
  });
  joined[joined.length - 1] = 0x5d;
  return { joined, ends };
}

/** The payloads of joinPayloads' bytes, as views. */
export function splitJoined(joined: Uint8Array, ends: Int32Array): Uint8Array[] {
  return Array.from(ends, (end, i) => joined.subarray(i === 0 ? 1 : ends[i - 1]! + 1, end));
}

/** `schema: <keyword> at <instance path or />: <ajv's message>`, cut to fit an error text. */
export function schemaErrorText(error: ErrorObject | undefined): string {
  if (error === undefined) return 'schema: refused';
  return cutText(`schema: ${error.keyword} at ${error.instancePath === '' ? '/' : error.instancePath}: ${error.message ?? 'refused'}`);
}

/** Room left for a batch's `message <i>: ` prefix. */
const prefixRoomBytes = 32;

/** text cut so that an answer's error, prefix included, stays within error_text_bytes_max (never mid-character). */
export function cutText(text: string, bytesMax = limits.error_text_bytes_max - prefixRoomBytes): string {
  if (text.length * 3 <= bytesMax) return text;
  const bytes = Buffer.from(text);
  if (bytes.byteLength <= bytesMax) return text;
  let end = bytesMax - 3;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString('utf8')}...`;
}

/** A count-bounded map that drops the least recently used entry; onDrop hears of each. */
export class LruCache<K, V> {
  private readonly entries = new Map<K, V>();
  constructor(
    private readonly countMax: number,
    private readonly onDrop: (value: V) => void = () => {},
  ) {}

  get(key: K): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    const previous = this.entries.get(key);
    this.entries.delete(key);
    if (previous !== undefined && previous !== value) this.onDrop(previous);
    this.entries.set(key, value);
    if (this.entries.size > this.countMax) {
      const [oldestKey, oldest] = this.entries.entries().next().value as [K, V];
      this.entries.delete(oldestKey);
      this.onDrop(oldest);
    }
  }

  delete(key: K): void {
    const value = this.entries.get(key);
    if (value === undefined) return;
    this.entries.delete(key);
    this.onDrop(value);
  }

  get size(): number {
    return this.entries.size;
  }
}
