// The deterministic Raft simulation: 3 or 5 voters (plus one spare node that can join) driven through a simulated
// network (loss, delay, reordering, duplication, partitions), crashes and restarts from what the simulated shell
// persisted, asynchronous persistence (a ready may stay outstanding while messages arrive), proposals,
// compactions, membership changes (add learner, promote, remove voter incl. the leader, re-add) and leadership
// transfers. After every event it checks Raft's safety properties (paper Figure 3) against a global record; at the
// end it heals everything and requires a leader and a committed proposal within a bound of ticks (liveness).
// A seed decides the whole run. Used by test/sim/raft_sim.test.ts (short run) and scripts/raft_sim.ts (long run).
import type { LogEntry, RaftConfig, RaftMessage, Ready } from '../../../src/raft/core/raft.js';
import { Prng } from '../../helpers/prng.js';
import { fmtMessage } from './describe.js';
import { SimShell, entryKey, initialStorage } from './shell.js';


export interface SimOptions {
  seed: number;
  nodes: 3 | 5;
  /** Ticks of chaos before the liveness phase. */
  chaosTicks?: number;
  /** Ticks the healed cluster gets to elect a leader and commit a proposal everywhere. */
  livenessTicks?: number;
  trace?: (line: string) => void;
}

export interface SimResult {
  seed: number;
  ok: boolean;
  error?: string;
  /** Event number of the failure (or the total). */
  events: number;
  stats: { elections: number; commits: number; snapshotsSent: number; confChanges: number; transfers: number; crashes: number; livenessTicks: number };
}

export class SimViolation extends Error {
  override name = 'SimViolation';
}

function violation(message: string): never {
  throw new SimViolation(message);
}

interface InFlight {
  at: number;
  message: RaftMessage;
}

interface CommittedRecord {
  key: string;
  /** The lowest term of a node that saw this index committed: every leader of that term or later holds it. */
  term: number;
}

export class RaftSimulation {
  private readonly rng: Prng;
  private readonly options: Required<Omit<SimOptions, 'trace'>>;
  private readonly trace: ((line: string) => void) | null;
  private readonly shells = new Map<number, SimShell>();
  private readonly ids: number[];
  /** Ready handed out and not yet completed, with the tick it completes at. */
  private readonly outstanding = new Map<number, { ready: Ready<string>; at: number }>();
  private network: InFlight[] = [];
  private groups = new Map<number, number>();
  private now = 0;
  private events = 0;
  private commandSeq = 0;

  // Network chaos, chosen per seed.
  private loss: number;
  private duplication: number;
  private maxDelay: number;
  private asyncPersist: number;
  private crashInReady = 0.002;

  // Global record for the safety checks.
  private readonly leaderOfTerm = new Map<number, number>();
  private readonly entryAt = new Map<string, { key: string; prevTerm: number | undefined }>();
  private readonly committed: (CommittedRecord | undefined)[] = [];
  private readonly appliedAt: (string | undefined)[] = [];
  private readonly checkedVersion = new Map<number, string>();

  readonly stats: SimResult['stats'] = { elections: 0, commits: 0, snapshotsSent: 0, confChanges: 0, transfers: 0, crashes: 0, livenessTicks: 0 };

  constructor(options: SimOptions) {
    this.rng = new Prng(options.seed * 2654435761);
    this.options = { seed: options.seed, nodes: options.nodes, chaosTicks: options.chaosTicks ?? 400, livenessTicks: options.livenessTicks ?? 1500 };
    this.trace = options.trace ?? null;
    const rng = this.rng;
    this.loss = rng.pick([0, 0.02, 0.1, 0.25]);
    this.duplication = rng.pick([0, 0.02, 0.1]);
    this.maxDelay = rng.pick([0, 1, 3, 6]);
    this.asyncPersist = rng.pick([0, 0.3, 0.8]);
    const electionTicks = rng.pick([6, 10]);
    const heartbeatTicks = rng.pick([1, 2]);
    // Never both off: without pre-vote and without the leader lease, a removed server that missed its removal
    // keeps raising terms and can keep the cluster from ever electing a leader (thesis §4.2.3). Both are on by
    // default in the core.
    const [preVote, checkQuorum] = rng.pick([[true, true], [true, true], [true, true], [true, false], [false, true]] as const);
    const maxEntriesPerAppend = rng.pick([1, 3, 64]);
    const voters = Array.from({ length: options.nodes }, (_, i) => i + 1);
    const spare = options.nodes + 1;
    this.ids = [...voters, spare];
    this.log(`seed ${options.seed}: ${options.nodes} voters + spare ${spare}; loss ${this.loss} dup ${this.duplication} delay<=${this.maxDelay} asyncPersist ${this.asyncPersist} election ${electionTicks} heartbeat ${heartbeatTicks} preVote ${preVote} checkQuorum ${checkQuorum} maxEntries ${maxEntriesPerAppend}`);
    for (const id of this.ids) {
      const config = (): RaftConfig => ({ id, electionTicks, heartbeatTicks, preVote, checkQuorum, maxEntriesPerAppend, random: () => rng.next() });
      const shell = new SimShell(id, config, initialStorage(id === spare ? null : voters));
      shell.onApply = (node, index, key) => this.onApply(node, index, key);
      this.shells.set(id, shell);
    }
  }

  run(): SimResult {
    try {
      for (const id of this.ids) this.afterEvent(id);
      for (let t = 0; t < this.options.chaosTicks; t++) this.chaosTick();
      this.liveness();
      return { seed: this.options.seed, ok: true, events: this.events, stats: this.stats };
    } catch (error) {
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.log(`FAILED at event ${this.events}, tick ${this.now}: ${message}`);
      if (error instanceof Error && this.trace !== null && error.stack !== undefined) this.log(error.stack);
      return { seed: this.options.seed, ok: false, error: `tick ${this.now} event ${this.events}: ${message}`, events: this.events, stats: this.stats };
    }
  }

  private log(line: string): void {
    if (this.trace !== null) this.trace(`[${this.now}] ${line}`);
  }

  // ---- the workload --------------------------------------------------------------------------------------------

  private chaosTick(): void {
    const rng = this.rng;
    if (rng.chance(0.3)) this.proposeSomewhere();
    if (rng.chance(0.04)) this.compactSomewhere();
    if (rng.chance(0.01)) this.crashSomething();
    if (rng.chance(0.05)) this.restartSomething();
    if (rng.chance(0.01)) this.partition();
    if (rng.chance(0.015)) this.isolateLeader();
    if (rng.chance(0.005)) {
      const leaders = this.leaders();
      if (leaders.length > 0) this.crash(rng.pick(leaders));
    }
    if (rng.chance(0.02) && this.groups.size > 0) this.heal();
    if (rng.chance(0.03)) this.changeMembership();
    if (rng.chance(0.01)) this.transferSomewhere();
    this.advanceTime();
  }

  private upIds(): number[] {
    return this.ids.filter((id) => this.shells.get(id)?.up === true);
  }

  private leaders(): number[] {
    return this.upIds().filter((id) => this.shell(id).node().status().role === 'leader');
  }

  private shell(id: number): SimShell {
    const shell = this.shells.get(id);
    if (shell === undefined) throw new Error(`sim: no node ${id}`);
    return shell;
  }

  private proposeSomewhere(): { id: number; index: number; term: number; command: string } | null {
    const leaders = this.leaders();
    if (leaders.length === 0) return null;
    const id = this.rng.pick(leaders);
    const command = `c${++this.commandSeq}`;
    const result = this.shell(id).node().propose(command);
    this.log(`propose ${command} on ${id}: ${result === null ? 'refused' : `${result.index}@${result.term}`}`);
    this.afterEvent(id);
    return result === null ? null : { id, ...result, command };
  }

  private compactSomewhere(): void {
    const id = this.rng.pick(this.upIds().length > 0 ? this.upIds() : this.ids);
    const shell = this.shell(id);
    if (!shell.up) return;
    const status = shell.node().status();
    // The shell may compact at most at what it applied; an outstanding ready's snapshot is not applied yet.
    const applied = shell.applied.length;
    if (applied - status.snapshotIndex < 3 || this.outstanding.get(id)?.ready.snapshot !== undefined) return;
    const index = this.rng.int(status.snapshotIndex + 1, applied);
    shell.compact(index);
    this.log(`compact ${id} at ${index}`);
    this.afterEvent(id);
  }

  private crashSomething(): void {
    const up = this.upIds();
    if (up.length === 0) return;
    const id = this.rng.pick(up);
    this.crash(id);
  }

  private crash(id: number): void {
    this.shell(id).crash();
    this.outstanding.delete(id);
    this.stats.crashes += 1;
    this.log(`crash ${id}`);
  }

  private restartSomething(): void {
    const down = this.ids.filter((id) => !this.shell(id).up);
    if (down.length === 0) return;
    this.restart(this.rng.pick(down));
  }

  private restart(id: number): void {
    const shell = this.shell(id);
    shell.start();
    // The restarted state machine re-applies from its snapshot: those keys must match what was applied before.
    shell.applied.forEach((key, i) => this.onApply(id, i + 1, key));
    this.checkedVersion.delete(id);
    this.log(`restart ${id} (snapshot ${shell.storage.snapshot?.index ?? 0}, entries ${shell.storage.entries.length}, hs ${JSON.stringify(shell.storage.hardState)})`);
    this.afterEvent(id);
  }

  private partition(): void {
    this.groups = new Map();
    for (const id of this.ids) this.groups.set(id, this.rng.int(0, 1));
    this.log(`partition ${JSON.stringify([...this.groups])}`);
  }

  /** The leader keeps at most a minority with it: the rest elect a new leader while it lingers (Figure 8). */
  private isolateLeader(): void {
    const leaders = this.leaders();
    if (leaders.length === 0) return;
    const leader = this.rng.pick(leaders);
    this.groups = new Map();
    const companions = this.rng.int(0, Math.floor((this.options.nodes - 1) / 2));
    const others = this.ids.filter((id) => id !== leader);
    for (const id of others) this.groups.set(id, 1);
    this.groups.set(leader, 0);
    for (let i = 0; i < companions; i++) this.groups.set(this.rng.pick(others), 0);
    this.log(`isolate leader ${leader}: ${JSON.stringify([...this.groups])}`);
  }

  private heal(): void {
    this.groups = new Map();
    this.log('heal');
  }

  private changeMembership(): void {
    const leaders = this.leaders();
    if (leaders.length === 0) return;
    const id = this.rng.pick(leaders);
    const node = this.shell(id).node();
    const { voters, learners } = node.status().confState;
    const nonMembers = this.ids.filter((n) => !voters.includes(n) && !learners.includes(n));
    const options: { type: 'addVoter' | 'removeVoter' | 'addLearner'; node: number }[] = [];
    for (const n of nonMembers) options.push({ type: 'addLearner', node: n });
    for (const n of learners) options.push({ type: 'addVoter', node: n }, { type: 'removeVoter', node: n });
    if (voters.length > 2) for (const n of voters) options.push({ type: 'removeVoter', node: n });
    if (options.length === 0) return;
    const change = this.rng.pick(options);
    const result = node.proposeConfChange(change);
    if (!('refused' in result)) this.stats.confChanges += 1;
    this.log(`conf ${change.type}(${change.node}) on ${id}: ${'refused' in result ? `refused: ${result.refused}` : `${result.index}@${result.term}`}`);
    this.afterEvent(id);
  }

  private transferSomewhere(): void {
    const leaders = this.leaders();
    if (leaders.length === 0) return;
    const id = this.rng.pick(leaders);
    const node = this.shell(id).node();
    const to = this.rng.pick(node.status().confState.voters);
    const ok = node.transferLeadership(to);
    if (ok) this.stats.transfers += 1;
    this.log(`transfer ${id} -> ${to}: ${ok}`);
    this.afterEvent(id);
  }

  // ---- time, network and readies -------------------------------------------------------------------------------

  /** One tick: complete due readies, deliver due messages (in random order), tick every node. */
  private advanceTime(): void {
    this.now += 1;
    for (const [id, pending] of [...this.outstanding]) {
      if (pending.at > this.now) continue;
      this.completeReady(id);
      this.pumpReady(id);
    }
    const due = this.network.filter((m) => m.at <= this.now);
    this.network = this.network.filter((m) => m.at > this.now);
    for (let i = due.length - 1; i > 0; i--) {
      const j = this.rng.int(0, i);
      const a = due[i];
      const b = due[j];
      if (a === undefined || b === undefined) continue;
      due[i] = b;
      due[j] = a;
    }
    for (const { message } of due) this.deliver(message);
    for (const id of this.upIds()) {
      this.shell(id).node().tick();
      this.afterEvent(id);
    }
  }

  private deliver(m: RaftMessage): void {
    const shell = this.shells.get(m.to);
    if (shell === undefined || !shell.up) return;
    if (this.groups.size > 0 && this.groups.get(m.from) !== this.groups.get(m.to)) return;
    if (this.trace !== null) this.log(`deliver ${fmtMessage(m)}`);
    shell.node().step(m);
    this.afterEvent(m.to);
  }

  private send(messages: readonly RaftMessage[]): void {
    for (const m of messages) {
      if (m.type === 'snap') this.stats.snapshotsSent += 1;
      if (this.rng.chance(this.loss)) continue;
      this.network.push({ at: this.now + this.rng.int(0, this.maxDelay), message: m });
      if (this.rng.chance(this.duplication)) this.network.push({ at: this.now + this.rng.int(0, this.maxDelay + 2), message: m });
    }
  }

  /** Takes the node's next ready, completing it now or leaving it outstanding for a few ticks. */
  private pumpReady(id: number): void {
    for (let i = 0; i < 100; i++) {
      const shell = this.shell(id);
      if (!shell.up || this.outstanding.has(id)) return;
      const ready = shell.node().ready();
      if (ready === null) return;
      if (ready.softState?.role === 'leader') this.stats.elections += 1;
      this.outstanding.set(id, { ready, at: this.now + (this.rng.chance(this.asyncPersist) ? this.rng.int(1, 3) : 0) });
      if ((this.outstanding.get(id)?.at ?? 0) > this.now) return;
      this.completeReady(id);
    }
    violation(`node ${id} produced 100 readies in one event`);
  }

  /** The shell's work for the outstanding ready: persist, apply, send, advance. May crash in between. */
  private completeReady(id: number): void {
    const pending = this.outstanding.get(id);
    if (pending === undefined) return;
    this.outstanding.delete(id);
    const shell = this.shell(id);
    const { ready } = pending;
    if (this.rng.chance(this.crashInReady)) {
      this.log(`crash ${id} before persisting a ready`);
      this.crash(id);
      return;
    }
    shell.persist(ready);
    if (this.rng.chance(this.crashInReady)) {
      this.log(`crash ${id} after persisting a ready, before sending`);
      this.crash(id);
      return;
    }
    if (this.trace !== null) this.log(`ready ${id}: ${describeReady(ready)}`);
    shell.apply(ready);
    this.send(ready.messages);
    shell.node().advance(ready);
    this.events += 1;
    this.check(id);
  }

  // ---- safety checks (after every event) -----------------------------------------------------------------------

  private afterEvent(id: number): void {
    this.events += 1;
    const shell = this.shell(id);
    if (!shell.up) return;
    this.check(id);
    this.pumpReady(id);
  }

  private onApply(id: number, index: number, key: string): void {
    const before = this.appliedAt[index];
    if (before === undefined) this.appliedAt[index] = key;
    else if (before !== key) violation(`state machine safety: node ${id} applied ${key} at ${index}, another node applied ${before}`);
    const committed = this.committed[index];
    if (committed !== undefined && committed.key !== key) violation(`node ${id} applied ${key} at ${index}, committed was ${committed.key}`);
  }

  private check(id: number): void {
    const node = this.shell(id).node();
    const status = node.status();
    // Election safety: at most one leader per term.
    if (status.role === 'leader') {
      const other = this.leaderOfTerm.get(status.term);
      if (other === undefined) this.leaderOfTerm.set(status.term, id);
      else if (other !== id) violation(`election safety: ${other} and ${id} both lead term ${status.term}`);
    }
    const log = node.debugLog();
    const stamp = `${log.version}/${log.commit}/${status.role}/${status.term}`;
    if (this.checkedVersion.get(id) === stamp) return;
    this.checkedVersion.set(id, stamp);
    const snapshotIndex = log.snapshot?.index ?? 0;
    let prevTerm: number | undefined = log.snapshot?.term ?? 0;
    // Log matching: an (index, term) pair always has the same content and the same previous term, so by
    // induction two logs agreeing on an entry agree on everything before it.
    for (const entry of log.entries) {
      const key = entryKey(entry as LogEntry<string>);
      const at = `${entry.index}:${entry.term}`;
      const seen = this.entryAt.get(at);
      if (seen === undefined) this.entryAt.set(at, { key, prevTerm });
      else if (seen.key !== key || (seen.prevTerm !== undefined && prevTerm !== undefined && seen.prevTerm !== prevTerm)) {
        violation(`log matching: node ${id} holds ${key} after term ${prevTerm} at ${at}; seen ${seen.key} after term ${seen.prevTerm}`);
      }
      prevTerm = entry.term;
      // Committed entries never change (and record them for leader completeness).
      if (entry.index <= log.commit) {
        const committed = this.committed[entry.index];
        if (committed === undefined) {
          this.committed[entry.index] = { key, term: status.term };
          this.stats.commits += 1;
        } else if (committed.key !== key) {
          violation(`committed entry changed: node ${id} holds ${key} at ${entry.index} (commit ${log.commit}); committed was ${committed.key}`);
        } else if (status.term < committed.term) committed.term = status.term;
      }
    }
    // Leader completeness: a leader holds every entry committed in its term or before.
    if (status.role === 'leader') {
      for (let index = snapshotIndex + 1; index < this.committed.length; index++) {
        const committed = this.committed[index];
        if (committed === undefined || committed.term > status.term) continue;
        const entry = log.entries[index - snapshotIndex - 1];
        if (entry === undefined) violation(`leader completeness: leader ${id} of term ${status.term} lacks committed ${index} (${committed.key})`);
        if (entryKey(entry as LogEntry<string>) !== committed.key) {
          violation(`leader completeness: leader ${id} of term ${status.term} holds ${entryKey(entry as LogEntry<string>)} at ${index}, committed ${committed.key}`);
        }
      }
    }
  }

  // ---- liveness ------------------------------------------------------------------------------------------------

  /** Heal the network, restart everyone, stop losses; a leader must then commit a proposal on every member. */
  private liveness(): void {
    this.heal();
    this.loss = 0;
    this.duplication = 0;
    this.maxDelay = Math.min(this.maxDelay, 1);
    this.crashInReady = 0;
    for (const id of this.ids) if (!this.shell(id).up) this.restart(id);
    this.log('liveness phase');
    let pending: { id: number; index: number; term: number; command: string } | null = null;
    for (let t = 0; t < this.options.livenessTicks; t++) {
      this.stats.livenessTicks = t;
      // A removed leader nobody talks to any more may linger in an old term; the newest term's leader counts.
      const term = (id: number): number => this.shell(id).node().status().term;
      const leader = this.leaders().sort((a, b) => term(b) - term(a))[0];
      if (leader !== undefined) {
        const status = this.shell(leader).node().status();
        if (pending === null || pending.term < status.term || pending.id !== leader) pending = this.proposeSomewhere();
        if (pending !== null) {
          const key = `${pending.term}:${pending.command}`;
          const members = [...status.confState.voters, ...status.confState.learners];
          if (members.every((m) => this.shell(m).applied[pending!.index - 1] === key)) {
            this.log(`liveness: ${key} at ${pending.index} applied on ${members.join(',')} after ${t} ticks`);
            return;
          }
        }
      }
      this.advanceTime();
    }
    const states = this.ids.map((id) => {
      if (!this.shell(id).up) return `${id}:down`;
      const s = this.shell(id).node().status();
      return `${id}:${s.role}@${s.term} lead ${s.leader} commit ${s.commit} applied ${s.applied} last ${s.lastIndex} conf ${JSON.stringify(s.confState)}`;
    });
    violation(`liveness: no proposal committed on every member within ${this.options.livenessTicks} ticks of healing; ${states.join('; ')}`);
  }
}

function describeReady(r: Ready<string>): string {
  const parts: string[] = [];
  if (r.softState !== undefined) parts.push(`soft ${r.softState.role} lead ${r.softState.leader}`);
  if (r.hardState !== undefined) parts.push(`hard ${JSON.stringify(r.hardState)}`);
  if (r.snapshot !== undefined) parts.push(`snapshot ${r.snapshot.index}@${r.snapshot.term}`);
  if (r.entries.length > 0) parts.push(`entries ${r.entries.map((e) => `${e.index}@${e.term}`).join(' ')}`);
  if (r.committed.length > 0) parts.push(`committed ${r.committed.map((e) => `${e.index}`).join(' ')}`);
  if (r.messages.length > 0) parts.push(`msgs ${r.messages.length}`);
  return parts.join('; ');
}

export function runSimulation(options: SimOptions): SimResult {
  return new RaftSimulation(options).run();
}
