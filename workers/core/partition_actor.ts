// The pure core of one partition's read path (STYLE §3, Iggy's single pump): handle(command, nowMs) applies one
// command to the partition's LeaseTable and returns the effects the shell performs, in order. Runs on the partition
// worker thread that owns the partition; only that worker's port loop (the shell) calls it, one command at a time.
// Lifecycle: built when the worker opens the partition, restored from the ack log's state (no lease survives a
// restart); dropped when the partition closes or moves. It reads no clock and does no I/O.
import {
  assertLease,
  LeaseTable,
  type ActorConfig,
  type AckState,
  type Lease,
  type LeaseTableStats,
  type SettleMode,
  type SettleStatus,
} from './lease_table.js';

export type { ActorConfig, AckState, Lease, SettleMode, SettleStatus };

/** One delivery of one of the partition's offsets, as a receipt handle names it. */
export interface HeldLease {
  offset: number;
  nonce: string;
}

/** Commands from the shell. Each is applied whole; expired leases are moved first, lazily, whatever the kind. */
export type PartitionCommand =
  /** A consume asks for up to max leases (a single consume asks for 1). Answered by one 'leased'. */
  | { kind: 'take'; max: number }
  /** An ack, extend or nack of each handle (offset, nonce), in order (a batch ack is one command). Answered by one
   *  'settled'. */
  | { kind: 'settle'; leases: readonly HeldLease[]; mode: SettleMode }
  /** The shell's one timer, armed by 'scheduleTimer', fired. Lost or early: lazy expiry and re-arming cover it. */
  | { kind: 'timer' }
  /** The segment log holds records up to highWatermark, exclusive (written; their offsets are final). Never goes back. */
  | { kind: 'committed'; highWatermark: number }
  /** Retention deleted every offset below oldestOffset. */
  | { kind: 'retained'; oldestOffset: number }
  /** A PATCH of the topic's caps, from the metadata replica. Leases already held stay. */
  | { kind: 'configure'; config: ActorConfig };

/** Effects for the shell, in the order it should perform them. */
export type PartitionEffect =
  /** The answer to 'take', maybe empty. The shell builds receipt handles `partition:offset:nonce` from it. */
  | { kind: 'leased'; leases: Lease[] }
  /** The answer to 'settle', one status per lease in order: 204 settled, 410 lease gone (spec §4 ack). */
  | { kind: 'settled'; statuses: SettleStatus[] }
  /**
   * This many more offsets are deliverable than before the command (commit, expiry, nack, and also an ack, expiry
   * or PATCH that frees room under a cap while offsets wait behind it). Offsets a cap holds back are never counted,
   * so the shell needs no cap bookkeeping: it wakes up to count waiters on this topic, and a woken waiter that
   * finds nothing (another consumer was quicker) simply waits again.
   */
  | { kind: 'available'; count: number }
  /**
   * The earliest lease deadline is now atMs: the shell (re)arms its one timer for this partition to send 'timer'
   * at or after atMs, replacing any earlier arming. Not emitted when the last lease ends; a timer that then fires
   * finds nothing due and costs one command.
   */
  | { kind: 'scheduleTimer'; atMs: number }
  /** frontier or the acked set moved: the shell writes ackState() to the ack log in the background (DESIGN). */
  | { kind: 'ackStateChanged' };

export interface ActorInit {
  oldestOffset: number;
  highWatermark: number;
  /** From the ack log; defaults to oldestOffset. */
  frontier?: number;
  /** From the ack log: acked offsets above the frontier. */
  acked?: number[];
  config: ActorConfig;
  /** A fresh, unguessable nonce per delivery, so an earlier delivery's handle never matches (DESIGN). */
  nonceSource: () => string;
}

export type PartitionActorStats = LeaseTableStats;

export class PartitionActor {
  private readonly table: LeaseTable;
  private readonly nonceSource: () => string;
  /** Latest time seen: a clock that steps back must not revive a lease that has already run out. */
  private nowMs = -Infinity;
  /** The timer the shell holds armed, as last emitted; null once it fired. */
  private timerAtMs: number | null = null;

  constructor(init: ActorInit) {
    this.nonceSource = init.nonceSource;
    this.table = new LeaseTable(init);
    this.table.checkCounts();
  }

  handle(cmd: PartitionCommand, nowMs: number): PartitionEffect[] {
    assertLease(Number.isFinite(nowMs), `handle: nowMs ${nowMs}`);
    this.nowMs = Math.max(this.nowMs, nowMs);
    const now = this.nowMs;
    const deliverableBefore = this.table.deliverable();
    const ackVersionBefore = this.table.ackVersion;
    const effects: PartitionEffect[] = [];
    // Spec §3: a lease that ran out is available at once, whether or not its timer has fired yet.
    this.table.expire(now);
    switch (cmd.kind) {
      case 'take':
        effects.push({ kind: 'leased', leases: this.table.take(cmd.max, now, this.nonceSource) });
        break;
      case 'settle':
        effects.push({ kind: 'settled', statuses: cmd.leases.map((lease) => this.table.settle(lease.offset, lease.nonce, cmd.mode, now)) });
        break;
      case 'timer':
        // The armed timer is spent; whatever deadline comes next must be armed again, even if it is the same.
        this.timerAtMs = null;
        break;
      case 'committed':
        this.table.commit(cmd.highWatermark);
        break;
      case 'retained':
        this.table.retain(cmd.oldestOffset);
        break;
      case 'configure':
        this.table.configure(cmd.config);
        break;
      default:
        return assertNeverCommand(cmd);
    }
    if (this.table.ackVersion !== ackVersionBefore) effects.push({ kind: 'ackStateChanged' });
    const gained = this.table.deliverable() - deliverableBefore;
    if (gained > 0) effects.push({ kind: 'available', count: gained });
    const earliestMs = this.table.earliestDeadlineMs();
    if (earliestMs !== null && earliestMs !== this.timerAtMs) {
      this.timerAtMs = earliestMs;
      effects.push({ kind: 'scheduleTimer', atMs: earliestMs });
    }
    this.table.checkCounts();
    return effects;
  }

  /** What the ack log stores; written by the shell after 'ackStateChanged'. */
  ackState(): AckState {
    return this.table.ackState();
  }

  /** Offsets a take could lease as of the last command (a cheap look, without the expiry a command runs first). */
  deliverable(): number {
    return this.table.deliverable();
  }

  /** svc_consumer_lag_messages: highWatermark - frontier. */
  lag(): number {
    return this.table.lag();
  }

  stats(): PartitionActorStats {
    return this.table.stats();
  }

  /** The full O(n) invariant walk; handle() itself runs only the O(1) counting checks, to keep consume cheap. */
  checkInvariants(): void {
    this.table.checkInvariants();
  }
}

function assertNeverCommand(cmd: never): never {
  throw new Error(`partition actor: unknown command ${JSON.stringify(cmd)}`);
}
