// The front thread's read-only copy of the metadata and its way to propose changes. It applies every
// committed entry itself with the same pure applyCommand as the metadata thread, in index order, so the
// answer to a proposal is the result of applying it here. Created at boot; lives as long as the node.
import type { Worker } from 'node:worker_threads';
import { errors } from '../errors.js';
import { applyCommand, emptyMetadataState, type ApplyResult, type MetadataCommand, type MetadataState, type TopicRecord } from '../raft/metadata/state.js';
import { assertNever, type FromMetadata, type ToMetadata } from '../protocol/thread_messages.js';

export type AppliedListener = (command: MetadataCommand, result: ApplyResult) => void;

export class MetadataReplica {
  state: MetadataState = emptyMetadataState();
  appliedIndex = 0;
  private snapshotReceived = false;
  private readonly readyWaiters: (() => void)[] = [];
  private nextReqId = 1;
  private readonly proposals = new Map<number, { resolve: (r: ApplyResult) => void; reject: (e: Error) => void }>();
  /** reqId of the proposal each pending entry index answers. */
  private readonly proposalByIndex = new Map<number, number>();
  private readonly listeners: AppliedListener[] = [];

  constructor(private readonly thread: Worker) {
    thread.on('message', (message: FromMetadata) => this.onMessage(message));
  }

  get ready(): boolean {
    return this.snapshotReceived;
  }

  whenReady(): Promise<void> {
    if (this.snapshotReceived) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /** The topic a path names (NOTES 6: exact name), or 404. */
  topic(name: string): TopicRecord {
    const topic = this.state.topics.get(name);
    if (topic === undefined) throw errors.topicNotFound(name);
    return topic;
  }

  onApplied(listener: AppliedListener): void {
    this.listeners.push(listener);
  }

  /** Commits a command through the metadata log; resolves with the result of applying it. */
  propose(command: MetadataCommand): Promise<ApplyResult> {
    const reqId = this.nextReqId++;
    const message: ToMetadata = { kind: 'propose', reqId, command };
    return new Promise((resolve, reject) => {
      this.proposals.set(reqId, { resolve, reject });
      this.thread.postMessage(message);
    });
  }

  private onMessage(message: FromMetadata): void {
    switch (message.kind) {
      case 'snapshot':
        this.state = message.state;
        this.appliedIndex = message.index;
        this.snapshotReceived = true;
        for (const wake of this.readyWaiters.splice(0)) wake();
        return;
      case 'committed':
        for (const { reqId, index } of message.proposals ?? []) this.proposalByIndex.set(index, reqId);
        for (const entry of message.entries) {
          if (entry.index <= this.appliedIndex) continue;
          if (entry.index !== this.appliedIndex + 1) throw new Error(`metadata gap: applied ${this.appliedIndex}, got ${entry.index}`);
          const result = applyCommand(this.state, entry.command);
          this.appliedIndex = entry.index;
          for (const listener of this.listeners) listener(entry.command, result);
          const reqId = this.proposalByIndex.get(entry.index);
          if (reqId !== undefined) {
            this.proposalByIndex.delete(entry.index);
            this.proposals.get(reqId)?.resolve(result);
            this.proposals.delete(reqId);
          }
        }
        return;
      case 'proposeFailed': {
        const pending = this.proposals.get(message.reqId);
        this.proposals.delete(message.reqId);
        pending?.reject(errors.metadataUnavailable(message.error));
        return;
      }
      case 'closed':
        return;
      default:
        assertNever(message);
    }
  }
}
