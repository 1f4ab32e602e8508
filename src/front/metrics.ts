// The node's Prometheus registry (svc_* series, spec §4 Health and metrics). Hot paths count into plain
// maps and the registry reads them at scrape time, so a produce pays a map increment, not a label lookup.
// Front thread; one instance per node.
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PartitionWorkers } from './ingress/dispatch.js';
import type { MetadataReplica } from './metadata_replica.js';
import type { FanoutCounterView, PartitionCountersView } from '../protocol/thread_messages.js';
import type { ClusterTlsDates } from '../transport/cluster_tls.js';

export class Metrics {
  readonly registry = new Registry();
  /** route pattern -> method -> status -> answers. */
  private readonly requestsByRoute = new Map<string, Map<string, Map<number, number>>>();
  /** topic name -> messages accepted per partition. */
  private ingressFailed = 0;
  /** topic name -> reason -> produce requests refused (spec §4 Health and metrics). */
  private readonly rejections = new Map<string, Map<string, number>>();
  /** parent name -> child name -> parent partition -> copies appended to this node's ingress log (issue 30). */
  /** Whether /readyz would answer 200, as health.onMetrics found it at the scrape being served. */
  private ready = 0;
  private readonly requestDuration = new Histogram({
    name: 'svc_http_request_duration_seconds',
    help: 'Seconds from the request taken (headers read) to its answer, by matched route pattern (requests answered before ' +
      'routing, 404 405 431, are not timed).',
    labelNames: ['route'],
    // 0.1 ms to 10 s: a produce answers in well under a millisecond, a long-poll consume waits up to its wait=.
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  /** route pattern -> its histogram child: the per-request observe skips the label lookup. */
  private readonly durationByRoute = new Map<string, { observe(seconds: number): void }>();

  constructor(replica: MetadataReplica, workers: PartitionWorkers, validations: { readonly inFlight: number },
    handoff: { backlogRecords(): number }, reroute: { readonly recordsRerouted: number }) {
    this.registerCounters();
    this.registerGauges(replica, workers);
    this.registerPartitionSeries(replica, workers);
    this.registerProduceGuards(validations);
    this.registerClusterSeries(replica);
    // process_* (spec §4: the standard series besides svc_*) and the Node.js runtime's series, which exposition()
    // serves as svc_nodejs_*; the few /proc reads they make are procfs, answered from memory, once per scrape.
    collectDefaultMetrics({ register: this.registry });
    new Gauge({
      name: 'svc_ingress_dispatch_backlog_records',
      help: 'Records this node accepted for partitions other nodes own and has not yet seen them confirm (issue 29).',
      registers: [this.registry],
      collect() {
        this.set(handoff.backlogRecords());
      },
    });
    new Counter({
      name: 'svc_ingress_rerouted_records_total',
      help: 'Records this node had accepted for a partition whose owner was then marked dead or failed hand-offs for 3 s, ' +
        'committed to a live partition of the same topic instead (spec §1.6).',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(reroute.recordsRerouted);
      },
    });
  }

  /** Schema checks of produce: refusals by reason, and the schema pool's slots in use. */
  private registerProduceGuards(validations: { readonly inFlight: number }): void {
    const rejections = this.rejections;
    new Counter({
      name: 'svc_produce_rejections_total',
      help: 'Produce requests refused (a batch counts once), by topic and reason.',
      labelNames: ['topic', 'reason'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [topic, byReason] of rejections) {
          for (const [reason, count] of byReason) this.labels(topic, reason).inc(count);
        }
      },
    });
    new Gauge({
      name: 'svc_schema_validations_in_flight',
      help: 'Schema validation slots in use in the schema pool (at most one per CPU core).',
      registers: [this.registry],
      collect() {
        this.set(validations.inFlight);
      },
    });
  }

  /** The series the partition workers count, by topic and partition: one 'counters' request per worker serves a whole
   *  scrape (both collectors run in it at once and share the request in flight). */
  private registerPartitionSeries(replica: MetadataReplica, workers: PartitionWorkers): void {
    let inFlight: Promise<PartitionReport> | null = null;
    const report = (): Promise<PartitionReport> => {
      inFlight ??= partitionReport(replica, workers).finally(() => (inFlight = null));
      return inFlight;
    };
    this.registerFanoutSeries(report);
    new Gauge({
      name: 'svc_consumer_lag_messages',
      help: 'High watermark minus committed frontier (messages not yet acked), by topic and partition.',
      labelNames: ['topic', 'partition'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { name, view } of (await report()).partitions) this.labels(name, String(view.partition)).set(view.lag);
      },
    });
    new Gauge({
      name: 'svc_topic_bytes',
      help: 'Bytes this node holds on disk for a topic (segments of the partitions it owns), by topic.',
      labelNames: ['topic'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const [name, bytes] of (await report()).topicBytes) this.labels(name).set(bytes);
      },
    });
    for (const [name, help, count] of [
      ['svc_messages_consumed_total', 'Messages handed out under a lease on this node since it started, by topic and partition.',
        (view: PartitionCountersView) => view.consumed],
      ['svc_messages_produced_total', 'Messages stored in the partitions this node owns since it started (counted once, at the ' +
        'owner, whichever node took the produce), by topic and partition.', (view: PartitionCountersView) => view.produced],
    ] as const) {
      new Counter({
        name, help, labelNames: ['topic', 'partition'], registers: [this.registry],
        async collect() {
          this.reset();
          for (const { name: topic, view } of (await report()).partitions) {
            if (count(view) > 0) this.labels(topic, String(view.partition)).inc(count(view));
          }
        },
      });
    }
  }

  /** Fan-out (spec §4 metrics, issue 30): lag, losses and copies from the workers' copy cursors. */
  private registerFanoutSeries(report: () => Promise<PartitionReport>): void {
    new Gauge({
      name: 'svc_fanout_lag_messages',
      help: 'Parent messages committed and not yet copied to the child, by parent, child and parent partition.',
      labelNames: ['parent', 'child', 'partition'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { parent, child, view } of (await report()).fanout) this.labels(parent, child, String(view.partition)).set(view.lag);
      },
    });
    new Counter({
      name: 'svc_fanout_child_dropped_messages',
      help: 'Parent messages the parent\'s retention deleted before they were copied to the child, since the worker started.',
      labelNames: ['parent', 'child', 'partition'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { parent, child, view } of (await report()).fanout) this.labels(parent, child, String(view.partition)).inc(view.dropped);
      },
    });
    new Counter({
      name: 'svc_fanout_committed_total',
      help: 'Parent messages copied to the child (stored durably for it), by parent, child and parent partition, since the worker started.',
      labelNames: ['parent', 'child', 'partition'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { parent, child, view } of (await report()).fanout) this.labels(parent, child, String(view.partition)).inc(view.copied);
      },
    });
  }

  /** The series counted on the hot paths, read from their maps at scrape time. */
  private registerCounters(): void {
    const requestsByRoute = this.requestsByRoute;
    new Counter({
      name: 'svc_http_requests_total',
      help: 'HTTP requests answered, by matched route pattern (unmatched otherwise), method and status.',
      labelNames: ['route', 'method', 'status'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [route, byMethod] of requestsByRoute) {
          for (const [method, byStatus] of byMethod) {
            for (const [status, count] of byStatus) this.labels(route, method, String(status)).inc(count);
          }
        }
      },
    });
  }

  /** The series read at scrape time from the metadata copy, the workers and the ingress latch. */
  private registerGauges(replica: MetadataReplica, workers: PartitionWorkers): void {
    const self = this;
    new Gauge({
      name: 'svc_ingress_wal_failed',
      help: '1 once an ingress log write failed: every produce on this node answers 500 until restart.',
      registers: [this.registry],
      collect() {
        this.set(self.ingressFailed);
      },
    });
    new Gauge({
      name: 'svc_topics_total',
      help: 'Topics in this node\'s metadata copy.',
      registers: [this.registry],
      collect() {
        this.set(replica.state.topics.size);
      },
    });
    new Gauge({
      name: 'svc_raft_applied_index',
      help: 'The last metadata log index this node applied (spec §4 metrics): a node behind the others lags here.',
      registers: [this.registry],
      collect() {
        this.set(replica.appliedIndex);
      },
    });
    new Gauge({
      name: 'svc_partitions_total',
      help: 'Partitions of all topics in this node\'s metadata copy.',
      registers: [this.registry],
      collect() {
        let partitions = 0;
        for (const topic of replica.state.topics.values()) partitions += topic.partitions;
        this.set(partitions);
      },
    });
  }

  /** Raft role, readiness and the liveness view, for the dashboard and the alerts (deploy/): names of ours, which
   *  spec §4 allows ("the rest of the series names: not shown"); docs/metrics.md lists them. */
  private registerClusterSeries(replica: MetadataReplica): void {
    const self = this;
    new Gauge({
      name: 'svc_raft_leader',
      help: '1 while this node is the Raft leader of the metadata log, else 0.',
      registers: [this.registry],
      collect() {
        this.set(replica.clusterStatus?.role === 'leader' ? 1 : 0);
      },
    });
    new Gauge({
      name: 'svc_node_ready',
      help: '1 while /readyz on this node answers 200 (checked at the scrape), else 0.',
      registers: [this.registry],
      collect() {
        this.set(self.ready);
      },
    });
    new Gauge({
      name: 'svc_cluster_members',
      help: 'Members in this node\'s metadata copy, by liveness in the leader\'s view as this node last heard it (alive, dead).',
      labelNames: ['liveness'],
      registers: [this.registry],
      collect() {
        const dead = new Set(replica.clusterStatus?.deadMembers ?? []);
        let deadCount = 0;
        for (const id of replica.state.members.keys()) if (dead.has(id)) deadCount++;
        this.labels('alive').set(replica.state.members.size - deadCount);
        this.labels('dead').set(deadCount);
      },
    });
  }

  /** The text GET /metrics answers (see servedExposition). */
  async exposition(): Promise<string> {
    return servedExposition(await this.registry.metrics());
  }

  /** One answered request's time, from RequestContext.startedAt (performance.now() milliseconds). */
  observeDuration(route: string, startedAt: number): void {
    let child = this.durationByRoute.get(route);
    if (child === undefined) this.durationByRoute.set(route, (child = this.requestDuration.labels(route)));
    child.observe((performance.now() - startedAt) / 1000);
  }

  /** Set by the metrics handler before each scrape: whether /readyz would answer 200 now. */
  noteReady(ready: boolean): void {
    this.ready = ready ? 1 : 0;
  }

  /** Counts an answer; per (route, method) a small map by status, so the hot path builds no string. */
  countRequest(route: string, method: string, status: number): void {
    let byMethod = this.requestsByRoute.get(route);
    if (byMethod === undefined) this.requestsByRoute.set(route, (byMethod = new Map()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map()));
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
  }

  /** Counts one refused produce request (a single produce, or a whole batch). */
  countRejection(topic: string, reason: 'schema' | 'delayed_child' | 'remote_child'): void {
    let byReason = this.rejections.get(topic);
    if (byReason === undefined) this.rejections.set(topic, (byReason = new Map()));
    byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
  }

  /** The end dates of this node's node-to-node TLS certificates (main.ts read them at start); null without TLS.
   *  /readyz reads them too (degraded). */
  clusterTlsDates: ClusterTlsDates | null = null;

  /** Registers svc_raft_tls_cert_not_after_seconds, which a node without node-to-node TLS does not export. */
  reportClusterTls(dates: ClusterTlsDates): void {
    if (this.clusterTlsDates !== null) throw new Error('reportClusterTls: reported already');
    this.clusterTlsDates = dates;
    const gauge = new Gauge({
      name: 'svc_raft_tls_cert_not_after_seconds',
      help: 'Unix time in seconds of notAfter of this node\'s node-to-node TLS certificate (kind leaf) and of its CA ' +
        '(kind ca, the earliest certificate of the CA file).',
      labelNames: ['kind'],
      registers: [this.registry],
    });
    gauge.labels('leaf').set(Math.floor(dates.leafNotAfterMs / 1000));
    gauge.labels('ca').set(Math.floor(dates.caNotAfterMs / 1000));
  }

  /** svc_decommission_blocked (spec §4 Metrics): 1 per decommissioning member and what blocks it now, as this node
   *  sees it (cluster_control.ts); no series while nothing is blocked. */
  reportDecommissionBlocked(blocked: () => Promise<{ member: number; code: string }[]>): void {
    new Gauge({
      name: 'svc_decommission_blocked',
      help: 'Decommissions blocked now, by member and reason code (spec §2 decommission_blocked_reasons): 1 while it blocks.',
      labelNames: ['member', 'reason'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { member, code } of await blocked()) this.labels(String(member), code).set(1);
      },
    });
  }

  latchIngressFailed(): void {
    this.ingressFailed = 1;
  }

  forgetTopic(topic: string): void {
    this.rejections.delete(topic);
  }
}

/** prom-client's text made what spec §4 and the text format allow. Series names start with svc_ except the standard
 *  process_* and go_* ones, so the runtime series prom-client names nodejs_* are served as svc_nodejs_* (renamed in
 *  the text: collectDefaultMetrics takes one prefix for all its series, process_* included). A NaN sample is spelled
 *  NaN (prom-client 15 writes "Nan"; it spells +Inf and -Inf right). Label values and help text cannot start a line or
 *  end a sample line (prom-client escapes their newlines), so only names and values are touched. */
export function servedExposition(text: string): string {
  return text.replace(/^(# (?:HELP|TYPE) )?nodejs_/gm, '$1svc_nodejs_').replace(/^([^#\n].*) Nan$/gm, '$1 NaN');
}

interface PartitionReport {
  partitions: { name: string; view: PartitionCountersView }[];
  /** Every topic of the metadata copy, by name: the bytes this node holds for it (0 when it holds none). */
  topicBytes: Map<string, number>;
  /** Copy cursors of fan-out parents on this node, with the parent's and child's names. */
  fanout: { parent: string; child: string; view: FanoutCounterView }[];
}

/** Every worker's partition counters, bytes per topic and fan-out copy cursors, named by the topics this node's
 *  metadata copy still holds. */
async function partitionReport(replica: MetadataReplica, workers: PartitionWorkers): Promise<PartitionReport> {
  const topics = [...replica.state.topics.values()];
  const names = new Map(topics.map((t) => [t.id, t.name]));
  const replies = await Promise.all(Array.from({ length: workers.count }, (_, i) => workers.request(i, { kind: 'counters' })));
  const report: PartitionReport = { partitions: [], topicBytes: new Map(topics.map((t) => [t.name, 0])), fanout: [] };
  for (const reply of replies) {
    if (reply.kind !== 'countersResult') continue;
    for (const view of reply.counters) {
      const name = names.get(view.topicId);
      if (name !== undefined) report.partitions.push({ name, view });
    }
    for (const { topicId, bytes } of reply.topicBytes) {
      const name = names.get(topicId);
      if (name !== undefined) report.topicBytes.set(name, report.topicBytes.get(name)! + bytes);
    }
    for (const view of reply.fanout ?? []) {
      const parent = names.get(view.parentTopicId);
      const child = names.get(view.childId);
      if (parent !== undefined && child !== undefined) report.fanout.push({ parent, child, view });
    }
  }
  return report;
}
