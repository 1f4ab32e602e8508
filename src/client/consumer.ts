// A consumer loop over GET .../consume and POST .../ack: leases messages, runs a handler on each with bounded
// concurrency, keeps each lease alive while its handler works, and settles it. Runs in the caller's process
// (svc-broker/client); the svc CLI's consume --follow uses the client's plain methods instead.
//
// Contract (at-least-once; handlers must be idempotent):
// - A message is handed to the handler at least once. It can come again: after a handler error (nacked), after a
//   lease the loop could not keep (an extend answered 410, or no answer for longer than the lease), after an ack that
//   got no answer, and after stop() aborts a long poll the node had already answered with a lease. The broker also
//   gives no ordering across consumes (spec §4), so a handler must not rely on order either.
// - At most `concurrency` handlers run at once: a consume asks for as many messages as there are free slots (max).
// - While a handler runs, its lease is extended (ack?extend=true) every half visibility timeout, so a slow handler
//   keeps its message; the visibility timeout is the option's, or the topic's visibility_timeout_ms.
// - A handler that resolves: its handle is acked, in batches of up to ackBatchSize after at most ackLingerMs.
//   A handler that throws: its handle is nacked at once (the message is delivered again, to this loop or another).
// - A consume answered 429, or 503, waits Retry-After seconds (or backs off, doubling up to maxBackoffMs, without
//   one) before the next consume; other failures are reported to onError and back off the same way.
// - stop(): no new consume starts, the long poll in flight is aborted, handlers in flight run to their end, then
//   their acks and nacks are sent; stop() resolves after that.
import { SvcError, type SvcClient } from './api.js';
import type { Message } from './types.js';

export type MessageHandler = (message: Message) => Promise<void> | void;

export interface ConsumerOptions {
  /** Handlers running at once; default 4. */
  concurrency?: number;
  /** Long-poll wait of each consume in ms; default 10000. */
  waitMs?: number;
  /** Lease length in ms; default the topic's visibility_timeout_ms (read once at start). */
  visibilityTimeoutMs?: number;
  /** Consume from this partition only. */
  partition?: number;
  /** Handles per batch ack, 1 to 100; default 100. */
  ackBatchSize?: number;
  /** Longest wait before a partial ack batch goes out, in ms; default 20. */
  ackLingerMs?: number;
  maxBackoffMs?: number;
  /** Told of handler errors, lost leases, failed acks and consume failures; the loop goes on. */
  onError?: (error: unknown, message?: Message) => void;
}

export interface ConsumerStats {
  handled: number;
  failed: number;
  extended: number;
  acked: number;
  nacked: number;
  /** Consumes answered 429 or 503 (the loop waited before the next). */
  throttled: number;
}

export class Consumer {
  readonly stats: ConsumerStats = { handled: 0, failed: 0, extended: 0, acked: 0, nacked: 0, throttled: 0 };
  private readonly concurrency: number;
  private readonly waitMs: number;
  private readonly ackBatchSize: number;
  private readonly ackLingerMs: number;
  private readonly maxBackoffMs: number;
  private visibilityMs: number;
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private readonly abort = new AbortController();
  private wakeStop: () => void = () => {};
  private readonly stopped = new Promise<void>((resolve) => (this.wakeStop = resolve));
  private readonly inFlight = new Set<Promise<void>>();
  private ackBuffer: string[] = [];
  private ackTimer: ReturnType<typeof setTimeout> | null = null;
  private readonly settling = new Set<Promise<void>>();

  constructor(private readonly client: SvcClient, readonly topic: string, private readonly handler: MessageHandler,
    private readonly options: ConsumerOptions = {}) {
    this.concurrency = Math.max(1, options.concurrency ?? 4);
    this.waitMs = options.waitMs ?? 10_000;
    this.ackBatchSize = Math.min(100, Math.max(1, options.ackBatchSize ?? 100));
    this.ackLingerMs = options.ackLingerMs ?? 20;
    this.maxBackoffMs = options.maxBackoffMs ?? 10_000;
    this.visibilityMs = options.visibilityTimeoutMs ?? 0;
  }

  /** Starts the loop; resolves once it runs (after reading the topic's visibility timeout when not given). */
  async start(): Promise<void> {
    if (this.running) return;
    if (this.visibilityMs <= 0) this.visibilityMs = (await this.client.getTopic(this.topic)).visibility_timeout_ms;
    this.running = true;
    this.loopDone = this.loop();
  }

  /** Stops taking messages, waits for the handlers in flight, then sends their acks and nacks. */
  async stop(): Promise<void> {
    this.running = false;
    this.wakeStop();
    this.abort.abort();
    await this.loopDone;
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    this.flushAcks();
    while (this.settling.size > 0) await Promise.all([...this.settling]);
  }

  private async loop(): Promise<void> {
    let backoffMs = 0;
    while (this.running) {
      while (this.running && this.inFlight.size >= this.concurrency) await Promise.race([...this.inFlight, this.stopped]);
      if (!this.running) break;
      let messages: Message[];
      try {
        messages = await this.client.consumeMany(this.topic, this.concurrency - this.inFlight.size,
          { waitMs: this.waitMs, partition: this.options.partition, signal: this.abort.signal });
        backoffMs = 0;
      } catch (error) {
        if (!this.running) break;
        backoffMs = await this.backOff(error, backoffMs);
        continue;
      }
      for (const message of messages) this.run(message);
    }
  }

  /** Waits before the next consume after a failure; returns the next back-off step. */
  private async backOff(error: unknown, previousMs: number): Promise<number> {
    const next = Math.min(this.maxBackoffMs, Math.max(100, previousMs * 2));
    if (error instanceof SvcError && (error.status === 429 || error.status === 503)) this.stats.throttled += 1;
    if (error instanceof SvcError && error.retryable) {
      await this.sleep(error.retryDelayMs(0));
      return 0;
    }
    if (!(error instanceof SvcError && (error.status === 429 || error.status === 503))) this.options.onError?.(error);
    await this.sleep(next);
    return next;
  }

  private sleep(ms: number): Promise<void> {
    return Promise.race([new Promise<void>((resolve) => setTimeout(resolve, ms).unref()), this.stopped]);
  }

  private run(message: Message): void {
    const handle = message.receipt_handle!;
    const lease = { lost: false, timer: null as ReturnType<typeof setTimeout> | null };
    const keepAlive = (delayMs: number): void => {
      lease.timer = setTimeout(() => {
        this.client.extend(this.topic, handle).then(() => {
          this.stats.extended += 1;
          if (lease.timer !== null) keepAlive(this.visibilityMs / 2);
        }, (error: unknown) => {
          // The handler finished meanwhile: its ack or nack decides, an extend racing it says nothing.
          if (lease.timer === null) return;
          // 410: the lease is gone and the message will be (or was) delivered again; no use acking it.
          if (error instanceof SvcError && error.status === 410) lease.lost = true;
          this.options.onError?.(error, message);
          // Any other failure: try again well before the lease runs out.
          if (!lease.lost) keepAlive(Math.max(50, this.visibilityMs / 8));
        });
      }, delayMs);
    };
    keepAlive(this.visibilityMs / 2);
    const task = (async () => {
      let ok = true;
      try {
        await this.handler(message);
        this.stats.handled += 1;
      } catch (error) {
        ok = false;
        this.stats.failed += 1;
        this.options.onError?.(error, message);
      }
      if (lease.timer !== null) clearTimeout(lease.timer);
      lease.timer = null;
      if (lease.lost) return;
      if (ok) this.queueAck(handle);
      else this.track(this.client.nack(this.topic, handle).then(() => void (this.stats.nacked += 1), (e: unknown) => this.options.onError?.(e, message)));
    })();
    this.inFlight.add(task);
    void task.finally(() => this.inFlight.delete(task));
  }

  private queueAck(handle: string): void {
    this.ackBuffer.push(handle);
    if (this.ackBuffer.length >= this.ackBatchSize) this.flushAcks();
    else this.ackTimer ??= setTimeout(() => this.flushAcks(), this.ackLingerMs);
  }

  private flushAcks(): void {
    if (this.ackTimer !== null) clearTimeout(this.ackTimer);
    this.ackTimer = null;
    if (this.ackBuffer.length === 0) return;
    const handles = this.ackBuffer;
    this.ackBuffer = [];
    this.track(this.sendAcks(handles));
  }

  /** One batch ack; a 429 or 503 with Retry-After applied nothing, so it is sent again (a few times). */
  private async sendAcks(handles: string[]): Promise<void> {
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        const results = await this.client.ackBatch(this.topic, handles);
        results.forEach((r) => {
          if (r.status === 204) this.stats.acked += 1;
          else this.options.onError?.(new SvcError(r.status, r.error ?? 'ack failed', null, null));
        });
        return;
      } catch (error) {
        if (!(error instanceof SvcError && error.retryable) || attempt === 3) return this.options.onError?.(error);
        await new Promise((resolve) => setTimeout(resolve, error.retryDelayMs(attempt)));
      }
    }
  }

  private track(work: Promise<void>): void {
    this.settling.add(work);
    void work.finally(() => this.settling.delete(work));
  }
}
