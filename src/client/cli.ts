#!/usr/bin/env node
// svc, the command line of the broker (issue 32 point 3; package.json "bin"): topics, produce, consume, ack,
// children, schema, users and cluster members over the HTTP API through svc-broker/client. Runs in its own process.
// Tables for people, --json for scripts; a failure prints the API's error text and exits 1. The password comes from
// SVC_PASSWORD or --password-file, never from a flag alone (a flag shows in ps and shell history).
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Command, InvalidArgumentError } from 'commander';
import { blockedReasons, SvcClient, SvcError, SvcNoAnswerError, type Grant, type Member, type Message, type TopicCreate, type TopicPatch } from './api.js';
import { passwordOfFileText } from './password_file.js';
import { Producer } from './producer.js';

interface GlobalOptions { url: string; user?: string; passwordFile?: string; json?: boolean }

const program = new Command('svc')
  .description('command line for the svc-broker HTTP API')
  .option('--url <url>', 'node API URL', process.env.SVC_URL ?? 'http://127.0.0.1:7942')
  .option('--user <name>', 'user name (password from SVC_PASSWORD or --password-file)', process.env.SVC_USER)
  .option('--password-file <path>', 'read the password from this file (without its closing line ends)')
  .option('--json', 'print JSON for scripts instead of tables')
  .showHelpAfterError();

function int(value: string): number {
  if (!/^-?\d+$/.test(value)) throw new InvalidArgumentError('not an integer');
  return Number(value);
}

async function client(): Promise<SvcClient> {
  const o = program.opts<GlobalOptions>();
  if (o.user === undefined) return new SvcClient({ url: o.url, clientName: 'svc-cli' });
  let password = process.env.SVC_PASSWORD;
  if (o.passwordFile !== undefined) password = passwordOfFileText(await readFile(o.passwordFile, 'utf8'));
  if (password === undefined) throw new Error('no password: set SVC_PASSWORD or give --password-file');
  return new SvcClient({ url: o.url, user: o.user, password, clientName: 'svc-cli' });
}

const asJson = (): boolean => program.opts<GlobalOptions>().json === true;

/** Prints rows as an aligned table (people) or the value as JSON (scripts). */
function show(value: unknown, rows: () => Record<string, unknown>[]): void {
  if (asJson()) {
    process.stdout.write(`${JSON.stringify(value)}\n`);
    return;
  }
  const list = rows();
  if (list.length === 0) return;
  const columns = Object.keys(list[0]!);
  const cell = (v: unknown): string => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const widths = columns.map((c) => Math.max(c.length, ...list.map((r) => cell(r[c]).length)));
  const line = (cells: string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd();
  process.stdout.write(`${[line(columns.map((c) => c.toUpperCase())), ...list.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n')}\n`);
}

/** One record per line: table rows for people, JSON lines for scripts. */
function showMessages(messages: Message[]): void {
  if (asJson()) for (const m of messages) process.stdout.write(`${JSON.stringify(m)}\n`);
  else show(messages, () => messages.map((m) => ({ partition: m.partition, offset: m.offset, key: m.key, payload: m.payload, receipt_handle: m.receipt_handle })));
}

function done(message: string): void {
  if (!asJson()) process.stdout.write(`${message}\n`);
}

async function readSchema(path: string): Promise<unknown> {
  return JSON.parse(await readFile(path, 'utf8')) as unknown;
}

function topicsCommand(): Command {
  const topics = new Command('topics').description('create, list, read, change and delete topics');
  const settings = (c: Command): Command => c
    .option('--retention-ms <ms>', 'retention (0 keeps forever)', int)
    .option('--max-in-flight <n>', 'max_in_flight_per_partition', int)
    .option('--max-acked-ahead <n>', 'max_acked_ahead_per_partition', int)
    .option('--partitions <n>', 'partition count', int)
    .option('--schema-file <path>', 'JSON Schema document');
  settings(topics.command('create <name>').description('create a topic'))
    .option('--visibility-timeout-ms <ms>', 'lease length (fixed after creation)', int)
    .option('--parent <topic>', 'create as a fan-out child of this topic')
    .option('--fanout-delay-ms <ms>', 'with --parent: a delay child', int)
    .action(async (name: string, o) => {
      const body: TopicCreate = { name, partitions: o.partitions, retention_ms: o.retentionMs, visibility_timeout_ms: o.visibilityTimeoutMs,
        max_in_flight_per_partition: o.maxInFlight, max_acked_ahead_per_partition: o.maxAckedAhead, parent: o.parent, fanout_delay_ms: o.fanoutDelayMs };
      if (o.schemaFile !== undefined) body.schema = await readSchema(o.schemaFile);
      const topic = await (await client()).createTopic(body);
      show(topic, () => [topicRow(topic)]);
    });
  topics.command('list').description('list the topics you can read').action(async () => {
    const all = await (await client()).listAllTopics();
    show(all, () => all.map(topicRow));
  });
  topics.command('get <name>').description('a topic with its partition statistics')
    .option('--partition <n>', 'statistics of this partition only', int)
    .action(async (name: string, o) => {
      const topic = await (await client()).getTopic(name, { partition: o.partition });
      show(topic, () => (topic.partition_stats ?? []).map((s) => ({ partition: s.index, status: s.status, owner: s.owner_node,
        oldest: s.oldest_offset, next: s.next_offset, high_watermark: s.high_watermark, bytes: s.size_bytes })));
    });
  settings(topics.command('patch <name>').description('change a topic'))
    .option('--schema-base-version <n>', 'with --schema-file: apply only over this version', int)
    .action(async (name: string, o) => {
      const body: TopicPatch = { retention_ms: o.retentionMs, partitions: o.partitions, max_in_flight_per_partition: o.maxInFlight,
        max_acked_ahead_per_partition: o.maxAckedAhead, schema_base_version: o.schemaBaseVersion };
      if (o.schemaFile !== undefined) body.schema = await readSchema(o.schemaFile);
      const topic = await (await client()).patchTopic(name, body);
      show(topic, () => [topicRow(topic)]);
    });
  topics.command('delete <name>').description('delete a topic and its data').option('--force', 'abandon unshipped records')
    .action(async (name: string, o) => {
      await (await client()).deleteTopic(name, { force: o.force });
      done(`deleted ${name}`);
    });
  return topics;
}

function topicRow(t: { name: string; partitions: number; retention_ms: number; visibility_timeout_ms: number; role?: string; owner?: string }): Record<string, unknown> {
  return { name: t.name, partitions: t.partitions, retention_ms: t.retention_ms, visibility_timeout_ms: t.visibility_timeout_ms,
    role: t.role ?? 'standalone', owner: t.owner };
}

/** A stdin line as a batch message: a JSON text as that value, anything else as its bytes (base64). */
function lineMessage(line: string, key?: string, partition?: number): { payload: unknown; payload_encoding?: 'base64'; key?: string; partition?: number } {
  try {
    return { payload: JSON.parse(line) as unknown, key, partition };
  } catch {
    return { payload: Buffer.from(line, 'utf8').toString('base64'), payload_encoding: 'base64', key, partition };
  }
}

function produceCommand(): Command {
  return new Command('produce').description('store MESSAGE, or each line of stdin (sent in batches)')
    .argument('<topic>').argument('[message]')
    .option('--key <key>', 'message key').option('--partition <n>', 'pin to this partition', int)
    .option('--linger-ms <ms>', 'stdin: batch linger', int, 20).option('--batch-size <n>', 'stdin: messages per batch', int, 1000)
    .action(async (topic: string, message: string | undefined, o) => {
      const c = await client();
      if (message !== undefined) {
        await c.produce(topic, message, { key: o.key, partition: o.partition });
        done('stored 1 message');
        return;
      }
      const producer = new Producer(c, topic, { lingerMs: o.lingerMs, maxBatchMessages: o.batchSize });
      const sends: Promise<void>[] = [];
      for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
        if (line.length > 0) sends.push(producer.send(lineMessage(line, o.key, o.partition)));
      }
      await producer.close();
      const results = await Promise.allSettled(sends);
      const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      if (asJson()) process.stdout.write(`${JSON.stringify({ stored: sends.length, requests: producer.requestsSent })}\n`);
      else done(`stored ${sends.length} messages in ${producer.requestsSent} requests`);
    });
}

function consumeCommand(): Command {
  return new Command('consume').description('lease messages (acked after printing unless --no-ack), or replay with --offset')
    .argument('<topic>')
    .option('--max <n>', 'messages per consume', int, 1)
    .option('--wait <duration>', 'long-poll wait (ms number or 500ms, 2s); default 0s, or 10s with --follow')
    .option('--follow', 'keep consuming until interrupted')
    .option('--no-ack', 'print without acking (leases run out and messages come again)')
    .option('--partition <n>', 'this partition only', int)
    .option('--offset <n>', 'with --partition: replay from this offset, no lease (--max records)', int)
    .action(async (topic: string, o) => {
      const c = await client();
      if (o.offset !== undefined) return replay(c, topic, o.partition, o.offset, o.max);
      const waitMs = o.wait !== undefined ? durationMs(o.wait) : o.follow ? 10_000 : 0;
      // Ctrl-C ends a long poll at once; a message the node leased to it comes again after its lease.
      const interrupt = new AbortController();
      process.once('SIGINT', () => interrupt.abort());
      do {
        let messages: Message[];
        try {
          messages = await c.consumeMany(topic, o.max, { waitMs, partition: o.partition, signal: interrupt.signal });
        } catch (error) {
          if (interrupt.signal.aborted && error instanceof SvcNoAnswerError) break;
          throw error;
        }
        showMessages(messages);
        if (o.ack && messages.length > 0) await settle(c, topic, messages);
      } while (o.follow && !interrupt.signal.aborted);
    });
}

async function replay(c: SvcClient, topic: string, partition: number | undefined, offset: number, max: number): Promise<void> {
  if (partition === undefined) throw new InvalidArgumentError('--offset needs --partition');
  const messages: Message[] = [];
  for (let at = offset; at < offset + max; at++) {
    const m = await c.replay(topic, partition, at);
    if (m === null) break;
    messages.push(m);
  }
  showMessages(messages);
}

async function settle(c: SvcClient, topic: string, messages: Message[]): Promise<void> {
  const results = await c.ackBatch(topic, messages.map((m) => m.receipt_handle!));
  const failed = results.find((r) => r.status !== 204);
  if (failed) throw new SvcError(failed.status, failed.error ?? 'ack failed', null, null);
}

/** 1500, 500ms, 2s, 1m as milliseconds. */
function durationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text);
  if (!match) throw new InvalidArgumentError(`--wait: not a duration: ${text}`);
  return Number(match[1]) * (match[2] === 's' ? 1000 : match[2] === 'm' ? 60_000 : 1);
}

function ackCommand(): Command {
  return new Command('ack').description('ack (or --extend, --nack) receipt handles')
    .argument('<topic>').argument('<handles...>')
    .option('--extend', 'extend the leases instead').option('--nack', 'end the leases now (redelivery)')
    .action(async (topic: string, handles: string[], o) => {
      const results = await (await client()).ackBatch(topic, handles, o.extend ? 'extend' : o.nack ? 'nack' : 'ack');
      show(results, () => results.map((r, i) => ({ receipt_handle: handles[i], status: r.status, error: r.error })));
      if (results.some((r) => r.status !== 204)) process.exitCode = 1;
    });
}

function childrenCommand(): Command {
  const children = new Command('children').description('fan-out children of a parent topic');
  children.command('list <parent>').action(async (parent: string) => {
    const got = await (await client()).listChildren(parent);
    show(got, () => got.children.map((c) => ({ ...c })));
  });
  children.command('attach <parent> <child>').option('--delay-ms <ms>', 'a delay child', int)
    .action(async (parent: string, child: string, o) => {
      const topic = await (await client()).attachChild(parent, child, { delayMs: o.delayMs });
      show(topic, () => [{ parent: topic.name, children: (topic.children ?? []).join(',') }]);
    });
  children.command('detach <parent> <child>').action(async (parent: string, child: string) => {
    await (await client()).detachChild(parent, child);
    done(`detached ${child} from ${parent}`);
  });
  return children;
}

function schemaCommand(): Command {
  const schema = new Command('schema').description("a topic's schema history");
  schema.command('get <topic>').action(async (topic: string) => {
    const history = await (await client()).getSchema(topic);
    show(history, () => history.versions.map((v) => ({ version: v.version, schema: v.schema })));
  });
  schema.command('set <topic> <file>').description('register a new version from a JSON file')
    .option('--base-version <n>', 'apply only if the current version is this', int)
    .action(async (topic: string, file: string, o) => {
      const got = await (await client()).patchTopic(topic, { schema: await readSchema(file), schema_base_version: o.baseVersion });
      show(got, () => [{ topic: got.name, schema_version: got.schema_version }]);
    });
  return schema;
}

/** --grant action:pattern,pattern (admin alone for admin), repeatable. */
function grantOf(value: string, previous: Grant[] = []): Grant[] {
  const [action, patterns] = value.split(':', 2) as [Grant['action'], string | undefined];
  if (!['produce', 'consume', 'create', 'admin'].includes(action)) throw new InvalidArgumentError('action: produce, consume, create or admin');
  return [...previous, patterns === undefined ? { action } : { action, patterns: patterns.split(',') }];
}

async function secret(variable: string, file: string | undefined): Promise<string> {
  if (file !== undefined) return passwordOfFileText(await readFile(file, 'utf8'));
  const value = process.env[variable];
  if (value === undefined) throw new Error(`no password: set ${variable} or give the file option`);
  return value;
}

function usersCommand(): Command {
  const users = new Command('users').description('users and grants (admin)');
  const userRow = (u: { username: string; root: boolean; grants?: Grant[] }): Record<string, unknown> =>
    ({ username: u.username, root: u.root, grants: (u.grants ?? []).map((g) => `${g.action}:${(g.patterns ?? []).join(',')}`).join(' ') });
  users.command('create <username>').description('password from SVC_NEW_PASSWORD or --new-password-file')
    .option('--grant <action:patterns>', 'a grant, repeatable', grantOf).option('--new-password-file <path>')
    .action(async (username: string, o) => {
      const user = await (await client()).createUser({ username, password: await secret('SVC_NEW_PASSWORD', o.newPasswordFile), grants: o.grant });
      show(user, () => [userRow(user)]);
    });
  users.command('list').action(async () => {
    const all = await (await client()).listUsers();
    show(all, () => all.map(userRow));
  });
  users.command('get <username>').action(async (username: string) => {
    const user = await (await client()).getUser(username);
    show(user, () => [userRow(user)]);
  });
  users.command('delete <username>').action(async (username: string) => {
    await (await client()).deleteUser(username);
    done(`deleted ${username}`);
  });
  users.command('grants <username>').description('replace the grants (none given removes all)')
    .option('--grant <action:patterns>', 'a grant, repeatable', grantOf)
    .action(async (username: string, o) => {
      const user = await (await client()).putGrants(username, o.grant ?? []);
      show(user, () => [userRow(user)]);
    });
  users.command('password <username>').description('new from SVC_NEW_PASSWORD or --new-password-file; yours also needs SVC_CURRENT_PASSWORD')
    .option('--new-password-file <path>').option('--current-password-file <path>')
    .action(async (username: string, o) => {
      const current = o.currentPasswordFile !== undefined || process.env.SVC_CURRENT_PASSWORD !== undefined
        ? await secret('SVC_CURRENT_PASSWORD', o.currentPasswordFile) : undefined;
      await (await client()).setPassword(username, await secret('SVC_NEW_PASSWORD', o.newPasswordFile), current);
      done(`password of ${username} changed`);
    });
  return users;
}

function clusterCommand(): Command {
  const cluster = new Command('cluster').description('cluster members, decommission, partition moves (admin)');
  cluster.command('members').option('--detail', "ask every member for its own status").action(async (o) => {
    const members = await (await client()).listMembers({ detail: o.detail });
    show(members, () => members.map((m) => ({ id: m.id, address: m.api_address, liveness: m.liveness, leader: m.raft_leader,
      voter: m.raft_voter, partitions: m.partitions_owned, decommissioning: m.decommissioning, moving_off: m.partitions_moving_off,
      blocked_by: (m.decommission_blocked_reasons ?? []).map((r) => r.code).join(',') })));
  });
  cluster.command('decommission <id>').description('drain a member: it takes no new produce and its partitions move to live members')
    .option('--dry-run', 'show the planned moves and what blocks the decommission; change nothing')
    .option('--accept-data-loss', 'DATA LOSS: give a dead member\'s partitions to live members empty; the records only it held are lost')
    .action(decommissionAction);
  cluster.command('cancel <id>').description("stop a member's decommission; moves not yet flipped go back").action(async (id: string) => {
    const member = await (await client()).cancelDecommission(id);
    show(member, () => [memberRow(member)]);
  });
  cluster.command('forget <id>').description('remove a dead member, or a decommissioned one that holds nothing more').action(async (id: string) => {
    await (await client()).forgetMember(id);
    done(`forgot member ${id}`);
  });
  cluster.command('rebalance').description('move partitions until every live member owns within one of the mean')
    .option('--dry-run', 'show the planned moves; change nothing')
    .action(async (o) => {
      const moves = await (await client()).rebalance({ dryRun: o.dryRun });
      if (moves.length === 0 && !asJson()) done(`balanced: no moves${o.dryRun === true ? ' planned' : ' started'}`);
      else show({ moves }, () => moves.map((m) => ({ ...m })));
    });
  movesCommands(cluster);
  return cluster;
}

function movesCommands(cluster: Command): void {
  cluster.command('moves').description('partition moves under way').action(async () => {
    const moves = await (await client()).listMoves();
    if (moves.length === 0 && !asJson()) return done('no partition moves');
    show(moves, () => moves.map((m) => ({ topic: m.topic, partition: m.partition, source: m.source, destination: m.destination,
      state: m.worker_state, attempts: m.attempts, bytes_fetched: m.bytes_fetched, started_at: m.started_at, stuck: m.stuck_reason, last_error: m.last_error })));
  });
  cluster.command('move <topic> <partition> <destination>').description('move one partition to the member named by id')
    .action(async (topic: string, partition: string, destination: string) => {
      const move = await (await client()).startMove(topic, int(partition), destination);
      show(move, () => [{ topic: move.topic, partition: move.partition, source: move.source, destination: move.destination, state: move.worker_state }]);
    });
  cluster.command('abort-move <topic> <partition>').description('abort a move that has not flipped: the partition stays with its source')
    .action(async (topic: string, partition: string) => {
      await (await client()).abortMove(topic, int(partition));
      done(`aborted the move of ${topic} partition ${partition}`);
    });
}

function memberRow(m: Member): Record<string, unknown> {
  return { id: m.id, liveness: m.liveness, decommissioning: m.decommissioning, partitions: m.partitions_owned, moving_off: m.partitions_moving_off,
    blocked_by: (m.decommission_blocked_reasons ?? []).map((r) => r.code).join(',') };
}

async function decommissionAction(id: string, o: { dryRun?: boolean; acceptDataLoss?: boolean }): Promise<void> {
  const c = await client();
  if (o.dryRun !== true) {
    const started = await c.decommission(id, { acceptDataLoss: o.acceptDataLoss });
    warnDataLoss(id, started.records_only_on_member, 'are');
    return show(started, () => [memberRow(started.member)]);
  }
  const plan = await c.decommission(id, { dryRun: true, acceptDataLoss: o.acceptDataLoss });
  warnDataLoss(id, plan.records_only_on_member, 'would be');
  if (asJson()) return show(plan, () => []);
  done(plan.moves.length === 0 ? 'planned moves: none' : 'planned moves:');
  show(plan, () => plan.moves.map((m) => ({ ...m })));
  done(plan.reasons.length === 0 ? 'blocked by: nothing' : 'blocked by:');
  for (const reason of plan.reasons) done(`  ${reason.code}: ${reason.message}`);
}

/** On stderr even with --json: a script's output stays JSON, and whoever runs it still sees the loss. */
function warnDataLoss(id: string, records: number | undefined, verb: string): void {
  if (records !== undefined) process.stderr.write(`svc: warning: data loss accepted: ${records} records only member ${id} held ${verb} lost\n`);
}

for (const command of [topicsCommand(), produceCommand(), consumeCommand(), ackCommand(), childrenCommand(), schemaCommand(),
  usersCommand(), clusterCommand()]) program.addCommand(command);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof SvcError) {
    process.stderr.write(`svc: ${error.status}: ${error.error}\n`);
    for (const reason of blockedReasons(error)) process.stderr.write(`svc:   ${reason.code}: ${reason.message}\n`);
  }
  else if (error instanceof SvcNoAnswerError) process.stderr.write(`svc: ${error.message}\n`);
  else process.stderr.write(`svc: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
