// Records of a test partition stream, shared by the segment log tests: record i has ingress (100 + i, 0), a key on
// odd i only, and payloadBytes bytes derived from i, so any read can be checked against what was stored.
import type { StoredRecord } from '../../workers/segment_log.js';

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
