// The durable floor for `npm run bench`: a uWebSockets.js server that appends every POST body to one file and answers
// 202 only after the group-commit fdatasync covering it, doing nothing else (no parsing, credentials, framing or
// hand-off). Issue 4 names such a server as what single produce is near at best: it costs what HTTP on loopback plus
// a synced write per group cost on this machine, and the broker's figure over it is what the broker's own work costs.
// Like the broker's ingress log, the file is filled with zeros first and then overwritten in place (a ring), so a
// sync never changes the file's size and needs no journal commit. Single-threaded, like the broker's front thread.
// bench/produce.ts starts it as a child process (`node dist/bench/fsync_floor_server.js --port 0 --dir DIR`, and
// `--ring-bytes N` for a ring other than 128 MiB), reads the port from the stdout line {"msg":"listening","port":N}
// and stops it with SIGTERM.
import { closeSync, fdatasync, fsyncSync, openSync, write, writeSync } from 'node:fs';
import { join } from 'node:path';
import uWS from 'uWebSockets.js';
import { readFloorBody, readFloorOptions, serveFloor, type FloorRequest } from './floor_server.js';

/** The ring file by default: room for about a second of single produces, and for any group of batch bodies the bench
 *  sends. Tests set a small one (--ring-bytes) to see it wrap. */
const ringBytesDefault = 128 * 1024 * 1024;
const ringBytesMin = 64 * 1024;
const zeroChunkBytes = 1024 * 1024;
const groupBytesFirst = 64 * 1024;

interface FsyncFloorOptions {
  host: string;
  port: number;
  dir: string;
  ringBytes: number;
}

function readOptions(): FsyncFloorOptions {
  const { host, port, own } = readFloorOptions(['dir', 'ring-bytes']);
  if (own.dir === undefined || own.dir === '') throw new Error('--dir (where the ring file goes) is required');
  const ringBytes = own['ring-bytes'] === undefined ? ringBytesDefault : Number(own['ring-bytes']);
  if (!Number.isSafeInteger(ringBytes) || ringBytes < ringBytesMin) {
    throw new Error(`--ring-bytes must be an integer of at least ${ringBytesMin}, got ${own['ring-bytes']}`);
  }
  return { host, port, dir: own.dir, ringBytes };
}

/** Bodies waiting for the next write, and whom to answer once it is synced. */
class Group {
  bytes = Buffer.allocUnsafe(groupBytesFirst);
  used = 0;
  waiters: FloorRequest[] = [];

  append(chunk: Uint8Array): void {
    if (this.used + chunk.byteLength > this.bytes.byteLength) {
      const grown = Buffer.allocUnsafe(Math.max(this.bytes.byteLength * 2, this.used + chunk.byteLength));
      this.bytes.copy(grown, 0, 0, this.used);
      this.bytes = grown;
    }
    this.bytes.set(chunk, this.used);
    this.used += chunk.byteLength;
  }
}

/** One write and one fdatasync at a time; requests that arrive meanwhile wait for the next. */
class GroupCommit {
  private pending = new Group();
  private spare = new Group();
  private writing = false;
  private position = 0;
  /** Groups written and fdatasyncs done, printed at stop: the test sees that requests shared syncs. */
  groups = 0;
  syncs = 0;

  constructor(private readonly fd: number, private readonly ringBytes: number) {}

  append(chunk: Uint8Array): void {
    this.pending.append(chunk);
  }

  /** Answers waiter once the bytes appended so far are synced. */
  commit(waiter: FloorRequest): void {
    this.pending.waiters.push(waiter);
    if (this.writing) return;
    this.writing = true;
    // The check phase: every request this loop turn delivers shares the first write, as in the broker.
    setImmediate(() => this.writeNext());
  }

  private writeNext(): void {
    const group = this.pending;
    if (group.waiters.length === 0) {
      this.writing = false;
      return;
    }
    this.pending = this.spare;
    this.spare = group;
    if (group.used > this.ringBytes) fail(new Error(`a group of ${group.used} bytes does not fit the ${this.ringBytes}-byte ring`));
    if (this.position + group.used > this.ringBytes) this.position = 0;
    const at = this.position;
    this.position += group.used;
    this.groups += 1;
    this.writeFrom(group, 0, at);
  }

  /** Writes group.bytes[from..used) at the file position `at` (a short write continues), then syncs and answers. */
  private writeFrom(group: Group, from: number, at: number): void {
    write(this.fd, group.bytes, from, group.used - from, at, (writeError, written) => {
      if (writeError !== null) fail(writeError);
      if (from + written < group.used) {
        this.writeFrom(group, from + written, at + written);
        return;
      }
      fdatasync(this.fd, (syncError) => {
        if (syncError !== null) fail(syncError);
        this.syncs += 1;
        const synced = group.waiters;
        group.waiters = [];
        group.used = 0;
        // The next group's write goes out before these answers, as the ingress log's does: it runs while they are sent.
        this.writeNext();
        for (const waiter of synced) {
          if (!waiter.aborted) waiter.res.cork(() => waiter.res.writeStatus('202 Accepted').end());
        }
      });
    });
  }
}

function fail(error: Error): never {
  process.stderr.write(`fsync_floor_server: ${error.message}\n`);
  process.exit(1);
}

/** The ring file, zeros to its end and synced, before the first request. */
function openRing(dir: string, ringBytes: number): number {
  const fd = openSync(join(dir, 'fsync-floor.ring'), 'w+');
  const zeros = Buffer.alloc(zeroChunkBytes);
  // writeSync may write less than asked: each step goes on from where the last one ended.
  for (let at = 0; at < ringBytes;) at += writeSync(fd, zeros, 0, Math.min(zeroChunkBytes, ringBytes - at), at);
  fsyncSync(fd);
  return fd;
}

function main(): void {
  const options = readOptions();
  const fd = openRing(options.dir, options.ringBytes);
  const commit = new GroupCommit(fd, options.ringBytes);
  const app = uWS.App();
  // A request without a body waits for the next sync all the same. The group copies each chunk, which uWS neuters.
  app.post('/*', (res, req) => readFloorBody(res, req, (chunk) => commit.append(chunk), (request) => commit.commit(request)));
  serveFloor('fsync_floor_server', app, options.host, options.port, () => {
    closeSync(fd);
    process.stdout.write(JSON.stringify({ level: 30, msg: 'stopped', groups: commit.groups, syncs: commit.syncs }) + '\n');
  });
}

main();
