// Receipt handles (spec §2 Message, §3 Lease): `partition:offset:nonce`, opaque to clients. The nonce is fresh
// per delivery, so an earlier delivery's handle never matches the current lease. Pure; front thread and workers.

/** Longest runs of each part: partition digits, offset digits, nonce hex digits. */
const partitionDigitsMax = 9;
const offsetDigitsMax = 16;
const nonceDigitsMax = 32;
const colon = 0x3a;

export function formatReceiptHandle(partition: number, offset: number, nonce: string): string {
  return `${partition}:${offset}:${nonce}`;
}

/**
 * The partition a receipt handle names, or -1 when the text is not one: 1-9 decimal digits, ':', 1-16 decimal digits
 * that make a safe integer, ':', 1-32 lowercase hex digits, nothing else. A scan of char codes with no regex and no
 * object: a batch ack checks up to a thousand handles and needs only their partitions.
 */
export function receiptHandlePartition(text: string): number {
  const length = text.length;
  let at = 0;
  let partition = 0;
  for (; at < length && at <= partitionDigitsMax; at++) {
    const digit = text.charCodeAt(at) - 0x30;
    if (digit < 0 || digit > 9) break;
    partition = partition * 10 + digit;
  }
  if (at === 0 || at > partitionDigitsMax || at === length || text.charCodeAt(at) !== colon) return -1;
  const offsetStart = ++at;
  // Up to 15 digits stay below 2^53, so the sum is exact until the 16th, whose rounding cannot land on a safe integer.
  let offset = 0;
  for (; at < length && at - offsetStart <= offsetDigitsMax; at++) {
    const digit = text.charCodeAt(at) - 0x30;
    if (digit < 0 || digit > 9) break;
    offset = offset * 10 + digit;
  }
  const offsetDigits = at - offsetStart;
  if (offsetDigits === 0 || offsetDigits > offsetDigitsMax || !Number.isSafeInteger(offset)) return -1;
  if (at === length || text.charCodeAt(at) !== colon) return -1;
  const nonceStart = ++at;
  const nonceDigits = length - nonceStart;
  if (nonceDigits === 0 || nonceDigits > nonceDigitsMax) return -1;
  for (; at < length; at++) {
    const code = text.charCodeAt(at);
    if (!((code >= 0x30 && code <= 0x39) || (code >= 0x61 && code <= 0x66))) return -1;
  }
  return partition;
}

/** Separates the handles of a 'settle', 'release' or 'taken' message (thread_messages.ts); never inside a handle. */
export const handleSeparator = ',';

/**
 * Calls visit for each handle of a joined list that formatReceiptHandle built or receiptHandlePartition accepted (the
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
    visit(decimalAt(joined, at, first), decimalAt(joined, first + 1, second), joined.slice(second + 1, end));
    at = end + 1;
  }
  return count;
}

/** The decimal digits text[start..end) as a number, read by char code (a string and a StringToNumber per part cost a
 *  batch ack's worker more than the rest of splitting its handles); NaN, as Number() gives, for anything else, so a
 *  handle the front should have refused names no lease (410) rather than stopping the worker. */
function decimalAt(text: string, start: number, end: number): number {
  let value = 0;
  for (let at = start; at < end; at++) {
    const digit = text.charCodeAt(at) - 0x30;
    if (digit < 0 || digit > 9) return NaN;
    value = value * 10 + digit;
  }
  return value;
}
