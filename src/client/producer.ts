// A batching producer over POST /v1/topics/{topic}/produce/batch: send() queues a message and resolves once the
// batch holding it was answered 202. Runs in the caller's process (svc-broker/client); the svc CLI uses it for
// produce from stdin.
//
// Contract:
// - A batch goes out when it holds maxBatchMessages messages (at most 1000), when adding a message would take its
//   body over maxBatchBytes, when lingerMs passed since its first message, or on flush() / close().
// - Batches are sent one at a time, in order, so messages keep the order of send() calls.
// - A batch answered 202 is stored, all of it: never sent again. A batch answered 429, or 503 with Retry-After, was
//   not applied (spec §4, §7): it is sent again after Retry-After seconds, up to maxRetries times.
// - A batch whose answer was lost (SvcNoAnswerError: reset, timeout) is NOT sent again: the node may have stored it,
//   and a resend could store it twice. Its send() promises reject with that error; the caller decides (for example
//   by replaying the partitions to see what was stored).
// - Any other answer rejects every send() of the batch with its SvcError; nothing of that batch was stored.
import { SvcError, type SvcClient } from './api.js';
import type { BatchMessage } from './types.js';

export interface ProducerOptions {
  /** How long a batch waits for more messages after its first, in ms; default 5. */
  lingerMs?: number;
  /** Most messages in one batch, 1 to 1000; default 1000. */
  maxBatchMessages?: number;
  /** Most bytes of one batch's JSON body; default 1 MiB (a larger body takes a share of the node's batch budget). */
  maxBatchBytes?: number;
  /** Resends of a batch answered 429 or 503 with Retry-After; default 5. */
  maxRetries?: number;
}

interface Pending {
  message: BatchMessage;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** The JSON body's fixed part: {"messages":[]} plus a comma per message. */
const bodyOverheadBytes = 16;

export class Producer {
  private readonly lingerMs: number;
  private readonly maxMessages: number;
  private readonly maxBytes: number;
  private readonly maxRetries: number;
  private open: Pending[] = [];
  private openBytes = bodyOverheadBytes;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** The chain of batches in flight: each starts after the one before it was answered. */
  private sending: Promise<void> = Promise.resolve();
  private closed = false;
  /** Requests sent, retries included (what a test counts). */
  requestsSent = 0;
  /** Batches sent again after a 429 or 503 with Retry-After. */
  retries = 0;

  constructor(private readonly client: SvcClient, readonly topic: string, options: ProducerOptions = {}) {
    this.lingerMs = options.lingerMs ?? 5;
    this.maxMessages = Math.min(1000, Math.max(1, options.maxBatchMessages ?? 1000));
    this.maxBytes = options.maxBatchBytes ?? 1024 * 1024;
    this.maxRetries = options.maxRetries ?? 5;
  }

  /** Queues one message; resolves when its batch is stored, rejects with the batch's error. */
  send(message: BatchMessage): Promise<void> {
    if (this.closed) return Promise.reject(new Error('producer closed'));
    const bytes = Buffer.byteLength(JSON.stringify(message)) + 1;
    if (this.open.length > 0 && this.openBytes + bytes > this.maxBytes) this.cut();
    return new Promise<void>((resolve, reject) => {
      this.open.push({ message, resolve, reject });
      this.openBytes += bytes;
      if (this.open.length >= this.maxMessages || this.openBytes >= this.maxBytes) this.cut();
      else this.timer ??= setTimeout(() => this.cut(), this.lingerMs);
    });
  }

  /** Sends what is queued and resolves once every batch sent so far was answered. */
  async flush(): Promise<void> {
    this.cut();
    await this.sending;
  }

  /** flush(), then refuses further sends. */
  async close(): Promise<void> {
    await this.flush();
    this.closed = true;
  }

  private cut(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.open.length === 0) return;
    const batch = this.open;
    this.open = [];
    this.openBytes = bodyOverheadBytes;
    this.sending = this.sending.then(() => this.deliver(batch));
  }

  private async deliver(batch: Pending[]): Promise<void> {
    const messages = batch.map((p) => p.message);
    for (let attempt = 0; ; attempt++) {
      try {
        this.requestsSent += 1;
        await this.client.produceBatch(this.topic, messages);
        for (const p of batch) p.resolve();
        return;
      } catch (error) {
        if (error instanceof SvcError && error.retryable && attempt < this.maxRetries) {
          this.retries += 1;
          await new Promise((resolve) => setTimeout(resolve, error.retryDelayMs(attempt)));
          continue;
        }
        for (const p of batch) p.reject(error);
        return;
      }
    }
  }
}
