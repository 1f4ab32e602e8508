// The consume route (spec §4 Consume and ack). With partition and offset it is a replay: one record read
// through the owning worker's segment index, no lease (spec §1.7). Leased consume comes with the consume
// path issue and answers 501 until then. Front thread.
import { parseDuration } from '../../config.js';
import { errors } from '../../errors.js';
import { PayloadKind } from '../../protocol/ingress_frame.js';
import { isUtf8Bytes, utf8Text } from '../../protocol/payload.js';
import type { StoredRecordView } from '../../protocol/thread_messages.js';
import { workerFailure } from '../dispatch.js';
import { jsonType, type Reply } from '../respond.js';
import type { RequestContext } from '../request_context.js';
import type { FrontServices } from '../services.js';

export function consumeHandlers(services: FrontServices) {
  const { replica, workers } = services;

  async function onConsume(ctx: RequestContext): Promise<Reply> {
    const topic = replica.state.topics.get(ctx.param(0));
    if (topic === undefined) throw errors.topicNotFound(ctx.param(0));
    const { query } = ctx;
    const waitText = query.get('wait');
    if (waitText !== undefined && parseDuration(waitText) === null) {
      throw errors.invalid('wait', 'must be a duration such as 500ms or 10s, not negative');
    }
    const partition = query.integer('partition', 0, topic.partitions - 1, `not a partition of topic ${topic.name} (0 to ${topic.partitions - 1})`);
    const offset = query.integer('offset', 0, Number.MAX_SAFE_INTEGER, 'must be a non-negative integer');
    const maxText = query.get('max');
    if (maxText !== undefined && offset !== undefined) throw errors.invalid('max', 'not allowed with offset');
    if (offset !== undefined && partition === undefined) throw errors.invalid('offset', 'requires partition');
    if (offset === undefined || partition === undefined) throw errors.notImplemented();

    const reply = await workers.request(workers.ownerOf(topic.id, partition), { kind: 'read', topicId: topic.id, partition, offset });
    const failure = workerFailure(reply);
    if (failure !== null) throw failure;
    if (reply.kind !== 'readResult') throw errors.internal('unexpected worker answer');
    if (reply.status === 'past_end') return { status: 204 };
    if (reply.status === 'aged_out') throw errors.offsetAgedOut(offset);
    return { status: 200, contentType: jsonType, body: messageJson(topic.name, partition, reply.record!) };
  }

  return { onConsume };
}

/** Spec §2 Message, built as text so a JSON payload goes out byte for byte as it was stored. */
export function messageJson(topic: string, partition: number, record: StoredRecordView, receiptHandle?: string): string {
  let json = `{"topic":${JSON.stringify(topic)},"partition":${partition},"offset":${record.offset}`;
  if (record.key !== null) {
    json += isUtf8Bytes(record.key)
      ? `,"key":${JSON.stringify(utf8Text(record.key))}`
      : `,"key":${JSON.stringify(Buffer.from(record.key).toString('base64'))},"key_encoding":"base64"`;
  }
  switch (record.payloadKind) {
    case PayloadKind.Json:
      json += `,"payload":${utf8Text(record.payload)}`;
      break;
    case PayloadKind.Text:
      json += `,"payload":${JSON.stringify(utf8Text(record.payload))}`;
      break;
    case PayloadKind.Binary:
      json += `,"payload":${JSON.stringify(Buffer.from(record.payload).toString('base64'))},"payload_encoding":"base64"`;
      break;
  }
  json += `,"timestamp":${record.timestampSec}`;
  if (receiptHandle !== undefined) json += `,"receipt_handle":${JSON.stringify(receiptHandle)}`;
  return json + '}';
}
