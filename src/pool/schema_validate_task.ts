// A piscina task of the schema pool (spec §8 Schema validation capacity): checks one produce's payloads (one, or a
// batch's in order) against a topic's schema version, compiling it on first use into this thread's bounded cache,
// and hands back ajv's generated code for cheap schemas so the front thread can check later small payloads itself.
// Runs on a schema pool thread; src/front/schema_validation.ts sends the tasks and may terminate a thread that overruns.
import type { ValidateFunction } from 'ajv';
import { batchRefusal, compileDocument, joinedRefusal, LruCache, splitJoined, type PayloadRefusal } from '../schema/validators.js';
import { PayloadKind } from '../protocol/ingress_frame.js';
import { flatPlanOf, type FlatPlan } from '../schema/validator_flat.js';

export interface SchemaValidateTask {
  topicId: string;
  version: number;
  document: string;
  /** The payloads as joinPayloads (validators.ts) joins them, `[p0,p1,...]`, and where each ends. */
  payloads: Uint8Array;
  ends: Int32Array;
  /** Int32 [0]: 1 + the index of the payload being checked, 0 while compiling; the front's watchdog reads it. */
  progress: SharedArrayBuffer;
  /** Answer the validator's code (the front has none for this version yet). */
  wantSource: boolean;
  /** Every payload is known to be one JSON text (kind Json): they may be read as one array (validators.ts). */
  allJson: boolean;
}

/** source: the code asked for; false when ajv cannot make it for this schema (the front then never asks again). */
export type SchemaValidateResult =
  | { ok: true; source: string | false | null }
  | { ok: false; index: number; rule: string; source: string | false | null };

interface Compiled {
  version: number;
  validate: ValidateFunction;
  source: () => string;
  plan: FlatPlan | null;
}

/** Compiled versions kept per thread, by topic (one version each: produce only checks the current one). */
const compiledMax = 256;
const compiled = new LruCache<string, Compiled>(compiledMax);

function compiledFor(task: SchemaValidateTask): Compiled {
  const cached = compiled.get(task.topicId);
  if (cached !== undefined && cached.version === task.version) return cached;
  const entry = { version: task.version, ...compileDocument(task.document), plan: flatPlanOf(JSON.parse(task.document)) };
  compiled.set(task.topicId, entry);
  return entry;
}

function sourceOrFalse(source: () => string): string | false {
  try {
    return source();
  } catch {
    return false;
  }
}

export default function runSchemaValidateTask(task: SchemaValidateTask): SchemaValidateResult {
  const progress = new Int32Array(task.progress);
  const { validate, source, plan } = compiledFor(task);
  const code = task.wantSource ? sourceOrFalse(source) : null;
  const onPayload = (i: number): void => {
    Atomics.store(progress, 0, i + 1);
  };
  let refusal: PayloadRefusal | null;
  if (task.allJson && plan !== null) refusal = joinedRefusal(task.payloads, task.ends, validate, plan, onPayload);
  else {
    const payloadKind = task.allJson ? PayloadKind.Json : PayloadKind.Binary;
    const records = splitJoined(task.payloads, task.ends).map((payload) => ({ payload, payloadKind }));
    refusal = batchRefusal(records, validate, onPayload, task.payloads);
  }
  return refusal === null ? { ok: true, source: code } : { ok: false, ...refusal, source: code };
}
