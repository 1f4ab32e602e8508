// An ingress entry's frame body as the ingress log writes it (src/protocol/ingress_frame.ts), for tests that build
// ingress frames or groups themselves.
import { ingressEntryBytesMax, writeIngressEntry, type IngressEntry } from '../../src/protocol/ingress_frame.js';

export function encodeIngressEntry(entry: IngressEntry): Uint8Array {
  const target = new Uint8Array(ingressEntryBytesMax(entry));
  return target.subarray(0, writeIngressEntry(entry, target, 0));
}
