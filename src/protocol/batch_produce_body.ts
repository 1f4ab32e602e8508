// Parses and checks a batch produce body (spec §4 POST .../produce/batch, §8) into ingress records, all or
// none: the first failing message decides the answer, prefixed `message <i>:`. Pure; runs on the front
// thread for bodies up to 1 MiB and on a pool thread for bigger or compressed ones.
import { PayloadKind, type IngressRecord } from './ingress_frame.js';
import { findPayloadSpans } from './json_spans.js';
import { classifyPayload, decodeBase64 } from './payload.js';
import { fnv1a32 } from './ownership.js';

export interface BatchLimits {
  messagesMax: number;
  payloadBytesMax: number;
}

export type BatchParse =
  | { ok: true; records: IngressRecord[] }
  | { ok: false; status: number; error: string };

/** Records whose partition is still to be chosen by the node (no pin, no key) carry this partition. */
export const partitionUnassigned = -1;

const messageFields = new Set(['payload', 'payload_encoding', 'key', 'key_encoding', 'partition']);
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const textEncoder = new TextEncoder();

export function parseBatchBody(body: Uint8Array, partitions: number, limits: BatchLimits): BatchParse {
  let document: unknown;
  try {
    document = JSON.parse(utf8.decode(body));
  } catch {
    return fail(400, 'body: invalid JSON');
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return fail(400, 'body: must be a JSON object with messages');
  }
  for (const field of Object.keys(document)) {
    if (field !== 'messages') return fail(400, `${field}: unknown field`);
  }
  const messages = (document as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) return fail(400, 'messages: required, an array of 1 to ' + limits.messagesMax + ' messages');
  if (messages.length === 0) return fail(400, 'messages: must hold at least 1 message');
  if (messages.length > limits.messagesMax) return fail(400, `messages: at most ${limits.messagesMax} messages`);
  const spans = findPayloadSpans(body);
  const records: IngressRecord[] = new Array(messages.length);
  for (let i = 0; i < messages.length; i++) {
    const record = parseMessage(messages[i], body, spans[i] ?? null, partitions, limits);
    if (typeof record === 'string') return fail(record.startsWith('413 ') ? 413 : 400, `message ${i}: ${record.replace(/^413 /, '')}`);
    records[i] = record;
  }
  return { ok: true, records };
}

/** One message, or the text of its error ("413 " marks a size error). */
function parseMessage(
  message: unknown,
  body: Uint8Array,
  span: { start: number; end: number } | null,
  partitions: number,
  limits: BatchLimits,
): IngressRecord | string {
  if (typeof message !== 'object' || message === null || Array.isArray(message)) return 'must be an object';
  const fields = message as Record<string, unknown>;
  for (const field in fields) {
    if (!messageFields.has(field)) return `${field}: unknown field`;
  }
  if (!('payload' in fields)) return 'payload: required';
  const payloadEncoding = fields.payload_encoding;
  let payload: Uint8Array;
  let payloadKind: PayloadKind;
  if (payloadEncoding !== undefined) {
    if (payloadEncoding !== 'base64') return 'payload_encoding: must be base64';
    if (typeof fields.payload !== 'string') return 'payload: must be a base64 string with payload_encoding base64';
    const decoded = decodeBase64(fields.payload);
    if (decoded === null) return 'payload: invalid base64';
    payload = decoded;
    payloadKind = classifyPayload(payload);
  } else {
    if (span === null) return 'payload: required';
    payload = body.subarray(span.start, span.end);
    payloadKind = PayloadKind.Json;
  }
  if (payload.byteLength === 0) return 'payload: must not be empty';
  if (payload.byteLength > limits.payloadBytesMax) return `413 payload: larger than ${limits.payloadBytesMax} bytes`;

  const keyEncoding = fields.key_encoding;
  let key: Uint8Array | null = null;
  if (fields.key !== undefined) {
    if (typeof fields.key !== 'string') return 'key: must be a string';
    if (keyEncoding !== undefined) {
      if (keyEncoding !== 'base64') return 'key_encoding: must be base64';
      key = decodeBase64(fields.key);
      if (key === null) return 'key: invalid base64';
    } else {
      key = textEncoder.encode(fields.key);
    }
    if (key.byteLength === 0) key = null;
  } else if (keyEncoding !== undefined && keyEncoding !== 'base64') {
    return 'key_encoding: must be base64';
  }

  let partition = partitionUnassigned;
  if (fields.partition !== undefined) {
    const pin = fields.partition;
    if (typeof pin !== 'number' || !Number.isInteger(pin) || pin < 0 || pin >= partitions) {
      return `partition: must be an integer from 0 to ${partitions - 1}`;
    }
    partition = pin;
  } else if (key !== null) {
    partition = partitionForKey(key, partitions);
  }
  return { partition, key, payload, payloadKind };
}

/** Spec §1.5: a key keeps its messages on one partition while the count does not change. */
export function partitionForKey(key: Uint8Array, partitions: number): number {
  return fnv1a32(key) % partitions;
}

function fail(status: number, error: string): BatchParse {
  return { ok: false, status, error };
}
