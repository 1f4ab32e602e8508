// The cluster's hands for decommission (issue 41, spec §3 Node liveness and decommission): on every node it keeps
// the partition ends (partition_ends.ts: its workers' every few seconds, other members' from their reports) and the
// last report read from each member; on the Raft leader's node it drives every decommission once a second: moves
// for the partitions a draining member still owns (move_plan.ts; their destinations copy them,
// src/front/moves/), a lost member's partitions given away empty when the operator accepted the loss, and the
// leadership handed away once the leader itself has nothing left. Front thread; server.ts starts and stops it.
import { decommissionPlan, reassignPlan } from '../metadata/move_plan.js';
import { partitionsOwnedBy } from '../metadata/placement.js';
import { movesOff } from '../metadata/moves.js';
import type { MemberReportView } from '../protocol/data_messages.js';
import type { MemberView, PartitionEndView } from '../protocol/thread_messages.js';
import { decommissionReasons } from './decommission_reasons.js';
import { PartitionEnds } from './partition_ends.js';
import type { FrontServices } from './services.js';

const tickMs = 1_000;
const endsRefreshMs = 5_000;
const reportBudgetMs = 2_000;

export interface ReportSeen {
  report: MemberReportView | string;
  atMs: number;
}

export class ClusterControl {
  readonly ends = new PartitionEnds();
  /** The last report read from each other member (or why it could not be read). */
  readonly reports = new Map<number, ReportSeen>();
  private localEndsSeen: PartitionEndView[] = [];
  private timers: NodeJS.Timeout[] = [];
  private ticking = false;
  private refreshing = false;
  private transferAskedAtMs = 0;

  constructor(private readonly s: FrontServices, private readonly localReport: () => MemberReportView) {}

  start(): void {
    this.timers.push(setInterval(() => void this.tick(), tickMs), setInterval(() => void this.refreshEnds(), endsRefreshMs));
    for (const timer of this.timers) timer.unref();
    void this.refreshEnds();
  }

  stop(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }

  /** This node's own partitions' ends as last read from its workers. */
  localEnds(): PartitionEndView[] {
    return this.localEndsSeen;
  }

  /** Every member's report, this node's made now; the others asked at once within 2 s. */
  async reportsOf(ids: readonly number[]): Promise<Map<number, MemberReportView | string>> {
    const deadline = Date.now() + reportBudgetMs;
    const answers = await Promise.all(ids.map(async (id): Promise<[number, MemberReportView | string]> => {
      if (id === this.s.nodeId) return [id, this.localReport()];
      try {
        const report = await this.s.remote.memberReport(id, Math.max(1, deadline - Date.now()));
        this.ends.note(report.partitionEnds);
        this.reports.set(id, { report, atMs: Date.now() });
        return [id, report];
      } catch (error) {
        const why = `its report could not be read within ${reportBudgetMs / 1000} seconds: ${error instanceof Error ? error.message : String(error)}`;
        this.reports.set(id, { report: why, atMs: Date.now() });
        return [id, why];
      }
    }));
    return new Map(answers);
  }

  /** Every reason that blocks a running decommission now, as this node sees it (svc_decommission_blocked). */
  async blocked(): Promise<{ member: number; code: string }[]> {
    const state = this.s.replica.state;
    const draining = [...state.members.values()].filter((member) => member.decommission !== undefined);
    if (draining.length === 0) return [];
    const views = await this.s.replica.members();
    return draining.flatMap((member) => decommissionReasons({
      state, id: member.id, views, report: member.id === this.s.nodeId ? this.localReport() : this.reports.get(member.id)?.report,
      acceptDataLoss: member.decommission!.acceptDataLoss, movesMaxPerNode: this.s.config['cluster.moves_max_per_node'],
    }).map((reason) => ({ member: member.id, code: reason.code })));
  }

  private async refreshEnds(): Promise<void> {
    if (this.refreshing) return;
    this.refreshing = true;
    try {
      const replies = await Promise.all(Array.from({ length: this.s.workers.count }, (_, i) => this.s.workers.request(i, { kind: 'counters' })));
      const local: PartitionEndView[] = [];
      for (const reply of replies) if (reply.kind === 'countersResult') local.push(...reply.ends);
      this.localEndsSeen = local;
      this.ends.note(local);
      const dead = new Set(this.s.replica.clusterStatus?.deadMembers ?? []);
      const others = [...this.s.replica.state.members.keys()].filter((id) => id !== this.s.nodeId && !dead.has(id));
      await this.reportsOf(others);
      this.ends.retain(new Set([...this.s.replica.state.topics.values()].map((topic) => topic.id)));
    } catch (error) {
      this.s.log.warn({ err: error }, 'cluster: reading partition ends failed');
    } finally {
      this.refreshing = false;
    }
  }

  private async tick(): Promise<void> {
    const status = this.s.replica.clusterStatus;
    if (this.ticking || status === null || status.role !== 'leader') return;
    this.ticking = true;
    try {
      const views = await this.s.replica.members();
      for (const member of this.s.replica.state.members.values()) {
        if (member.decommission !== undefined) await this.drive(member.id, member.decommission.acceptDataLoss, views);
      }
    } catch (error) {
      this.s.log.warn({ err: error }, 'cluster: a decommission step failed; it is tried again');
    } finally {
      this.ticking = false;
    }
  }

  /** One step of one decommission, on the leader. */
  private async drive(id: number, acceptDataLoss: boolean, views: readonly MemberView[]): Promise<void> {
    const live = views.filter((view) => view.alive).map((view) => view.id);
    const alive = live.includes(id);
    const state = this.s.replica.state;
    if (!alive && acceptDataLoss) return this.giveAwayLost(id, live);
    if (!alive) return;
    const plan = decommissionPlan(state, id, live, Date.now());
    if (plan.moves.length > 0) {
      const result = await this.s.replica.propose({ type: 'move.start', moves: plan.moves });
      if (result.ok) this.s.log.info({ member: id, moves: plan.moves.length }, 'decommission: partition moves started');
      return;
    }
    if (id === this.s.nodeId && partitionsOwnedBy(state, id) === 0 && movesOff(state, id) === 0) this.handLeadershipAway();
  }

  /** accept_data_loss: each partition of the lost member goes to a receiver, empty from the highest end known. */
  private async giveAwayLost(id: number, live: readonly number[]): Promise<void> {
    for (const { topic, partition, to } of reassignPlan(this.s.replica.state, id, live)) {
      const startOffset = this.ends.get(topic.id, partition)?.nextOffset ?? 0;
      const result = await this.s.replica.propose({ type: 'partition.reassign', topicId: topic.id, partition, from: id, to, startOffset });
      if (result.ok) this.s.log.warn({ member: id, topic: topic.name, partition, to, startOffset }, 'decommission: a lost member\'s partition given away empty');
    }
  }

  private handLeadershipAway(): void {
    const nowMs = Date.now();
    if (nowMs - this.transferAskedAtMs < 5_000) return;
    this.transferAskedAtMs = nowMs;
    this.s.log.info('decommission: this node leads and holds nothing more; handing leadership away');
    this.s.replica.transferLeadership();
  }
}

/** Records only member id held, as far as the ends known here tell: what a lost member takes with it. */
export function recordsOnlyOn(control: ClusterControl, state: FrontServices['replica']['state'], id: number): number {
  let records = 0;
  for (const topic of state.topics.values()) {
    for (let p = 0; p < topic.partitions; p++) {
      if (topic.owners[p] !== id) continue;
      const end = control.ends.get(topic.id, p);
      if (end !== undefined) records += end.nextOffset - end.oldestOffset;
    }
  }
  return records;
}
