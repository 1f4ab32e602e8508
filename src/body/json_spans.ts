// Finds the exact bytes of each messages[i].payload inside a batch produce body, so a JSON payload is
// stored as written (spec §4: "stored exactly as written") instead of re-serialised by JSON.stringify,
// which would change number spellings and lose digits of big integers. Runs only on a body that
// JSON.parse already accepted, so it can skip values without validating them. Pure.
import { skipJsonSpace } from '../util/json_scan.js';

const quote = 0x22, backslash = 0x5c, comma = 0x2c;
const openBrace = 0x7b, closeBrace = 0x7d, openBracket = 0x5b, closeBracket = 0x5d;

export interface Span {
  start: number;
  end: number;
}

/** For each element of the top-level "messages" array: the span of its payload value, or null. */
export function findPayloadSpans(bytes: Uint8Array): (Span | null)[] {
  let spans: (Span | null)[] = [];
  let at = skipJsonSpace(bytes, 0);
  if (bytes[at] !== openBrace) return spans;
  at = skipJsonSpace(bytes, at + 1);
  while (at < bytes.length && bytes[at] !== closeBrace) {
    const keyEnd = skipString(bytes, at);
    const isMessages = keyIs(bytes, at, keyEnd, 'messages');
    at = skipJsonSpace(bytes, keyEnd);
    at = skipJsonSpace(bytes, at + 1); // past ':'
    if (isMessages && bytes[at] === openBracket) {
      // Duplicate keys: JSON.parse keeps the last, and so does this scan.
      spans = [];
      at = scanMessages(bytes, at, spans);
    } else {
      at = skipValue(bytes, at);
    }
    at = skipJsonSpace(bytes, at);
    if (bytes[at] === comma) at = skipJsonSpace(bytes, at + 1);
  }
  return spans;
}

function scanMessages(bytes: Uint8Array, at: number, spans: (Span | null)[]): number {
  at = skipJsonSpace(bytes, at + 1);
  while (at < bytes.length && bytes[at] !== closeBracket) {
    if (bytes[at] === openBrace) {
      let span: Span | null = null;
      at = skipJsonSpace(bytes, at + 1);
      while (at < bytes.length && bytes[at] !== closeBrace) {
        const keyEnd = skipString(bytes, at);
        const isPayload = keyIs(bytes, at, keyEnd, 'payload');
        at = skipJsonSpace(bytes, keyEnd);
        at = skipJsonSpace(bytes, at + 1);
        const valueEnd = skipValue(bytes, at);
        if (isPayload) span = { start: at, end: valueEnd };
        at = skipJsonSpace(bytes, valueEnd);
        if (bytes[at] === comma) at = skipJsonSpace(bytes, at + 1);
      }
      spans.push(span);
      at += 1;
    } else {
      spans.push(null);
      at = skipValue(bytes, at);
    }
    at = skipJsonSpace(bytes, at);
    if (bytes[at] === comma) at = skipJsonSpace(bytes, at + 1);
  }
  return at + 1;
}

/** Whether the key token at [start, end) (quotes included) names `name`; escaped keys are decoded first. */
function keyIs(bytes: Uint8Array, start: number, end: number, name: string): boolean {
  const length = end - start - 2;
  let escaped = false;
  for (let i = start + 1; i < end - 1; i++) {
    if (bytes[i] === backslash) {
      escaped = true;
      break;
    }
  }
  if (escaped) {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset + start, end - start).toString('utf8')) === name;
  }
  if (length !== name.length) return false;
  for (let i = 0; i < length; i++) {
    if (bytes[start + 1 + i] !== name.charCodeAt(i)) return false;
  }
  return true;
}


/** at points at an opening quote; returns the index after the closing quote. The native indexOf finds each
 *  candidate quote; one preceded by an odd run of backslashes is escaped and the search goes on. */
function skipString(bytes: Uint8Array, at: number): number {
  let from = at + 1;
  while (from < bytes.length) {
    const close = bytes.indexOf(quote, from);
    if (close < 0) return bytes.length;
    let backslashes = 0;
    for (let i = close - 1; i >= from && bytes[i] === backslash; i--) backslashes++;
    if (backslashes % 2 === 0) return close + 1;
    from = close + 1;
  }
  return bytes.length;
}

function skipValue(bytes: Uint8Array, at: number): number {
  const first = bytes[at];
  if (first === quote) return skipString(bytes, at);
  if (first === openBrace || first === openBracket) {
    let depth = 0;
    while (at < bytes.length) {
      const b = bytes[at]!;
      if (b === quote) {
        at = skipString(bytes, at);
        continue;
      }
      if (b === openBrace || b === openBracket) depth++;
      else if (b === closeBrace || b === closeBracket) {
        depth--;
        if (depth === 0) return at + 1;
      }
      at++;
    }
    return at;
  }
  // number, true, false, null
  while (at < bytes.length) {
    const b = bytes[at]!;
    if (b === comma || b === closeBrace || b === closeBracket || b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09) break;
    at++;
  }
  return at;
}
