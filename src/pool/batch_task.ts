// A piscina task: decode (gzip, zstd) and parse a batch produce body that is too big to parse on the front
// thread (over 1 MiB, or compressed). Runs on a pool thread; the front thread takes the records, or a refusal, back.
import { DecodedTooLarge, zstdDecodeBounded } from './bounded_zstd.js';
import { gzipDecodeBounded } from './bounded_gzip.js';
import { BudgetFull, DecodeBudget, type DecodeShare } from './byte_budget.js';
import { parseBatchBody, type BatchLimits, type BatchParse } from '../body/batch_produce_body.js';

export type BodyEncoding = 'identity' | 'gzip' | 'zstd';

export interface BatchTask {
  body: Uint8Array;
  encoding: BodyEncoding;
  partitions: number;
  limits: BatchLimits;
  /** Spec §8: 16 MiB as sent and decoded. */
  decodedBytesMax: number;
  /** A compressed body's share of the batch body budget for what it decodes to; the front gives back what the task
   *  took once it has settled. None for an identity body, whose bytes as sent were counted on the front. */
  budget?: DecodeShare;
}

export default async function runBatchTask(task: BatchTask): Promise<BatchParse> {
  let body: Uint8Array;
  try {
    body = await decode(task);
  } catch (error) {
    if (error instanceof DecodedTooLarge) return { ok: false, refusal: { id: 'decodedTooLarge', args: [task.decodedBytesMax] } };
    if (error instanceof BudgetFull) return { ok: false, refusal: { id: 'batchBudgetFull', args: [] } };
    return { ok: false, refusal: { id: 'undecodableBody', args: [task.encoding] } };
  }
  return parseBatchBody(body, task.partitions, task.limits);
}

async function decode(task: BatchTask): Promise<Uint8Array> {
  if (task.encoding === 'identity') return task.body;
  const budget = task.budget === undefined ? undefined : new DecodeBudget(task.budget);
  const onDecoded = budget === undefined ? undefined : (decodedBytes: number): void => budget.cover(decodedBytes);
  if (task.encoding === 'gzip') return gzipDecodeBounded(task.body, task.decodedBytesMax, onDecoded);
  return zstdDecodeBounded(task.body, task.decodedBytesMax, onDecoded);
}
