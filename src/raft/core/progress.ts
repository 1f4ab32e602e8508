// The leader's view of one member's log (etcd's Progress): match (known replicated), next (to send), and the flow
// control state. probe: one app at a time until the member answers (used after an election or a rejection);
// replicate: send optimistically, next moves ahead of match; snapshot: a snapshot is on its way, send nothing.
// Pure; owned by the leader's RaftNode, rebuilt at each election and each conf change.
import type { ProgressStatus } from './types.js';

export class Progress {
  match = 0;
  next: number;
  state: ProgressStatus['state'] = 'probe';
  /** probe state: an app is out and unanswered. Cleared by a response or a heartbeat response. */
  probeSent = false;
  /** snapshot state: the snapshot index sent. */
  pendingSnapshot = 0;
  /** Heard from since the last check-quorum round. A new member starts active so it cannot trip check-quorum. */
  recentActive = true;

  constructor(next: number) {
    this.next = next;
  }

  becomeProbe(): void {
    this.state = 'probe';
    this.next = this.match + 1;
    this.probeSent = false;
    this.pendingSnapshot = 0;
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = this.match + 1;
    this.probeSent = false;
    this.pendingSnapshot = 0;
  }

  becomeSnapshot(index: number): void {
    this.state = 'snapshot';
    this.pendingSnapshot = index;
    this.probeSent = false;
  }

  /** An accepted app up to index; returns whether match moved. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      this.probeSent = false;
      updated = true;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /**
   * A rejection of an app at `rejected`, with the index the member's log may match up to; returns false when the
   * rejection is stale (answers an app older than the current probe), true when next moved back (etcd).
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.state === 'snapshot' || this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case 'probe':
        return this.probeSent;
      case 'replicate':
        return false;
      case 'snapshot':
        return true;
    }
  }

  status(): ProgressStatus {
    return { match: this.match, next: this.next, recentActive: this.recentActive, state: this.state };
  }
}
