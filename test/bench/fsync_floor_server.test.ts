// Goal: the fsync floor (bench/fsync_floor_server.ts) answers every POST 202 with its bytes already in the ring file
// (the last body's are read back right after its answer), and the file keeps its size as writes wrap around it; empty
// and chunked bodies are answered too; one fdatasync per group, and groups shared by requests that arrive during a
// sync (its counts at stop); bad options stop it with a message. Method: the built server as a child process on a free loopback port with a 64 KiB ring, 400
// bodies of 1 KiB sent 32 at a time (so groups form while a sync runs, and the ring wraps about six times), then the
// file read back.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startChildServer } from '../../bench/node_process.js';

const script = fileURLToPath(new URL('../../bench/fsync_floor_server.js', import.meta.url));
const ringBytes = 64 * 1024;

/** A 1 KiB body that names itself: `body-<i>-` repeated, so each one can be found in the file. */
function body(i: number): string {
  return `body-${String(i).padStart(4, '0')}-`.repeat(100).slice(0, 1024);
}

t.test('every POST is answered 202 with its bytes in the ring, which wraps and keeps its size', async (t) => {
  const dir = await mkdtemp(join(os.tmpdir(), 'fsync-floor-test-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const server = await startChildServer({ name: 'fsync-floor', script,
    args: ['--port', '0', '--host', '127.0.0.1', '--dir', dir, '--ring-bytes', String(ringBytes)] });
  t.teardown(async () => void (await server.stop()));
  const statuses = new Map<number, number>();
  const count = 400;
  for (let first = 0; first < count; first += 32) {
    const batch = Array.from({ length: Math.min(32, count - first) }, (_, k) => first + k);
    const answers = await Promise.all(batch.map((i) => fetch(`${server.url}/v1/topics/t/produce`, { method: 'POST', body: body(i) })));
    for (const answer of answers) statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
  }
  t.same(Object.fromEntries(statuses), { 202: count }, 'every body answered 202');
  const ring = await readFile(join(dir, 'fsync-floor.ring'));
  t.equal((await stat(join(dir, 'fsync-floor.ring'))).size, ringBytes, 'the ring keeps its size: writes go over zeros in place');
  t.ok(ring.includes(body(count - 1)), 'the last body answered is in the file');
  t.notOk(ring.includes(body(0)), 'the first one was written over: the ring wrapped');
  const empty = await fetch(`${server.url}/x`, { method: 'POST' });
  t.equal(empty.status, 202, 'a POST without a body is answered once a sync has run');
  const chunked = await fetch(`${server.url}/x`, { method: 'POST', body: new Blob(['abc']).stream(), duplex: 'half' } as RequestInit);
  t.equal(chunked.status, 202, 'a chunked body too');
  t.equal((await fetch(`${server.url}/x`)).status, 404, 'anything but POST is 404');
  await server.stop();
  const stopped = /"msg":"stopped","groups":(\d+),"syncs":(\d+)/.exec(server.outputTail());
  t.ok(stopped, 'it says at stop how many groups it wrote and synced');
  const [groups, syncs] = [Number(stopped?.[1]), Number(stopped?.[2])];
  t.equal(syncs, groups, 'one fdatasync per group written');
  t.ok(groups < count, `requests that arrived during a sync shared the next one (${groups} groups for ${count + 2} bodies)`);
});

t.test('bad options stop it with a message and status 1', async (t) => {
  const cases: [string[], RegExp][] = [
    [['--port', '0'], /--dir \(where the ring file goes\) is required/],
    [['--port', '0', '--dir', os.tmpdir(), '--ring-bytes', '1000'], /--ring-bytes must be an integer of at least 65536, got 1000/],
    [['--port', '70000', '--dir', os.tmpdir()], /--port must be 0\.\.65535, got 70000/],
  ];
  for (const [args, message] of cases) {
    const run = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', timeout: 10_000 });
    t.equal(run.status, 1, `${args.join(' ')}: status 1`);
    t.match(run.stderr, message, `${args.join(' ')}: says why`);
  }
});
