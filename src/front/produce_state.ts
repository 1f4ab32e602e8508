// What the produce routes keep between requests (RouteServices.produce): the per-identity in-flight cap, the
// admitted count a member reports, the round-robin spread and the reused single-produce entry. Front thread; built
// once by server.ts, so services.ts names it without importing a handler.
import { PayloadKind, type IngressEntry, type IngressRecord } from '../protocol/ingress_frame.js';
import { InFlightPerIdentity } from './in_flight.js';
import type { FrontServices } from './services.js';

const emptyPayload = new Uint8Array(0);

/** What the produce routes keep between requests; one per server (RouteServices.produce). */
export class ProduceState {
  readonly inFlight = new InFlightPerIdentity();
  readonly capMax: number;
  /** Client produce requests admitted and not yet answered (a member's own report, spec §2 Cluster member). */
  admitted = 0;
  /** Per topic id: where the next message without key and pin goes (spread, docs/decisions.md). */
  readonly roundRobin = new Map<string, number>();
  /** The entry of every single produce: appendThen encodes an entry before it returns and keeps none of it, so one
   *  serves them all (three objects fewer per request on the hottest route). Front thread, never re-entered: appendThen
   *  tells its listener from a microtask. */
  readonly singleRecord: IngressRecord = { partition: 0, key: null, payload: emptyPayload, payloadKind: PayloadKind.Json };
  readonly singleEntry: IngressEntry = { seq: 0, topicId: '', timestampSec: 0, records: [this.singleRecord] };

  constructor(services: FrontServices) {
    this.capMax = services.config['http.max_produce_in_flight_per_identity'];
    services.replica.onApplied((command) => {
      if (command.type === 'topic.delete') {
        this.roundRobin.delete(command.id);
        services.metrics.forgetTopic(command.name);
      }
    });
  }
}
