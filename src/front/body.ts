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
 * Collects one body. It ends once: with the bytes, or with the BrokerError that the handler answers (413/400 over
 * the cap, 503 budget full, the client gone). `whenDone` hears of it through callbacks (the single produce's path,
 * with no promise per request); `done` is the same as a promise, made on first use. Whatever was taken from the
 * budget stays taken until release().
 */
export class BodyReader {
  /** True while the client is still sending: an early answer must then close the connection. */
  receiving = true;
  private takenBytes = 0;
  private bytes: Uint8Array | null = null;
  private failure: BrokerError | null = null;
  /** The listener while the body has not ended. */
  private listener: { onBody: (bytes: Uint8Array) => void; onFailure: (error: BrokerError) => void } | null = null;
  private donePromise: Promise<Uint8Array> | null = null;

  constructor(res: HttpResponse, contentLength: number | null, rule: BodyRule, private readonly share?: BudgetShare) {
    const tooLarge = (): BrokerError =>
      rule.oversizeStatus === 400 ? errors.bodyTooLargeAs400(rule.bytesMax) : errors.bodyTooLarge(rule.bytesMax);
    let failed: BrokerError | null = null;
    if (contentLength !== null && contentLength > rule.bytesMax) failed = tooLarge();
    else if (contentLength !== null && !this.takeBudget(contentLength)) failed = errors.batchBudgetFull();
    if (failed === null && contentLength === 0) {
      this.receiving = false;
      this.end(new Uint8Array(0));
      return;
    }
    if (failed !== null) {
      // Answer without reading: the caller closes the connection so the rest of the body is never parsed.
      this.fail(failed);
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
      if (this.failure === null) {
        const bytes = new Uint8Array(chunk);
        const needed = length + bytes.byteLength;
        if (needed > rule.bytesMax) {
          this.fail(tooLarge());
        } else if (contentLength === null && !this.takeBudget(needed)) {
          this.fail(errors.batchBudgetFull());
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
        if (this.failure === null) this.end(new Uint8Array(buffer.buffer, buffer.byteOffset, length));
      }
    });
  }

  /** The body, as a promise (made on first use). */
  get done(): Promise<Uint8Array> {
    return (this.donePromise ??= new Promise((resolve, reject) => this.whenDone(resolve, reject)));
  }

  /** Calls onBody with the bytes, or onFailure with the error, once: now if the body has ended, else when it does.
   *  One listener per body. */
  whenDone(onBody: (bytes: Uint8Array) => void, onFailure: (error: BrokerError) => void): void {
    if (this.listener !== null) throw new Error('body: one listener per body');
    if (this.bytes !== null) onBody(this.bytes);
    else if (this.failure !== null) onFailure(this.failure);
    else this.listener = { onBody, onFailure };
  }

  /** The client went away: a handler waiting for the body stops, so its request ends and gives back its shares. */
  abort(): void {
    this.receiving = false;
    this.fail(errors.clientGone());
  }

  /** Gives back the budget share; called once when the request is answered. */
  release(): void {
    if (this.share !== undefined && this.takenBytes > 0) this.share.budget.give(this.takenBytes);
    this.takenBytes = 0;
  }

  private end(bytes: Uint8Array): void {
    const listener = this.settle();
    if (listener === undefined) return;
    this.bytes = bytes;
    listener?.onBody(bytes);
  }

  /** The handler may answer without waiting for the body (401, 404): with no listener, a failure stays quiet. */
  private fail(error: BrokerError): void {
    const listener = this.settle();
    if (listener === undefined) return;
    this.failure = error;
    listener?.onFailure(error);
  }

  /** The body ends once: undefined when it had ended already, else the listener to tell (null when none waits). */
  private settle(): BodyReader['listener'] | undefined {
    if (this.bytes !== null || this.failure !== null) return undefined;
    const listener = this.listener;
    this.listener = null;
    return listener;
  }

  private takeBudget(totalBytes: number): boolean {
    if (this.share === undefined || totalBytes <= this.share.freeBytesMax || totalBytes <= this.takenBytes) return true;
    const more = totalBytes - this.takenBytes;
    if (!this.share.budget.tryTake(more)) return false;
    this.takenBytes = totalBytes;
    return true;
  }
}

function grow(buffer: Uint8Array, length: number, needed: number): Uint8Array {
  const next = Buffer.allocUnsafe(Math.max(needed, buffer.byteLength * 2, 16 * 1024));
  next.set(buffer.subarray(0, length));
  return next;
}
