// Which members are alive (spec §2 Cluster member: dead once heartbeats stop). The leader stamps the time it last
// heard anything from each node and sends that view to every member once a second; a follower keeps the leader's
// last view and ages it by its own clock, so with no leader every other member ends up dead on it. Soft state of
// the metadata shell: never in the log, rebuilt after a restart. A member the leader has not heard from since its own
// start counts as heard at that start: at a cluster's start the first views would otherwise call members dead that
// simply had not spoken yet, and followers would refuse produce to their partitions for a second. A member that never
// speaks is dead one dead-after period after the leader started. Clock values are passed in (no Date here).

export class Liveness {
  /** Leader side: node id -> when this node last heard from it. */
  private readonly heardAtMs = new Map<number, number>();
  /** Follower side: the leader's view (node id -> ms since the leader heard it) and when it arrived. */
  private leaderView: { receivedAtMs: number; heardAgoMs: Map<number, number> } | null = null;

  constructor(
    private readonly selfId: number,
    private readonly deadAfterMs: number,
    /** When this node started: what "never heard" counts from. */
    private readonly startedAtMs: number,
  ) {}

  heardFrom(id: number, nowMs: number): void {
    this.heardAtMs.set(id, nowMs);
  }

  /** The view the leader sends, one entry per member; its own is 0. */
  leaderViewToSend(memberIds: Iterable<number>, nowMs: number): [number, number][] {
    const view: [number, number][] = [[this.selfId, 0]];
    for (const id of memberIds) if (id !== this.selfId) view.push([id, this.silentForMs(id, nowMs)]);
    return view;
  }

  receivedLeaderView(heardAgoMs: [number, number][], nowMs: number): void {
    this.leaderView = { receivedAtMs: nowMs, heardAgoMs: new Map(heardAgoMs) };
  }

  /** Milliseconds since the leader heard from id, or null when unknown. isLeader: this node leads. */
  heardAgoMs(id: number, isLeader: boolean, nowMs: number): number | null {
    if (id === this.selfId && isLeader) return 0;
    if (isLeader) {
      const atMs = this.heardAtMs.get(id);
      return atMs === undefined ? null : nowMs - atMs;
    }
    const view = this.leaderView;
    const ago = view?.heardAgoMs.get(id);
    if (view === null || ago === undefined) return null;
    return ago + (nowMs - view.receivedAtMs);
  }

  /** A follower has heard the leader's view at least once. */
  hasLeaderView(): boolean {
    return this.leaderView !== null;
  }

  alive(id: number, isLeader: boolean, nowMs: number): boolean {
    if (id === this.selfId) return true;
    const ago = isLeader ? this.silentForMs(id, nowMs) : this.heardAgoMs(id, false, nowMs);
    return ago !== null && ago < this.deadAfterMs;
  }

  /** Leader side: how long id has been silent, a member never heard counting from this node's start. */
  private silentForMs(id: number, nowMs: number): number {
    return nowMs - (this.heardAtMs.get(id) ?? this.startedAtMs);
  }
}
