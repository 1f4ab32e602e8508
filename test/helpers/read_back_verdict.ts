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
  /** Ids read more than once, as "id xN". */
  duplicates: string[];
  /** Ids read back that were never sent. */
  unknown: string[];
  /** Nothing missing, duplicated or unknown, and something was acknowledged. */
  ok: boolean;
}

export function idOf(record: ReplayedMessage): string | undefined {
  const id = (record.payload as { id?: unknown } | null)?.id;
  return typeof id === 'string' ? id : undefined;
}

export function readBackVerdict(byPartition: ReplayedMessage[][], sent: ReadonlySet<string>, acked: ReadonlySet<string>): ReadBackVerdict {
  const counts = new Map<string, number>();
  let recordsRead = 0;
  for (const record of byPartition.flat()) {
    const key = idOf(record) ?? `<no id: ${JSON.stringify(record.payload).slice(0, 60)}>`;
    counts.set(key, (counts.get(key) ?? 0) + 1);
    recordsRead++;
  }
  const verdict: ReadBackVerdict = { recordsRead, unackedPresent: 0, missing: [], duplicates: [], unknown: [], ok: false };
  for (const id of acked) if (!counts.has(id)) verdict.missing.push(id);
  for (const [id, n] of counts) {
    if (n > 1) verdict.duplicates.push(`${id} x${n}`);
    if (!sent.has(id)) verdict.unknown.push(id);
    else if (!acked.has(id)) verdict.unackedPresent++;
  }
  verdict.ok = verdict.missing.length === 0 && verdict.duplicates.length === 0 && verdict.unknown.length === 0 && acked.size > 0;
  return verdict;
}
