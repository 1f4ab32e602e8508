// Produce-time schema checks as the front thread runs them (spec §4 Produce, §8 Schema validation capacity): which
// payloads it checks itself (small ones, cheap schemas, once a pool thread compiled the version) and which go to the
// schema pool under the per-node bound of validation slots, with a 5 s wait for a slot and a watchdog that terminates
// a pool thread stuck on one payload. Front thread; one per node (main.ts), used by handlers/produce.ts.
import { createRequire } from 'node:module';
import { flatPlanOf, type FlatPlan } from '../schema/validator_flat.js';
import { Piscina } from 'piscina';
import type { ValidateFunction } from 'ajv';
import { errors, type BrokerError } from '../errors.js';
import type { SchemaValidateResult, SchemaValidateTask } from '../pool/schema_validate_task.js';
import type { PayloadCheck } from '../body/batch_produce_body.js';
import {
  frontPayloadBytesMax, joinPayloads, LruCache, payloadRefusal, schemaCostOf, type PayloadRefusal, type SchemaCost,
} from '../schema/validators.js';

export interface SchemaValidationSettings {
  /** Validations running at once in the pool (one per core in service). */
  slots: number;
  /** Longest wait for a slot before the produce is answered 503 (spec §8: 5 s). */
  waitMs: number;
  /** Longest time one payload may take in the pool before its thread is terminated and the produce refused. */
  payloadTimeMs: number;
}

/** What one topic's current schema version needs on this thread. */
interface Guard {
  version: number;
  document: string;
  cost: SchemaCost;
  /** The pool's generated code of a cheap schema, once it came back. */
  validate: ValidateFunction | null;
  /** The byte-level fast path of a flat closed object schema (validator_flat.ts), for batches. */
  plan: FlatPlan | null;
  /** The plan as a batch body's scan runs it on payloads up to frontPayloadBytesMax (batch_produce_body.ts). */
  check: PayloadCheck | null;
}


const guardsMax = 1024;
/** A batch's payloads are checked here up to this many bytes together, as one payload would be; a bigger batch goes
 *  to the pool, where its check runs beside the front's work (bench --schema measured both: the pool as fast or
 *  faster, with the front free). */
const frontBatchBytesMax = frontPayloadBytesMax;
const watchdogTicks = 4;

export class SchemaValidation {
  private readonly guards = new LruCache<string, Guard>(guardsMax);
  private readonly pool: Piscina;
  private inUse = 0;
  private readonly waiting: { grant: () => void; timer: NodeJS.Timeout }[] = [];

  constructor(private readonly settings: SchemaValidationSettings) {
    this.pool = new Piscina({
      filename: new URL('../pool/schema_validate_task.js', import.meta.url).href,
      minThreads: 1,
      maxThreads: settings.slots,
      // Each thread's compiled versions are its cache: a thread that idles out takes them along.
      idleTimeout: 60_000,
    });
  }

  /** Pool slots in use (svc_schema_validations_in_flight). */
  get inFlight(): number {
    return this.inUse;
  }

  guardOf(topicId: string, version: number, document: string): Guard {
    const known = this.guards.get(topicId);
    if (known !== undefined && known.version === version) return known;
    const cost = schemaCostOf(document);
    const plan = cost.costly ? null : flatPlanOf(JSON.parse(document));
    const check = plan === null ? null : { plan, bytesMax: frontPayloadBytesMax };
    const guard: Guard = { version, document, cost, validate: null, plan, check };
    this.guards.set(topicId, guard);
    return guard;
  }

  /** The check a batch body's scan runs on its payloads under the topic's current schema, or null (none, or not flat).
   *  Cheap schemas and payloads up to 16 KiB may be checked on this thread (spec §8); the plan walks a payload in place
   *  of the scan's own walk, so accepting a batch costs about what parsing it does. */
  payloadCheckOf(topicId: string, schema: { version: number; document: string | null }): PayloadCheck | null {
    return schema.document === null ? null : this.guardOf(topicId, schema.version, schema.document).check;
  }

  /** The refusal of payload checked right here, null when it passes, undefined when the pool must check it. */
  checkHere(guard: Guard, payload: Uint8Array): string | null | undefined {
    if (guard.validate === null || payload.byteLength > frontPayloadBytesMax) return undefined;
    return payloadRefusal(payload, guard.validate);
  }

  /** Whether a batch's payloads go to the pool: any one over 16 KiB, or more than frontBatchBytesMax together. */
  needsPool(guard: Guard, payloads: readonly { payload: Uint8Array }[]): boolean {
    if (guard.validate === null) return true;
    let total = 0;
    for (const { payload } of payloads) {
      if (payload.byteLength > frontPayloadBytesMax) return true;
      total += payload.byteLength;
    }
    return total > frontBatchBytesMax;
  }

  /** Checks payloads in the pool; the first refusal, or null. Throws 503 when no slot frees within the wait. */
  async checkInPool(topicId: string, guard: Guard, payloads: readonly Uint8Array[], allJson = false): Promise<PayloadRefusal | null> {
    const task = packTask(topicId, guard, payloads, allJson);
    await this.takeSlot();
    let result: SchemaValidateResult;
    try {
      result = await this.runWatched(task, guard);
    } finally {
      this.giveSlot();
    }
    if (result.source !== null && guard.validate === null) this.adopt(guard, result.source);
    return result.ok ? null : { index: result.index, rule: result.rule };
  }

  /** The front's validator from a pool thread's code; without one the schema is checked in the pool from now on. */
  private adopt(guard: Guard, source: string | false): void {
    try {
      if (source !== false) {
        guard.validate = validatorFromSource(source);
        return;
      }
    } catch {
      // Checked in the pool instead, as a costly schema is.
    }
    guard.cost = { costly: true, keyword: guard.cost.keyword };
  }

  async close(): Promise<void> {
    for (const waiter of this.waiting.splice(0)) clearTimeout(waiter.timer);
    await this.pool.destroy();
  }

  private takeSlot(): Promise<void> {
    if (this.inUse < this.settings.slots) {
      this.inUse++;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        grant: resolve,
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          reject(errors.schemaValidationBusy(this.settings.waitMs));
        }, this.settings.waitMs),
      };
      this.waiting.push(waiter);
    });
  }

  /** A freed slot passes straight to the oldest waiter. */
  private giveSlot(): void {
    const next = this.waiting.shift();
    if (next === undefined) {
      this.inUse--;
      return;
    }
    clearTimeout(next.timer);
    next.grant();
  }

  /** Runs the task; a payload seen in progress for payloadTimeMs aborts it (piscina terminates the thread). */
  private async runWatched(task: SchemaValidateTask, guard: Guard): Promise<SchemaValidateResult> {
    const abort = new AbortController();
    const progress = new Int32Array(task.progress);
    const tickMs = Math.max(1, Math.floor(this.settings.payloadTimeMs / watchdogTicks));
    let seen = 0;
    let seenTicks = 0;
    const watchdog = setInterval(() => {
      const now = Atomics.load(progress, 0);
      if (now !== seen || now === 0) {
        seen = now;
        seenTicks = 0;
      } else if (++seenTicks >= watchdogTicks) {
        abort.abort();
      }
    }, tickMs);
    try {
      return (await this.pool.run(task, { signal: abort.signal, transferList: [task.payloads.buffer as ArrayBuffer] })) as SchemaValidateResult;
    } catch (error) {
      if (!abort.signal.aborted) throw poolFailure(guard, error);
      return { ok: false, index: seen - 1, rule: overrunRule(guard, this.settings.payloadTimeMs), source: null };
    } finally {
      clearInterval(watchdog);
    }
  }
}

const requireForGenerated = createRequire(import.meta.url);

/** A validator from ajv's standalone code (CommonJS text) made by a pool thread: what this thread runs instead of
 *  compiling. */
export function validatorFromSource(source: string): ValidateFunction {
  const module = { exports: {} as { default?: ValidateFunction } };
  new Function('module', 'exports', 'require', source)(module, module.exports, requireForGenerated);
  return (module.exports.default ?? module.exports) as ValidateFunction;
}

function overrunRule(guard: Guard, payloadTimeMs: number): string {
  const keyword = guard.cost.keyword === null ? '' : ` ${guard.cost.keyword}:`;
  return `schema:${keyword} validation took longer than ${payloadTimeMs} ms`;
}

function poolFailure(guard: Guard, error: unknown): BrokerError {
  return errors.internal(`schema version ${guard.version} could not be checked: ${error instanceof Error ? error.message : String(error)}`);
}

/** The payloads copied into one buffer of their own as a JSON array's bytes, which the pool takes over whole. */
function packTask(topicId: string, guard: Guard, payloads: readonly Uint8Array[], allJson: boolean): SchemaValidateTask {
  const { joined, ends } = joinPayloads(payloads);
  return {
    topicId, version: guard.version, document: guard.document, payloads: joined, ends,
    progress: new SharedArrayBuffer(4), wantSource: !guard.cost.costly && guard.validate === null, allJson,
  };
}
