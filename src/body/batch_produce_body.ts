// Parses and checks a batch produce body (spec §4 POST .../produce/batch, §8) into ingress records, all or
// none: the first failing message decides the answer, prefixed `message <i>:`. Pure; runs on the front
// thread for bodies up to 1 MiB and on a pool thread for bigger or compressed ones. A failure is a refusal of the
// error catalog (src/errors.ts), plain data that crosses the pool's port; the front answers refusalError of it.
import { isUtf8 } from 'node:buffer';
import type { BatchRefusal } from '../errors.js';
import { PayloadKind, type IngressRecord } from '../protocol/ingress_frame.js';
import { findPayloadSpans, type Span } from './json_spans.js';
import { lastStringEscaped, scanNumber, scanString, scanValue, skipJsonSpace } from '../util/json_scan.js';
import { classifyPayload, decodeBase64, utf8Text } from './payload.js';
import { fnv1a32 } from '../protocol/ownership.js';
import { flatPlanEnd, type FlatPlan } from '../schema/validator_flat.js';

export interface BatchLimits {
  messagesMax: number;
  payloadBytesMax: number;
}

/** unchecked: with a PayloadCheck, the indexes of the records whose payloads it did not accept (in order); absent when
 *  no payload was checked (no check asked, or the body took the JSON.parse path). */
export type BatchParse =
  | { ok: true; records: IngressRecord[]; unchecked?: number[] }
  | { ok: false; refusal: BatchRefusal };

/** A topic schema's flat plan (validator_flat.ts) run on each JSON payload of up to bytesMax bytes as the body's scan
 *  reaches it, in place of walking it: a payload it accepts needs no other check (spec §4 Produce with a schema). */
export interface PayloadCheck {
  plan: FlatPlan;
  bytesMax: number;
}

/** Records whose partition is still to be chosen by the node (no pin, no key) carry this partition. */
export const partitionUnassigned = -1;

const messageFields = new Set(['payload', 'payload_encoding', 'key', 'key_encoding', 'partition']);
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const textEncoder = new TextEncoder();

export function parseBatchBody(body: Uint8Array, partitions: number, limits: BatchLimits, check: PayloadCheck | null = null): BatchParse {
  const scanned = scanBatchBody(body, limits.messagesMax, check);
  if (scanned === null) return parseBatchBodyParsed(body, partitions, limits);
  const records: IngressRecord[] = new Array(scanned.length);
  const unchecked: number[] = [];
  for (let i = 0; i < scanned.length; i++) {
    const message = scanned[i]!;
    const record = parseMessage(message.fields, body, message.payloadSpan, partitions, limits);
    if (typeof record === 'string') return messageFailure(i, record);
    records[i] = record;
    // A base64 payload is stored decoded: the plan saw only its encoding.
    if (!message.planAccepted || message.fields.payload_encoding !== undefined) unchecked.push(i);
  }
  return check === null ? { ok: true, records } : { ok: true, records, unchecked };
}

/** The general path: JSON.parse, then the payloads' exact bytes found again in the body (json_spans.ts). Exported for
 *  the test that checks the scanned path answers exactly as this one does. */
export function parseBatchBodyParsed(body: Uint8Array, partitions: number, limits: BatchLimits): BatchParse {
  let document: unknown;
  try {
    document = JSON.parse(utf8.decode(body));
  } catch {
    return refuse({ id: 'invalidJson', args: [] });
  }
  if (typeof document !== 'object' || document === null || Array.isArray(document)) {
    return refuse({ id: 'invalid', args: ['body', 'must be a JSON object with messages'] });
  }
  for (const field of Object.keys(document)) {
    if (field !== 'messages') return refuse({ id: 'unknownField', args: [field] });
  }
  const messages = (document as { messages?: unknown }).messages;
  if (!Array.isArray(messages)) {
    return refuse({ id: 'invalid', args: ['messages', `required, an array of 1 to ${limits.messagesMax} messages`] });
  }
  if (messages.length === 0) return refuse({ id: 'invalid', args: ['messages', 'must hold at least 1 message'] });
  if (messages.length > limits.messagesMax) return refuse({ id: 'invalid', args: ['messages', `at most ${limits.messagesMax} messages`] });
  const spans = findPayloadSpans(body);
  const records: IngressRecord[] = new Array(messages.length);
  for (let i = 0; i < messages.length; i++) {
    const record = parseMessage(messages[i], body, spans[i] ?? null, partitions, limits);
    if (typeof record === 'string') return messageFailure(i, record);
    records[i] = record;
  }
  return { ok: true, records };
}

/** parseMessage's answer for a payload over the cap: 413, where every other rule it checks answers 400. */
const payloadTooLarge = 'message too large';

/** One message, or the rule it breaks (payloadTooLarge for a size error). */
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
  if (payload.byteLength > limits.payloadBytesMax) return payloadTooLarge;

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

function refuse(refusal: BatchRefusal): BatchParse {
  return { ok: false, refusal };
}

function messageFailure(index: number, rule: string): BatchParse {
  return refuse(rule === payloadTooLarge ? { id: 'messageTooLarge', args: [index] } : { id: 'messageInvalid', args: [index, rule] });
}

/** A message as JSON.parse would give its fields (payload only as far as parseMessage reads it), and its payload's
 *  exact bytes. */
interface ScannedMessage {
  fields: Record<string, unknown>;
  payloadSpan: Span | null;
  /** The scan's PayloadCheck accepted the payload. */
  planAccepted: boolean;
}

/**
 * The common shape, read in one pass over the bytes without JSON.parse: `{"messages":[{...}, ...]}` holding 1 to
 * messagesMax objects whose keys are known message fields, unescaped, each once, with string values for
 * payload_encoding, key and key_encoding and a number for partition. Anything else (invalid JSON, another top-level
 * key, an empty or over-long array, a duplicate or unknown field, a value of another type, nesting too deep) answers
 * null and the body takes the JSON.parse path, which words the error.
 */
export function scanBatchBody(body: Uint8Array, messagesMax: number, check: PayloadCheck | null = null): ScannedMessage[] | null {
  if (!isUtf8(body)) return null;
  try {
    let at = skipJsonSpace(body, 0);
    if (body[at] !== 0x7b) return null;
    at = skipJsonSpace(body, at + 1);
    const keyEnd = plainKeyEnd(body, at);
    if (keyEnd < 0 || !bytesAre(body, at + 1, keyEnd - 1, 'messages')) return null;
    at = skipJsonSpace(body, keyEnd);
    if (body[at] !== 0x3a) return null;
    at = skipJsonSpace(body, at + 1);
    if (body[at] !== 0x5b) return null;
    at = skipJsonSpace(body, at + 1);
    const messages: ScannedMessage[] = [];
    for (;;) {
      if (messages.length === messagesMax) return null;
      const message: ScannedMessage = { fields: {}, payloadSpan: null, planAccepted: false };
      at = scanMessage(body, at, message, check);
      if (at < 0) return null;
      messages.push(message);
      at = skipJsonSpace(body, at);
      if (body[at] === 0x5d) break;
      if (body[at] !== 0x2c) return null;
      at = skipJsonSpace(body, at + 1);
    }
    at = skipJsonSpace(body, at + 1);
    if (body[at] !== 0x7d) return null;
    return skipJsonSpace(body, at + 1) === body.length ? messages : null;
  } catch (error) {
    if (error instanceof RangeError) return null;
    throw error;
  }
}

/** One message object from at (its '{'); the index past its '}', or -1 for anything scanBatchBody leaves alone. */
function scanMessage(body: Uint8Array, at: number, message: ScannedMessage, check: PayloadCheck | null): number {
  if (body[at] !== 0x7b) return -1;
  at = skipJsonSpace(body, at + 1);
  if (body[at] === 0x7d) return at + 1;
  const fields = message.fields;
  /** Whether the payload is one string token, and whether it holds an escape (read right after its scan). */
  let payloadString: { escaped: boolean } | null = null;
  for (;;) {
    const keyEnd = plainKeyEnd(body, at);
    if (keyEnd < 0) return -1;
    const field = knownField(body, at + 1, keyEnd - 1);
    if (field === null || field in fields) return -1;
    at = skipJsonSpace(body, keyEnd);
    if (body[at] !== 0x3a) return -1;
    const valueStart = skipJsonSpace(body, at + 1);
    if (field === 'payload') {
      at = checkedPayloadEnd(body, valueStart, check);
      message.planAccepted = at >= 0;
      if (at < 0) at = scanValue(body, valueStart);
      if (at < 0) return -1;
      message.payloadSpan = { start: valueStart, end: at };
      payloadString = body[valueStart] === 0x22 ? { escaped: lastStringEscaped } : null;
      fields.payload = true;
    } else if (field === 'partition') {
      at = scanNumber(body, valueStart);
      if (at < 0) return -1;
      fields.partition = Number(utf8Text(body.subarray(valueStart, at)));
    } else {
      if (body[valueStart] !== 0x22) return -1;
      at = scanString(body, valueStart);
      if (at < 0) return -1;
      fields[field] = stringValue(body, valueStart, at, lastStringEscaped);
    }
    at = skipJsonSpace(body, at);
    if (body[at] === 0x7d) break;
    if (body[at] !== 0x2c) return -1;
    at = skipJsonSpace(body, at + 1);
  }
  // parseMessage reads the payload's value only to decode base64, and only when it is a string.
  if (fields.payload_encoding !== undefined && message.payloadSpan !== null) {
    const { start, end } = message.payloadSpan;
    fields.payload = payloadString !== null ? stringValue(body, start, end, payloadString.escaped) : null;
  }
  return at + 1;
}

/** The index past the payload at `at` when check's plan accepts it, else -1. */
function checkedPayloadEnd(body: Uint8Array, at: number, check: PayloadCheck | null): number {
  if (check === null || body[at] !== 0x7b) return -1;
  return flatPlanEnd(check.plan, body, at, Math.min(body.length, at + check.bytesMax));
}

/** The text of the string token [start, end) (quotes included). */
function stringValue(body: Uint8Array, start: number, end: number, escaped: boolean): string {
  if (escaped) return JSON.parse(utf8Text(body.subarray(start, end))) as string;
  return utf8Text(body.subarray(start + 1, end - 1));
}

/** A key token at at without escapes: the index past its closing quote, or -1. */
function plainKeyEnd(body: Uint8Array, at: number): number {
  if (body[at] !== 0x22) return -1;
  const end = scanString(body, at);
  return end < 0 || lastStringEscaped ? -1 : end;
}

function knownField(body: Uint8Array, start: number, end: number): string | null {
  for (const field of messageFields) if (bytesAre(body, start, end, field)) return field;
  return null;
}

function bytesAre(body: Uint8Array, start: number, end: number, text: string): boolean {
  if (end - start !== text.length) return false;
  for (let i = 0; i < text.length; i++) if (body[start + i] !== text.charCodeAt(i)) return false;
  return true;
}
