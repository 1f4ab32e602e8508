// Validators of topic schema versions for produce (spec §4 Produce, NOTES 1): ajv's Ajv2020 in strict mode (draft-07
// documents, by $schema, through ajv's draft-07 class), compiled once per (topic, version) and kept in a bounded
// cache; the wording of a refusal; which schemas are costly. Compiling costs milliseconds, so only the schema pool's
// threads compile (pool/schema_validate_task.ts); the front thread runs the code they generate (validation_pool.ts).
import { createRequire } from 'node:module';
import Ajv2020Module from 'ajv/dist/2020.js';
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import standaloneModule from 'ajv/dist/standalone/index.js';
import { limits } from '../config.js';
import { readPayloadJson } from './payload_json.js';

const Ajv2020 = Ajv2020Module.default;
const AjvDraft07 = AjvModule.default;
const standaloneCode = standaloneModule.default;
type AnyAjv = InstanceType<typeof Ajv2020> | InstanceType<typeof AjvDraft07>;

/** NOTES 1: strict, first error only, no $data. addUsedSchema off: topics may reuse an $id without clashing. Type and
 *  tuple strictness only log in ajv's default, silenced here as registration does. source: the front runs the code. */
const ajvOptions = {
  strict: true, strictTypes: 'log', strictTuples: 'log', strictRequired: false, logger: false,
  allErrors: false, $data: false, addUsedSchema: false, code: { source: true },
} as const;

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

export function schemaCostOf(document: string): SchemaCost {
  const parsed: unknown = JSON.parse(document);
  const keyword = costlyKeywordIn(parsed, 0);
  return { costly: keyword !== null || Buffer.byteLength(document) > cheapDocumentBytesMax, keyword };
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

/** The ajv instances of one thread; compiled schemas leave them when their cache entry goes (forget). */
export class SchemaCompiler {
  private modern: AnyAjv = new Ajv2020(ajvOptions);
  private draft07: AnyAjv = new AjvDraft07(ajvOptions);

  /** A validator of document; throws ajv's error when it does not compile (registration made sure it does). */
  compile(document: string): { validate: ValidateFunction; source: () => string; forget: () => void } {
    const schema = JSON.parse(document) as object | boolean;
    const draft07 = typeof schema === 'object' && /draft-07/.test(String((schema as { $schema?: unknown }).$schema ?? ''));
    let ajv = draft07 ? this.draft07 : this.modern;
    let validate: ValidateFunction;
    try {
      validate = ajv.compile(schema);
    } catch {
      // An $id inside one topic's schema may clash with another's in a shared instance: one fresh instance decides.
      ajv = draft07 ? (this.draft07 = new AjvDraft07(ajvOptions)) : (this.modern = new Ajv2020(ajvOptions));
      validate = ajv.compile(schema);
    }
    return {
      validate,
      source: () => standaloneCode(ajv, validate),
      forget: () => {
        if (typeof schema === 'object') ajv.removeSchema(schema);
      },
    };
  }
}

const requireForGenerated = createRequire(import.meta.url);

/** A validator from standaloneCode's CommonJS text: what the front thread runs instead of compiling. */
export function validatorFromSource(source: string): ValidateFunction {
  const module = { exports: {} as { default?: ValidateFunction } };
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- ajv's own generated code, made by a pool thread.
  new Function('module', 'exports', 'require', source)(module, module.exports, requireForGenerated);
  return (module.exports.default ?? module.exports) as ValidateFunction;
}

/** Null when the payload is one JSON text the validator accepts, else the refusal (`payload: ...`, `schema: ...`). */
export function payloadRefusal(bytes: Uint8Array, validate: ValidateFunction): string | null {
  const read = readPayloadJson(bytes, limits.schema_payload_depth_max);
  if (!read.ok) return read.rule;
  if (validate(read.value) === true) return null;
  return schemaErrorText(validate.errors?.[0]);
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
