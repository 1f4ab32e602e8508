// Every error status the API answers, declared once with its status, message and headers (STYLE §5): the catalog
// `errors`, one entry per id; scripts/tidy.ts fails on a BrokerError made anywhere else. Shared by every thread: the
// front throws these; other threads refuse with plain data naming a catalog id and its arguments (a Refusal), which
// crosses a MessagePort or the node-to-node transport, and the front answers refusalError of it. Anything that is not
// a BrokerError answers 500.

/** The error statuses of spec §7's table (499 is recorded, never sent). */
export const specErrorStatuses = [400, 401, 403, 404, 405, 409, 410, 412, 413, 415, 421, 429, 431, 499, 500, 501, 502, 503] as const;
export type ErrorStatus = (typeof specErrorStatuses)[number];

export class BrokerError extends Error {
  constructor(
    readonly status: ErrorStatus,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
    /** Spec §7: answered as plain text, not {"error": ...} (unknown route, 405, 431). */
    readonly plainText = false,
  ) {
    super(message);
  }
}

/** A status that came from elsewhere (another node), held to spec §7's error statuses: anything else is a 500. */
function errorStatusOr500(status: number): ErrorStatus {
  return status >= 400 && (specErrorStatuses as readonly number[]).includes(status) ? (status as ErrorStatus) : 500;
}

/** Spec §7/§8: a 503 the client may retry at once, or after a second. */
const retryAfter1 = { 'Retry-After': '1' } as const;
/** Spec §7: leader unreachable, and committed but unconfirmed, both carry Retry-After: 2. */
const retryAfter2 = { 'Retry-After': '2' } as const;

export const errors = {
  // 400 -----------------------------------------------------------------------------------------------------
  /** 400: a body, query or path value breaks a rule; the message names the field and the rule. */
  invalid: (field: string, rule: string) => new BrokerError(400, `${field}: ${rule}`),
  /** 400: the request as a whole is malformed (no field to name). */
  badRequest: (message: string) => new BrokerError(400, message),
  /** 400: the message's framing is ambiguous (RFC 9112 §6.3: Content-Length given twice with different values);
   *  answered before any route, and the connection closes. */
  badFraming: (rule: string) => new BrokerError(400, rule),
  /** 400: the body is not one JSON text. */
  invalidJson: () => new BrokerError(400, 'body: invalid JSON'),
  /** 400: a body field the route does not know (spec §7: bodies are strict). */
  unknownField: (field: string) => new BrokerError(400, `${field}: unknown field`),
  /** 400: a query parameter given more than once (NOTES 5). */
  givenTwice: (name: string) => new BrokerError(400, `${name}: given more than once`),
  /** 400: PATCH partitions not above the current count (front check, and again when applied: spec §4 PATCH). */
  partitionsNotGrown: (current: number) => new BrokerError(400, `partitions: must be larger than the current count ${current}`),
  /** 400 instead of 413 on user and attach-child routes (spec §8). */
  bodyTooLargeAs400: (bytesMax: number) => new BrokerError(400, `body: larger than ${bytesMax} bytes`),
  /** 400: message index of a batch produce breaks a rule (spec §4 batch: the first failing message decides). */
  messageInvalid: (index: number, rule: string) => new BrokerError(400, `message ${index}: ${rule}`),
  /** 400: a produce's payload is refused by its topic's schema or is not one strict JSON text (spec §4 Produce); the
   *  rule names the keyword and location, cut to fit (src/schema/validators.ts). */
  schemaRefusal: (rule: string) => new BrokerError(400, rule),
  /** 400: a gzip or zstd batch body that does not decode (v3.2.0). */
  undecodableBody: (encoding: string) => new BrokerError(400, `body: undecodable ${encoding} content`),
  // 401, 403 ------------------------------------------------------------------------------------------------
  /** 401: missing or wrong credentials (spec §5.1). */
  unauthorized: () => new BrokerError(401, 'missing or wrong credentials', { 'WWW-Authenticate': 'Basic realm="svc"' }),
  /** 403 (spec §5, §7): a grant, ownership, admin or account-protection rule refuses; the reason names which. The
   *  front's check and the leader's (src/metadata/caller_check.ts) both refuse with it. */
  forbidden: (reason: string) => new BrokerError(403, reason),
  /** 403: the root admin's account is never deleted (spec §5, NOTES 9; the front and the apply both refuse). */
  rootNotDeletable: () => new BrokerError(403, 'the root admin cannot be deleted'),
  /** 403: the root admin's grants never change (spec §5, NOTES 9; the front and the apply both refuse). */
  rootGrantsFixed: () => new BrokerError(403, "the root admin's grants cannot change"),
  /** 403: a browser marked the request as sent from another origin (docs/decisions.md "Cross-origin requests");
   *  answered before credentials, body or work. */
  crossOrigin: (rule: string) => new BrokerError(403, `cross-origin request refused: ${rule}`),
  /** 403: remote routes with security off (NOTES 8, spec §7 403). */
  remotesNeedSecurity: () => new BrokerError(403, 'remotes need security on'),
  // 404, 405 ------------------------------------------------------------------------------------------------
  /** 404, plain text: no route has this path (spec §7). */
  routeNotFound: () => new BrokerError(404, 'not found', {}, true),
  /** 404: no such topic. */
  topicNotFound: (name: string) => new BrokerError(404, `topic ${name} not found`),
  /** 404: the parent a create names does not exist (spec §4 POST /v1/topics: whatever else the request holds). */
  parentNotFound: (name: string) => new BrokerError(404, `parent topic ${name} not found`),
  /** 404: a detach of two topics that are not linked (spec §4 DELETE .../children/{child}). */
  notLinked: (parent: string, child: string) => new BrokerError(404, `topic ${child} is not a child of topic ${parent}`),
  /** 404: no such user (spec §4 Users). */
  userNotFound: (username: string) => new BrokerError(404, `user ${username} not found`),
  /** 404: no such cluster member (spec §4 forget). */
  memberNotFound: (id: number) => new BrokerError(404, `member ${id} not found`),
  /** 404: /metrics asked on the API port while http.metrics_addr serves it (spec §4 Health and metrics). */
  metricsElsewhere: () => new BrokerError(404, 'metrics are served on http.metrics_addr'),
  /** 405, plain text, with Allow: the path exists under other methods (spec §7). */
  methodNotAllowed: (allow: string) => new BrokerError(405, 'method not allowed', { Allow: allow }, true),
  // 409, 410 ------------------------------------------------------------------------------------------------
  /** 409: a topic of this exact name exists (spec §4 POST /v1/topics). */
  topicExists: (name: string) => new BrokerError(409, `topic ${name} already exists`),
  /** 409: a topic whose name differs only in letter case exists; the message names it (spec §7 409). */
  topicNameConflict: (existing: string) =>
    new BrokerError(409, `topic name conflicts with existing topic ${existing} (names are unique ignoring letter case)`),
  /** 409: a user of this name exists (spec §4 POST /v1/users). */
  userExists: (username: string) => new BrokerError(409, `user ${username} already exists`),
  /** 409: forget of a member that still owns partitions (spec §7 409). */
  memberOwnsPartitions: (id: number, owned: number) => new BrokerError(409, `member ${id} owns ${owned} partitions`),
  /** 409: forget of a member a partition move still reads from or writes to (spec §7 409: move target). */
  memberInMove: (id: number, moves: number) => new BrokerError(409, `member ${id} is the source or destination of ${moves} partition moves`),
  /** 409: a move of a partition that is moving already (NOTES 16). */
  moveExists: (topic: string, partition: number) => new BrokerError(409, `partition ${partition} of topic ${topic} is already moving`),
  /** 409: abort, freeze or flip of a move that does not run (spec §7 409: move abort with no matching move). */
  moveNotFound: (topic: string, partition: number) => new BrokerError(409, `no matching move: partition ${partition} of topic ${topic} is not moving`),
  /** 409: abort of a move whose partition already changed owner; it finishes instead. */
  moveFlipped: (topic: string, partition: number) =>
    new BrokerError(409, `the move of partition ${partition} of topic ${topic} has already given it to its destination; it can only finish`),
  /** 409: a move whose source is not the partition's owner, or whose destination cannot take it. */
  moveRefused: (topic: string, partition: number, why: string) => new BrokerError(409, `partition ${partition} of topic ${topic} cannot move: ${why}`),
  /** 409: cancel of a decommission that does not run (NOTES 16). */
  decommissionNotRunning: (id: number) => new BrokerError(409, `member ${id} is not being decommissioned`),
  /** 409: a decommission that could never complete safely; the answer lists the reasons (spec §7 409, NOTES 16). */
  decommissionNeverCompletes: (id: number, codes: string) => new BrokerError(409, `decommission of member ${id} could never complete safely: ${codes}`),
  /** 409: forget of a live member being decommissioned that still holds accepted records (spec §3). */
  decommissionUndrained: (id: number) => new BrokerError(409, `member ${id} is not drained yet: forget it once its accepted records are held by their owners`),
  /** 409: a decommission that is running already. */
  decommissionRunning: (id: number) => new BrokerError(409, `member ${id} is being decommissioned already`),
  /** 409: forget of a member the leader sees alive (spec §4 forget: only a dead member). */
  memberAlive: (id: number) => new BrokerError(409, `member ${id} is alive: only a dead member, or a decommissioned one that holds nothing more, can be forgotten`),
  /** 409: forget whose removal from the voters could break quorum (spec §7 409). */
  forgetBreaksQuorum: (id: number, aliveCount: number, remainingCount: number) =>
    new BrokerError(409, `forgetting member ${id} could break quorum: ${aliveCount} of the remaining ${remainingCount} voters are alive`),
  /** 409: schema_base_version is not the topic's current version (spec §4 PATCH). */
  schemaBaseVersionMismatch: (current: number, given: number) =>
    new BrokerError(409, `schema_base_version: ${given} is not the current version ${current}`),
  /** 409: the topic holds schema_versions_max versions (spec §8). */
  schemaVersionsFull: (versionsMax: number) => new BrokerError(409, `schema: the topic holds ${versionsMax} versions, the most it may`),
  /** 409: the topic's schema history would pass its byte budget (spec §8, v3.1.0). */
  schemaTopicBudget: (bytesMax: number) => new BrokerError(409, `schema: the topic's schema history would pass ${bytesMax} bytes`),
  /** 409: the cluster's schema histories would pass their byte budget (spec §8, v3.1.0). */
  schemaClusterBudget: (bytesMax: number) => new BrokerError(409, `schema: the cluster's schema histories would pass ${bytesMax} bytes`),
  /** 409: another schema version was registered between the compatibility check and the write, twice in a row
   *  (spec §7 409: topic changed since it was read). */
  schemaChangedUnderRequest: (name: string) => new BrokerError(409, `topic ${name} changed while the request ran, twice in a row; retry`),
  /** 409: fan-out rule (spec §3 attach rules): one parent per child. */
  fanoutHasParent: (child: string, parent: string) => new BrokerError(409, `topic ${child} is already a child of topic ${parent}`),
  /** 409: fan-out rule (spec §3 attach rules): a child has no children, so a parent is never attached as a child. */
  fanoutChildIsParent: (child: string) => new BrokerError(409, `topic ${child} is a parent: a child has no children`),
  /** 409: fan-out rule (spec §3 attach rules): a child has no children, so a child takes none. */
  fanoutParentIsChild: (parent: string) => new BrokerError(409, `topic ${parent} is a child: a child has no children`),
  /** 409: fan-out rule: a topic is never its own child. */
  fanoutSelf: (name: string) => new BrokerError(409, `topic ${name} cannot be a child of itself`),
  /** 409: the parent holds the most children it may (spec §8 Children per parent). */
  fanoutChildrenFull: (parent: string, childrenMax: number) =>
    new BrokerError(409, `topic ${parent} has ${childrenMax} children, the most a parent may`),
  /** 409: the child's schema history is not the parent's (spec §3 attach rules, §7 409 schema history not identical). */
  fanoutSchemaMismatch: (child: string, parent: string) =>
    new BrokerError(409, `schema history of topic ${child} is not identical to that of topic ${parent}`),
  /** 409: the parent's retention cannot hold a delay child's delay plus one hour (spec §3, NOTES 14), at attach or
   *  at a PATCH that lowers it. */
  fanoutDelayRetention: (parent: string, retentionMs: number, delayMs: number) =>
    new BrokerError(409, `retention_ms ${retentionMs} of topic ${parent} cannot hold a delay of ${delayMs} ms plus one hour`),
  /** 409: PATCH of a child's schema while its parent manages it (spec §3, §4 PATCH). */
  childSchemaManaged: (child: string, parent: string) =>
    new BrokerError(409, `schema of topic ${child} is managed by its parent ${parent} while attached`),
  /** 409: produce to a delay child (spec §3, §4 Produce): copies from its parent are its only messages. */
  produceToDelayChild: (topic: string) => new BrokerError(409, `topic ${topic} is a delay child: it takes no direct produce`),
  /** 409: a topic of an attach was deleted or recreated between the request's read and the write, twice in a row
   *  (spec §4 POST /v1/topics: parent recreated under the request). */
  fanoutTopicChanged: (name: string) => new BrokerError(409, `topic ${name} changed while the request ran, twice in a row; retry`),
  /** 410: replay of an offset below the oldest kept one (spec §4 Consume). */
  offsetAgedOut: (offset: number) => new BrokerError(410, `offset ${offset} aged out by retention`),
  /** 410: the lease of a receipt handle is gone (spec §3 Lease, §7 410). */
  leaseGone: () => new BrokerError(410, 'lease gone: it ran out, was settled, or the message was delivered again under a new handle'),
  // 413, 415 ------------------------------------------------------------------------------------------------
  /** 413: body over the route's cap (spec §8). */
  bodyTooLarge: (bytesMax: number) => new BrokerError(413, `body: larger than ${bytesMax} bytes`),
  /** 413: a compressed batch body that decodes past the cap (spec §8: 16 MiB as sent and decoded). */
  decodedTooLarge: (bytesMax: number) => new BrokerError(413, `body: larger than ${bytesMax} bytes decoded`),
  /** 413: message index of a batch produce has a payload over the cap (spec §8 Single message payload). */
  messageTooLarge: (index: number) => new BrokerError(413, `message ${index}: message too large`),
  /** 415: spec §5.6, no accepted content type and no X-Svc-Client. */
  unsupportedContentType: () =>
    new BrokerError(415, 'Content-Type must be application/json or application/octet-stream, or send X-Svc-Client'),
  /** 415: Content-Encoding other than gzip or zstd on a batch produce (v3.2.0). */
  unsupportedContentEncoding: (encoding: string) =>
    new BrokerError(415, `Content-Encoding ${encoding} is not supported (use gzip or zstd)`),
  // 429, 431 ------------------------------------------------------------------------------------------------
  /** 429: the per-identity produce cap (spec §8, v3.1.0). */
  tooManyProduces: () => new BrokerError(429, 'too many in-flight produce requests for this identity', retryAfter1),
  /** 429: the per-identity consume cap (spec §8); a clamped wait still says so (X-Svc-Wait-Clamped). */
  tooManyConsumes: (waitClamped: string | null) =>
    new BrokerError(429, 'too many in-flight consume requests for this identity',
      waitClamped === null ? retryAfter1 : { ...retryAfter1, 'X-Svc-Wait-Clamped': waitClamped }),
  /** 429: the failed-login throttle (spec §5.2, NOTES 11): retry after retryAfterSeconds (at least 1). */
  tooManyFailedLogins: (retryAfterSeconds: number) =>
    new BrokerError(429, 'too many failed authentication attempts', { 'Retry-After': String(retryAfterSeconds) }),
  /** 431, plain text: header block over http.max_header_bytes (spec §7, §8). */
  headersTooLarge: () => new BrokerError(431, 'request header fields too large', {}, true),
  // 499, 500, 501 -------------------------------------------------------------------------------------------
  /** 499: the client went away (recorded, never sent; spec §7). */
  clientGone: () => new BrokerError(499, 'client went away'),
  /** 500: ingress log write failed; latched until restart (spec §7). */
  ingressFailed: () => new BrokerError(500, 'produce failed: ingress log unavailable'),
  /** 500: the bcrypt pool failed (spec §7 lists authentication unavailable among the 500 causes). */
  authenticationUnavailable: () => new BrokerError(500, 'authentication unavailable'),
  /** 500: the node could not do what was asked. */
  internal: (message = 'internal error') => new BrokerError(500, message),
  /** 500: a partition worker could not read a record it holds (a read or a consume; the worker logs why). */
  partitionUnreadable: () => new BrokerError(500, 'partition unreadable'),
  /** 421: the partition moved to another node while the request was on its way (spec §7 421); retry. */
  partitionMoved: (topicId: string, partition: number) =>
    new BrokerError(421, `partition ${partition} of topic ${topicId} moved to another node; retry`),
  /** 500: a moved partition's copy did not match what its source sent (issue 41: copy_unverifiable). */
  copyUnverifiable: (topicId: string, partition: number, detail: string) =>
    new BrokerError(500, `the copy of partition ${partition} of topic ${topicId} could not be verified: ${detail}`),
  /** 501: a route whose work comes in a later release of this codebase. */
  notImplemented: () => new BrokerError(501, 'not implemented'),
  // 503 -----------------------------------------------------------------------------------------------------
  /** 503: the batch body budget is spent (spec §8, v3.2.0). */
  batchBudgetFull: () => new BrokerError(503, 'batch body budget full, retry', retryAfter1),
  /** 503: every schema validation slot stayed busy for the whole wait (spec §8 Schema validation capacity). */
  schemaValidationBusy: (waitMs: number) =>
    new BrokerError(503, `schema validation slots all busy for ${waitMs} ms: nothing was checked or stored, retry`, retryAfter1),
  /** 503: graceful shutdown under way. */
  shuttingDown: () => new BrokerError(503, 'node shutting down', retryAfter1),
  /** 503: this node is being decommissioned and admits no new produce (spec §3, §7: Retry-After: 1). */
  nodeDecommissioning: () => new BrokerError(503, 'node being decommissioned: it admits no new produce; produce through another node', retryAfter1),
  /** 503 without Retry-After: the partition worker is shutting down (its logs closed, or a parked take ended). */
  partitionWorkerShuttingDown: () => new BrokerError(503, 'partition worker shutting down'),
  /** 503 without Retry-After: /healthz or /readyz not ready; the reason says why (spec §4 Health and metrics). */
  notReady: (reason: string) => new BrokerError(503, reason),
  /** 503: no partition of the topic has an owner that takes produces now (all dead or unreachable, spec §1.6). */
  noProducibleOwner: (topic: string) =>
    new BrokerError(503, `no partition of topic ${topic} has an owner that can be reached; nothing was stored, retry`, retryAfter1),
  /** 503: the partition's owner could not be reached (no connection for a forwarded request; for a pinned produce,
   *  marked dead or failing hand-offs for 3 s); nothing was applied (spec §1.6, §4, §7). */
  ownerUnreachable: (topic: string, partition: number, owner: number) =>
    new BrokerError(503, `partition ${partition} of topic ${topic}: its owner, node ${owner}, could not be reached; nothing was applied, retry`, retryAfter1),
  /** 502, plain text: a request forwarded to the partition's owner got no answer in time; it may have been applied
   *  (spec §7). */
  ownerNoAnswer: (topic: string, partition: number, owner: number) =>
    new BrokerError(502, `partition ${partition} of topic ${topic}: the owner, node ${owner}, did not answer in time; the request may have been applied`, {}, true),
  /** 503: an attach could not read a parent partition's high watermark from its owner (spec §4 POST .../children:
   *  retry; nothing linked). */
  attachOwnerUnreachable: (topic: string, partition: number) =>
    new BrokerError(503, `partition ${partition} of topic ${topic}: its owner did not answer with the attach point; nothing was linked, retry`, retryAfter1),
  /** 503: a topic this node lacks could not be confirmed missing with the leader (spec §5 topic change). */
  topicUnconfirmed: (name: string) =>
    new BrokerError(503, `topic ${name} is not known here and the leader could not be reached to confirm`, retryAfter2),
  /** 503: committed by the leader, not confirmed applied here (spec §7: read back, do not resend). */
  committedUnconfirmed: () =>
    new BrokerError(503, 'the change is committed but this node could not confirm it applied it: read back, do not resend', retryAfter2),
  /** 503: the metadata log failed on this node, latched until restart, or it is shutting down. */
  metadataLogUnavailable: () => new BrokerError(503, 'metadata log unavailable', retryAfter1),
  /** 503: no Raft leader to write metadata (spec §7 503). */
  noLeader: () => new BrokerError(503, 'no leader to write metadata', retryAfter1),
  /** 503: the leader could not be reached; nothing was written (spec §7: Retry-After: 2). */
  leaderUnreachable: () => new BrokerError(503, 'leader unreachable', retryAfter2),
  /** 503: the leader went away after the request was sent: it may have acted on it. */
  leaderUnreachableMaybeCommitted: () =>
    new BrokerError(503, 'leader unreachable: the change may have been committed; read back, do not resend', retryAfter2),
  /** 503: no live node can take new partitions (spec §7 503, v3.1.0). */
  noLiveNode: () => new BrokerError(503, 'no live node can take new partitions (every live node is down or being decommissioned)', retryAfter1),
  /** 503: leadership changed before the entry committed; it never will. */
  leadershipChanged: () => new BrokerError(503, 'leadership changed before the change committed; nothing changed', retryAfter1),
  /** 503: the entry was not applied within the proposal timeout; it may still commit. */
  changeUnconfirmed: () =>
    new BrokerError(503, 'the change was not confirmed within 5 s (no quorum?); read back before resending', retryAfter2),
  /** 503: this node stopped while the entry was in flight; it may be committed elsewhere. */
  stoppedUnconfirmed: () =>
    new BrokerError(503, 'this node stopped before it could confirm the change: it may be committed; read back, do not resend', retryAfter2),
  /** 503: Raft refused a membership change for now (one is already in flight). */
  membershipChangeRefused: (reason: string) => new BrokerError(503, `membership change refused for now: ${reason}`, retryAfter1),
  /** 503 without Retry-After: new partitions' owners were not placed (a new leader still applying); retry. */
  partitionsNotPlaced: (topic: string) =>
    new BrokerError(503, `partitions: owners of the new partitions of topic ${topic} were not placed; retry`),
  /** Any status: a refusal the leader on another node decided, relayed as it came in the wire shape every 3.2
   *  release shares (src/protocol/peer_messages.ts PeerRefusal), with the leader's text and Retry-After. */
  peerRefusal: (status: ErrorStatus, message: string, retryAfterSeconds?: number) =>
    new BrokerError(errorStatusOr500(status), message, retryAfterSeconds === undefined ? {} : { 'Retry-After': String(retryAfterSeconds) }),
  /** 503 without Retry-After: an owner placed for a partition was forgotten before the entry applied; retry. */
  ownerNotMember: (owner: number) => new BrokerError(503, `partition owner ${owner} is not a cluster member; retry`),
} as const;

type Catalog = typeof errors;
export type ErrorId = keyof Catalog;

/** A catalog id with the arguments its entry takes: plain data, so it crosses ports and the node transport. An id
 *  with the wrong arguments does not compile. */
export type Refusal<K extends ErrorId = ErrorId> = K extends ErrorId ? { id: K; args: Parameters<Catalog[K]> } : never;

/** The ids the metadata thread (its shell and the state machine's apply) refuses with. */
export const metadataRefusalIds = [
  'topicExists', 'topicNameConflict', 'topicNotFound', 'partitionsNotGrown', 'partitionsNotPlaced', 'ownerNotMember',
  'memberNotFound', 'memberOwnsPartitions', 'memberInMove', 'moveExists', 'moveNotFound', 'moveFlipped', 'moveRefused',
  'decommissionNotRunning', 'decommissionRunning', 'memberAlive', 'forgetBreaksQuorum', 'userExists', 'userNotFound',
  'forbidden', 'rootNotDeletable', 'rootGrantsFixed', 'schemaBaseVersionMismatch', 'schemaVersionsFull', 'schemaTopicBudget',
  'schemaClusterBudget', 'schemaChangedUnderRequest', 'notLinked', 'fanoutHasParent', 'fanoutChildIsParent',
  'fanoutParentIsChild', 'fanoutSelf', 'fanoutChildrenFull', 'fanoutSchemaMismatch', 'fanoutDelayRetention',
  'childSchemaManaged', 'fanoutTopicChanged', 'metadataLogUnavailable', 'noLeader', 'leaderUnreachable',
  'leaderUnreachableMaybeCommitted', 'committedUnconfirmed', 'noLiveNode', 'leadershipChanged', 'changeUnconfirmed',
  'stoppedUnconfirmed', 'membershipChangeRefused', 'peerRefusal',
] as const satisfies readonly ErrorId[];
export type MetadataRefusal = Refusal<(typeof metadataRefusalIds)[number]>;

/** The ids a partition worker refuses a request with (its 'failed' answer, thread_messages.ts). */
export const workerRefusalIds = ['partitionUnreadable', 'partitionWorkerShuttingDown', 'partitionMoved', 'copyUnverifiable'] as const satisfies readonly ErrorId[];
export type WorkerRefusal = Refusal<(typeof workerRefusalIds)[number]>;

/** The ids a batch produce body is refused with, on the front thread or a pool thread (BatchParse). */
export const batchRefusalIds = [
  'invalidJson', 'invalid', 'unknownField', 'messageInvalid', 'messageTooLarge', 'decodedTooLarge', 'undecodableBody',
  'batchBudgetFull',
] as const satisfies readonly ErrorId[];
export type BatchRefusal = Refusal<(typeof batchRefusalIds)[number]>;

/** The refusal of another thread as the front answers it. */
export function refusalError(refusal: Refusal): BrokerError {
  const entry = errors[refusal.id] as unknown as (...args: readonly unknown[]) => BrokerError;
  return entry(...refusal.args);
}

/** A refusal's text for a log line (the metadata thread logs its own refusals without making errors). */
export function refusalText(refusal: Refusal): string {
  return refusalError(refusal).message;
}
