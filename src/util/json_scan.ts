// A JSON validator over UTF-8 bytes (RFC 8259, as JSON.parse accepts it): it finds where a value ends without
// building strings or objects, so the hot produce paths can check a payload, or walk a batch body, at a fraction of
// JSON.parse's cost. The caller checks the bytes are UTF-8 (isUtf8) first; every function answers -1 for text
// JSON.parse would refuse. Recursion follows nesting: a value nested deeper than the stack allows throws RangeError,
// which callers take as "use JSON.parse". Pure; shared by the front thread and the pool threads.
import { wordsOf } from './frame.js';

const quote = 0x22, backslash = 0x5c, slash = 0x2f, comma = 0x2c, colon = 0x3a, minus = 0x2d, plus = 0x2b, dot = 0x2e;
const openBrace = 0x7b, closeBrace = 0x7d, openBracket = 0x5b, closeBracket = 0x5d;
const zero = 0x30, nine = 0x39;

/** Whether the last string scanString accepted held an escape (its text then needs JSON.parse to decode). */
export let lastStringEscaped = false;

export function skipJsonSpace(bytes: Uint8Array, at: number): number {
  while (at < bytes.length) {
    const b = bytes[at]!;
    if (b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09) break;
    at++;
  }
  return at;
}

/** Bytes that end a run of plain string characters: the closing quote, a backslash, and the control characters
 *  (refused). One table load per byte instead of three comparisons: the batch produce's payload scan is mostly this
 *  loop. */
const stringStops = new Uint8Array(256);
for (let b = 0; b < 0x20; b++) stringStops[b] = 1;
stringStops[quote] = 1;
stringStops[backslash] = 1;

// The plain run of a string is skipped four bytes at a time: one 4-byte load and a few word operations tell whether
// any of the four is a stop (a byte below 0x20, a quote, a backslash), and only a word holding one goes byte by byte.
// The loads go through a DataView of the body, kept for the last array scanned (a batch body's scan calls this once
// per string of one array; a DataView per call would cost more than the string). That keeps the last body scanned
// alive until another replaces it: one body per thread.
let wordsBytes: Uint8Array = new Uint8Array(0);
let words: DataView = wordsOf(wordsBytes);

/** Whether any byte of the word w is below 0x20, a quote or a backslash. Exact for "any" (the classic has-less and
 *  has-zero-byte tests; a borrow can only flag a byte above one that matched). */
function wordHasStop(w: number): boolean {
  const quotes = w ^ 0x22222222;
  const backslashes = w ^ 0x5c5c5c5c;
  const below20 = (w - 0x20202020) & ~w;
  const quote = (quotes - 0x01010101) & ~quotes;
  const backslash = (backslashes - 0x01010101) & ~backslashes;
  return ((below20 | quote | backslash) & 0x80808080) !== 0;
}

/** at: an opening quote. The index past the closing quote, or -1. */
export function scanString(bytes: Uint8Array, at: number): number {
  let escaped = false;
  let i = at + 1;
  const end = bytes.length;
  if (bytes !== wordsBytes) {
    words = wordsOf(bytes);
    wordsBytes = bytes;
  }
  const view = words;
  // Bounded: every pass moves i forward or returns.
  for (;;) {
    while (i + 4 <= end && !wordHasStop(view.getInt32(i, true))) i += 4;
    while (i < end && stringStops[bytes[i]!] === 0) i++;
    if (i >= end) return -1;
    const b = bytes[i]!;
    if (b === quote) {
      lastStringEscaped = escaped;
      return i + 1;
    }
    if (b !== backslash) return -1;
    escaped = true;
    const e = bytes[i + 1];
    if (e === quote || e === backslash || e === slash || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74) {
      i += 2;
    } else if (e === 0x75) {
      for (let k = i + 2; k < i + 6; k++) if (!isHexDigit(bytes[k])) return -1;
      i += 6;
    } else {
      return -1;
    }
  }
}

function isHexDigit(b: number | undefined): boolean {
  return b !== undefined && ((b >= zero && b <= nine) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));
}

function digitsEnd(bytes: Uint8Array, at: number): number {
  while (at < bytes.length && bytes[at]! >= zero && bytes[at]! <= nine) at++;
  return at;
}

/** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? from at; the index past it, or -1. */
export function scanNumber(bytes: Uint8Array, at: number): number {
  if (bytes[at] === minus) at++;
  const first = bytes[at];
  if (first === zero) at++;
  else if (first !== undefined && first > zero && first <= nine) at = digitsEnd(bytes, at + 1);
  else return -1;
  if (bytes[at] === dot) {
    const end = digitsEnd(bytes, at + 1);
    if (end === at + 1) return -1;
    at = end;
  }
  if (bytes[at] === 0x65 || bytes[at] === 0x45) {
    at++;
    if (bytes[at] === plus || bytes[at] === minus) at++;
    const end = digitsEnd(bytes, at);
    if (end === at) return -1;
    at = end;
  }
  return at;
}

function scanLiteral(bytes: Uint8Array, at: number, literal: string): number {
  for (let k = 0; k < literal.length; k++) if (bytes[at + k] !== literal.charCodeAt(k)) return -1;
  return at + literal.length;
}

/** at: the first byte of a value (no leading space). The index past the value, or -1. */
export function scanValue(bytes: Uint8Array, at: number): number {
  const b = bytes[at];
  if (b === quote) return scanString(bytes, at);
  if (b === openBrace) return scanObject(bytes, at);
  if (b === openBracket) return scanArray(bytes, at);
  if (b === 0x74) return scanLiteral(bytes, at, 'true');
  if (b === 0x66) return scanLiteral(bytes, at, 'false');
  if (b === 0x6e) return scanLiteral(bytes, at, 'null');
  return scanNumber(bytes, at);
}

function scanObject(bytes: Uint8Array, at: number): number {
  at = skipJsonSpace(bytes, at + 1);
  if (bytes[at] === closeBrace) return at + 1;
  for (;;) {
    if (bytes[at] !== quote) return -1;
    at = scanString(bytes, at);
    if (at < 0) return -1;
    at = skipJsonSpace(bytes, at);
    if (bytes[at] !== colon) return -1;
    at = scanValue(bytes, skipJsonSpace(bytes, at + 1));
    if (at < 0) return -1;
    at = skipJsonSpace(bytes, at);
    if (bytes[at] === closeBrace) return at + 1;
    if (bytes[at] !== comma) return -1;
    at = skipJsonSpace(bytes, at + 1);
  }
}

function scanArray(bytes: Uint8Array, at: number): number {
  at = skipJsonSpace(bytes, at + 1);
  if (bytes[at] === closeBracket) return at + 1;
  for (;;) {
    at = scanValue(bytes, at);
    if (at < 0) return -1;
    at = skipJsonSpace(bytes, at);
    if (bytes[at] === closeBracket) return at + 1;
    if (bytes[at] !== comma) return -1;
    at = skipJsonSpace(bytes, at + 1);
  }
}

/** Whether UTF-8 bytes are one JSON text (a value with optional space around it), as JSON.parse would judge their
 *  decoded text; null when the nesting is too deep to tell this way. */
export function isJsonText(bytes: Uint8Array): boolean | null {
  try {
    const end = scanValue(bytes, skipJsonSpace(bytes, 0));
    return end >= 0 && skipJsonSpace(bytes, end) === bytes.length;
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}
