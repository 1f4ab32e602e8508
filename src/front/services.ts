// What handlers on the front thread work with: the node's config, its metadata copy, its partition workers,
// its ingress log and pools (FrontServices, built once by main.ts), plus the state the routes keep between requests
// (RouteServices, built once by server.ts). Handlers never construct these themselves.
import type { Piscina } from 'piscina';
import type { Config } from '../config.js';
import type { DestinationMoveView, SetAsideCopyView } from '../protocol/data_messages.js';
import type { Logger } from '../util/log.js';
import type { ByteBudget } from './body.js';
import type { RemotePartitions } from './remote_partitions.js';
import type { Handoff } from './ingress/handoff.js';
import type { PartitionWorkers } from './ingress/dispatch.js';
import type { ClusterControl } from './cluster_control.js';
import type { ConsumeState } from './consume_state.js';
import type { ProduceState } from './produce_state.js';
import type { IngressLog } from './ingress/ingress_log.js';
import type { MetadataReplica } from './metadata_replica.js';
import type { Metrics } from './metrics.js';
import type { SchemaValidation } from './schema_validation.js';

/** Whether the node has finished starting and whether it is shutting down (health, readiness, refusals). */
export interface NodeLifecycle {
  startupDone: boolean;
  shuttingDown: boolean;
}

export interface FrontServices {
  config: Config;
  log: Logger;
  /** This node's cluster id: owner_node of the partitions it owns. */
  nodeId: number;
  replica: MetadataReplica;
  workers: PartitionWorkers;
  ingress: IngressLog;
  /** bcrypt checks and hashes (auth.verify_slots threads; spec §5.2): never on the front thread. */
  authPool: Piscina;
  /** Decoding and parsing of big batch bodies (one thread per core). */
  workPool: Piscina;
  batchBudget: ByteBudget;
  metrics: Metrics;
  /** Requests for partitions other nodes own, over the data channel (issue 29). */
  remote: RemotePartitions;
  /** Produced records of partitions other nodes own, handed to them in the background (issue 29). */
  handoff: Handoff;
  /** Produce-time schema checks and their pool (src/front/schema_validation.ts). */
  schemas: SchemaValidation;
  /** The moves this node runs as destination and its set-aside copies (issue 41). */
  moves: MoveReports;
}

/** What the member report reads of this node's partition moves and set-aside copies (src/front/moves/). */
export interface MoveReports {
  movesAsDestination(): DestinationMoveView[];
  setAside(): { count: number; bytes: number; copies: SetAsideCopyView[] };
}

/** The second argument of every handler (routes.ts): the services and the routes' own state. */
export interface RouteServices extends FrontServices {
  lifecycle: NodeLifecycle;
  /** http.metrics_addr is set: /metrics is served there, not on the API port. */
  separateMetrics: boolean;
  produce: ProduceState;
  consume: ConsumeState;
  /** Decommission driving (on the leader), partition ends and members' last reports (issue 41). */
  cluster: ClusterControl;
}
