// The batch body budget (http.max_batch_body_bytes_in_flight, spec §8) as one counter in shared memory: the front
// thread takes a body's bytes as sent (front/body.ts), the batch pool threads its bytes as decoded (batch_task.ts),
// and both count against the one budget. main.ts makes it; a pool task reaches it through its DecodeShare.

/** Bytes shared by every batch produce body over 1 MiB that is being read, decoded or worked on. Any thread may take
 *  and give: the counter is a shared BigInt64 (the setting goes up to 64 GiB), changed only by compare-and-swap. */
export class ByteBudget {
  /** [0] bytes taken, [1] bytes at most. */
  private readonly words: BigInt64Array;

  constructor(bytesMaxOrShared: number | SharedArrayBuffer) {
    if (typeof bytesMaxOrShared === 'number') {
      this.words = new BigInt64Array(new SharedArrayBuffer(2 * BigInt64Array.BYTES_PER_ELEMENT));
      this.words[1] = BigInt(bytesMaxOrShared);
    } else {
      this.words = new BigInt64Array(bytesMaxOrShared);
    }
  }

  /** The memory another thread attaches to with `new ByteBudget(shared)`. */
  get shared(): SharedArrayBuffer {
    return this.words.buffer as SharedArrayBuffer;
  }

  tryTake(bytes: number): boolean {
    const more = BigInt(bytes);
    const bytesMax = this.words[1]!;
    // Retried only when another thread changed the counter in between: bounded by the takes and gives in flight.
    for (;;) {
      const used = Atomics.load(this.words, 0);
      if (used + more > bytesMax) return false;
      if (Atomics.compareExchange(this.words, 0, used, used + more) === used) return true;
    }
  }

  give(bytes: number): void {
    const before = Atomics.sub(this.words, 0, BigInt(bytes));
    if (before < BigInt(bytes)) throw new Error('byte budget: gave back more than taken');
  }

  /** Bytes taken now (tests and metrics). */
  get usedBytes(): number {
    return Number(Atomics.load(this.words, 0));
  }
}

/** What a pool task needs to count a compressed body's decoded bytes against the budget (BatchTask.budget). Plain
 *  data over shared memory, so it crosses to the pool as it is. */
export interface DecodeShare {
  budget: SharedArrayBuffer;
  /** A body up to this size, as sent and as decoded, never touches the budget (spec §8: 1 MiB). */
  freeBytesMax: number;
  /** What the front took already for the body as sent: decoded bytes up to this are covered by it, so a body's share
   *  is the larger of its two sizes, and a body within the 16 MiB cap always fits a budget of at least 16 MiB. */
  coveredBytes: number;
  /** One Float64 the pool thread adds its takes to; the front gives them back once the task has settled, whether it
   *  returned, threw or its thread died (front/body.ts holdDecodeShare). */
  taken: SharedArrayBuffer;
}

export function decodeShare(budget: ByteBudget, freeBytesMax: number, coveredBytes: number): DecodeShare {
  return { budget: budget.shared, freeBytesMax, coveredBytes, taken: new SharedArrayBuffer(Float64Array.BYTES_PER_ELEMENT) };
}

/** The bytes a pool task took for its share, read once the task has settled. */
export function decodeShareTaken(share: DecodeShare): number {
  return new Float64Array(share.taken)[0]!;
}

/** The budget could not cover the next decoded bytes: 503 batch body budget full. */
export class BudgetFull extends Error {}

/** Pool side of a DecodeShare: takes from the budget as the decoded size grows. */
export class DecodeBudget {
  private readonly budget: ByteBudget;
  private readonly taken: Float64Array;
  private coveredBytes: number;

  constructor(private readonly share: DecodeShare) {
    this.budget = new ByteBudget(share.budget);
    this.taken = new Float64Array(share.taken);
    this.coveredBytes = share.coveredBytes;
  }

  /** Called with the decoded size so far, before those bytes are kept; throws BudgetFull when they do not fit. */
  cover(decodedBytes: number): void {
    if (decodedBytes <= this.share.freeBytesMax || decodedBytes <= this.coveredBytes) return;
    const more = decodedBytes - this.coveredBytes;
    if (!this.budget.tryTake(more)) throw new BudgetFull();
    this.taken[0]! += more;
    this.coveredBytes = decodedBytes;
  }
}
