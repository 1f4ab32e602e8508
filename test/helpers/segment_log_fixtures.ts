// Fixtures shared by the segment log tests (segment_log, segment_retention, sealed_handles): a partition directory in
// a fresh temp dir, a segment size that holds two test records, and the records of a test stream, where record i has
// ingress (100 + i, 0), a key on odd i only, and payloadBytes bytes derived from i, so any read can be checked against
// what was stored.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { StoredRecord } from '../../workers/store/segment_log.js';

/** Record frames are 61 or 67 bytes (40-byte payload, key or not): two fit, a third never does. */
export const segmentBytesSmall = 150;

/** A partition directory path (not created) under a temp dir removed at the test's end. */
export async function partitionTempDir(t: { teardown(fn: () => unknown): void }, name: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `${name}-`));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return join(dir, 'topics', '0123456789abcdef', '0');
}

export function partitionRecord(i: number, timestampSec = 1_700_000_000 + i, payloadBytes = 40): Omit<StoredRecord, 'offset'> {
  return {
    timestampSec,
    key: i % 2 === 0 ? null : new TextEncoder().encode(`key-${i}`),
    payload: new Uint8Array(payloadBytes).map((_, k) => (i * 7 + k) & 0xff),
    payloadKind: 2,
    ingressSeq: 100 + i,
    ingressIndex: 0,
  };
}
