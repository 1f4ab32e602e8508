// Reading a request body on the front thread with its cap (spec §8) and, for batch produce bodies over
// 1 MiB, a share of the node's batch body budget (http.max_batch_body_bytes_in_flight); a compressed body's
// decoded bytes join that share from the batch pool (decodeShare). Reading starts synchronously in the uWS
// handler, because uWS drops data that arrives before onData is attached.
import type { HttpResponse } from 'uWebSockets.js';
import { limits } from '../config.js';
import { BrokerError, errors } from '../errors.js';
import type { BodyRule } from './route_types.js';
import { grownOwnBytes, unzeroedOwnBytes } from '../util/owned_bytes.js';
import { decodeShare, decodeShareTaken, type ByteBudget, type DecodeShare } from '../pool/byte_budget.js';

// The budget lives in shared memory: the batch pool counts decoded bytes against it too (pool/byte_budget.ts).
export { ByteBudget } from '../pool/byte_budget.js';

export interface BudgetShare {
  budget: ByteBudget;
  /** Bodies up to this size never touch the budget. */
  freeBytesMax: number;
}

/** Who hears how a body ended: an object rather than two closures, so a single produce makes one per request. */
export interface BodyListener {
  onBody(bytes: Uint8Array): void;
  onFailure(error: BrokerError): void;
  /** True when onBody is done with the bytes when it returns and keeps no view of them: a body of known length that
   *  arrives in one chunk is then handed over in uWS's own chunk, with no copy (uWS frees it after the call). */
  readonly readsInPlace?: boolean;
}

/**
 * Collects one body. It ends once: with the bytes, or with the BrokerError that the handler answers (413/400 over
 * the cap, 503 budget full, the client gone). `whenDone` hears of it through a listener (the single produce's path,
 * with no promise per request); `done` is the same as a promise, made on first use. Whatever was taken from the
 * budget stays taken until release().
 */
export class BodyReader {
  /** True while the client is still sending: an early answer must then close the connection. */
  receiving = true;
  private takenBytes = 0;
  /** Set by release(): budget bytes that reach this reader later go straight back. */
  private released = false;
  private bytes: Uint8Array | null = null;
  private failure: BrokerError | null = null;
  /** The listener while the body has not ended. */
  private listener: BodyListener | null = null;
  private donePromise: Promise<Uint8Array> | null = null;
  /** The body went to its listener as uWS's own chunk, which is gone now. */
  private handedInPlace = false;
  /** Set once the answer is decided while the client still sends: the rest is counted and dropped, then this runs. */
  private drainWaiter: (() => void) | null = null;
  private refusedForSize = false;
  private drainedBytes = 0;
  /** What has arrived so far: the first `received` bytes of `buffer`; null until a chunk is copied. */
  private buffer: Uint8Array | null = null;
  private received = 0;

  constructor(
    res: HttpResponse,
    private readonly contentLength: number | null,
    private readonly rule: BodyRule,
    private readonly share?: BudgetShare,
  ) {
    let failed: BrokerError | null = null;
    if (contentLength !== null && contentLength > rule.bytesMax) failed = this.tooLarge();
    else if (contentLength !== null && !this.takeBudget(contentLength)) failed = errors.batchBudgetFull();
    if (failed === null && contentLength === 0) {
      this.receiving = false;
      this.end(new Uint8Array(0));
      return;
    }
    if (failed !== null) {
      // Answered without reading it: a size refusal drops the rest before its answer (drainThen), any other closes
      // the connection after answering, so the rest is never parsed as a request.
      this.fail(failed);
      res.onData((chunk, isLast) => this.onDropped(chunk.byteLength, isLast));
      return;
    }
    res.onData((chunk, isLast) => this.onChunk(chunk, isLast));
  }

  /** The body, as a promise (made on first use). */
  get done(): Promise<Uint8Array> {
    return (this.donePromise ??= new Promise((resolve, reject) => this.whenDone({ onBody: resolve, onFailure: reject })));
  }

  /** Calls listener.onBody with the bytes, or listener.onFailure with the error, once: now if the body has ended, else
   *  when it does. One listener per body. */
  whenDone(listener: BodyListener): void {
    if (this.listener !== null || this.handedInPlace) throw new Error('body: one listener per body');
    if (this.bytes !== null) listener.onBody(this.bytes);
    else if (this.failure !== null) listener.onFailure(this.failure);
    else this.listener = listener;
  }

  /** The client went away: a handler waiting for the body stops, so its request ends and gives back its shares. */
  abort(): void {
    this.receiving = false;
    this.fail(errors.clientGone());
    this.drained();
  }

  /** Refused for its size: its answer waits for the rest of the body (drainThen), where other early answers (a full
   *  budget, 401, 404) are written at once and close, so a load-shedding refusal costs no reading. */
  get oversize(): boolean {
    return this.refusedForSize;
  }

  /** A body refused for its size while the client still sends: what is left of it is read and dropped (up to
   *  limits.body_drain_bytes_max), then `then` runs, so a client that sends its whole body before it reads, as
   *  Node's fetch does, reads the answer instead of a reset. `receiving` then says whether the drain was cut short. */
  drainThen(then: () => void): void {
    this.buffer = null;
    this.drainWaiter = then;
    if (!this.receiving) this.drained();
  }

  private onDropped(bytes: number, isLast: boolean): void {
    this.drainedBytes += bytes;
    if (isLast) this.receiving = false;
    if (!this.receiving || this.drainedBytes > limits.body_drain_bytes_max) this.drained();
  }

  private drained(): void {
    const then = this.drainWaiter;
    this.drainWaiter = null;
    then?.();
  }

  /** Gives back the budget share; called once when the request is answered. */
  release(): void {
    this.released = true;
    if (this.share !== undefined && this.takenBytes > 0) this.share.budget.give(this.takenBytes);
    this.takenBytes = 0;
  }

  /** For a compressed body on its way to the pool: the share through which the pool counts the decoded bytes against
   *  the same budget (undefined on a route without one). Hand it back with holdDecodeShare once the task settled. */
  decodeShare(): DecodeShare | undefined {
    if (this.share === undefined) return undefined;
    return decodeShare(this.share.budget, this.share.freeBytesMax, this.takenBytes);
  }

  /** What the pool took through `share` is this reader's until release(); after it, given back at once (the client
   *  went away while the pool decoded). */
  holdDecodeShare(share: DecodeShare): void {
    const taken = decodeShareTaken(share);
    if (taken === 0 || this.share === undefined) return;
    if (this.released) this.share.budget.give(taken);
    else this.takenBytes += taken;
  }

  private onChunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (this.drainWaiter !== null) return this.onDropped(chunk.byteLength, isLast);
    if (this.failure === null) {
      const bytes = new Uint8Array(chunk);
      // Exactly the length checked against the cap and the budget before the first byte came; anything else is copied
      // and checked below.
      if (isLast && this.received === 0 && bytes.byteLength === this.contentLength && this.listener?.readsInPlace === true) {
        this.receiving = false;
        this.end(bytes);
        // uWS frees the chunk after this callback: nothing may read the body again (whenDone says so).
        this.handedInPlace = true;
        return;
      }
      const needed = this.received + bytes.byteLength;
      if (needed > this.rule.bytesMax) {
        this.fail(this.tooLarge());
      } else if (this.contentLength === null && !this.takeBudget(needed)) {
        this.fail(errors.batchBudgetFull());
      } else {
        let buffer = (this.buffer ??= bodyBuffer(this.contentLength ?? 0));
        if (needed > buffer.byteLength) buffer = this.buffer = grow(buffer, this.received, needed);
        // uWS neuters the chunk after this callback: copy now.
        buffer.set(bytes, this.received);
        this.received = needed;
      }
    }
    if (isLast) {
      this.receiving = false;
      if (this.failure === null) {
        const buffer = this.buffer ?? new Uint8Array(0);
        const length = this.received;
        this.end(length === buffer.byteLength ? buffer : buffer.subarray(0, length));
      }
    }
  }

  private tooLarge(): BrokerError {
    this.refusedForSize = true;
    return this.rule.oversizeStatus === 400 ? errors.bodyTooLargeAs400(this.rule.bytesMax) : errors.bodyTooLarge(this.rule.bytesMax);
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

/** Bodies up to this size share slabs, as Node's Buffer pool shares its pool, but as plain Uint8Arrays: handlers take
 *  many subarrays of a body, and Buffer's own subarray is slower. A view spans part of a slab only, so whatever
 *  crosses to another thread goes through util/owned_bytes.ts. */
const slabPieceBytesMax = 4 * 1024;
const slabBytes = 16 * 1024;
let slab: ArrayBuffer = unzeroedOwnBytes(slabBytes).buffer;
let slabUsed = 0;

/** Room for a body of `bytes` (not zeroed: it is written before it is read). */
function bodyBuffer(bytes: number): Uint8Array {
  // Its own empty buffer: a shared one, transferred once, would be detached for every later body.
  if (bytes === 0) return new Uint8Array(0);
  if (bytes > slabPieceBytesMax) return unzeroedOwnBytes(bytes);
  if (slabUsed + bytes > slabBytes) {
    slab = unzeroedOwnBytes(slabBytes).buffer;
    slabUsed = 0;
  }
  const piece = new Uint8Array(slab, slabUsed, bytes);
  // Eight-byte steps keep every piece aligned, as Node's pool does.
  slabUsed += (bytes + 7) & ~7;
  return piece;
}

function grow(buffer: Uint8Array, length: number, needed: number): Uint8Array {
  return grownOwnBytes(buffer, length, Math.max(needed, buffer.byteLength * 2, 16 * 1024));
}
