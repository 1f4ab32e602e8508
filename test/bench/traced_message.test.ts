// Goal: a traced produce request (bench/traced_message.ts) carries the id and send time it was given, in a payload of
// exactly --message-bytes that is one JSON object, and the scanner reads both back from a consume answer holding such
// payloads; an id or time that does not fit its digits, or a size too small for them, is refused.
// Method: build requests from one template, wrap their payloads as the node answers a batch consume, scan.
import t from 'tap';
import { epochUsNow, idLimit, scanTracedMessages, TracedRequestTemplate, tracedPayload } from '../../bench/traced_message.js';

const headers = { authorization: 'Basic eDp5', 'content-type': 'application/json' };

function payloadOf(request: Buffer): Buffer {
  return request.subarray(request.indexOf('\r\n\r\n') + 4);
}

t.test('requests carry their id and time; a consume answer scans back to them', async (t) => {
  const template = new TracedRequestTemplate('http://127.0.0.1:1', '/v1/topics/t/produce', headers, 100);
  const now = epochUsNow();
  const sent = [[0, now], [7, now + 1], [idLimit - 1, now + 999_999]] as const;
  const payloads = sent.map(([id, time]) => payloadOf(template.request(id, time)));
  for (const [i, payload] of payloads.entries()) {
    t.equal(payload.length, 100, 'exactly --message-bytes');
    t.same(JSON.parse(payload.toString()).id, String(sent[i]![0]).padStart(9, '0'));
    t.equal(JSON.parse(payload.toString()).t, sent[i]![1]);
  }
  const answer = Buffer.from(`{"messages":[${payloads.map((p, k) => `{"topic":"t","partition":0,"offset":${k},"payload":${p},"timestamp":1,"receipt_handle":"0:${k}:a"}`).join(',')}]}`);
  t.same(scanTracedMessages(answer), sent.map(([id, time]) => ({ id, sentEpochUs: time })));
  t.same(scanTracedMessages(Buffer.from('{"messages":[]}')), [], 'an answer without messages');
});

t.test('what does not fit is refused', async (t) => {
  const template = new TracedRequestTemplate('http://127.0.0.1:1', '/p', headers, 64);
  t.throws(() => template.request(idLimit, epochUsNow()), /does not fit 9 digits/);
  t.throws(() => template.request(-1, epochUsNow()), /does not fit/);
  t.throws(() => template.request(1, 10 ** 16), /does not fit 16 digits/);
  t.throws(() => tracedPayload(1, epochUsNow(), 45), /too small/, 'one byte short of the id and time');
  t.equal(tracedPayload(1, epochUsNow(), 46).length, 46, 'the smallest size holds them with no filler');
});

t.test('an id the scanner cannot read is NaN, the time still read', async (t) => {
  t.same(scanTracedMessages(Buffer.from('{"payload":{"id":"00000x007","t":1795358795603123,"d":"x"}')),
    [{ id: NaN, sentEpochUs: 1795358795603123 }], 'a letter among the digits');
});

t.test('a time the scanner cannot read is NaN, the id still read', async (t) => {
  const id = '"payload":{"id":"000000007"';
  t.same(scanTracedMessages(Buffer.from(`{${id},"t":1795358795603123}`)), [{ id: 7, sentEpochUs: NaN }], 'no comma after the time');
  t.same(scanTracedMessages(Buffer.from(`{${id},"d":"x"}`)), [{ id: 7, sentEpochUs: NaN }], 'no time after the id');
});
