// A small synchronous cluster of simulated shells with an explicit message queue, for the scripted interaction
// tests and the unit tests: nothing moves unless a test says so (process a node's ready, deliver messages, tick).
// Partitions drop messages between groups at delivery time. Single-threaded, in memory.
import type { RaftConfig, RaftMessage, Ready } from '../../../src/raft/core/raft.js';
import { SimShell, initialStorage } from './shell.js';

export interface NodeOptions {
  electionTicks?: number;
  heartbeatTicks?: number;
  preVote?: boolean;
  checkQuorum?: boolean;
  maxEntriesPerAppend?: number;
}

export class Cluster {
  readonly shells = new Map<number, SimShell>();
  /** Messages sent and not yet delivered, in send order. */
  queue: RaftMessage[] = [];
  /** Node id -> partition group; nodes in different groups cannot talk. Empty: fully connected. */
  groups = new Map<number, number>();
  readonly options: Required<NodeOptions>;

  constructor(options: NodeOptions = {}) {
    this.options = {
      electionTicks: options.electionTicks ?? 10,
      heartbeatTicks: options.heartbeatTicks ?? 1,
      preVote: options.preVote ?? true,
      checkQuorum: options.checkQuorum ?? true,
      maxEntriesPerAppend: options.maxEntriesPerAppend ?? 64,
    };
  }

  /** Adds nodes ids with bootstrap storage for voters (or empty storage when voters is null). */
  add(ids: number[], voters: number[] | null): void {
    for (const id of ids) {
      const config = (): RaftConfig => ({ id, ...this.options, random: () => this.jitter(id) });
      this.shells.set(id, new SimShell(id, config, initialStorage(voters)));
    }
  }

  /** A fixed "random" draw per node, so node i's election timeout is always electionTicks + (i - 1) (for i <= 10
   *  and electionTicks 10): scripts know who times out first. */
  jitter(id: number): number {
    return ((id - 1) % 10) / 10;
  }

  /** The election timeout node id always draws. */
  electionTimeout(id: number): number {
    return this.options.electionTicks + Math.floor(this.jitter(id) * this.options.electionTicks);
  }

  shell(id: number): SimShell {
    const shell = this.shells.get(id);
    if (shell === undefined) throw new Error(`no node ${id}`);
    return shell;
  }

  ids(): number[] {
    return [...this.shells.keys()].sort((a, b) => a - b);
  }

  /** One ready of node id handled fully (persist, apply, send, advance); null when it had none. */
  processReady(id: number): Ready<string> | null {
    const shell = this.shell(id);
    if (!shell.up) return null;
    const node = shell.node();
    const ready = node.ready();
    if (ready === null) return null;
    shell.persist(ready);
    shell.apply(ready);
    this.queue.push(...ready.messages);
    node.advance(ready);
    return ready;
  }

  canTalk(a: number, b: number): boolean {
    return (this.groups.get(a) ?? -a) === (this.groups.get(b) ?? -b) || this.groups.size === 0;
  }

  /** Takes the queued messages to `to` (all when undefined); returns [delivered, dropped]. */
  deliver(to?: number, drop?: (m: RaftMessage) => boolean): [RaftMessage[], RaftMessage[]] {
    const taken = this.queue.filter((m) => to === undefined || m.to === to);
    this.queue = this.queue.filter((m) => !(to === undefined || m.to === to));
    const delivered: RaftMessage[] = [];
    const dropped: RaftMessage[] = [];
    for (const m of taken) {
      const shell = this.shells.get(m.to);
      if (shell === undefined || !shell.up || !this.canTalk(m.from, m.to) || (drop?.(m) ?? false)) {
        dropped.push(m);
        continue;
      }
      shell.node().step(m);
      delivered.push(m);
    }
    return [delivered, dropped];
  }

  /** Process readies and deliver messages until quiet (bounded). */
  stabilize(drop?: (m: RaftMessage) => boolean, maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      let busy = false;
      for (const id of this.ids()) while (this.processReady(id) !== null) busy = true;
      if (this.queue.length > 0) {
        busy = true;
        this.deliver(undefined, drop);
      }
      if (!busy) return;
    }
    throw new Error(`cluster did not stabilize within ${maxRounds} rounds`);
  }

  tick(id: number, times = 1): void {
    for (let i = 0; i < times; i++) this.shell(id).node().tick();
  }
}
