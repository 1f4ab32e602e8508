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

/** Separates the handles of a 'settle', 'release' or 'taken' message (thread_messages.ts); never inside a handle. */
export const handleSeparator = ',';

/**
 * Calls visit for each handle of a joined list that formatReceiptHandle built or parseReceiptHandle accepted (the
 * front checks every handle before it joins them), without a regex or an object per handle. Returns how many.
 */
export function forEachJoinedHandle(joined: string, visit: (partition: number, offset: number, nonce: string) => void): number {
  if (joined === '') return 0;
  let count = 0;
  for (let at = 0; at <= joined.length; count++) {
    let end = joined.indexOf(handleSeparator, at);
    if (end < 0) end = joined.length;
    const first = joined.indexOf(':', at);
    const second = joined.indexOf(':', first + 1);
    if (!(first > at && second > first + 1 && second < end - 1)) throw new Error(`receipt handle list: malformed handle at ${at}`);
    visit(Number(joined.slice(at, first)), Number(joined.slice(first + 1, second)), joined.slice(second + 1, end));
    at = end + 1;
  }
  return count;
}
