// Reading a request body on the front thread with its cap (spec §8) and, for batch produce bodies over
// 1 MiB, a share of the node's batch body budget (http.max_batch_body_bytes_in_flight). Reading starts
// synchronously in the uWS handler, because uWS drops data that arrives before onData is attached.
import type { HttpResponse } from 'uWebSockets.js';
import { BrokerError, errors } from '../errors.js';
import type { BodyRule } from './routes.js';

/** Bytes shared by every batch produce body over 1 MiB that is being read or worked on (spec §8, v3.2.0). */
export class ByteBudget {
  private usedBytes = 0;
  constructor(private readonly bytesMax: number) {}

  tryTake(bytes: number): boolean {
    if (this.usedBytes + bytes > this.bytesMax) return false;
    this.usedBytes += bytes;
    return true;
  }

  give(bytes: number): void {
    this.usedBytes -= bytes;
    if (this.usedBytes < 0) throw new Error('byte budget: gave back more than taken');
  }
}

export interface BudgetShare {
  budget: ByteBudget;
  /** Bodies up to this size never touch the budget. */
  freeBytesMax: number;
}

/**
 * Collects one body. `done` settles once: with the bytes, or with the BrokerError that the handler answers
 * (413/400 over the cap, 503 budget full). Whatever was taken from the budget stays taken until release().
 */
export class BodyReader {
  readonly done: Promise<Uint8Array>;
  /** True while the client is still sending: an early answer must then close the connection. */
  receiving = true;
  private takenBytes = 0;
  private rejectDone: (error: BrokerError) => void = () => undefined;

  constructor(res: HttpResponse, contentLength: number | null, rule: BodyRule, private readonly share?: BudgetShare) {
    /** A failure known before `done` exists, rejected once it does. */
    let failedEarly: BrokerError | null = null;
    this.done = new Promise<Uint8Array>((resolve, reject) => {
      this.rejectDone = reject;
      const tooLarge = (): BrokerError =>
        rule.oversizeStatus === 400 ? errors.bodyTooLargeAs400(rule.bytesMax) : errors.bodyTooLarge(rule.bytesMax);
      let failed: BrokerError | null = null;
      if (contentLength !== null && contentLength > rule.bytesMax) failed = tooLarge();
      else if (contentLength !== null && !this.takeBudget(contentLength)) failed = errors.batchBudgetFull();
      if (failed === null && contentLength === 0) {
        this.receiving = false;
        resolve(new Uint8Array(0));
        return;
      }
      if (failed !== null) {
        // Answer without reading: the caller closes the connection so the rest of the body is never parsed.
        failedEarly = failed;
        res.onData((_chunk, isLast) => {
          if (isLast) this.receiving = false;
        });
        return;
      }
      // Node's shared buffer pool for small bodies (no allocation or zeroing per request). Handlers get a view of the
      // bytes received only; what crosses to another thread goes through util/owned_bytes.ts.
      let buffer: Uint8Array = Buffer.allocUnsafe(contentLength ?? 0);
      let length = 0;
      res.onData((chunk, isLast) => {
        if (failed === null) {
          const bytes = new Uint8Array(chunk);
          const needed = length + bytes.byteLength;
          if (needed > rule.bytesMax) {
            failed = tooLarge();
            this.reject(failed);
          } else if (contentLength === null && !this.takeBudget(needed)) {
            failed = errors.batchBudgetFull();
            this.reject(failed);
          } else {
            if (needed > buffer.byteLength) buffer = grow(buffer, length, needed);
            // uWS neuters the chunk after this callback: copy now.
            buffer.set(bytes, length);
            length = needed;
          }
        }
        if (isLast) {
          this.receiving = false;
          // A plain Uint8Array view: handlers take many subarrays of it, and Buffer's own subarray is slower.
          if (failed === null) resolve(new Uint8Array(buffer.buffer, buffer.byteOffset, length));
        }
      });
    });
    if (failedEarly !== null) this.reject(failedEarly);
  }

  /** The client went away: a handler waiting for the body stops, so its request ends and gives back its shares. */
  abort(): void {
    this.receiving = false;
    this.reject(errors.clientGone());
  }

  /** Gives back the budget share; called once when the request is answered. */
  release(): void {
    if (this.share !== undefined && this.takenBytes > 0) this.share.budget.give(this.takenBytes);
    this.takenBytes = 0;
  }

  /** The handler may answer without awaiting the body (401, 404): a rejection nobody observes must stay quiet. Marked
   *  here, on the rare failing path, rather than with a derived promise per request. */
  private reject(error: BrokerError): void {
    this.done.catch(ignore);
    this.rejectDone(error);
  }

  private takeBudget(totalBytes: number): boolean {
    if (this.share === undefined || totalBytes <= this.share.freeBytesMax || totalBytes <= this.takenBytes) return true;
    const more = totalBytes - this.takenBytes;
    if (!this.share.budget.tryTake(more)) return false;
    this.takenBytes = totalBytes;
    return true;
  }
}

function ignore(): void {}

function grow(buffer: Uint8Array, length: number, needed: number): Uint8Array {
  const next = Buffer.allocUnsafe(Math.max(needed, buffer.byteLength * 2, 16 * 1024));
  next.set(buffer.subarray(0, length));
  return next;
}
