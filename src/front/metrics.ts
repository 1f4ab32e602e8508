// The node's Prometheus registry (svc_* series, spec §4 Health and metrics). Hot paths count into plain
// maps and the registry reads them at scrape time, so a produce pays a map increment, not a label lookup.
// Front thread; one instance per node.
import { Counter, Gauge, Registry } from 'prom-client';
import type { PartitionWorkers } from './dispatch.js';
import type { MetadataReplica } from './metadata_replica.js';
import type { FanoutCounterView, PartitionCountersView } from '../protocol/thread_messages.js';

interface PartitionReport {
  partitions: { name: string; view: PartitionCountersView }[];
  /** Copy cursors of fan-out parents on this node, with the parent's and child's names. */
  fanout: { parent: string; child: string; view: FanoutCounterView }[];
}

export class Metrics {
  readonly registry = new Registry();
  /** route pattern -> method -> status -> answers. */
  private readonly requestsByRoute = new Map<string, Map<string, Map<number, number>>>();
  /** topic name -> messages accepted per partition. */
  private readonly produced = new Map<string, number[]>();
  private ingressFailed = 0;
  /** topic name -> reason -> produce requests refused (spec §4 Health and metrics). */
  private readonly rejections = new Map<string, Map<string, number>>();
  /** parent name -> child name -> parent partition -> copies appended to this node's ingress log (issue 30). */
  private readonly fanoutCommitted = new Map<string, Map<string, number[]>>();

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
    new Counter({
      name: 'svc_messages_consumed_total',
      help: 'Messages handed out under a lease on this node since it started, by topic and partition.',
      labelNames: ['topic', 'partition'],
      registers: [this.registry],
      async collect() {
        this.reset();
        for (const { name, view } of (await report()).partitions) {
          if (view.consumed > 0) this.labels(name, String(view.partition)).inc(view.consumed);
        }
      },
    });
  }

  /** Fan-out (spec §4 metrics, issue 30): lag and losses from the workers' copy cursors, copies counted here. */
  private registerFanoutSeries(report: () => Promise<PartitionReport>): void {
    const committed = this.fanoutCommitted;
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
      help: 'Parent messages copied to the child (synced to this node\'s ingress log), by parent, child and parent partition.',
      labelNames: ['parent', 'child', 'partition'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [parent, byChild] of committed) {
          for (const [child, counts] of byChild) {
            counts.forEach((count, partition) => {
              if (count > 0) this.labels(parent, child, String(partition)).inc(count);
            });
          }
        }
      },
    });
  }

  /** Counts copies of a parent partition's records appended for a child. */
  countFanoutCommitted(parent: string, child: string, partition: number, count: number): void {
    let byChild = this.fanoutCommitted.get(parent);
    if (byChild === undefined) this.fanoutCommitted.set(parent, (byChild = new Map()));
    let counts = byChild.get(child);
    if (counts === undefined) byChild.set(child, (counts = []));
    counts[partition] = (counts[partition] ?? 0) + count;
  }

  /** The series counted on the hot paths, read from their maps at scrape time. */
  private registerCounters(): void {
    const requestsByRoute = this.requestsByRoute;
    const produced = this.produced;
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
    new Counter({
      name: 'svc_messages_produced_total',
      help: 'Messages accepted (answered 202) on this node, by topic and partition.',
      labelNames: ['topic', 'partition'],
      registers: [this.registry],
      collect() {
        this.reset();
        for (const [topic, counts] of produced) {
          counts.forEach((count, partition) => {
            if (count > 0) this.labels(topic, String(partition)).inc(count);
          });
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

  /** Counts accepted records by partition; takes the records themselves, so a produce builds no array for it. */
  countProduced(topic: string, records: readonly { partition: number }[]): void {
    const counts = this.producedCounts(topic);
    for (let i = 0; i < records.length; i++) {
      const partition = records[i]!.partition;
      counts[partition] = (counts[partition] ?? 0) + 1;
    }
  }

  /** Counts one accepted record of a single produce. */
  countProducedTo(topic: string, partition: number): void {
    const counts = this.producedCounts(topic);
    counts[partition] = (counts[partition] ?? 0) + 1;
  }

  /** Accepted records of topic by partition (made on first use). */
  private producedCounts(topic: string): number[] {
    let counts = this.produced.get(topic);
    if (counts === undefined) this.produced.set(topic, (counts = []));
    return counts;
  }

  /** Counts one refused produce request (a single produce, or a whole batch). */
  countRejection(topic: string, reason: 'schema' | 'delayed_child' | 'remote_child'): void {
    let byReason = this.rejections.get(topic);
    if (byReason === undefined) this.rejections.set(topic, (byReason = new Map()));
    byReason.set(reason, (byReason.get(reason) ?? 0) + 1);
  }

  latchIngressFailed(): void {
    this.ingressFailed = 1;
  }

  forgetTopic(topic: string): void {
    this.produced.delete(topic);
    this.rejections.delete(topic);
    this.fanoutCommitted.delete(topic);
    for (const byChild of this.fanoutCommitted.values()) byChild.delete(topic);
  }
}

/** Every worker's partition counters and fan-out copy cursors, named by the topics this node's metadata copy still
 *  holds. */
async function partitionReport(replica: MetadataReplica, workers: PartitionWorkers): Promise<PartitionReport> {
  const names = new Map([...replica.state.topics.values()].map((t) => [t.id, t.name]));
  const replies = await Promise.all(Array.from({ length: workers.count }, (_, i) => workers.request(i, { kind: 'counters' })));
  const report: PartitionReport = { partitions: [], fanout: [] };
  for (const reply of replies) {
    if (reply.kind !== 'countersResult') continue;
    for (const view of reply.counters) {
      const name = names.get(view.topicId);
      if (name !== undefined) report.partitions.push({ name, view });
    }
    for (const view of reply.fanout ?? []) {
      const parent = names.get(view.parentTopicId);
      const child = names.get(view.childId);
      if (parent !== undefined && child !== undefined) report.fanout.push({ parent, child, view });
    }
  }
  return report;
}
