// Messages that carry their own id and send time, so a consumer's answer can be matched to its produce: the payloads
// of the end-to-end, soak and wake-up scenarios. {"id":"000000123","t":1795358795603123,"d":"xx..."}: a 9-digit id,
// the send time in epoch µs, filler to exactly --message-bytes. Producers copy one prebuilt request and write the id
// and time in place (building each request from strings cost the client more CPU than its socket write). Pure apart
// from the clock; bench process main thread.
import { performance } from 'node:perf_hooks';
import { requestBuffer } from './http_conn.js';

const idDigits = 9;
/** The first id that no longer fits idDigits: a producer stops before it. */
export const idLimit = 10 ** idDigits;
/** Epoch µs has 16 digits from 2001 to 2286: the template keeps that many places for the send time. */
const timeDigits = 16;

const idKey = Buffer.from('"payload":{"id":"');
const timeKey = Buffer.from('","t":');

/** performance.now()-clock time atMs in epoch µs: comparable with a send time another clock wrote in a payload. */
export function epochUs(atMs: number): number {
  return Math.round((performance.timeOrigin + atMs) * 1000);
}

export function epochUsNow(): number {
  return epochUs(performance.now());
}

/** The payload of message id sent at sentEpochUs, exactly bytes long; throws when bytes cannot hold the id and time. */
export function tracedPayload(id: number, sentEpochUs: number, bytes: number): Buffer {
  const head = `{"id":"${String(id).padStart(idDigits, '0')}","t":${sentEpochUs},"d":"`;
  const fill = bytes - head.length - 2;
  if (fill < 0) throw new Error(`--message-bytes ${bytes} is too small for the id and timestamp (${head.length + 2})`);
  return Buffer.from(head + 'x'.repeat(fill) + '"}');
}

/** Writes value's decimal digits into out[at..at + width), zero-padded; throws when it has more digits. */
function writeDigits(out: Buffer, at: number, value: number, width: number): void {
  let rest = value;
  for (let i = width - 1; i >= 0; i--) {
    out[at + i] = 0x30 + (rest % 10);
    rest = Math.floor(rest / 10);
  }
  if (rest !== 0 || !Number.isInteger(value) || value < 0) throw new Error(`${value} does not fit ${width} digits`);
}

/** A produce request of a traced message, built once: request() copies it and writes the id and send time in place. */
export class TracedRequestTemplate {
  private readonly bytes: Buffer;
  private readonly idAt: number;
  private readonly timeAt: number;

  constructor(url: string, path: string, headers: Record<string, string>, messageBytes: number) {
    const payload = tracedPayload(0, epochUsNow(), messageBytes);
    this.bytes = requestBuffer(url, 'POST', path, headers, payload);
    const bodyAt = this.bytes.length - payload.length;
    this.idAt = bodyAt + payload.indexOf('"id":"') + '"id":"'.length;
    this.timeAt = bodyAt + payload.indexOf('"t":') + '"t":'.length;
  }

  request(id: number, sentEpochUs: number): Buffer {
    const out = Buffer.allocUnsafe(this.bytes.length);
    this.bytes.copy(out);
    writeDigits(out, this.idAt, id, idDigits);
    writeDigits(out, this.timeAt, sentEpochUs, timeDigits);
    return out;
  }
}

/** Ids and send times (epoch µs) of the traced messages in a consume answer, in order; either is NaN when unreadable
 *  (callers count such a message as a bad body). */
export function scanTracedMessages(body: Buffer): Array<{ id: number; sentEpochUs: number }> {
  const found: Array<{ id: number; sentEpochUs: number }> = [];
  let at = body.indexOf(idKey);
  while (at >= 0) {
    const idStart = at + idKey.length;
    const id = Number(body.toString('latin1', idStart, idStart + idDigits));
    const timeAt = body.indexOf(timeKey, idStart);
    let sentEpochUs = NaN;
    if (timeAt === idStart + idDigits) {
      const end = body.indexOf(0x2c, timeAt + timeKey.length);
      if (end >= 0) sentEpochUs = Number(body.toString('latin1', timeAt + timeKey.length, end));
    }
    found.push({ id, sentEpochUs });
    at = body.indexOf(idKey, idStart);
  }
  return found;
}
