// Receipt handles (spec §2 Message, §3 Lease): `partition:offset:nonce`, opaque to clients. The nonce is fresh
// per delivery, so an earlier delivery's handle never matches the current lease. Pure; front thread and workers.
import type { LeaseRef } from './thread_messages.js';

const handlePattern = /^(\d{1,9}):(\d{1,16}):([0-9a-f]{1,32})$/;

export function formatReceiptHandle(partition: number, offset: number, nonce: string): string {
  return `${partition}:${offset}:${nonce}`;
}

/** The lease a handle names, or null when the text is not a handle (400). */
export function parseReceiptHandle(text: string): LeaseRef | null {
  const match = handlePattern.exec(text);
  if (match === null) return null;
  const offset = Number(match[2]);
  if (!Number.isSafeInteger(offset)) return null;
  return { partition: Number(match[1]), offset, nonce: match[3]! };
}
