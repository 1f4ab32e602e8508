// The Message object of a consume answer (spec §2 Message, NOTES 3), built as text so a JSON payload goes out
// byte for byte as it was stored. Pure; the partition workers build leased messages with it (so the front only
// joins strings), and the front builds replay answers.
import { PayloadKind } from '../protocol/ingress_frame.js';
import { isUtf8 } from 'node:buffer';
import { utf8Text } from './payload.js';
import type { StoredRecordView } from '../protocol/thread_messages.js';

/** Spec §2 Message, built as text so a JSON payload goes out byte for byte as it was stored. */
export function messageJson(topic: string, partition: number, record: StoredRecordView, receiptHandle?: string): string {
  return messageJsonText(messageJsonPrefix(topic, partition), record, receiptHandle);
}

/** The text every Message of one partition starts with: built once per partition of a batch consume. */
export function messageJsonPrefix(topic: string, partition: number): string {
  return `{"topic":${JSON.stringify(topic)},"partition":${partition}`;
}

/** A Message after its prefix (messageJsonPrefix). A receipt handle holds only digits, ':' and hex
 *  (receipt_handle.ts), so it needs no escaping. */
export function messageJsonText(prefix: string, record: StoredRecordView, receiptHandle?: string): string {
  let json = `${prefix},"offset":${record.offset}`;
  if (record.key !== null) {
    json += isUtf8(record.key)
      ? `,"key":${JSON.stringify(utf8Text(record.key))}`
      : `,"key":${JSON.stringify(base64(record.key))},"key_encoding":"base64"`;
  }
  switch (record.payloadKind) {
    case PayloadKind.Json:
      json += `,"payload":${utf8Text(record.payload)}`;
      break;
    case PayloadKind.Text:
      json += `,"payload":${JSON.stringify(utf8Text(record.payload))}`;
      break;
    case PayloadKind.Binary:
      json += `,"payload":${JSON.stringify(base64(record.payload))},"payload_encoding":"base64"`;
      break;
  }
  json += `,"timestamp":${record.timestampSec}`;
  if (receiptHandle !== undefined) json += `,"receipt_handle":"${receiptHandle}"`;
  return json + '}';
}

/** Base64 of a view without copying its bytes first. */
function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
