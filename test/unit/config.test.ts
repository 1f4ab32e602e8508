// Goal: the config module resolves the documented defaults, merges file < environment < flags as specified, and
// refuses every bad input with a message naming key, source and rule. Method: call loadConfig with explicit argv and
// env; config files are real files in a tap fixture dir, since loading them through node:fs is part of the contract.
// The docs test reads docs/configuration.md and fails when a declared setting or limit is missing from it.
import { readFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import {
  ConfigError,
  defaultConfig,
  envVarOf,
  formatDuration,
  limits,
  loadConfig,
  parseDuration,
  parseListenAddress,
  parseSize,
  settingKeys,
  settings,
  type LoadedConfig,
} from '../../src/config.js';

type Env = Record<string, string | undefined>;

function load(argv: string[] = [], env: Env = {}): Promise<LoadedConfig> {
  return loadConfig({ argv, env });
}

async function loadError(argv: string[] = [], env: Env = {}): Promise<string> {
  try {
    await loadConfig({ argv, env });
  } catch (err) {
    if (err instanceof ConfigError) return err.message;
    throw err;
  }
  throw new Error(`loadConfig(${JSON.stringify(argv)}) resolved; a ConfigError was expected`);
}

t.test('defaults', async (t) => {
  const loaded = await load();
  t.strictSame(loaded.config, {
    profile: 'default',
    'node.port': 7942,
    'node.host': '0.0.0.0',
    'node.data_dir': './data',
    'node.workers': Math.min(64, Math.max(1, availableParallelism() - 1)),
    'security.enabled': true,
    'log.level': 'info',
    'http.max_header_bytes': 65536,
    'http.max_consume_wait': 10_000,
    'http.max_consume_in_flight_per_identity': 1024,
    'http.max_produce_in_flight_per_identity': 0,
    'http.max_batch_body_bytes_in_flight': 256 * 1024 * 1024,
    'http.max_connections': 4096,
    'http.metrics_addr': '',
    'http.metrics_unauthenticated': false,
    'auth.failed_login_threshold': 5,
    'auth.failed_login_retry_interval': 12_000,
    'auth.login_check_budget': 32,
    'auth.login_check_refill_per_second': 4,
    'auth.verify_slots': 4,
    'auth.bcrypt_cost': 10,
    'schema.validation_slots': 0,
    'schema.validation_wait': 5000,
    'schema.validation_payload_time': 1000,
    'topics.retention_ms_default': 604_800_000,
    'topics.partitions_max': 108,
    'storage.segment_bytes': 64 * 1024 * 1024,
    'storage.ingress_segment_bytes': 64 * 1024 * 1024,
    'storage.retention_check_interval': 30_000,
    'storage.ack_flush_interval': 100,
    'storage.partition_flush_interval': 0,
    'storage.partition_sync_interval': 200,
    'cluster.node_id': 0,
    'cluster.internal_port': 7943,
    'cluster.advertise': '',
    'cluster.bootstrap': '',
    'cluster.join': '',
    'cluster.secret_file': '',
    'cluster.tls_cert_file': '',
    'cluster.tls_key_file': '',
    'cluster.tls_ca_file': '',
    'cluster.tick_interval': 100,
    'cluster.election_ticks': 10,
    'cluster.member_dead_after': 5000,
    'cluster.snapshot_entries': 10000,
    'cluster.handoff_queue_bytes': 64 * 1024 * 1024,
    'cluster.moves_max_per_node': 2,
    'cluster.move_bytes_per_second': 64 * 1024 * 1024,
    'cluster.set_aside_retention_ms': 24 * 60 * 60 * 1000,
    'test.fault_points': '',
  });
  t.equal(loaded.adminPassword, undefined, 'no built-in admin password');
  t.equal(loaded.help, undefined);
  t.ok(Object.isFrozen(loaded.config), 'the resolved config is frozen');
  t.strictSame(defaultConfig(), loaded.config, 'defaultConfig() is what loadConfig resolves with no sources');
});

t.test('every default and test_min value passes its own rule, in file and in text form', async (t) => {
  for (const profile of ['default', 'test_min'] as const) {
    const config = defaultConfig(profile);
    for (const key of settingKeys) {
      t.strictSame(settings[key].fromFile(config[key]), config[key], `${profile} ${key}`);
    }
  }
});

t.test('limits keep their spec values', async (t) => {
  t.strictSame(limits, {
    request_body_bytes_max: 1_048_576,
    batch_produce_body_bytes_max: 16_777_216,
    body_drain_bytes_max: 67_108_864,
    batch_produce_messages_max: 1000,
    payload_bytes_max: 1_048_576,
    batch_ack_body_bytes_max: 65_536,
    batch_ack_handles_max: 100,
    batch_consume_max: 100,
    partitions_min: 3,
    retention_ms_min: 3_600_000,
    visibility_timeout_ms_default: 30_000,
    visibility_timeout_ms_min: 1000,
    visibility_timeout_ms_max: 43_200_000,
    max_in_flight_per_partition_default: 1024,
    max_acked_ahead_per_partition_default: 1024,
    topic_name_chars_max: 200,
    username_chars_max: 64,
    password_bytes_max: 72,
    list_topics_limit_default: 100,
    list_topics_limit_max: 1000,
    error_text_bytes_max: 2048,
    schema_doc_bytes_max: 262_144,
    schema_doc_depth_max: 64,
    schema_versions_max: 1000,
    schema_topic_history_bytes_max: 4_194_304,
    schema_cluster_history_bytes_max: 268_435_456,
    schema_payload_depth_max: 256,
    remotes_body_bytes_max: 131_072,
    fanout_delay_ms_max: 31_536_000_000,
    fanout_children_max: 108,
    fanout_delay_retention_margin_ms: 3_600_000,
    grant_pattern_chars_max: 255,
    per_partition_cap_max: 1_000_000,
    node_id_max: 65_535,
    leader_heard_within_ms: 5000,
    shutdown_drain_ms_max: 10_000,
    audit_target_chars_max: 256,
  });
});

t.test('config files', async (t) => {
  const dir = t.testdir({
    'nested.yaml': 'http:\n  max_header_bytes: 8192\n  max_consume_wait: 1m30s\nnode:\n  port: 8000\n',
    'dotted.yaml': '"http.max_header_bytes": 8192\n"storage.segment_bytes": 256KiB\n',
    'mixed.yml': 'http:\n  max_connections: 10\n"http.max_consume_wait": 2500\n',
    'nested.json': JSON.stringify({ http: { max_header_bytes: 8192 }, security: { enabled: false } }),
    'dotted.json': JSON.stringify({ 'http.max_header_bytes': 8192, 'storage.ingress_segment_bytes': '1GiB' }),
    'empty.yaml': '',
    'twice.yaml': 'http:\n  max_header_bytes: 8192\n"http.max_header_bytes": 9000\n',
    'bad.yaml': 'http: [unclosed\n',
    'bad.json': '{"http.max_header_bytes": 8192,}',
    'list.yaml': '- 1\n- 2\n',
  });
  const file = (name: string): string => join(dir, name);

  const nested = (await load(['--config', file('nested.yaml')])).config;
  t.equal(nested['http.max_header_bytes'], 8192);
  t.equal(nested['http.max_consume_wait'], 90_000, 'a duration in Go syntax resolves to ms');
  t.equal(nested['node.port'], 8000);
  t.equal(nested['http.max_connections'], 4096, 'keys the file leaves out keep their defaults');

  const dotted = (await load(['--config', file('dotted.yaml')])).config;
  t.equal(dotted['http.max_header_bytes'], 8192);
  t.equal(dotted['storage.segment_bytes'], 256 * 1024, 'a size with a unit resolves to bytes');

  const mixed = (await load(['--config', file('mixed.yml')])).config;
  t.equal(mixed['http.max_connections'], 10);
  t.equal(mixed['http.max_consume_wait'], 2500, 'a plain integer duration in a file means ms');

  const json = (await load(['--config', file('nested.json')])).config;
  t.equal(json['http.max_header_bytes'], 8192);
  t.equal(json['security.enabled'], false);
  const jsonDotted = (await load(['--config', file('dotted.json')])).config;
  t.equal(jsonDotted['storage.ingress_segment_bytes'], 1024 ** 3);

  t.strictSame((await load(['--config', file('empty.yaml')])).config, defaultConfig(), 'an empty file sets nothing');

  t.equal(
    await loadError(['--config', file('twice.yaml')]),
    `config: http.max_header_bytes is given twice in ${file('twice.yaml')}; give it once`,
  );
  t.match(await loadError(['--config', file('bad.yaml')]), `config: ${file('bad.yaml')}: not valid YAML`);
  t.match(await loadError(['--config', file('bad.json')]), `config: ${file('bad.json')}: not valid JSON`);
  t.equal(
    await loadError(['--config', file('list.yaml')]),
    `config: ${file('list.yaml')}: must hold a mapping of settings`,
  );
  t.equal(
    await loadError(['--config', file('missing.yaml')]),
    `config: --config ${file('missing.yaml')}: cannot read (ENOENT)`,
  );
});

t.test('later sources win: file < environment < flags', async (t) => {
  const dir = t.testdir({ 'c.yaml': 'http:\n  max_header_bytes: 8192\nnode:\n  port: 8000\n  host: 10.0.0.1\n' });
  const argv = ['--config', join(dir, 'c.yaml')];
  const env = { SVC_HTTP_MAX_HEADER_BYTES: '16384', SVC_NODE_PORT: '8001' };

  const fromEnv = (await load(argv, env)).config;
  t.equal(fromEnv['http.max_header_bytes'], 16384, 'environment overrides file');
  t.equal(fromEnv['node.port'], 8001, 'environment overrides file');
  t.equal(fromEnv['node.host'], '10.0.0.1', 'file value kept where nothing overrides it');

  const fromFlags = (await load([...argv, '--port', '8002', '--set', 'http.max_header_bytes=32768'], env)).config;
  t.equal(fromFlags['node.port'], 8002, 'a named flag overrides environment');
  t.equal(fromFlags['http.max_header_bytes'], 32768, '--set overrides environment');

  const named = (await load(['--host', 'h', '--data-dir', '/d', '--workers', '3', '--log-level', 'debug'])).config;
  t.strictSame(
    [named['node.host'], named['node.data_dir'], named['node.workers'], named['log.level']],
    ['h', '/d', 3, 'debug'],
  );
  t.equal((await load(['--security', 'off'])).config['security.enabled'], false);
  t.equal((await load(['--security', 'on'], { SVC_SECURITY_ENABLED: 'false' })).config['security.enabled'], true);
  t.equal((await load([], { SVC_SECURITY_ENABLED: 'false' })).config['security.enabled'], false);

  t.equal(
    await loadError(['--port', '1', '--set', 'node.port=2']),
    'config: node.port is given twice (from --port and --set node.port); give it once',
  );
  t.equal(await loadError(['--set', 'node.port']), 'config: --set node.port: must be key=value');
});

t.test('unknown keys are named with their source', async (t) => {
  const dir = t.testdir({
    'typo.yaml': 'http:\n  max_header_byte: 8192\n',
    'dotted.json': JSON.stringify({ 'htp.max_header_bytes': 1 }),
    'section.yaml': 'remotes:\n  max_held_bytes: 1\n',
    'leaf.yaml': 'http: 5\n',
  });
  t.equal(
    await loadError(['--config', join(dir, 'typo.yaml')]),
    `config: http.max_header_byte (from ${join(dir, 'typo.yaml')}): unknown setting`,
  );
  t.equal(
    await loadError(['--config', join(dir, 'dotted.json')]),
    `config: htp.max_header_bytes (from ${join(dir, 'dotted.json')}): unknown setting`,
  );
  t.equal(
    await loadError(['--config', join(dir, 'section.yaml')]),
    `config: remotes (from ${join(dir, 'section.yaml')}): unknown setting`,
    'a section no setting lives in is refused whole',
  );
  t.equal(
    await loadError(['--config', join(dir, 'leaf.yaml')]),
    `config: http (from ${join(dir, 'leaf.yaml')}): unknown setting`,
  );
  t.equal(
    await loadError([], { SVC_HTTP_MAX_HEADER_BYTE: '8192' }),
    'config: SVC_HTTP_MAX_HEADER_BYTE (from environment): unknown setting',
  );
  t.equal(await loadError(['--set', 'http.nope=1']), 'config: http.nope (from --set): unknown setting');
  t.match(await loadError(['--prot', '1']), /^config: unknown option '--prot'/);
  t.match(await loadError(['stray']), /^config: too many arguments/);

  const ignored = await load([], { PATH: '/bin', svc_lowercase: 'x', SVC_UNSET: undefined, SVC_ADMIN_PASSWORD: 'pw' });
  t.strictSame(ignored.config, defaultConfig(), 'non-SVC_, unset and SVC_ADMIN_PASSWORD variables are no settings');
});

t.test('wrong types and out-of-bounds values name key, source and rule', async (t) => {
  t.equal(
    await loadError([], { SVC_HTTP_MAX_HEADER_BYTES: '1' }),
    'config: http.max_header_bytes (from SVC_HTTP_MAX_HEADER_BYTES): must be an integer from 4096 to 98304',
  );
  t.equal(
    await loadError(['--port', '65536']),
    'config: node.port (from --port): must be an integer from 0 to 65535',
  );
  t.equal(await loadError(['--port', '-1']), 'config: node.port (from --port): must be an integer from 0 to 65535');
  t.equal(
    await loadError(['--workers', '1.5']),
    'config: node.workers (from --workers): must be an integer from 1 to 64',
  );
  t.equal(await loadError(['--security', 'yes']), 'config: security.enabled (from --security): must be on or off');
  t.equal(
    await loadError([], { SVC_SECURITY_ENABLED: 'on' }),
    'config: security.enabled (from SVC_SECURITY_ENABLED): must be true or false',
  );
  t.equal(
    await loadError(['--log-level', 'verbose']),
    'config: log.level (from --log-level): must be one of fatal, error, warn, info, debug, trace',
  );
  t.equal(await loadError(['--profile', 'tiny']), 'config: profile (from --profile): must be one of default, test_min');
  t.equal(
    await loadError([], { SVC_NODE_HOST: '' }),
    'config: node.host (from SVC_NODE_HOST): must be a non-empty string',
  );

  const dir = t.testdir({
    'string_int.yaml': 'http:\n  max_header_bytes: "8192"\n',
    'string_bool.yaml': 'security:\n  enabled: "false"\n',
    'null.yaml': 'http:\n  max_header_bytes:\n',
    'float.json': JSON.stringify({ 'http.max_connections': 2.5 }),
  });
  t.equal(
    await loadError(['--config', join(dir, 'string_int.yaml')]),
    `config: http.max_header_bytes (from ${join(dir, 'string_int.yaml')}): must be an integer from 4096 to 98304`,
    'a file gives integers as numbers',
  );
  t.equal(
    await loadError(['--config', join(dir, 'string_bool.yaml')]),
    `config: security.enabled (from ${join(dir, 'string_bool.yaml')}): must be true or false`,
  );
  t.match(await loadError(['--config', join(dir, 'null.yaml')]), 'http.max_header_bytes');
  t.match(await loadError(['--config', join(dir, 'float.json')]), 'http.max_connections');

  const retention = async (text: string): Promise<number> =>
    (await load([], { SVC_TOPICS_RETENTION_MS_DEFAULT: text })).config['topics.retention_ms_default'];
  t.equal(await retention('0'), 0, '0 keeps forever');
  t.equal(await retention('3600000'), 3_600_000);
  t.equal(
    await loadError([], { SVC_TOPICS_RETENTION_MS_DEFAULT: '3599999' }),
    'config: topics.retention_ms_default (from SVC_TOPICS_RETENTION_MS_DEFAULT): ' +
      'must be 0 or an integer from 3600000 to 9007199254740991',
  );
  t.equal(
    await loadError(['--set', 'topics.partitions_max=2']),
    'config: topics.partitions_max (from --set topics.partitions_max): must be an integer from 3 to 4096',
  );
  const produceCap = await load(['--set', 'http.max_produce_in_flight_per_identity=0']);
  t.equal(produceCap.config['http.max_produce_in_flight_per_identity'], 0, '0 turns the produce cap off');
});

t.test('durations and sizes', async (t) => {
  const wait = async (env: Env): Promise<number> => (await load([], env)).config['http.max_consume_wait'];
  t.equal(await wait({ SVC_HTTP_MAX_CONSUME_WAIT: '5s' }), 5000);
  t.equal(await wait({ SVC_HTTP_MAX_CONSUME_WAIT: '0' }), 0);
  t.equal(await wait({ SVC_HTTP_MAX_CONSUME_WAIT: '1h' }), 3_600_000, 'the upper bound is inclusive');
  const waitRule = 'must be a duration from 0s to 1h0m0s (Go syntax, e.g. 250ms, 1m30s)';
  for (const text of ['1h0m0.001s', '-1s', '5000', 'soon']) {
    t.equal(
      await loadError([], { SVC_HTTP_MAX_CONSUME_WAIT: text }),
      `config: http.max_consume_wait (from SVC_HTTP_MAX_CONSUME_WAIT): ${waitRule}`,
      `wait ${text} refused`,
    );
  }
  t.equal((await load([], { SVC_STORAGE_PARTITION_SYNC_INTERVAL: '1m' })).config['storage.partition_sync_interval'], 60_000);
  t.equal(
    await loadError([], { SVC_STORAGE_PARTITION_SYNC_INTERVAL: '1m0.5s' }),
    'config: storage.partition_sync_interval (from SVC_STORAGE_PARTITION_SYNC_INTERVAL): must be a duration from 0s to 1m0s (Go syntax, e.g. 250ms, 1m30s)',
    'a partition sync interval past 1m refused',
  );
  t.match(
    await loadError(['--set', 'auth.failed_login_retry_interval=500ms']),
    'auth.failed_login_retry_interval (from --set auth.failed_login_retry_interval): must be a duration from 1s',
  );

  const batch = async (text: string): Promise<number> => {
    const loaded = await load(['--set', `http.max_batch_body_bytes_in_flight=${text}`]);
    return loaded.config['http.max_batch_body_bytes_in_flight'];
  };
  t.equal(await batch('16MiB'), 16 * 1024 * 1024, 'the floor holds exactly one largest batch body');
  t.equal(await batch('1GiB'), 1024 ** 3);
  t.equal(await batch('1.5GiB'), 1.5 * 1024 ** 3);
  t.equal(await batch('20000000'), 20_000_000);
  t.equal(
    await loadError([], { SVC_HTTP_MAX_BATCH_BODY_BYTES_IN_FLIGHT: '15MiB' }),
    'config: http.max_batch_body_bytes_in_flight (from SVC_HTTP_MAX_BATCH_BODY_BYTES_IN_FLIGHT): ' +
      'must be a size from 16MiB to 64GiB (bytes, or a number with KiB, MiB, GiB or TiB)',
  );
  t.match(await loadError([], { SVC_STORAGE_SEGMENT_BYTES: '4GiB' }), 'must be a size from 4KiB to 4294967295');
  t.match(await loadError([], { SVC_STORAGE_SEGMENT_BYTES: '64MB' }), 'storage.segment_bytes');

  const sizes: [string, number | null][] = [
    ['0', 0], ['4096', 4096], ['1B', 1], ['256KiB', 262_144], ['64MiB', 67_108_864], ['64 MiB', 67_108_864],
    ['1GiB', 1_073_741_824], ['1TiB', 1024 ** 4], ['1.5KiB', 1536], ['0.3KiB', null], ['1.5', null],
    ['64MB', null], ['64mib', null], ['-1', null], ['', null], ['MiB', null], ['1e3', null],
  ];
  for (const [text, bytes] of sizes) t.equal(parseSize(text), bytes, `parseSize(${JSON.stringify(text)})`);
});

t.test('parseDuration and formatDuration', async (t) => {
  const parsed: [string, number | null][] = [
    ['0', 0], ['0s', 0], ['+0', 0], ['250ms', 250], ['1.5s', 1500], ['10s', 10_000], ['1m', 60_000],
    ['1h30m', 5_400_000], ['1m1m', 120_000], ['.5s', 500], ['1.s', 1000], ['+2s', 2000], ['1500us', 1],
    ['1500µs', 1], ['999999ns', 0], ['2h45m30.5s', 9_930_500],
    ['', null], ['5', null], ['-1s', null], ['-0', null], ['s', null], ['.s', null], ['1d', null], ['1 s', null],
    ['1s ', null], ['1.2.3s', null], ['10S', null], ['9999999999h', null], ['2562048h', null],
  ];
  for (const [text, ms] of parsed) t.equal(parseDuration(text), ms, `parseDuration(${JSON.stringify(text)})`);
  t.equal(parseDuration('1s'.repeat(40)), null, 'over the length bound');

  const formatted: [number, string][] = [
    [0, '0s'], [1, '1ms'], [250, '250ms'], [999, '999ms'], [1000, '1s'], [1500, '1.5s'], [1050, '1.05s'],
    [10_000, '10s'], [60_000, '1m0s'], [61_001, '1m1.001s'], [3_600_000, '1h0m0s'], [5_400_000, '1h30m0s'],
    [90_061_000, '25h1m1s'],
  ];
  for (const [ms, text] of formatted) {
    t.equal(formatDuration(ms), text, `formatDuration(${ms})`);
    t.equal(parseDuration(text), ms, `${text} parses back`);
  }
  t.throws(() => formatDuration(-1));
  t.throws(() => formatDuration(1.5));
});

t.test('root admin password', async (t) => {
  const dir = t.testdir({ pw: 's3cret\n', crlf: 'other\r\n', empty: '\n' });
  t.strictSame(
    await load(['--admin-password', 'hunter2']),
    { config: defaultConfig(), adminPassword: 'hunter2', adminPasswordSource: 'flag' },
  );
  const fromEnv = await load([], { SVC_ADMIN_PASSWORD: 'from env' });
  t.strictSame([fromEnv.adminPassword, fromEnv.adminPasswordSource], ['from env', 'env']);
  const fromFile = await load(['--admin-password-file', join(dir, 'pw')]);
  t.strictSame([fromFile.adminPassword, fromFile.adminPasswordSource], ['s3cret', 'file'], 'trailing newline dropped');
  t.equal((await load(['--admin-password-file', join(dir, 'crlf')])).adminPassword, 'other');

  t.equal(
    await loadError(['--admin-password', 'a'], { SVC_ADMIN_PASSWORD: 'b' }),
    'config: the root admin password is given by --admin-password and SVC_ADMIN_PASSWORD; give it once',
  );
  t.equal(
    await loadError(['--admin-password-file', join(dir, 'pw')], { SVC_ADMIN_PASSWORD: 'b' }),
    'config: the root admin password is given by SVC_ADMIN_PASSWORD and --admin-password-file; give it once',
  );
  t.equal(
    await loadError(['--admin-password', 'a', '--admin-password-file', join(dir, 'pw')]),
    'config: the root admin password is given by --admin-password and --admin-password-file; give it once',
  );
  t.equal(
    await loadError(['--admin-password-file', join(dir, 'empty')]),
    'config: root admin password (from --admin-password-file): must be 1 to 72 bytes',
  );
  const long = 'é'.repeat(37); // 74 bytes in UTF-8, 37 characters.
  const tooLong = await loadError([], { SVC_ADMIN_PASSWORD: long });
  t.equal(tooLong, 'config: root admin password (from SVC_ADMIN_PASSWORD): must be 1 to 72 bytes');
  t.notMatch(tooLong, long, 'the message never carries the password');
  t.equal((await load([], { SVC_ADMIN_PASSWORD: 'x'.repeat(72) })).adminPassword?.length, 72);
  t.equal(
    await loadError(['--admin-password-file', join(dir, 'nope')]),
    `config: --admin-password-file ${join(dir, 'nope')}: cannot read (ENOENT)`,
  );
});

t.test('test_min profile', async (t) => {
  const dir = t.testdir({ 'p.yaml': 'profile: test_min\n' });
  const expected = {
    ...defaultConfig(),
    profile: 'test_min',
    'storage.segment_bytes': 65_536,
    'storage.ingress_segment_bytes': 262_144,
    'storage.retention_check_interval': 1000,
  };
  t.strictSame(defaultConfig('test_min'), expected);
  t.strictSame((await load(['--profile', 'test_min'])).config, expected, 'from a flag');
  t.strictSame((await load([], { SVC_PROFILE: 'test_min' })).config, expected, 'from the environment');
  t.strictSame((await load(['--config', join(dir, 'p.yaml')])).config, expected, 'from a file');
  const explicit = (await load(['--profile', 'test_min'], { SVC_STORAGE_SEGMENT_BYTES: '1MiB' })).config;
  t.equal(explicit['storage.segment_bytes'], 1024 * 1024, 'an explicit value wins over the profile');
  t.equal(explicit['storage.ingress_segment_bytes'], 262_144);
});

t.test('relations between settings', async (t) => {
  t.equal(
    await loadError(['--set', 'http.metrics_addr=:7942']),
    'config: http.metrics_addr and node.port: the metrics listener must not take the API port on the same host',
  );
  const relation = 'http.metrics_addr and node.port';
  t.match(await loadError(['--host', '127.0.0.1', '--set', 'http.metrics_addr=0.0.0.0:7942']), relation);
  t.match(await loadError(['--host', '10.0.0.1', '--set', 'http.metrics_addr=10.0.0.1:7942']), relation);
  t.equal((await load(['--set', 'http.metrics_addr=:9100'])).config['http.metrics_addr'], ':9100');
  t.equal((await load(['--port', '0', '--set', 'http.metrics_addr=:0'])).config['http.metrics_addr'], ':0');
  t.equal(
    (await load(['--host', '10.0.0.1', '--set', 'http.metrics_addr=127.0.0.1:7942'])).config['http.metrics_addr'],
    '127.0.0.1:7942',
    'different specific hosts may share a port',
  );
  t.equal(
    await loadError(['--set', 'http.metrics_addr=9100']),
    'config: http.metrics_addr (from --set http.metrics_addr): must be empty or host:port with a port from 0 to 65535',
  );
  t.strictSame(parseListenAddress('[::1]:9100'), { host: '::1', port: 9100 });
  t.strictSame(parseListenAddress('metrics.local:80'), { host: 'metrics.local', port: 80 });
  t.equal(parseListenAddress('::1:9100'), null, 'an IPv6 host needs brackets');
  t.equal(parseListenAddress('h:65536'), null);
});

t.test('--help returns the flags instead of exiting', async (t) => {
  const loaded = await load(['--help'], { SVC_NOT_A_SETTING: 'ignored under --help' });
  t.type(loaded.help, 'string');
  for (const flag of ['--port', '--host', '--data-dir', '--config', '--security', '--workers', '--log-level',
    '--profile', '--admin-password', '--admin-password-file', '--set']) {
    t.match(loaded.help, flag);
  }
  t.strictSame(loaded.config, defaultConfig());
});

t.test('docs/configuration.md lists every setting and limit, and nothing else', async (t) => {
  const doc = await readFile(new URL('../../../docs/configuration.md', import.meta.url), 'utf8');
  const [settingsPart = '', limitsPart = ''] = doc.split('\n## Fixed limits\n');
  const rowKeys = (part: string): string[] => [...part.matchAll(/^\| `([a-z_.]+)` \|/gm)].map((m) => m[1] ?? '');
  const settingRows = new Map(settingsPart.split('\n').map((line) => [/^\| `([a-z_.]+)` \|/.exec(line)?.[1], line]));
  for (const key of settingKeys) {
    const row = settingRows.get(key);
    t.ok(row, `setting ${key} has a row`);
    t.match(row ?? '', `\`${envVarOf(key)}\``, `row of ${key} names its env var`);
  }
  t.strictSame(rowKeys(settingsPart).sort(), [...settingKeys].sort(), 'no row for an undeclared setting');
  t.strictSame(rowKeys(limitsPart).sort(), Object.keys(limits).sort(), 'limits table matches limits');
});

t.test('cluster addresses other nodes dial or are told need a port from 1', async (t) => {
  t.equal(await loadError(['--node-id', '2', '--join', '127.0.0.1:0', '--cluster-secret-file', '/x']), 'config: cluster.join (from --join): must be empty or host:port');
  t.equal(await loadError(['--node-id', '1', '--bootstrap', '1=127.0.0.1:0,2=127.0.0.1:8943', '--cluster-secret-file', '/x']),
    'config: cluster.bootstrap (from --bootstrap): must be empty or id=host:port,... with distinct positive ids');
  t.equal(await loadError(['--advertise', '127.0.0.1:0']),
    'config: cluster.advertise (from --advertise): must be empty or host:port[,host:port] (API address, then internal address)');
  t.equal((await load(['--internal-port', '0'])).config['cluster.internal_port'], 0, 'the internal listener itself may bind port 0 (tests)');
});

t.test('cluster flags: ids, addresses and their relations', async (t) => {
  const founded = (await load(['--node-id', '2', '--bootstrap', '1=127.0.0.1:7943,2=127.0.0.1:8943', '--cluster-secret-file', '/x',
    '--internal-port', '8943', '--advertise', '127.0.0.1:8942,127.0.0.1:8943'])).config;
  t.equal(founded['cluster.node_id'], 2);
  t.equal(founded['cluster.bootstrap'], '1=127.0.0.1:7943,2=127.0.0.1:8943');
  t.equal(founded['cluster.internal_port'], 8943);
  t.equal(founded['cluster.advertise'], '127.0.0.1:8942,127.0.0.1:8943');
  t.equal((await load(['--node-id', '4', '--join', '127.0.0.1:7943', '--cluster-secret-file', '/x'])).config['cluster.join'], '127.0.0.1:7943');
  t.equal(await loadError(['--node-id', '0x1']), 'config: cluster.node_id (from --node-id): must be 0 or an integer from 1 to 65535');
  t.equal(await loadError(['--bootstrap', '1=127.0.0.1:7943,1=127.0.0.1:8943']),
    'config: cluster.bootstrap (from --bootstrap): must be empty or id=host:port,... with distinct positive ids');
  t.equal(await loadError(['--join', '7943']), 'config: cluster.join (from --join): must be empty or host:port');
  t.equal(await loadError(['--advertise', 'a:1,b:2,c:3']),
    'config: cluster.advertise (from --advertise): must be empty or host:port[,host:port] (API address, then internal address)');
  t.equal(await loadError(['--node-id', '3', '--bootstrap', '1=h:1,2=h:2', '--cluster-secret-file', '/x']),
    "config: cluster.bootstrap and cluster.node_id: the bootstrap list must name this node's id (give --node-id)");
  t.equal(await loadError(['--node-id', '1', '--bootstrap', '1=h:1,2=h:2', '--join', 'h:3', '--cluster-secret-file', '/x']),
    'config: cluster.bootstrap and cluster.join: a node either founds a cluster or joins one, not both');
  t.equal(await loadError(['--join', 'h:3', '--cluster-secret-file', '/x']),
    'config: cluster.join and cluster.node_id: a joining node needs its own id (give --node-id)');
  t.equal(await loadError(['--node-id', '1', '--bootstrap', '1=h:1,2=h:2']),
    'config: cluster.secret_file and cluster.bootstrap: a node of a multi-node cluster needs the cluster secret (give --cluster-secret-file)');
  t.equal((await load(['--node-id', '1', '--bootstrap', '1=h:1'])).config['cluster.bootstrap'], '1=h:1', 'a one-voter bootstrap needs no secret');
});

t.test('cluster flags: every bad id, address and bound is refused, naming key, source and rule', async (t) => {
  const nodeIdRule = 'must be 0 or an integer from 1 to 65535';
  for (const text of ['65536', '-1', '', '1.5']) {
    t.equal(await loadError(['--node-id', text]), `config: cluster.node_id (from --node-id): ${nodeIdRule}`, `--node-id ${JSON.stringify(text)}`);
  }
  t.equal(await loadError([], { SVC_CLUSTER_NODE_ID: '70000' }), `config: cluster.node_id (from SVC_CLUSTER_NODE_ID): ${nodeIdRule}`);
  t.equal((await load(['--node-id', '0'])).config['cluster.node_id'], 0, '0 means the stored id');
  for (const text of ['65536', 'x']) {
    t.equal(await loadError(['--internal-port', text]), 'config: cluster.internal_port (from --internal-port): must be an integer from 0 to 65535');
  }
  const bootstrapRule = 'config: cluster.bootstrap (from --bootstrap): must be empty or id=host:port,... with distinct positive ids';
  for (const text of ['0=h:1', '65536=h:1', '1=h:1,', '1=h', '1=:7943', 'h:1', '1=h:70000', '1=h:1,01=h:2']) {
    t.equal(await loadError(['--node-id', '1', '--bootstrap', text, '--cluster-secret-file', '/x']), bootstrapRule, `--bootstrap ${text}`);
  }
  t.equal(await loadError(['--bootstrap', '1=h:1']),
    "config: cluster.bootstrap and cluster.node_id: the bootstrap list must name this node's id (give --node-id)",
    'a bootstrap without --node-id does not take node id 0 as a member');
  for (const text of [':7943', 'h:70000', 'h:1,h:2', 'h']) {
    t.equal(await loadError(['--node-id', '2', '--join', text, '--cluster-secret-file', '/x']),
      'config: cluster.join (from --join): must be empty or host:port', `--join ${text}`);
  }
  t.equal(await loadError(['--node-id', '2', '--join', 'h:1']),
    'config: cluster.secret_file and cluster.bootstrap: a node of a multi-node cluster needs the cluster secret (give --cluster-secret-file)',
    'a joining node needs the secret too');
  for (const text of [':1', 'h:1,', 'h:1,:2', 'h', 'h:1,h:70000']) {
    t.equal(await loadError(['--advertise', text]),
      'config: cluster.advertise (from --advertise): must be empty or host:port[,host:port] (API address, then internal address)', `--advertise ${text}`);
  }
  const bounds: [string, string, string][] = [
    ['SVC_CLUSTER_TICK_INTERVAL', '5ms', 'cluster.tick_interval'], ['SVC_CLUSTER_TICK_INTERVAL', '2s', 'cluster.tick_interval'],
    ['SVC_CLUSTER_ELECTION_TICKS', '2', 'cluster.election_ticks'], ['SVC_CLUSTER_ELECTION_TICKS', '1001', 'cluster.election_ticks'],
    ['SVC_CLUSTER_MEMBER_DEAD_AFTER', '499ms', 'cluster.member_dead_after'], ['SVC_CLUSTER_MEMBER_DEAD_AFTER', '11m', 'cluster.member_dead_after'],
    ['SVC_CLUSTER_SNAPSHOT_ENTRIES', '1', 'cluster.snapshot_entries'], ['SVC_CLUSTER_SNAPSHOT_ENTRIES', '10000001', 'cluster.snapshot_entries'],
  ];
  for (const [name, value, key] of bounds) {
    t.equal(await loadError([], { [name]: value }), `config: ${key} (from ${name}): ${settings[key as keyof typeof settings].rule}`, `${name}=${value}`);
  }
});

t.test('node-to-node TLS: flags and environment set the three files, which come all together or not at all', async (t) => {
  const tls = ['--cluster-tls-cert', '/c.pem', '--cluster-tls-key', '/k.pem', '--cluster-tls-ca', '/ca.pem'];
  const config = (await load(tls)).config;
  t.equal(config['cluster.tls_cert_file'], '/c.pem');
  t.equal(config['cluster.tls_key_file'], '/k.pem');
  t.equal(config['cluster.tls_ca_file'], '/ca.pem');
  const fromEnv = (await load([], { SVC_CLUSTER_TLS_CERT_FILE: '/c', SVC_CLUSTER_TLS_KEY_FILE: '/k', SVC_CLUSTER_TLS_CA_FILE: '/a' })).config;
  t.same([fromEnv['cluster.tls_cert_file'], fromEnv['cluster.tls_key_file'], fromEnv['cluster.tls_ca_file']], ['/c', '/k', '/a']);
  t.equal(defaultConfig()['cluster.tls_cert_file'], '', 'off by default');
  t.equal(await loadError(['--cluster-tls-cert', '/c.pem']),
    'config: cluster.tls_cert_file given without cluster.tls_key_file and cluster.tls_ca_file: node-to-node TLS needs all three ' +
    'of cluster.tls_cert_file, cluster.tls_key_file and cluster.tls_ca_file, or none');
  t.match(await loadError(['--cluster-tls-cert', '/c.pem', '--cluster-tls-ca', '/ca.pem']),
    /^config: cluster\.tls_cert_file and cluster\.tls_ca_file given without cluster\.tls_key_file: /);
  t.match(await loadError([], { SVC_CLUSTER_TLS_KEY_FILE: '/k' }), /^config: cluster\.tls_key_file given without cluster\.tls_cert_file and cluster\.tls_ca_file: /);
});
