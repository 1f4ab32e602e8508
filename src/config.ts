// Every setting (spec names, defaults, bounds) and every fixed spec limit, plus loading the resolved config
// from built-in defaults < profile < YAML/JSON file < SVC_* environment < command-line flags.
// Shared by every thread: main.ts calls loadConfig once at boot and passes the frozen Config (or parts of it)
// to the threads it starts; the HTTP layer reuses parseDuration/formatDuration for `wait`. Holds no state.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Command, CommanderError, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import { passwordOfFileText } from './client/password_file.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const secondMs = 1000;
const minuteMs = 60 * secondMs;
const hourMs = 60 * minuteMs;
const dayMs = 24 * hourMs;

/** Fixed spec limits that no setting changes. Clients see every one of them, so test_min leaves them alone. */
export const limits = {
  /** Bytes. Spec §8 Request body: over it 413, or 400 on user and attach-child routes. */
  request_body_bytes_max: 1 * MiB,
  /** Bytes, as sent and as decoded. Spec §8 Batch produce body (v3.2.0): over it 413. */
  batch_produce_body_bytes_max: 16 * MiB,
  /** Bytes of a body over its cap that the node reads and drops before it answers 413 (400 on user routes), so a
   *  client still sending can read the answer (spec §8); past it the node answers and closes at once. */
  body_drain_bytes_max: 64 * MiB,
  /** Messages. Spec §8 Messages per batch produce (v3.2.0): over it 400. */
  batch_produce_messages_max: 1000,
  /** Bytes of one message payload. Spec §8 Single message payload: over it 413 (`message <i>: message too large`). */
  payload_bytes_max: 1 * MiB,
  /** Bytes. Spec §8 Batch ack body (v3.1.0): over it 413. */
  batch_ack_body_bytes_max: 64 * KiB,
  /** Receipt handles per batch ack. Spec §8 (v3.1.0), NOTES 10: over it the whole request is 400. */
  batch_ack_handles_max: 100,
  /** Records per batch consume (`max`). Spec §8: over it 400. */
  batch_consume_max: 100,
  /** Partitions per topic, lower bound. Spec §8 Partitions per topic: under it 400. */
  partitions_min: 3,
  /** Milliseconds; a topic's retention_ms is this or more, or 0 (forever). Spec §8 Retention: under it 400. */
  retention_ms_min: 1 * hourMs,
  /** Milliseconds; used when visibility_timeout_ms is omitted or 0. Spec §8, NOTES 2. */
  visibility_timeout_ms_default: 30 * secondMs,
  /** Milliseconds. NOTES 2: a visibility_timeout_ms under it (other than 0) is 400. */
  visibility_timeout_ms_min: 1 * secondMs,
  /** Milliseconds (12 hours). NOTES 2: over it 400. */
  visibility_timeout_ms_max: 12 * hourMs,
  /** Leases per partition when a topic does not say. Spec §8; at the cap, new deliveries wait. */
  max_in_flight_per_partition_default: 1024,
  /** Acked-ahead offsets per partition when a topic does not say. Spec §8, NOTES 12: stops only first deliveries. */
  max_acked_ahead_per_partition_default: 1024,
  /** Characters of a topic name. Spec §4 POST /v1/topics: over it 400. */
  topic_name_chars_max: 200,
  /** Characters of a username. Spec §8 Username: over it 400. */
  username_chars_max: 64,
  /** Bytes of a password (bcrypt reads no further). Spec §8 Password: over it 400; at boot, a ConfigError. */
  password_bytes_max: 72,
  /** Topics per listing page when `limit` is omitted. Spec §8 Listing topics. */
  list_topics_limit_default: 100,
  /** Topics per listing page. Spec §8 Listing topics: a larger `limit` is treated as this. */
  list_topics_limit_max: 1000,
  /** Bytes of an `error` text in an answer; longer texts are cut so an answer never echoes a huge input. */
  error_text_bytes_max: 2048,
  /** Bytes of one schema document. Spec §8 Schema document: over it 400. */
  schema_doc_bytes_max: 256 * KiB,
  /** Levels of objects and arrays in a schema document. Spec §8 Schema document: deeper is 400. */
  schema_doc_depth_max: 64,
  /** Versions in one topic's schema history. Spec §8 Schema versions per topic: the next one is 409. */
  schema_versions_max: 1000,
  /** Bytes of one topic's schema history. Spec §8 Stored schema history (v3.1.0): past it 409. */
  schema_topic_history_bytes_max: 4 * MiB,
  /** Bytes of every topic's schema history in the cluster (each child's copy counted). Spec §8: past it 409. */
  schema_cluster_history_bytes_max: 256 * MiB,
  /** Levels of objects and arrays in a payload checked against a schema. Spec §8 (v3.1.0): deeper is 400. */
  schema_payload_depth_max: 256,
  /** Bytes of a body on the remotes routes (and reencrypt-remotes). Spec §7 413, §8: over it 413. */
  remotes_body_bytes_max: 128 * KiB,
  /** Milliseconds (365 days) of a delay child's fanout_delay_ms. Spec §8 Delay child delay: over it 400. */
  fanout_delay_ms_max: 365 * dayMs,
  /** Children of one parent. Spec §8 Children per parent: the next attach is 409. */
  fanout_children_max: 108,
  /** Milliseconds a parent's retention must hold beyond its longest child delay (spec §3: the delay plus one hour;
   *  409 at attach and at a PATCH that lowers the retention). */
  fanout_delay_retention_margin_ms: 1 * hourMs,
  /** Characters of one grant pattern. Spec §2 Grant: an empty or longer pattern is 400. */
  grant_pattern_chars_max: 255,
  /** Leases (or acked-ahead offsets) a topic may set per partition. The spec sets no upper bound; this one keeps a
   *  lease table's memory finite (docs/decisions.md): over it 400. */
  per_partition_cap_max: 1_000_000,
  /** Node ids are 1 to this. Spec §2 Cluster member: a forget of another id is 400. */
  node_id_max: 65_535,
  /** Milliseconds. Spec §4 /readyz: a follower that heard no leader within this answers 503. */
  leader_heard_within_ms: 5 * secondMs,
  /** Milliseconds graceful shutdown waits for in-flight requests; past it the listeners close anyway. */
  shutdown_drain_ms_max: 10 * secondMs,
  /** Characters of an audit line's target (spec §6); a longer target is cut, never refused. */
  audit_target_chars_max: 256,
} as const;

// Relations between limits, checked once at load as TigerBeetle checks its constants at compile time.
assert(limits.payload_bytes_max <= limits.request_body_bytes_max);
assert(limits.payload_bytes_max <= limits.batch_produce_body_bytes_max);
assert(limits.visibility_timeout_ms_min <= limits.visibility_timeout_ms_default);
assert(limits.visibility_timeout_ms_default <= limits.visibility_timeout_ms_max);
assert(limits.list_topics_limit_default <= limits.list_topics_limit_max);

/** A setting, a source or a flag was wrong; the message names the key, the source and the rule. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** One declared setting: its default and how each kind of source writes it. */
interface Setting<T> {
  readonly defaultValue: T;
  /** What a valid value looks like, for error messages: "must be an integer from 4096 to 1048576". */
  readonly rule: string;
  /** A value from a YAML or JSON file, typed by the parser; undefined when it breaks the rule. */
  readonly fromFile: (raw: unknown) => T | undefined;
  /** A value from an environment variable or a flag; undefined when it breaks the rule. */
  readonly fromText: (text: string) => T | undefined;
}

function declared<T>(setting: Setting<T>): Setting<T> {
  // A default must pass its own rule, or the node could never start without overriding it.
  assert.deepEqual(setting.fromFile(setting.defaultValue), setting.defaultValue, setting.rule);
  return setting;
}

function inRange(value: number, min: number, max: number): boolean {
  return value >= min && value <= max;
}

function intSetting(defaultValue: number, min: number, max: number, zeroAllowed = false): Setting<number> {
  const check = (n: unknown): number | undefined =>
    typeof n === 'number' && Number.isSafeInteger(n) && (inRange(n, min, max) || (zeroAllowed && n === 0))
      ? n : undefined;
  return declared({
    defaultValue,
    rule: `must be ${zeroAllowed ? '0 or ' : ''}an integer from ${min} to ${max}`,
    fromFile: check,
    fromText: (text) => (/^\d{1,16}$/.test(text) ? check(Number(text)) : undefined),
  });
}

function sizeSetting(defaultValue: number, min: number, max: number): Setting<number> {
  const check = (n: number | null): number | undefined => (n !== null && inRange(n, min, max) ? n : undefined);
  return declared({
    defaultValue,
    rule: `must be a size from ${formatSize(min)} to ${formatSize(max)} (bytes, or a number with KiB, MiB, GiB or TiB)`,
    fromFile: (raw) =>
      typeof raw === 'number' ? check(Number.isSafeInteger(raw) ? raw : null)
        : typeof raw === 'string' ? check(parseSize(raw)) : undefined,
    fromText: (text) => check(parseSize(text)),
  });
}

/** Durations resolve to milliseconds; a file may also give a plain integer, meaning milliseconds. */
function durationSetting(defaultMs: number, minMs: number, maxMs: number): Setting<number> {
  const check = (ms: number | null): number | undefined => (ms !== null && inRange(ms, minMs, maxMs) ? ms : undefined);
  return declared({
    defaultValue: defaultMs,
    rule: `must be a duration from ${formatDuration(minMs)} to ${formatDuration(maxMs)} (Go syntax, e.g. 250ms, 1m30s)`,
    fromFile: (raw) =>
      typeof raw === 'number' ? check(Number.isSafeInteger(raw) ? raw : null)
        : typeof raw === 'string' ? check(parseDuration(raw)) : undefined,
    fromText: (text) => check(parseDuration(text)),
  });
}

function booleanSetting(defaultValue: boolean): Setting<boolean> {
  return declared({
    defaultValue,
    rule: 'must be true or false',
    fromFile: (raw) => (typeof raw === 'boolean' ? raw : undefined),
    fromText: (text) => (text === 'true' ? true : text === 'false' ? false : undefined),
  });
}

function enumSetting<const V extends readonly string[]>(values: V, defaultValue: V[number]): Setting<V[number]> {
  const check = (raw: unknown): V[number] | undefined =>
    values.find((value) => value === raw);
  return declared({ defaultValue, rule: `must be one of ${values.join(', ')}`, fromFile: check, fromText: check });
}

/** The fault points test.fault_points may name. */
export const faultPoints = ['ingress.write', 'ingress.sync'] as const;

function stringSetting(defaultValue: string, rule: string, ok: (text: string) => boolean): Setting<string> {
  const check = (raw: unknown): string | undefined => (typeof raw === 'string' && ok(raw) ? raw : undefined);
  return declared({ defaultValue, rule, fromFile: check, fromText: check });
}

const nonEmpty = (text: string): boolean => text !== '';

/**
 * Every setting, keyed by its spec name. The resolved Config has the same keys; durations are in milliseconds and
 * sizes in bytes there. The environment variable is SVC_ + the key upper-cased with dots as underscores.
 */
export const settings = {
  /** Which built-in defaults apply: `test_min` shrinks internal sizes (segment rolls) so tests reach them in
   *  seconds. Client-visible limits never change with the profile (STYLE §4). */
  profile: enumSetting(['default', 'test_min'], 'default'),
  /** TCP port of the API listener. Spec §1.1: 7942. 0 picks a free port (tests). Flag --port. */
  'node.port': intSetting(7942, 0, 65535),
  /** Address the API listener binds. Flag --host. */
  'node.host': stringSetting('0.0.0.0', 'must be a non-empty string', nonEmpty),
  /** Directory holding the ingress log, partition segments and Raft metadata. Flag --data-dir. */
  'node.data_dir': stringSetting('./data', 'must be a non-empty string', nonEmpty),
  /** Partition worker threads. Default: one per core but the one the front thread takes, capped at the bound. */
  'node.workers': intSetting(Math.min(64, Math.max(1, availableParallelism() - 1)), 1, 64),
  /** Spec §1.13, §5.1, §5.5: when false no request needs credentials and every grant check passes
   *  (NOTES 8 lists what still answers 403). Flag --security on|off. */
  'security.enabled': booleanSetting(true),
  /** Least severe log level written (pino levels). Flag --log-level. */
  'log.level': enumSetting(['fatal', 'error', 'warn', 'info', 'debug', 'trace'], 'info'),
  /** Bytes of a request's header block. Spec §8 Request headers: over it 431 (plain text). At most 96 KiB: this
   *  uWS build resets, without an answer, any block past about 124 KiB, so a higher limit could not be answered. */
  'http.max_header_bytes': intSetting(64 * KiB, 4 * KiB, 96 * KiB),
  /** Longest consume long-poll (ms once resolved). Spec §8 Consume wait, NOTES 4: a longer `wait` is clamped
   *  and X-Svc-Wait-Clamped carries the value used. */
  'http.max_consume_wait': durationSetting(10 * secondMs, 0, 1 * hourMs),
  /** Concurrent consumes per user (per client IP with security off) on this node; a batch counts as its max
   *  clamped to the cap, long polls count while waiting. Spec §8: over it 429. */
  'http.max_consume_in_flight_per_identity': intSetting(1024, 1, 1_000_000),
  /** Concurrent produces per user on this node, a batch counting as its message count clamped to the cap;
   *  0 turns the cap off. Spec §8 (v3.1.0): over it 429. */
  'http.max_produce_in_flight_per_identity': intSetting(0, 0, 1_000_000),
  /** Bytes of batch produce bodies over 1 MiB being read at once on this node; must hold one largest batch body.
   *  Spec §8 (v3.2.0): over it 503 with Retry-After: 1. */
  'http.max_batch_body_bytes_in_flight': sizeSetting(256 * MiB, limits.batch_produce_body_bytes_max, 64 * GiB),
  /** Open connections on this node. Spec §8 Open connections: extra connections wait. */
  'http.max_connections': intSetting(4096, 1, 1_000_000),
  /** host:port of a separate listener for /metrics, /healthz and /readyz, served without credentials; empty
   *  serves /metrics on the API port instead. Spec §5.4. */
  'http.metrics_addr': stringSetting(
    '',
    'must be empty or host:port with a port from 0 to 65535',
    (text) => text === '' || parseListenAddress(text) !== null,
  ),
  /** Spec §5.4: when http.metrics_addr is empty, /metrics on the API port needs no credentials if true. */
  'http.metrics_unauthenticated': booleanSetting(false),
  /** Consecutive wrong passwords for an existing user before the throttle starts. Spec §5.2, §8, NOTES 11:
   *  over it 429 with Retry-After. */
  'auth.failed_login_threshold': intSetting(5, 1, 1000),
  /** While throttled, one checked attempt per this interval (ms once resolved). Spec §5.2, §8, NOTES 11. */
  'auth.failed_login_retry_interval': durationSetting(12 * secondMs, 1 * secondMs, 1 * hourMs),
  /** Password checks the node budget holds for users with recent failures. Spec §5.2, §8 (v3.1.0):
   *  an empty budget answers 429. */
  'auth.login_check_budget': intSetting(32, 1, 100_000),
  /** Password checks added back to that budget each second. Spec §5.2, §8 (v3.1.0). */
  'auth.login_check_refill_per_second': intSetting(4, 1, 100_000),
  /** bcrypt verifications running at once on this node (piscina pool size). Spec §5.2: 4 slots. */
  'auth.verify_slots': intSetting(4, 1, 64),
  /** bcrypt cost (log2 rounds) for passwords set on this node; each step doubles the time of a check. */
  'auth.bcrypt_cost': intSetting(10, 4, 15),
  /** Schema validations running at once in the schema pool; 0: one per CPU core (os.availableParallelism()).
   *  Spec §8 Schema validation capacity: payloads over 16 KiB and costly schemas validate under this bound. */
  'schema.validation_slots': intSetting(0, 1, 1024, true),
  /** Longest wait of a produce for a schema validation slot. Spec §8: over 5 s it answers 503. */
  'schema.validation_wait': durationSetting(5 * secondMs, 10, 1 * minuteMs),
  /** Longest time one payload may take in the schema pool (a regular expression gone exponential): past it the pool
   *  thread is terminated and the produce answered 400. */
  'schema.validation_payload_time': durationSetting(1 * secondMs, 10, 1 * minuteMs),
  /** Milliseconds a topic created without retention_ms keeps messages; 0 keeps them forever.
   *  Spec §8 Retention: 7 days in the binary. */
  'topics.retention_ms_default': intSetting(7 * dayMs, limits.retention_ms_min, Number.MAX_SAFE_INTEGER, true),
  /** Partitions per topic, upper bound. Spec §8 Partitions per topic (108 default): over it 400. */
  'topics.partitions_max': intSetting(108, limits.partitions_min, 4096),
  /** Bytes after which a partition's segment file rolls to a new one; retention deletes whole segments. */
  'storage.segment_bytes': sizeSetting(64 * MiB, 4 * KiB, 4 * GiB - 1),
  /** Bytes after which the node's ingress log rolls to a new segment; handed-off segments are then deleted. */
  'storage.ingress_segment_bytes': sizeSetting(64 * MiB, 4 * KiB, 4 * GiB - 1),
  /** How often each partition worker deletes segments older than their topic's retention_ms (spec §1.12). */
  'storage.retention_check_interval': durationSetting(30 * secondMs, 100, 1 * hourMs),
  /** Shortest time between two flush rounds of a partition worker (each round is one write per partition it
   *  touched): longer coalesces more records per write under load, and delays when consumers see them by as much.
   *  0: a round starts as soon as the previous one ends (a write into the page cache costs microseconds). */
  'storage.partition_flush_interval': durationSetting(0, 0, 1 * secondMs),
  /** Longest time a partition's written records wait for their fdatasync. The ingress log keeps every record until
   *  that sync (and hands them over again after a crash), so longer means fewer syncs, more ingress log kept and a
   *  longer replay at restart; consumers never wait for it. */
  'storage.partition_sync_interval': durationSetting(200, 0, 1 * minuteMs),
  /** How long a partition's changed ack state may wait before it is written to its ack log: what a kill -9 can
   *  forget of acks (those messages are delivered again, at least once). */
  'storage.ack_flush_interval': durationSetting(100, 1, 10 * secondMs),
  /** This node's id in the cluster: a positive integer, kept in <data_dir>/node-id at first start, after which a
   *  different value is refused (the data belongs to that node). 0: the stored id, or 1 on a first start.
   *  Flag --node-id. Issue 6: partition owners (owner_node) and Raft voters are named by it. */
  'cluster.node_id': intSetting(0, 1, 65535, true),
  /** TCP port of the node-to-node listener (Raft and forwarding). Flag --internal-port. */
  'cluster.internal_port': intSetting(7943, 0, 65535),
  /** Addresses other nodes and clients are told to use: `api-host:port[,internal-host:port]`; empty advertises
   *  node.host (127.0.0.1 when it is a wildcard) with node.port and cluster.internal_port. Flag --advertise. */
  'cluster.advertise': stringSetting('', 'must be empty or host:port[,host:port] (API address, then internal address)', (text) =>
    text === '' || parseAdvertise(text) !== null),
  /** A new cluster's voters, `id=host:port,...` with internal addresses; every founding node is given the same
   *  list and its own id in it. Empty with no join: a one-node cluster. Flag --bootstrap. */
  'cluster.bootstrap': stringSetting('', 'must be empty or id=host:port,... with distinct positive ids', (text) =>
    text === '' || parseBootstrap(text) !== null),
  /** Internal address (host:port) of any node of a running cluster for a new node to join. Flag --join. */
  'cluster.join': stringSetting('', 'must be empty or host:port', (text) => text === '' || parseHostPort(text) !== null),
  /** File holding the cluster secret (at least 32 bytes) that authenticates node-to-node connections; needed
   *  with --bootstrap or --join. Flag --cluster-secret-file. */
  'cluster.secret_file': stringSetting('', 'must be a path', () => true),
  /** PEM certificate (chain) of this node for mutual TLS on the node-to-node port, signed by cluster.tls_ca_file's
   *  CA and naming the addresses other nodes dial it at. All three cluster.tls_* settings or none: without them the
   *  port is HMAC-authenticated but not encrypted. Flag --cluster-tls-cert. */
  'cluster.tls_cert_file': stringSetting('', 'must be a path', () => true),
  /** PEM private key of cluster.tls_cert_file. Flag --cluster-tls-key. */
  'cluster.tls_key_file': stringSetting('', 'must be a path', () => true),
  /** PEM certificate(s) of the CA whose certificates other nodes must present. Flag --cluster-tls-ca. */
  'cluster.tls_ca_file': stringSetting('', 'must be a path', () => true),
  /** One Raft tick; elections time out after cluster.election_ticks to twice that many ticks. */
  'cluster.tick_interval': durationSetting(100, 10, 1 * secondMs),
  /** Ticks without a leader before a voter campaigns (randomised up to twice as many). Heartbeats go every tick. */
  'cluster.election_ticks': intSetting(10, 3, 1000),
  /** A member is dead once the leader has not heard from it for this long (spec §2 Cluster member liveness). */
  'cluster.member_dead_after': durationSetting(5 * secondMs, 500, 10 * 60 * secondMs),
  /** Applied metadata entries between two snapshots of the metadata state; older log entries are then dropped. */
  'cluster.snapshot_entries': intSetting(10_000, 2, 10_000_000),
  /** Bytes of synced ingress groups held in memory for one other owner until it confirms them; past it, that
   *  owner's backlog is read back from the ingress log's files (issue 29). */
  'cluster.handoff_queue_bytes': sizeSetting(64 * MiB, 64 * KiB, 16 * GiB),
  /** Partition moves this node copies at once as their destination; more wait their turn (issue 41). */
  'cluster.moves_max_per_node': intSetting(2, 1, 64),
  /** Bytes per second this node's moves fetch from their sources together (issue 41): a move does not starve the
   *  produce and consume traffic of either node. */
  'cluster.move_bytes_per_second': sizeSetting(64 * MiB, 64 * KiB, 16 * GiB),
  /** Set-aside copies (a moved partition's old files, a discarded incoming copy) are removed this long after they
   *  were set aside (issue 41, spec §2 Cluster member). */
  'cluster.set_aside_retention_ms': durationSetting(24 * hourMs, 0, 8760 * hourMs),
  /** Named fault points switched on for tests only (STYLE §6): a comma list of ingress.write, ingress.sync.
   *  Each makes that step of the ingress log fail, so tests can see the 500 latch of spec §7. Empty in service. */
  'test.fault_points': stringSetting('', 'a comma list of ingress.write, ingress.sync', (text) =>
    text === '' || text.split(',').every((point) => (faultPoints as readonly string[]).includes(point.trim()))),
};

type Settings = typeof settings;
export type SettingKey = keyof Settings;
/** The resolved configuration: flat, frozen, keyed by spec names; durations in ms, sizes in bytes. */
export type Config = { readonly [K in keyof Settings]: Settings[K] extends Setting<infer T> ? T : never };
export type Profile = Config['profile'];

/** Defaults each profile changes; anything a source sets explicitly still wins over these. */
const profileDefaults: Readonly<Record<Profile, Partial<Config>>> = {
  default: {},
  test_min: { 'storage.segment_bytes': 64 * KiB, 'storage.ingress_segment_bytes': 256 * KiB, 'storage.retention_check_interval': 1 * secondMs },
};

export const settingKeys = Object.keys(settings) as readonly SettingKey[];

function isSettingKey(key: string): key is SettingKey {
  return Object.hasOwn(settings, key);
}

/** The environment variable that sets key: `http.max_consume_wait` -> `SVC_HTTP_MAX_CONSUME_WAIT`. */
export function envVarOf(key: SettingKey): string {
  return `SVC_${key.toUpperCase().replaceAll('.', '_')}`;
}

const keyByEnvVar: ReadonlyMap<string, SettingKey> = new Map(settingKeys.map((key) => [envVarOf(key), key]));
assert.equal(keyByEnvVar.size, settingKeys.length, 'two settings share an environment variable');

const adminPasswordEnvVar = 'SVC_ADMIN_PASSWORD';
assert(!keyByEnvVar.has(adminPasswordEnvVar));

/** The built-in defaults of a profile, with no file, environment or flags: for sims and tests. */
export function defaultConfig(profile: Profile = 'default'): Config {
  const values: Record<string, unknown> = {};
  for (const key of settingKeys) values[key] = settings[key].defaultValue;
  return Object.freeze({ ...values, ...profileDefaults[profile], profile }) as Config;
}

// Go duration units in nanoseconds; Go accepts both spellings of micro.
const durationUnitNs: ReadonlyMap<string, bigint> = new Map([
  ['ns', 1n], ['us', 1_000n], ['µs', 1_000n], ['μs', 1_000n], ['ms', 1_000_000n],
  ['s', 1_000_000_000n], ['m', 60_000_000_000n], ['h', 3_600_000_000_000n],
]);
const durationNsMax = 2n ** 63n - 1n; // Go's time.Duration is an int64 of nanoseconds.
// The longest valid duration Go prints is 24 characters; a bound keeps a hostile `wait` from costing much.
const durationTextCharsMax = 64;

/**
 * Parses Go duration syntax (`0`, `250ms`, `1.5s`, `1h30m`, units ns us µs ms s m h) into whole milliseconds,
 * truncating as Go's Duration.Milliseconds() does. Null when unparsable, negative (any `-` sign) or over Go's range.
 */
export function parseDuration(text: string): number | null {
  let rest = text.startsWith('+') ? text.slice(1) : text;
  if (rest === '0') return 0;
  if (rest === '' || text.length > durationTextCharsMax) return null;
  let totalNs = 0n;
  while (rest !== '') {
    // Every part of the pattern is optional, so it always matches; a term without digits or unit is invalid.
    const [term = '', whole = '', fraction = '', unit = ''] = /^(\d*)(?:\.(\d*))?([^\d.]*)/.exec(rest) ?? [];
    const unitNs = durationUnitNs.get(unit);
    if ((whole === '' && fraction === '') || unitNs === undefined) return null;
    totalNs += BigInt(whole === '' ? '0' : whole) * unitNs;
    if (fraction !== '') totalNs += (BigInt(fraction) * unitNs) / 10n ** BigInt(fraction.length);
    if (totalNs > durationNsMax) return null;
    rest = rest.slice(term.length);
  }
  return Number(totalNs / 1_000_000n);
}

/** Prints whole milliseconds as Go's Duration.String() does: 0s, 250ms, 1.5s, 1m0s, 1h30m0s. */
export function formatDuration(ms: number): string {
  assert(Number.isSafeInteger(ms), 'duration must be whole milliseconds');
  assert(ms >= 0, 'duration must not be negative');
  if (ms === 0) return '0s';
  if (ms < secondMs) return `${ms}ms`;
  const hours = Math.floor(ms / hourMs);
  const minutes = Math.floor((ms % hourMs) / minuteMs);
  const seconds = Math.floor((ms % minuteMs) / secondMs);
  const fractionMs = ms % secondMs;
  const fraction = fractionMs === 0 ? '' : `.${String(fractionMs).padStart(3, '0').replace(/0+$/, '')}`;
  const head = hours > 0 ? `${hours}h${minutes}m` : minutes > 0 ? `${minutes}m` : '';
  return `${head}${seconds}${fraction}s`;
}

const sizeUnitBytes: ReadonlyMap<string, number> = new Map([
  ['', 1], ['B', 1], ['KiB', KiB], ['MiB', MiB], ['GiB', GiB], ['TiB', 1024 * GiB],
]);

/** Parses `1048576`, `256KiB`, `64MiB`, `1.5GiB` into whole bytes; null when malformed or not whole bytes. */
export function parseSize(text: string): number | null {
  const match = /^(\d{1,16}(?:\.\d{1,16})?) ?([A-Za-z]*)$/.exec(text);
  if (match === null) return null;
  const unitBytes = sizeUnitBytes.get(match[2] ?? '');
  if (unitBytes === undefined) return null;
  const bytes = Number(match[1]) * unitBytes;
  return Number.isSafeInteger(bytes) ? bytes : null;
}

function formatSize(bytes: number): string {
  for (const [unit, unitBytes] of [['GiB', GiB], ['MiB', MiB], ['KiB', KiB]] as const) {
    if (bytes >= unitBytes && bytes % unitBytes === 0) return `${bytes / unitBytes}${unit}`;
  }
  return String(bytes);
}

/** Splits `host:port`, `:port` or `[v6]:port`; host '' means every interface. Null when malformed. */
export function parseListenAddress(text: string): { host: string; port: number } | null {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (match === null || port > 65535) return null;
  return { host: match[1] ?? match[2] ?? '', port };
}

/** `host:port` another node can dial or be told: a non-empty host and a port from 1; null when malformed. */
export function parseHostPort(text: string): { host: string; port: number } | null {
  const address = parseListenAddress(text);
  return address === null || address.host === '' || address.port === 0 ? null : address;
}

/** The `host:port` text parseHostPort reads back: an IPv6 host goes in brackets. */
export function formatHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** `id=host:port,...` -> id -> address; null when malformed or an id repeats. */
export function parseBootstrap(text: string): Map<number, { host: string; port: number }> | null {
  const voters = new Map<number, { host: string; port: number }>();
  for (const part of text.split(',')) {
    const match = /^(\d{1,5})=(.+)$/.exec(part.trim());
    const id = Number(match?.[1]);
    const address = match === null ? null : parseHostPort(match[2] ?? '');
    if (address === null || !Number.isSafeInteger(id) || id < 1 || id > 65535 || voters.has(id)) return null;
    voters.set(id, address);
  }
  return voters;
}

/** `api-host:port[,internal-host:port]`; null when malformed. */
export function parseAdvertise(text: string): { api: { host: string; port: number }; internal?: { host: string; port: number } } | null {
  const [apiText, internalText, extra] = text.split(',');
  if (extra !== undefined || apiText === undefined) return null;
  const api = parseHostPort(apiText.trim());
  if (api === null) return null;
  if (internalText === undefined) return { api };
  const internal = parseHostPort(internalText.trim());
  return internal === null ? null : { api, internal };
}

/** Settings that are valid alone but conflict together; each is checked once every source is merged. */
const relations: readonly { keys: readonly [SettingKey, SettingKey]; rule: string; holds: (c: Config) => boolean }[] = [
  {
    keys: ['cluster.bootstrap', 'cluster.join'],
    rule: 'a node either founds a cluster or joins one, not both',
    holds: (c) => c['cluster.bootstrap'] === '' || c['cluster.join'] === '',
  },
  {
    keys: ['cluster.bootstrap', 'cluster.node_id'],
    rule: "the bootstrap list must name this node's id (give --node-id)",
    holds: (c) => c['cluster.bootstrap'] === '' || (parseBootstrap(c['cluster.bootstrap'])?.has(c['cluster.node_id']) ?? false),
  },
  {
    keys: ['cluster.join', 'cluster.node_id'],
    rule: 'a joining node needs its own id (give --node-id)',
    holds: (c) => c['cluster.join'] === '' || c['cluster.node_id'] !== 0,
  },
  {
    keys: ['cluster.secret_file', 'cluster.bootstrap'],
    rule: 'a node of a multi-node cluster needs the cluster secret (give --cluster-secret-file)',
    holds: (c) => c['cluster.secret_file'] !== '' || ((parseBootstrap(c['cluster.bootstrap'])?.size ?? 1) <= 1 && c['cluster.join'] === ''),
  },
  {
    keys: ['http.metrics_addr', 'node.port'],
    rule: 'the metrics listener must not take the API port on the same host',
    holds: (c) => {
      const metrics = parseListenAddress(c['http.metrics_addr']);
      if (metrics === null || c['node.port'] === 0 || metrics.port !== c['node.port']) return true;
      const wildcard = (host: string): boolean => host === '' || host === '0.0.0.0' || host === '::';
      return !wildcard(metrics.host) && !wildcard(c['node.host']) && metrics.host !== c['node.host'];
    },
  },
];

/** One source's settings: key -> value already checked against the setting's rule, with the source's name. */
type Given = Map<SettingKey, { value: unknown; source: string }>;

function giveValue(given: Given, key: SettingKey, value: unknown, source: string): void {
  const earlier = given.get(key);
  if (earlier !== undefined) {
    const sources = earlier.source === source ? `in ${source}` : `(from ${earlier.source} and ${source})`;
    throw new ConfigError(`config: ${key} is given twice ${sources}; give it once`);
  }
  given.set(key, { value, source });
}

function checkText(key: SettingKey, text: string, source: string): unknown {
  const value = settings[key].fromText(text);
  if (value === undefined) throw new ConfigError(`config: ${key} (from ${source}): ${settings[key].rule}`);
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Reads settings from a file written as nested objects, dotted keys, or both. Checked by hand rather than by an ajv
 * schema (STYLE §4) because each value must be checked by its setting's own rule and the error must name the key,
 * the file and that rule; the walk refuses any key no setting declares, as additionalProperties: false would.
 */
async function readConfigFile(path: string): Promise<Given> {
  const text = await readTextFile(path, '--config');
  let doc: unknown;
  try {
    doc = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new ConfigError(`config: ${path}: not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${String(err)}`);
  }
  const given: Given = new Map();
  if (doc === null || doc === undefined) return given; // An empty file sets nothing.
  if (!isPlainObject(doc)) throw new ConfigError(`config: ${path}: must hold a mapping of settings`);
  const walk = (section: Record<string, unknown>, prefix: string): void => {
    for (const [name, raw] of Object.entries(section)) {
      const key = prefix === '' ? name : `${prefix}.${name}`;
      if (isSettingKey(key)) {
        const value = settings[key].fromFile(raw);
        if (value === undefined) throw new ConfigError(`config: ${key} (from ${path}): ${settings[key].rule}`);
        giveValue(given, key, value, path);
      } else if (isPlainObject(raw) && settingKeys.some((k) => k.startsWith(`${key}.`))) {
        walk(raw, key);
      } else {
        throw new ConfigError(`config: ${key} (from ${path}): unknown setting`);
      }
    }
  };
  walk(doc, '');
  return given;
}

function readEnv(env: Readonly<Record<string, string | undefined>>): Given {
  const given: Given = new Map();
  for (const [name, text] of Object.entries(env)) {
    if (!name.startsWith('SVC_') || name === adminPasswordEnvVar || text === undefined) continue;
    const key = keyByEnvVar.get(name);
    if (key === undefined) throw new ConfigError(`config: ${name} (from environment): unknown setting`);
    giveValue(given, key, checkText(key, text, name), name);
  }
  return given;
}

async function readTextFile(path: string, flag: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new ConfigError(`config: ${flag} ${path}: cannot read (${code})`);
  }
}

interface SettingFlag {
  readonly flags: string;
  readonly description: string;
  readonly key: SettingKey;
  /** Maps the flag's own words to the setting's text form; undefined when the flag's rule is broken. */
  readonly textOf?: (flagText: string) => string | undefined;
  readonly rule?: string;
}

/** Flags that set one setting each; `--set key=value` reaches every setting. */
const settingFlags: readonly SettingFlag[] = [
  { flags: '--port <n>', description: 'API port, 0 picks a free one', key: 'node.port' },
  { flags: '--host <address>', description: 'address the API listener binds', key: 'node.host' },
  { flags: '--data-dir <dir>', description: 'data directory', key: 'node.data_dir' },
  { flags: '--workers <n>', description: 'partition worker threads', key: 'node.workers' },
  { flags: '--log-level <level>', description: 'fatal, error, warn, info, debug or trace', key: 'log.level' },
  { flags: '--profile <profile>', description: 'default or test_min', key: 'profile' },
  { flags: '--node-id <n>', description: 'this node\'s cluster id (positive integer)', key: 'cluster.node_id' },
  { flags: '--internal-port <n>', description: 'node-to-node port', key: 'cluster.internal_port' },
  { flags: '--advertise <addresses>', description: 'api-host:port[,internal-host:port] other nodes are told', key: 'cluster.advertise' },
  { flags: '--bootstrap <voters>', description: 'id=host:port,... founding voters of a new cluster', key: 'cluster.bootstrap' },
  { flags: '--join <host:port>', description: 'internal address of a node of the cluster to join', key: 'cluster.join' },
  { flags: '--cluster-secret-file <path>', description: 'file with the cluster secret (>= 32 bytes)', key: 'cluster.secret_file' },
  { flags: '--cluster-tls-cert <path>', description: 'PEM certificate of this node for node-to-node TLS', key: 'cluster.tls_cert_file' },
  { flags: '--cluster-tls-key <path>', description: 'PEM private key of --cluster-tls-cert', key: 'cluster.tls_key_file' },
  { flags: '--cluster-tls-ca <path>', description: 'PEM CA certificate(s) node-to-node TLS trusts', key: 'cluster.tls_ca_file' },
  {
    flags: '--security <on|off>',
    description: 'require credentials (on) or not (off)',
    key: 'security.enabled',
    textOf: (flagText) => (flagText === 'on' ? 'true' : flagText === 'off' ? 'false' : undefined),
    rule: 'must be on or off',
  },
];

/** A fresh command per load: commander keeps parsed values on the command object. */
function buildCommand(): Command {
  const command = new Command('svc-broker')
    .description('HTTP message broker node. Later sources win: defaults, --config file, SVC_* environment, flags.')
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} })
    .allowExcessArguments(false)
    .option('--config <file>', 'YAML or JSON settings file (.json is read as JSON)')
    .option('--set <key=value>', 'set any setting by its dotted name (repeatable)', collect)
    .option('--admin-password <password>', `first password of the root admin (or ${adminPasswordEnvVar})`)
    .option('--admin-password-file <file>', 'file holding the first password of the root admin');
  for (const { flags, description, key } of settingFlags) {
    command.addOption(new Option(flags, `${description} (${key}, ${envVarOf(key)})`));
  }
  return command;
}

function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

interface ParsedFlags {
  readonly given: Given;
  readonly configPath: string | undefined;
  readonly adminPassword: string | undefined;
  readonly adminPasswordFile: string | undefined;
}

function readFlags(command: Command): ParsedFlags {
  const opts = command.opts<Record<string, string | string[] | undefined>>();
  const given: Given = new Map();
  for (const { flags, key, textOf, rule } of settingFlags) {
    const option = new Option(flags);
    const flag = option.long ?? flags;
    const flagText = opts[option.attributeName()];
    if (typeof flagText !== 'string') continue;
    const text = textOf === undefined ? flagText : textOf(flagText);
    if (text === undefined) throw new ConfigError(`config: ${key} (from ${flag}): ${rule}`);
    giveValue(given, key, checkText(key, text, flag), flag);
  }
  for (const assignment of (opts.set as string[] | undefined) ?? []) {
    const at = assignment.indexOf('=');
    if (at < 0) throw new ConfigError(`config: --set ${assignment}: must be key=value`);
    const key = assignment.slice(0, at);
    if (!isSettingKey(key)) throw new ConfigError(`config: ${key} (from --set): unknown setting`);
    giveValue(given, key, checkText(key, assignment.slice(at + 1), `--set ${key}`), `--set ${key}`);
  }
  const text = (name: string): string | undefined => (typeof opts[name] === 'string' ? opts[name] : undefined);
  return {
    given,
    configPath: text('config'),
    adminPassword: text('adminPassword'),
    adminPasswordFile: text('adminPasswordFile'),
  };
}

export interface LoadedConfig {
  readonly config: Config;
  /** The root admin's first password, when one source gave it; never written to logs. */
  readonly adminPassword?: string;
  readonly adminPasswordSource?: 'flag' | 'env' | 'file';
  /** Set when --help was given: the caller prints it and exits 0. config then holds the built-in defaults only,
   *  and no file, environment variable or other flag was read. */
  readonly help?: string;
}

/** Spec §8 Password: 1 to 72 bytes. The message names the source, never the password. */
async function resolveAdminPassword(
  flags: ParsedFlags,
  env: Readonly<Record<string, string | undefined>>,
): Promise<Pick<LoadedConfig, 'adminPassword' | 'adminPasswordSource'>> {
  const sources = [
    { name: '--admin-password', source: 'flag', given: flags.adminPassword !== undefined },
    { name: adminPasswordEnvVar, source: 'env', given: env[adminPasswordEnvVar] !== undefined },
    { name: '--admin-password-file', source: 'file', given: flags.adminPasswordFile !== undefined },
  ] as const;
  const given = sources.filter((s) => s.given);
  if (given.length > 1) {
    const names = given.map((s) => s.name).join(' and ');
    throw new ConfigError(`config: the root admin password is given by ${names}; give it once`);
  }
  const chosen = given[0];
  if (chosen === undefined) return {};
  const password =
    chosen.source === 'flag' ? flags.adminPassword
      : chosen.source === 'env' ? env[adminPasswordEnvVar]
        : passwordOfFileText(await readTextFile(flags.adminPasswordFile ?? '', '--admin-password-file'));
  const bytes = Buffer.byteLength(password ?? '', 'utf8');
  if (!inRange(bytes, 1, limits.password_bytes_max)) {
    const rule = `must be 1 to ${limits.password_bytes_max} bytes`;
    throw new ConfigError(`config: root admin password (from ${chosen.name}): ${rule}`);
  }
  return { adminPassword: password, adminPasswordSource: chosen.source };
}

function mergeSources(sources: readonly Given[]): Config {
  const explicit: Record<string, unknown> = {};
  for (const given of sources) {
    for (const [key, { value }] of given) explicit[key] = value;
  }
  const profile = (explicit.profile ?? settings.profile.defaultValue) as Profile;
  const config = Object.freeze({ ...defaultConfig(profile), ...explicit }) as Config;
  for (const { keys, rule, holds } of relations) {
    if (!holds(config)) throw new ConfigError(`config: ${keys[0]} and ${keys[1]}: ${rule}`);
  }
  checkClusterTlsTrio(config);
  return config;
}

const clusterTlsKeys = ['cluster.tls_cert_file', 'cluster.tls_key_file', 'cluster.tls_ca_file'] as const;

/** Node-to-node TLS needs its certificate, key and CA together: one or two of them is a mistake, not a mode. */
function checkClusterTlsTrio(config: Config): void {
  const missing = clusterTlsKeys.filter((key) => config[key] === '');
  if (missing.length === 0 || missing.length === clusterTlsKeys.length) return;
  const given = clusterTlsKeys.filter((key) => config[key] !== '');
  throw new ConfigError(`config: ${given.join(' and ')} given without ${missing.join(' and ')}: node-to-node TLS needs ` +
    'all three of cluster.tls_cert_file, cluster.tls_key_file and cluster.tls_ca_file, or none');
}

/**
 * Resolves the config for one node. argv holds the user's arguments only (process.argv.slice(2)); env is usually
 * process.env. Every source is checked in full even when a later one overrides it. Throws ConfigError on any
 * bad flag, unknown key, wrong type, out-of-bounds value or broken relation; with --help, returns `help` instead.
 */
export async function loadConfig(options: {
  argv: readonly string[];
  env: Readonly<Record<string, string | undefined>>;
}): Promise<LoadedConfig> {
  const command = buildCommand();
  try {
    command.parse([...options.argv], { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    if (err.code === 'commander.helpDisplayed') return { config: defaultConfig(), help: command.helpInformation() };
    throw new ConfigError(`config: ${err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' ')}`);
  }
  const flags = readFlags(command);
  const fromFile = flags.configPath === undefined ? new Map() : await readConfigFile(flags.configPath);
  const fromEnv = readEnv(options.env);
  const config = mergeSources([fromFile, fromEnv, flags.given]);
  return { config, ...(await resolveAdminPassword(flags, options.env)) };
}
