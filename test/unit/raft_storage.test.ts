// Goal: the metadata log's SQLite storage keeps exactly what Raft requires across a reopen: entries appended in
// order, a conflicting tail replaced (Raft §5.3), a snapshot received from the leader replacing the whole log, a
// compaction dropping the entries a snapshot covers, the hard state, and refusals of writes that would leave a gap.
// Method: open, save, close and reopen a real sqlite file in a temp dir; compare load() with what was written.
import t, { type Test } from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogEntry } from '../../src/raft/core/raft.js';
import { SqliteRaftStorage } from '../../src/raft/shell/storage_sqlite.js';

function entry(index: number, term: number, name = `c${index}`): LogEntry {
  return { index, term, payload: { kind: 'command', command: { type: 'user.delete', username: name } } };
}

async function withStorage(t: Test, body: (path: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-raft-storage-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await body(join(dir, 'metadata', 'raft.sqlite'));
}

async function reopened(path: string) {
  const storage = await SqliteRaftStorage.open(path);
  const loaded = await storage.load();
  await storage.close();
  return loaded;
}

t.test('entries and hard state survive a reopen; a conflicting tail is replaced', async (t) => {
  await withStorage(t, async (path) => {
    const storage = await SqliteRaftStorage.open(path);
    t.same(await storage.load(), { hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [] }, 'a new log is empty');
    await storage.save({ entries: [entry(1, 1), entry(2, 1), entry(3, 2)], hardState: { term: 2, vote: 1, commit: 2 } });
    // A new leader's entries overwrite index 3 onwards (a follower's divergent uncommitted tail).
    await storage.save({ entries: [entry(3, 3, 'x3'), entry(4, 3, 'x4')], hardState: { term: 3, vote: 2, commit: 2 } });
    await storage.close();
    const loaded = await reopened(path);
    t.same(loaded.hardState, { term: 3, vote: 2, commit: 2 });
    t.same(loaded.entries, [entry(1, 1), entry(2, 1), entry(3, 3, 'x3'), entry(4, 3, 'x4')]);
  });
});

t.test('writes that would leave a gap or go back in term are refused and change nothing', async (t) => {
  await withStorage(t, async (path) => {
    const storage = await SqliteRaftStorage.open(path);
    await storage.save({ entries: [entry(1, 1), entry(2, 2)], hardState: { term: 2, vote: 0, commit: 0 } });
    await t.rejects(storage.save({ entries: [entry(4, 2)] }), /refusing to write: entry 4 would leave a gap/);
    await t.rejects(storage.save({ entries: [entry(3, 1)] }), /refusing to write: entry 3 has term 1 after 2/);
    await storage.close();
    t.same((await reopened(path)).entries, [entry(1, 1), entry(2, 2)]);
  });
});

t.test('compaction keeps the entries after the snapshot; a received snapshot replaces the whole log', async (t) => {
  await withStorage(t, async (path) => {
    const storage = await SqliteRaftStorage.open(path);
    await storage.save({ entries: [1, 2, 3, 4, 5].map((i) => entry(i, 1)), hardState: { term: 1, vote: 1, commit: 5 } });
    const compacted = { index: 3, term: 1, confState: { voters: [1, 2, 3], learners: [] }, data: new Uint8Array([1, 2, 3]) };
    await storage.compact(compacted);
    await storage.close();
    let loaded = await reopened(path);
    t.same(loaded.snapshot, compacted, 'the snapshot is stored with its configuration and data');
    t.same(loaded.entries, [entry(4, 1), entry(5, 1)], 'only the entries after it remain');

    const again = await SqliteRaftStorage.open(path);
    await again.load();
    await t.rejects(again.compact({ ...compacted, index: 2 }), /snapshot at 2 outside/, 'a snapshot never moves back');
    const received = { index: 9, term: 4, confState: { voters: [1, 2, 3], learners: [4] }, data: new Uint8Array([9]) };
    await again.save({ snapshot: received, entries: [entry(10, 4)], hardState: { term: 4, vote: 0, commit: 9 } });
    await again.close();
    loaded = await reopened(path);
    t.same(loaded.snapshot, received);
    t.same(loaded.entries, [entry(10, 4)], 'entries older than a received snapshot are gone, later ones follow it');
    t.same(loaded.hardState, { term: 4, vote: 0, commit: 9 });
  });
});

t.test('a log file written by another format is refused with a message', async (t) => {
  await withStorage(t, async (path) => {
    const storage = await SqliteRaftStorage.open(path);
    await storage.close();
    const sqlite3 = (await import('sqlite3')).default;
    const db = new sqlite3.Database(path);
    await new Promise<void>((resolve, reject) => db.exec("UPDATE meta SET value = 1 WHERE key = 'format'", (err) => (err ? reject(err) : resolve())));
    await new Promise<void>((resolve) => db.close(() => resolve()));
    await t.rejects(SqliteRaftStorage.open(path), /has format 1, this build reads 2/);
  });
});

t.test('a file that is not a sqlite database is refused', async (t) => {
  await withStorage(t, async (path) => {
    await SqliteRaftStorage.open(path).then((s) => s.close());
    await writeFile(path, 'not a database at all, just text that fills the header page'.repeat(100));
    await t.rejects(SqliteRaftStorage.open(path), /not a database|SQLITE_NOTADB/, 'sqlite refuses it as not a database');
  });
});
