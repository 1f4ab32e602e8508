// Requests for a partition this worker is adopting (a move's flip gave it here and its copy is being renamed and
// opened, workers/move_destination.ts) wait until it is open: answered before, a replay would find no log and say
// past end, a take would find nothing, for records the partition holds. Partition worker thread; the shell holds
// what arrives and hands it back once an adoption ends.
import { moveKey } from '../src/protocol/metadata_types.js';
import { handleSeparator, receiptHandlePartition } from '../src/protocol/receipt_handle.js';
import type { ToWorker } from '../src/protocol/thread_messages.js';

type Waiting = Extract<ToWorker, { kind: 'read' | 'stats' | 'take' | 'settle' | 'release' }>;

/** Adoption lasts a rename, a directory sync and an open: the requests of those milliseconds are few. */
const heldMax = 10_000;

export class AdoptWaits {
  private held: Waiting[] = [];

  constructor(private readonly adoptingKeys: () => readonly string[]) {}

  /** Whether msg waits (it names a partition being adopted); the shell then routes it later. */
  holds(msg: ToWorker): boolean {
    if (msg.kind !== 'read' && msg.kind !== 'stats' && msg.kind !== 'take' && msg.kind !== 'settle' && msg.kind !== 'release') return false;
    const adopting = this.adoptingKeys();
    if (adopting.length === 0 || this.held.length >= heldMax) return false;
    const partitions = msg.kind === 'read' ? [msg.partition] : msg.kind === 'stats' || msg.kind === 'take' ? msg.partitions : handlePartitions(msg.handles);
    if (!partitions.some((p) => adopting.includes(moveKey(msg.topicId, p)))) return false;
    this.held.push(msg);
    return true;
  }

  /** What waited, to route again now (what still names an adopting partition waits again). */
  released(): Waiting[] {
    const held = this.held;
    this.held = [];
    return held;
  }
}

function handlePartitions(handles: string): number[] {
  return handles.split(handleSeparator).map(receiptHandlePartition);
}
