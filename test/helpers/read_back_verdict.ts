// The verdict of a crash trial's read-back (test/helpers/crash_scenario.ts, cluster_crash_scenario.ts): every record
// read counted by the id its payload carries, against the ids sent and the ids whose produce was acknowledged. Pure;
// test processes only.
import type { ReplayedMessage } from './replay.js';

export interface ReadBackVerdict {
  recordsRead: number;
  /** Ids present whose produce was sent but never acknowledged (allowed: the node may have stored them). */
  unackedPresent: number;
  /** Acknowledged ids not read back: lost. */
  missing: string[];
  /** Ids read more than once, as "id xN" (with copiesAcrossPartitions: more than once in one partition). */
  duplicates: string[];
  /** With copiesAcrossPartitions: ids read in several partitions, once in each. A record accepted for an owner that
   *  went down may be committed to a live partition while the owner had stored it already (spec 1.6: at least once). */
  partitionCopies: number;
  /** Ids read back that were never sent. */
  unknown: string[];
  /** Nothing missing, duplicated or unknown, and something was acknowledged. */
  ok: boolean;
}

export function idOf(record: ReplayedMessage): string | undefined {
  const id = (record.payload as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : undefined;
}

export function readBackVerdict(byPartition: ReplayedMessage[][], sent: ReadonlySet<string>, acked: ReadonlySet<string>,
  copiesAcrossPartitions = false): ReadBackVerdict {
  const counts = new Map<string, number>();
  const perPartition = new Map<string, number>();
  let recordsRead = 0;
  byPartition.forEach((records, partition) => {
    for (const record of records) {
      const key = idOf(record) ?? `<no id: ${JSON.stringify(record.payload).slice(0, 60)}>`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
      perPartition.set(`${partition}/${key}`, (perPartition.get(`${partition}/${key}`) ?? 0) + 1);
      recordsRead++;
    }
  });
  const verdict: ReadBackVerdict = { recordsRead, unackedPresent: 0, missing: [], duplicates: [], partitionCopies: 0, unknown: [], ok: false };
  for (const id of acked) if (!counts.has(id)) verdict.missing.push(id);
  for (const [id, n] of counts) {
    if (n > 1 && !copiesAcrossPartitions) verdict.duplicates.push(`${id} x${n}`);
    else if (n > 1) verdict.partitionCopies++;
    if (!sent.has(id)) verdict.unknown.push(id);
    else if (!acked.has(id)) verdict.unackedPresent++;
  }
  if (copiesAcrossPartitions) {
    for (const [key, n] of perPartition) if (n > 1) verdict.duplicates.push(`${key} x${n}`);
  }
  verdict.ok = verdict.missing.length === 0 && verdict.duplicates.length === 0 && verdict.unknown.length === 0 && acked.size > 0;
  return verdict;
}
