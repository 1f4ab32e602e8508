// The node's Prometheus registry (svc_* series, spec §4 Health and metrics). Hot paths count into plain
// maps and the registry reads them at scrape time, so a produce pays a map increment, not a label lookup.
// Front thread; one instance per node.
import { Counter, Gauge, Registry } from 'prom-client';
import type { PartitionWorkers } from './dispatch.js';
import type { MetadataReplica } from './metadata_replica.js';
import type { PartitionCountersView } from '../protocol/thread_messages.js';
import type { ClusterTlsDates } from '../transport/cluster_tls.js';

export class Metrics {
  readonly registry = new Registry();
  /** route pattern -> method -> status -> answers. */
  private readonly requestsByRoute = new Map<string, Map<string, Map<number, number>>>();
  /** topic name -> messages accepted per partition. */
  private ingressFailed = 0;
  /** topic name -> reason -> produce requests refused (spec §4 Health and metrics). */
  private readonly rejections = new Map<string, Map<string, number>>();

  constructor(replica: MetadataReplica, workers: PartitionWorkers, validations: { readonly inFlight: number },
    handoff: { backlogRecords(): number }) {
    this.registerCounters();
    this.registerGauges(replica, workers);
    this.registerPartitionSeries(replica, workers);
    this.registerProduceGuards(validations);
    new Gauge({
      name: 'svc_ingress_dispatch_backlog_records',
      help: 'Records this node accepted for partitions other nodes own and has not yet seen them confirm (issue 29).',
      registers: [this.registry],
      collect() {
        this.set(handoff.backlogRecords());
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
    let inFlight: Promise<{ name: string; view: PartitionCountersView }[]> | null = null;
    const report = (): Promise<{ name: string; view: PartitionCountersView }[]> => {
      inFlight ??= partitionReport(replica, workers).finally(() => (inFlight = null));
      return inFlight;
    };
    new Gauge({
      name: 'svc_consumer_lag_messages',
      help: 'High watermark minus committed frontier (messages not yet acked), by topic and partition.',
      labelNames: ['topic', 'partition'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { name, view } of await report()) this.labels(name, String(view.partition)).set(view.lag);
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
          for (const { name: topic, view } of await report()) {
            if (count(view) > 0) this.labels(topic, String(view.partition)).inc(count(view));
          }
        },
      });
    }
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

  latchIngressFailed(): void {
    this.ingressFailed = 1;
  }

  forgetTopic(topic: string): void {
    this.rejections.delete(topic);
  }
}

/** Every worker's partition counters, named by the topics this node's metadata copy still holds. */
async function partitionReport(replica: MetadataReplica, workers: PartitionWorkers): Promise<{ name: string; view: PartitionCountersView }[]> {
  const names = new Map([...replica.state.topics.values()].map((t) => [t.id, t.name]));
  const replies = await Promise.all(Array.from({ length: workers.count }, (_, i) => workers.request(i, { kind: 'counters' })));
  const named: { name: string; view: PartitionCountersView }[] = [];
  for (const reply of replies) {
    if (reply.kind !== 'countersResult') continue;
    for (const view of reply.counters) {
      const name = names.get(view.topicId);
      if (name !== undefined) named.push({ name, view });
    }
  }
  return named;
}
