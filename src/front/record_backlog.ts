// Counts the records of ingress groups that are synced here but not yet reported durable by every partition owner,
// for a member's own report (spec §2 Cluster member, detail=true: messages in its ingress log not yet handed to
// owners). Front thread; the ingress log adds each synced group (and each replayed chunk at start) and drops them as
// markDurable reports pass their last seq.
export class RecordBacklog {
  /** Flat pairs (last seq, records) in seq order; entries before `head` are already gone. */
  private readonly pairs: number[] = [];
  private head = 0;
  private total = 0;

  /** Records whose group has not been reported durable yet. */
  get records(): number {
    return this.total;
  }

  add(lastSeq: number, records: number): void {
    if (records === 0) return;
    this.pairs.push(lastSeq, records);
    this.total += records;
  }

  /** Drops every group whose last seq is at or below seqUpTo. */
  durableUpTo(seqUpTo: number): void {
    const pairs = this.pairs;
    while (this.head < pairs.length && pairs[this.head]! <= seqUpTo) {
      this.total -= pairs[this.head + 1]!;
      this.head += 2;
    }
    // Compacted once the dead prefix is the larger part, so the array never holds more than twice what is live.
    if (this.head === pairs.length) {
      pairs.length = 0;
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > pairs.length) {
      pairs.splice(0, this.head);
      this.head = 0;
    }
  }
}
