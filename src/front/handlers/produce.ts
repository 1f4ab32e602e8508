// Produce routes (spec §4 Produce, §1.2, §8): single and batch. A 202 is answered only after the ingress
// log's fdatasync covering the request's frame (a batch is one frame: all or none); the synced group then
// goes to the partition workers in the background. Front thread; routes.ts names these handlers, after server.ts
// looked the topic up and checked the produce grant.
import { limits } from '../../config.js';
import { errors, refusalError, type BrokerError } from '../../errors.js';
import { PayloadKind, type IngressEntry, type IngressRecord } from '../../protocol/ingress_frame.js';
import { localPartitions, ownerTakesProduce, producePartition, requireProducible } from '../partition_owners.js';
import {
  parseBatchBody, partitionForKey, partitionUnassigned, type BatchParse, type PayloadCheck,
} from '../../body/batch_produce_body.js';
import { classifyPayload, decodeBase64 } from '../../body/payload.js';
import type { TopicRecord } from '../../protocol/metadata_types.js';
import type { BatchTask, BodyEncoding } from '../../pool/batch_task.js';
import { directProduceRefusal } from './children.js';
import { jsonReply, type Reply } from '../respond.js';
import { ownedBytes } from '../../util/owned_bytes.js';
import { deferred, routeTopic, type RequestContext } from '../request_context.js';
import type { BodyListener } from '../body.js';
import type { AppendListener } from '../ingress/ingress_log.js';
import type { RouteServices } from '../services.js';
import { batchRefusal, type PayloadRefusal } from '../../schema/validators.js';

const textEncoder = new TextEncoder();
const emptyPayload = new Uint8Array(0);

const accepted: Reply = { status: 202 };

function takeProduceSlot(s: RouteServices, ctx: RequestContext, weight: number): void {
  const state = s.produce;
  if (state.capMax !== 0) {
    const taken = state.inFlight.tryTake(ctx.identity, weight, state.capMax);
    if (taken === null) throw errors.tooManyProduces();
    ctx.onDone(() => state.inFlight.give(ctx.identity, taken));
  }
  state.admitted += 1;
  ctx.onDone(() => (state.admitted -= 1));
}

/** Stamps entry with the next ingress seq, this topic and the time, writes it as one frame and tells `listener` once
 *  it is synced (the moment a 202 may be answered) or failed (ingressFailed then says so). */
function appendToIngress(s: RouteServices, topic: TopicRecord, entry: IngressEntry, listener: AppendListener): void {
  const ingress = s.ingress;
  if (ingress.failed) throw errors.ingressFailed();
  entry.seq = ingress.takeSeq();
  entry.topicId = topic.id;
  entry.timestampSec = Math.floor(Date.now() / 1000);
  if (localPartitions(topic, s.nodeId).length < topic.partitions) noteRemoteRecords(s, topic, entry);
  ingress.appendThen(entry, listener);
}

/** Records of partitions other nodes own go to them once their group is synced (handoff.ts). */
function noteRemoteRecords(s: RouteServices, topic: TopicRecord, entry: IngressEntry): void {
  const counts = new Map<number, number>();
  for (const record of entry.records) {
    const owner = topic.owners[record.partition]!;
    if (owner !== s.nodeId) counts.set(owner, (counts.get(owner) ?? 0) + 1);
  }
  for (const [owner, records] of counts) s.handoff.note(owner, entry.seq, records);
}

/** The pin mark of a single produce given a partition: its one record. */
const pinnedSingle: readonly number[] = [0];

/** appendToIngress of one record, through the shared single entry; pinned when the query gave the partition; kind
 *  when a schema check already knows it. */
function appendOne(
  s: RouteServices, topic: TopicRecord, partition: number, key: Uint8Array | null, payload: Uint8Array, listener: AppendListener,
  pinned: boolean, kind?: PayloadKind,
): void {
  s.produce.singleEntry.pinned = pinned ? pinnedSingle : undefined;
  const record = s.produce.singleRecord;
  record.partition = partition;
  record.key = key;
  record.payload = payload;
  record.payloadKind = kind ?? classifyPayload(payload);
  try {
    appendToIngress(s, topic, s.produce.singleEntry, listener);
  } finally {
    // The payload may be a view of uWS's chunk (readsInPlace): nothing keeps it past this call.
    record.key = null;
    record.payload = emptyPayload;
  }
}

/** A failed ingress write as its produce answers it: 500, and every later produce too until restart. */
function ingressFailed(s: RouteServices, error: Error): BrokerError {
  s.metrics.latchIngressFailed();
  s.log.error({ err: error }, 'ingress log write failed: every produce answers 500 until restart');
  return errors.ingressFailed();
}

/** A batch produce's wait for its ingress frame. */
class BatchAppend implements AppendListener {
  constructor(
    private readonly s: RouteServices,
    private readonly resolve: () => void,
    private readonly reject: (failure: BrokerError) => void,
  ) {}

  appended(error: Error | null): void {
    if (error !== null) {
      this.reject(ingressFailed(this.s, error));
      return;
    }
    this.resolve();
  }
}

/** One single produce from its body to its answer: the body's listener and the ingress log's in one object, so the
 *  hottest route makes no promise, and one object rather than a closure each, per request. */
class SingleProduce implements BodyListener, AppendListener {
  /** The payload is encoded into the ingress log's group before onBody returns, and nothing keeps a view of it. */
  readonly readsInPlace = true;
  private partition = 0;

  constructor(
    private readonly s: RouteServices,
    private readonly ctx: RequestContext,
    private readonly topic: TopicRecord,
    private readonly pin: number | undefined,
    private readonly key: Uint8Array | null,
    private readonly base64Payload: boolean,
  ) {}

  onBody(body: Uint8Array): void {
    try {
      let payload = body;
      if (this.base64Payload) {
        const decoded = decodeBase64(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('latin1').trim());
        if (decoded === null) throw errors.invalid('body', 'invalid base64 (payload_encoding=base64)');
        payload = decoded;
      }
      if (payload.byteLength === 0) throw errors.invalid('body', 'empty: a message needs a payload');
      const topic = this.topic;
      const partition = producePartition(this.s, topic, this.pin, this.key);
      this.partition = partition;
      const schema = this.s.replica.schemaOf(topic);
      if (schema.document === null) appendOne(this.s, topic, partition, this.key, payload, this, this.pin !== undefined);
      else this.checkThenAppend(payload, schema.version, schema.document);
    } catch (error) {
      this.ctx.fail(error);
    }
  }

  /** Spec §4 Produce with a schema: the payload is appended only once the current version accepts it. */
  private checkThenAppend(payload: Uint8Array, version: number, document: string): void {
    const { s, topic } = this;
    const guard = s.schemas.guardOf(topic.id, version, document);
    const here = s.schemas.checkHere(guard, payload);
    if (here === null) {
      appendOne(s, topic, this.partition, this.key, payload, this, this.pin !== undefined, PayloadKind.Json);
      return;
    }
    if (here !== undefined) throw schemaRefused(s, topic, here);
    // The body may be uWS's chunk, gone when onBody returns: the pool's answer comes later.
    const owned = payload.slice();
    s.schemas.checkInPool(topic.id, guard, [owned]).then((refusal) => {
      if (refusal !== null) throw schemaRefused(s, topic, refusal.rule);
      // The topic may have been deleted, or the partition moved, while the pool worked.
      const current = s.replica.topic(topic.name);
      if (current.id !== topic.id) throw errors.topicNotFound(topic.name);
      requireProducible(s, current, this.partition);
      appendOne(s, current, this.partition, this.key, owned, this, this.pin !== undefined, PayloadKind.Json);
    }).catch((error: unknown) => this.ctx.fail(error));
  }

  onFailure(error: BrokerError): void {
    this.ctx.fail(error);
  }

  appended(error: Error | null): void {
    if (error !== null) {
      this.ctx.fail(ingressFailed(this.s, error));
      return;
    }
    this.ctx.respond(accepted);
  }
}

/** The key of a single produce from its query (spec §4 Produce): text, or base64 with key_encoding=base64. */
function produceKey(keyText: string | undefined, keyEncoding: string | undefined): Uint8Array | null {
  if (keyText === undefined || keyText === '') return null;
  const key = keyEncoding === 'base64' ? decodeBase64(keyText) : textEncoder.encode(keyText);
  if (key === null) throw errors.invalid('key', 'invalid base64');
  return key.byteLength === 0 ? null : key;
}

/** Spec §3: a member being decommissioned drains: no new produce. */
function refuseWhileDecommissioning(s: RouteServices): void {
  if (s.replica.state.members.get(s.nodeId)?.decommission !== undefined) throw errors.nodeDecommissioning();
}

export function onProduce(ctx: RequestContext, s: RouteServices): typeof deferred {
  refuseWhileDecommissioning(s);
  const topic = routeTopic(ctx);
  const delayChild = directProduceRefusal(s, topic);
  if (delayChild !== null) throw delayChild;
  const { query } = ctx;
  const keyText = query.get('key');
  const keyEncoding = query.get('key_encoding');
  const payloadEncoding = query.get('payload_encoding');
  const pin = query.integer('partition', 0, topic.partitions - 1);
  if (keyEncoding !== undefined && keyEncoding !== 'base64') throw errors.invalid('key_encoding', 'must be base64');
  if (payloadEncoding !== undefined && payloadEncoding !== 'base64') throw errors.invalid('payload_encoding', 'must be base64');
  const key = produceKey(keyText, keyEncoding);
  takeProduceSlot(s, ctx, 1);
  ctx.whenBody(new SingleProduce(s, ctx, topic, pin, key, payloadEncoding === 'base64'));
  return deferred;
}

export async function onProduceBatch(ctx: RequestContext, s: RouteServices): Promise<Reply> {
  refuseWhileDecommissioning(s);
  const topic = routeTopic(ctx);
  const delayChild = directProduceRefusal(s, topic);
  if (delayChild !== null) throw delayChild;
  if (ctx.query.has('key')) throw errors.invalid('key', 'not allowed in the query of a batch produce (set it per message)');
  if (ctx.query.has('partition')) throw errors.invalid('partition', 'not allowed in the query of a batch produce (set it per message)');
  const encoding = bodyEncoding(ctx.headers.contentEncoding);
  const body = await ctx.body();
  const batchLimits = { messagesMax: limits.batch_produce_messages_max, payloadBytesMax: limits.payload_bytes_max };
  let parsed: BatchParse;
  const check = s.schemas.payloadCheckOf(topic.id, s.replica.schemaOf(topic));
  if (encoding === 'identity' && body.byteLength <= limits.request_body_bytes_max) {
    parsed = parseBatchBody(body, topic.partitions, batchLimits, check);
  } else {
    // A compressed body's decoded bytes count against the batch body budget too (issue 27 point 1).
    const budget = encoding === 'identity' ? undefined : ctx.bodyReader?.decodeShare();
    // The pool clones the body's whole ArrayBuffer: only the body's own bytes may go (a small one shares a slab).
    const task: BatchTask = {
      body: ownedBytes(body), encoding, partitions: topic.partitions, limits: batchLimits,
      decodedBytesMax: limits.batch_produce_body_bytes_max, budget,
    };
    try {
      parsed = (await s.workPool.run(task)) as BatchParse;
    } finally {
      if (budget !== undefined) ctx.bodyReader!.holdDecodeShare(budget);
    }
  }
  if (!parsed.ok) throw refusalError(parsed.refusal);
  await checkBatch(s, topic, parsed.records, parsed.unchecked, check);
  // The topic may have been deleted or grown while the pool worked; a deleted one is 404 now.
  const current = s.replica.topic(topic.name);
  if (current.id !== topic.id) throw errors.topicNotFound(topic.name);
  const records = parsed.records;
  takeProduceSlot(s, ctx, records.length);
  const pinned: number[] = [];
  records.forEach((record, index) => {
    if (record.partition === partitionUnassigned) record.partition = producePartition(s, current, undefined, null);
    else if (!placedByKey(record, current)) {
      requireProducible(s, current, record.partition);
      pinned.push(index);
    } else if (!ownerTakesProduce(s, current.owners[record.partition]!)) record.partition = producePartition(s, current, undefined, record.key);
  });
  const entry: IngressEntry = { seq: 0, topicId: '', timestampSec: 0, records, pinned };
  await new Promise<void>((resolve, reject) => appendToIngress(s, current, entry, new BatchAppend(s, resolve, reject)));
  return jsonReply(202, { accepted: records.length });
}

/** Whether a batch record's partition is its key's: one placed by its key goes to the next partition that takes it
 *  when its owner takes no produce now (spec §1.6), and may be rerouted later; one pinned is refused with 503, and
 *  waits for its owner once accepted. The body parse keeps no mark of which it was: a record whose partition is its
 *  key's counts as placed by the key. */
function placedByKey(record: IngressRecord, topic: TopicRecord): boolean {
  return record.key !== null && partitionForKey(record.key, topic.partitions) === record.partition;
}

/** A schema refusal as a produce answers it, counted (svc_produce_rejections_total, reason schema). */
function schemaRefused(s: RouteServices, topic: TopicRecord, rule: string, index?: number): BrokerError {
  s.metrics.countRejection(topic.name, 'schema');
  return index === undefined ? errors.schemaRefusal(rule) : errors.messageInvalid(index, rule);
}

/** Spec §4 batch produce with a schema: every message checked, in order, before any is stored; the first refused
 *  decides. The body's parse accepted some under `check` (all but `unchecked`) when that is still the current
 *  version's; of the rest, small batches of cheap schemas are checked here, others in the schema pool. */
async function checkBatch(
  s: RouteServices, topic: TopicRecord, records: IngressRecord[], unchecked: number[] | undefined, check: PayloadCheck | null,
): Promise<void> {
  const schema = s.replica.schemaOf(topic);
  if (schema.document === null) return;
  const guard = s.schemas.guardOf(topic.id, schema.version, schema.document);
  const indexes = check !== null && check === guard.check ? unchecked : undefined;
  const rest = indexes === undefined ? records : indexes.map((i) => records[i]!);
  const refusal: PayloadRefusal | null = rest.length === 0 ? null : s.schemas.needsPool(guard, rest)
    ? await s.schemas.checkInPool(topic.id, guard, rest.map((record) => record.payload),
      rest.every((record) => record.payloadKind === PayloadKind.Json))
    : batchRefusal(rest, guard.validate!, undefined, undefined, guard.plan);
  if (refusal !== null) throw schemaRefused(s, topic, refusal.rule, indexes === undefined ? refusal.index : indexes[refusal.index]!);
  for (const record of records) record.payloadKind = PayloadKind.Json;
}

function bodyEncoding(header: string): BodyEncoding {
  const value = header.trim().toLowerCase();
  if (value === '' || value === 'identity') return 'identity';
  if (value === 'gzip' || value === 'zstd') return value;
  throw errors.unsupportedContentEncoding(value);
}
