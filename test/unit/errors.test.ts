// Goal: the error catalog (src/errors.ts) is the one complete list of the API's error answers: every entry is
// documented, answers a status of spec §7's table, and the ids the metadata thread, the partition workers and the
// batch body parser (front or pool thread) refuse with all name entries and cross a port intact. Method: read the
// catalog's source for doc comments, call every entry, scan each refusing thread's sources for the refusal ids they
// use; the @ts-expect-error lines fail the build if a refusal with the wrong arguments compiled.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import {
  BrokerError, batchRefusalIds, errors, metadataRefusalIds, refusalError, specErrorStatuses, workerRefusalIds,
  type BatchRefusal, type ErrorId, type MetadataRefusal, type Refusal, type WorkerRefusal,
} from '../../src/errors.js';

const sourceRoot = new URL('../../../', import.meta.url);
const ids = Object.keys(errors) as ErrorId[];

/** Calls an entry with placeholder arguments (strings and numbers only end up in its message). */
function sample(id: ErrorId): BrokerError {
  const entry = errors[id] as unknown as (...args: unknown[]) => BrokerError;
  return entry(...Array.from({ length: entry.length }, (_, i) => (i === 0 ? 'x' : 1)));
}

t.test('every catalog entry has a doc comment right above it', async (t) => {
  const source = await readFile(new URL('src/errors.ts', sourceRoot), 'utf8');
  const start = source.indexOf('export const errors = {');
  const body = source.slice(start, source.indexOf('\n} as const;', start));
  const lines = body.split('\n');
  for (const id of ids) {
    const at = lines.findIndex((line) => new RegExp(`^  ${id}: `).test(line));
    t.ok(at > 0, `${id} is declared at the catalog's top level`);
    t.match(lines[at - 1] ?? '', /^\s*(\/\*\*.*\*\/|\*.*\*\/)\s*$/, `${id} has a doc comment`);
  }
});

t.test('every entry answers a status of spec §7, and only 404, 405, 431 and a forwarded 502 are plain text', async (t) => {
  const allowed: readonly number[] = specErrorStatuses;
  for (const id of ids) {
    const error = sample(id);
    t.ok(error instanceof BrokerError, `${id} makes a BrokerError`);
    t.ok(allowed.includes(error.status), `${id} answers ${error.status}, a spec §7 status`);
    // Spec §7: plain text for unknown routes and methods, oversized header blocks and some forwarded answers (502).
    if (error.plainText) t.ok([404, 405, 431, 502].includes(error.status), `${id} is plain text only as spec §7 says`);
  }
  t.equal(errors.authenticationUnavailable().status, 500, 'authentication unavailable is a 500 (spec §7 500 causes)');
});

t.test('the metadata ids name catalog entries and cross a port as plain data', async (t) => {
  for (const id of metadataRefusalIds) t.type(errors[id], 'function', `${id} is a catalog entry`);
  const refusal: MetadataRefusal = { id: 'forgetBreaksQuorum', args: [3, 1, 2] };
  const copied = structuredClone(refusal);
  t.same(copied, refusal);
  const error = refusalError(copied);
  t.equal(error.status, 409);
  t.equal(error.message, 'forgetting member 3 could break quorum: 1 of the remaining 2 voters are alive');
  t.same(refusalError({ id: 'leaderUnreachable', args: [] }).headers, { 'Retry-After': '2' }, 'the catalog decides Retry-After');
});

t.test('the worker and batch ids name catalog entries with the texts the API answers', async (t) => {
  for (const id of [...workerRefusalIds, ...batchRefusalIds]) t.type(errors[id], 'function', `${id} is a catalog entry`);
  const worker: WorkerRefusal = { id: 'partitionWorkerShuttingDown', args: [] };
  const shutdown = refusalError(structuredClone(worker));
  t.same([shutdown.status, shutdown.message, shutdown.headers], [503, 'partition worker shutting down', {}]);
  const unreadable = refusalError({ id: 'partitionUnreadable', args: [] });
  t.same([unreadable.status, unreadable.message], [500, 'partition unreadable']);
  const batch: BatchRefusal = { id: 'messageTooLarge', args: [7] };
  const tooLarge = refusalError(structuredClone(batch));
  t.same([tooLarge.status, tooLarge.message], [413, 'message 7: message too large']);
  const decoded = refusalError({ id: 'decodedTooLarge', args: [16] });
  t.same([decoded.status, decoded.message], [413, 'body: larger than 16 bytes decoded']);
  const undecodable = refusalError({ id: 'undecodableBody', args: ['zstd'] });
  t.same([undecodable.status, undecodable.message], [400, 'body: undecodable zstd content']);
  const invalidMessage = refusalError({ id: 'messageInvalid', args: [2, 'payload: required'] });
  t.same([invalidMessage.status, invalidMessage.message], [400, 'message 2: payload: required']);
});

/** The refusal ids written as literals in these source files, or in the .ts files under these directories. */
async function refusalIdsIn(paths: string[]): Promise<Set<string>> {
  const used = new Set<string>();
  for (const path of paths) {
    const files = path.endsWith('.ts')
      ? [path]
      : (await readdir(new URL(path, sourceRoot), { recursive: true })).filter((e) => e.endsWith('.ts')).map((e) => join(path, e));
    for (const file of files) {
      const text = await readFile(new URL(file, sourceRoot), 'utf8');
      for (const match of text.matchAll(/\{ id: '(\w+)', args: \[/g)) used.add(match[1]!);
      for (const match of text.matchAll(/id: code === 'unreachable' \? '(\w+)' : '(\w+)'/g)) used.add(match[1]!).add(match[2]!);
    }
  }
  return used;
}

t.test('every refusal id written in a refusing thread\'s sources is in its id list', async (t) => {
  const threads: [string, string[], readonly string[], number][] = [
    ['metadataRefusalIds', ['src/metadata', 'src/raft/shell'], metadataRefusalIds, 10],
    ['workerRefusalIds', ['workers'], workerRefusalIds, 2],
    ['batchRefusalIds', ['src/body/batch_produce_body.ts', 'src/pool/batch_task.ts'], batchRefusalIds, 7],
  ];
  for (const [list, paths, ids, least] of threads) {
    const used = await refusalIdsIn(paths);
    t.ok(used.size >= least, `${list}: found the refusal literals (${used.size})`);
    for (const id of used) t.ok(ids.includes(id), `${id} is in ${list}`);
  }
});

t.test('a refusal with the wrong arguments does not compile', async (t) => {
  // @ts-expect-error topicExists takes a name, not a number
  const wrongType: Refusal = { id: 'topicExists', args: [1] };
  // @ts-expect-error memberOwnsPartitions takes two numbers
  const tooFew: Refusal = { id: 'memberOwnsPartitions', args: [1] };
  // @ts-expect-error an id the catalog does not have
  const unknown: Refusal = { id: 'noSuchError', args: [] };
  // @ts-expect-error invalidJson is not an id the metadata thread refuses with
  const notMetadata: MetadataRefusal = { id: 'invalidJson', args: [] };
  // @ts-expect-error a partition worker does not refuse with invalidJson
  const notWorker: WorkerRefusal = { id: 'invalidJson', args: [] };
  // @ts-expect-error the batch parser does not refuse with partitionUnreadable
  const notBatch: BatchRefusal = { id: 'partitionUnreadable', args: [] };
  // @ts-expect-error messageTooLarge takes the message's index
  const noIndex: BatchRefusal = { id: 'messageTooLarge', args: [] };
  t.ok([wrongType, tooFew, unknown, notMetadata, notWorker, notBatch, noIndex].length === 7);
});
