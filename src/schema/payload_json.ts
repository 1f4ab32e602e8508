// Strict reading of a payload produced to a topic with a schema (spec §4 Produce, §8 Payload nesting with a
// schema): one JSON text in valid UTF-8, no byte-order mark, no raw control character in a string, at most 256
// levels of objects and arrays; anything else is a refusal naming the rule. Pure; runs on the front thread (small
// payloads of cheap schemas, validators.ts) and on the schema pool's threads (pool/schema_validate_task.ts).
export type PayloadRead = { ok: true; value: unknown } | { ok: false; rule: string };

// fatal: invalid UTF-8 throws, found in the same pass that decodes. A byte-order mark is refused before it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

const quote = 0x22, backslash = 0x5c, openBrace = 0x7b, closeBrace = 0x7d, openBracket = 0x5b, closeBracket = 0x5d;

/** The payload's value, or the rule it breaks (`payload: ...`). */
export function readPayloadJson(bytes: Uint8Array, depthMax: number): PayloadRead {
  if (bytes.byteLength === 0) return { ok: false, rule: 'payload: empty' };
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) return { ok: false, rule: 'payload: starts with a byte-order mark' };
  // Before JSON.parse: a payload nested past the limit must not cost a deep parse.
  const scanned = scanOutsideStrings(bytes, depthMax);
  if (scanned !== null) return { ok: false, rule: scanned };
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { ok: false, rule: 'payload: invalid UTF-8' };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, rule: `payload: not one JSON text: ${(error as Error).message}` };
  }
}

/**
 * One pass over the bytes: the nesting depth of brackets outside strings, and raw control characters inside them
 * (JSON.parse refuses both too, but words neither as the rule). Brackets are counted whatever the rest of the text
 * is: a text that is not JSON at all is refused by JSON.parse afterwards unless it is first too deep.
 */
function scanOutsideStrings(bytes: Uint8Array, depthMax: number): string | null {
  const end = bytes.length;
  let depth = 0;
  for (let i = 0; i < end; i++) {
    const b = bytes[i]!;
    if (b === quote) {
      for (i++; i < end; i++) {
        const c = bytes[i]!;
        if (c === quote) break;
        if (c === backslash) i++;
        else if (c < 0x20) return `payload: raw control character 0x${c.toString(16).padStart(2, '0')} in a string at byte ${i}`;
      }
    } else if (b === openBrace || b === openBracket) {
      if (++depth > depthMax) return `payload: nested deeper than ${depthMax} levels`;
    } else if (b === closeBrace || b === closeBracket) {
      depth--;
    }
  }
  return null;
}
