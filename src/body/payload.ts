// Payload and key bytes as clients send and get them (NOTES 3). Pure; used by the front thread and the
// pool threads that parse big batch bodies.
import { isUtf8 } from 'node:buffer';
import { PayloadKind } from '../protocol/ingress_frame.js';
import { isJsonText } from '../util/json_scan.js';

// ignoreBOM keeps a leading byte-order mark in the text: it is part of the payload, and it is not JSON.
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** A payload's kind is a property of its bytes: one JSON text, other UTF-8, or anything else. */
export function classifyPayload(bytes: Uint8Array): PayloadKind {
  if (!isUtf8(bytes)) return PayloadKind.Binary;
  // The byte validator answers as JSON.parse would, without building the value; JSON.parse only for deep nesting.
  const json = isJsonText(bytes);
  if (json !== null) return json ? PayloadKind.Json : PayloadKind.Text;
  try {
    JSON.parse(utf8.decode(bytes));
    return PayloadKind.Json;
  } catch {
    return PayloadKind.Text;
  }
}

const base64Pattern = /^(?:[A-Za-z0-9+/_-]{4})*(?:[A-Za-z0-9+/_-]{2}(?:==)?|[A-Za-z0-9+/_-]{3}=?)?$/;

/** Standard or URL-safe base64, padding optional; null when the text is not base64. */
export function decodeBase64(text: string): Uint8Array | null {
  if (!base64Pattern.test(text)) return null;
  const bytes = Buffer.from(text, 'base64');
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}


export function utf8Text(bytes: Uint8Array): string {
  return utf8.decode(bytes);
}
