// The front thread's read-only copy of the metadata and its way to propose changes. It applies every
// committed entry itself with the same pure applyCommand as the metadata thread, in index order, so the
// answer to a proposal is the result of applying it here. Created at boot; lives as long as the node.
import type { ForgetReply } from '../protocol/peer_messages.js';
import type { Worker } from 'node:worker_threads';
import { errors, refusalError } from '../errors.js';
import type { MetadataCommand, MetadataState, TopicRecord, UserRecord } from '../protocol/metadata_types.js';
import { currentSchemaOf } from '../metadata/schemas.js';
import { applyCommand, emptyMetadataState, type ApplyResult } from '../metadata/state.js';
import { assertNever, type ClusterStatus, type CommittedEntry, type FromMetadata, type MemberView, type ToMetadata } from '../protocol/thread_messages.js';

/** How many applied results are kept for late confirmations (far more than proposals in flight). */
const recentResultsKept = 4096;

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
  /** Replaced, never changed in place, when one is removed: a removal during a call to every listener skips none. */
  private listeners: AppliedListener[] = [];
  private readonly indexListeners: (() => void)[] = [];
  /** Results of recently applied entries, for a proposal the metadata thread confirms after the front applied it
   *  (a follower hears back from the leader after the entry reached it). */
  private readonly recentResults = new Map<number, ApplyResult>();
  private readonly memberRequests = new Map<number, (members: MemberView[]) => void>();
  private readonly forgetRequests = new Map<number, (answer: ForgetReply) => void>();
  private readonly catchUpRequests = new Map<number, (ok: boolean) => void>();
  /** The latest leader and readiness view of the metadata thread (spec §4 /readyz, members). */
  clusterStatus: ClusterStatus | null = null;

  constructor(private readonly thread: Worker) {
    thread.on('message', (message: FromMetadata) => this.onMessage(message));
  }

  private readonly statusWaiters: (() => void)[] = [];

  /** Resolves once the metadata thread reports this replica caught up with the leader (spec §4 /readyz). */
  async whenCaughtUp(): Promise<void> {
    while (this.clusterStatus?.caughtUp !== true) await new Promise<void>((resolve) => this.statusWaiters.push(resolve));
  }

  /** Resolves once the member record of node id is applied here. */
  whenMember(id: number): Promise<void> {
    if (this.state.members.has(id)) return Promise.resolve();
    return new Promise((resolve) => {
      const listener: AppliedListener = (command) => {
        if (command.type !== 'member.add' || command.member.id !== id) return;
        this.listeners = this.listeners.filter((l) => l !== listener);
        resolve();
      };
      this.listeners.push(listener);
    });
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

  /** The topic's current schema version and its canonical document text (version 0 and null without a schema). */
  schemaOf(topic: TopicRecord): { readonly version: number; readonly document: string | null } {
    return currentSchemaOf(this.state, topic.id);
  }

  onApplied(listener: AppliedListener): void {
    this.listeners.push(listener);
  }

  /** Called whenever appliedIndex moved (Raft's own entries included, which onApplied listeners do not hear of). */
  onAppliedIndex(listener: () => void): void {
    this.indexListeners.push(listener);
  }

  /** Commits a command through the metadata log; resolves with the result of applying it. caller: the request's
   *  user (undefined with security off, and for the node's own proposals), which the leader checks again. */
  propose(command: MetadataCommand, caller?: UserRecord): Promise<ApplyResult> {
    const reqId = this.nextReqId++;
    const message: ToMetadata = caller === undefined
      ? { kind: 'propose', reqId, command }
      : { kind: 'propose', reqId, command, caller: { username: caller.username, credentialVersion: caller.credentialVersion } };
    return new Promise((resolve, reject) => {
      this.proposals.set(reqId, { resolve, reject });
      this.thread.postMessage(message);
    });
  }

  /** GET /v1/cluster/members, answered from this node's metadata thread. */
  members(): Promise<MemberView[]> {
    const reqId = this.nextReqId++;
    return new Promise((resolve) => {
      this.memberRequests.set(reqId, resolve);
      this.thread.postMessage({ kind: 'members', reqId } satisfies ToMetadata);
    });
  }

  /** The topic a change names (spec §5): one this replica lacks is looked up again after catching up with the leader,
   *  404 if still missing, 503 (Retry-After: 2) if the leader could not be reached to confirm. */
  async topicForChange(name: string): Promise<TopicRecord> {
    const known = this.state.topics.get(name);
    if (known !== undefined) return known;
    const caughtUp = await this.catchUp();
    const found = this.state.topics.get(name);
    if (found !== undefined) return found;
    if (!caughtUp) throw errors.topicUnconfirmed(name);
    throw errors.topicNotFound(name);
  }

  /** Asks the metadata thread to hand its leadership away (a decommissioned leader, issue 41). */
  transferLeadership(): void {
    this.thread.postMessage({ kind: 'transferLeadership' } satisfies ToMetadata);
  }

  /** Resolves once this replica applied what the leader had committed when asked; false when the leader could not
   *  be reached to confirm. */
  catchUp(): Promise<boolean> {
    const reqId = this.nextReqId++;
    return new Promise<boolean>((resolve) => {
      this.catchUpRequests.set(reqId, resolve);
      this.thread.postMessage({ kind: 'catchUp', reqId } satisfies ToMetadata);
    });
  }

  /** POST /v1/cluster/members/{id}/forget; the metadata thread runs it on the leader. */
  forget(id: number): Promise<ForgetReply> {
    const reqId = this.nextReqId++;
    return new Promise((resolve) => {
      this.forgetRequests.set(reqId, resolve);
      this.thread.postMessage({ kind: 'forget', reqId, id } satisfies ToMetadata);
    });
  }

  private onMessage(message: FromMetadata): void {
    switch (message.kind) {
      case 'snapshot':
        this.onSnapshot(message.state, message.index);
        return;
      case 'committed':
        this.onCommitted(message.entries, message.proposals);
        return;
      case 'proposalApplied': {
        const pending = this.proposals.get(message.reqId);
        this.proposals.delete(message.reqId);
        const result = this.recentResults.get(message.index);
        if (result !== undefined) pending?.resolve(result);
        else pending?.reject(errors.committedUnconfirmed());
        return;
      }
      case 'proposeFailed': {
        const pending = this.proposals.get(message.reqId);
        this.proposals.delete(message.reqId);
        pending?.reject(refusalError(message.refusal));
        return;
      }
      case 'membersResult':
        this.memberRequests.get(message.reqId)?.(message.members);
        this.memberRequests.delete(message.reqId);
        return;
      case 'forgetResult':
        {
          const { kind: _kind, reqId: _reqId, ...answer } = message;
          this.forgetRequests.get(message.reqId)?.(answer);
        }
        this.forgetRequests.delete(message.reqId);
        return;
      case 'caughtUpResult':
        this.catchUpRequests.get(message.reqId)?.(message.ok);
        this.catchUpRequests.delete(message.reqId);
        return;
      case 'clusterStatus':
        this.clusterStatus = message.status;
        for (const wake of this.statusWaiters.splice(0)) wake();
        return;
      case 'closed':
        return;
      default:
        assertNever(message);
    }
  }

  private onSnapshot(state: MetadataState, index: number): void {
    const previous = this.snapshotReceived ? this.state : null;
    this.state = state;
    this.appliedIndex = index;
    this.snapshotReceived = true;
    // A later snapshot (installed from the Raft leader) may drop topics: listeners hear of them as deletes,
    // so long polls, metrics and round-robin state on them end as if the delete entries had been applied here.
    for (const topic of previous?.topics.values() ?? []) {
      if (this.state.topics.get(topic.name)?.id === topic.id) continue;
      const command: MetadataCommand = { type: 'topic.delete', name: topic.name, id: topic.id };
      for (const listener of this.listeners) listener(command, { ok: true, deletedTopicId: topic.id });
    }
    for (const at of [...this.proposalByIndex.keys()]) if (at <= index) this.proposalByIndex.delete(at);
    for (const wake of this.readyWaiters.splice(0)) wake();
    for (const listener of this.indexListeners) listener();
  }

  /** Applies committed entries in index order; a proposal's answer is the result of applying its entry here. */
  private onCommitted(entries: CommittedEntry[], proposals: { reqId: number; index: number }[] | undefined): void {
    for (const { reqId, index } of proposals ?? []) this.proposalByIndex.set(index, reqId);
    for (const entry of entries) {
      if (entry.index <= this.appliedIndex) continue;
      if (entry.index !== this.appliedIndex + 1) throw new Error(`metadata gap: applied ${this.appliedIndex}, got ${entry.index}`);
      this.appliedIndex = entry.index;
      if (entry.command === null) continue;
      const result = applyCommand(this.state, entry.command);
      this.recentResults.set(entry.index, result);
      this.recentResults.delete(entry.index - recentResultsKept);
      for (const listener of this.listeners) listener(entry.command, result);
      const reqId = this.proposalByIndex.get(entry.index);
      if (reqId !== undefined) {
        this.proposalByIndex.delete(entry.index);
        this.proposals.get(reqId)?.resolve(result);
        this.proposals.delete(reqId);
      }
    }
    for (const listener of this.indexListeners) listener();
  }
}
