// The metadata Raft log and hard state in SQLite (<dataDir>/metadata/raft.sqlite), entries msgpackr-encoded.
// Runs on the metadata thread; only raft_thread.ts calls it, one operation at a time. Opened once at start,
// read back whole by loadAll(), appended to once per ready, closed at shutdown. WAL with synchronous=FULL
// syncs every transaction, so an entry whose append resolved survives kill -9 and power loss.
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Packr } from 'msgpackr';
import sqlite3 from 'sqlite3';
import type { HardState, LogEntry } from '../core/raft.js';

export interface StoredLog {
  /** Term 0, vote 0, commit 0 when nothing was ever stored. */
  hardState: HardState;
  /** Every stored entry, in index order from 1 (no snapshots or compaction yet). */
  entries: LogEntry[];
}

interface EntryRow {
  idx: number;
  term: number;
  data: Buffer;
}

interface HardStateRow {
  term: number;
  vote: number;
  commit_index: number;
}

const schemaSql = `
  CREATE TABLE IF NOT EXISTS entries (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL, data BLOB NOT NULL);
  CREATE TABLE IF NOT EXISTS hard_state (
    id INTEGER PRIMARY KEY CHECK (id = 1), term INTEGER NOT NULL, vote INTEGER NOT NULL, commit_index INTEGER NOT NULL);`;

const insertEntrySql = 'INSERT INTO entries (idx, term, data) VALUES (?, ?, ?)';
const upsertHardStateSql = `INSERT INTO hard_state (id, term, vote, commit_index) VALUES (1, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET term = excluded.term, vote = excluded.vote, commit_index = excluded.commit_index`;

/** Stated explicitly rather than relying on library defaults: plain maps and no record extension, so the
 *  bytes of an entry never depend on what else this encoder has seen. */
const packr = new Packr({ useRecords: false, moreTypes: false });

export class SqliteRaftStorage {
  private lastIndex = 0;
  private lastTerm = 0;
  private closed = false;

  private constructor(
    private readonly db: sqlite3.Database,
    private readonly insertEntry: sqlite3.Statement,
  ) {}

  /** Opens or creates the log at path (its directory is created too) and checks the durability settings. */
  static async open(path: string): Promise<SqliteRaftStorage> {
    await mkdir(dirname(path), { recursive: true });
    const db = await new Promise<sqlite3.Database>((resolve, reject) => {
      const opened: sqlite3.Database = new sqlite3.Database(path, sqlite3.OPEN_READWRITE | sqlite3.OPEN_CREATE, (err) =>
        settle(err, () => resolve(opened), reject),
      );
    });
    try {
      const journal = await all<{ journal_mode: string }>(db, 'PRAGMA journal_mode=WAL');
      if (journal[0]?.journal_mode !== 'wal') throw new Error(`raft storage: journal_mode is ${journal[0]?.journal_mode}, not wal`);
      await exec(db, 'PRAGMA synchronous=FULL');
      const synchronous = await all<{ synchronous: number }>(db, 'PRAGMA synchronous');
      // 2 is FULL: every commit syncs the WAL before it reports success.
      if (synchronous[0]?.synchronous !== 2) throw new Error(`raft storage: synchronous is ${synchronous[0]?.synchronous}, not FULL`);
      await exec(db, schemaSql);
      const insertEntry = await prepare(db, insertEntrySql);
      const storage = new SqliteRaftStorage(db, insertEntry);
      const last = await all<{ idx: number; term: number }>(db, 'SELECT idx, term FROM entries ORDER BY idx DESC LIMIT 1');
      storage.lastIndex = last[0]?.idx ?? 0;
      storage.lastTerm = last[0]?.term ?? 0;
      return storage;
    } catch (err) {
      await closeDb(db);
      throw err;
    }
  }

  /** Every stored entry and the hard state, each checked after reading (paired with append's checks). */
  async loadAll(): Promise<StoredLog> {
    const hardStateRows = await all<HardStateRow>(this.db, 'SELECT term, vote, commit_index FROM hard_state WHERE id = 1');
    const hardStateRow = hardStateRows[0];
    const hardState: HardState =
      hardStateRow === undefined ? { term: 0, vote: 0, commit: 0 } : { term: hardStateRow.term, vote: hardStateRow.vote, commit: hardStateRow.commit_index };
    const rows = await all<EntryRow>(this.db, 'SELECT idx, term, data FROM entries ORDER BY idx');
    const entries: LogEntry[] = [];
    let previousTerm = 0;
    for (const row of rows) {
      checkStored(row.idx === entries.length + 1, `entry ${row.idx} found where ${entries.length + 1} belongs`);
      checkStored(Number.isSafeInteger(row.term) && row.term >= previousTerm && row.term > 0, `entry ${row.idx} has term ${row.term} after ${previousTerm}`);
      checkStored(Buffer.isBuffer(row.data), `entry ${row.idx} holds no blob`);
      entries.push({ index: row.idx, term: row.term, data: packr.unpack(row.data) as unknown });
      previousTerm = row.term;
    }
    checkStored(entries.length === this.lastIndex, `read ${entries.length} entries, expected ${this.lastIndex}`);
    checkStored(hardState.term >= previousTerm, `hard state term ${hardState.term} below the last entry's term ${previousTerm}`);
    checkStored(hardState.commit <= entries.length, `hard state commit ${hardState.commit} beyond the last entry ${entries.length}`);
    return { hardState, entries };
  }

  /** Appends entries (contiguous after the stored ones) and replaces the hard state in one synced transaction. */
  async append(entries: readonly LogEntry[], hardState?: HardState): Promise<void> {
    if (this.closed) throw new Error('raft storage: append after close');
    let expectedIndex = this.lastIndex + 1;
    let lastTerm = this.lastTerm;
    const encoded: [number, number, Buffer][] = [];
    for (const entry of entries) {
      checkWrite(entry.index === expectedIndex, `entry ${entry.index} would be written where ${expectedIndex} belongs`);
      checkWrite(Number.isSafeInteger(entry.term) && entry.term >= lastTerm && entry.term > 0, `entry ${entry.index} has term ${entry.term} after ${lastTerm}`);
      encoded.push([entry.index, entry.term, packr.pack(entry.data)]);
      expectedIndex += 1;
      lastTerm = entry.term;
    }
    if (hardState !== undefined) {
      checkWrite(hardState.term >= lastTerm, `hard state term ${hardState.term} below the last entry's term ${lastTerm}`);
      checkWrite(hardState.commit <= expectedIndex - 1, `hard state commit ${hardState.commit} beyond the last entry ${expectedIndex - 1}`);
    }
    if (encoded.length === 0 && hardState === undefined) return;
    await exec(this.db, 'BEGIN IMMEDIATE');
    try {
      for (const row of encoded) await runStatement(this.insertEntry, row);
      if (hardState !== undefined) await run(this.db, upsertHardStateSql, [hardState.term, hardState.vote, hardState.commit]);
      await exec(this.db, 'COMMIT');
    } catch (err) {
      // The transaction may already be gone (SQLite rolls back on some I/O errors); the first error is the news.
      await exec(this.db, 'ROLLBACK').catch(() => undefined);
      throw err;
    }
    this.lastIndex = expectedIndex - 1;
    this.lastTerm = lastTerm;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve, reject) => this.insertEntry.finalize((err) => settle(err, resolve, reject)));
    await closeDb(this.db);
  }
}

function checkStored(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`raft storage: damaged log: ${message}`);
}

function checkWrite(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(`raft storage: refusing to write: ${message}`);
}

/** sqlite3 reports success as null from some callbacks and undefined from others (finalize). */
function settle(err: Error | null | undefined, resolve: () => void, reject: (err: Error) => void): void {
  if (err === null || err === undefined) resolve();
  else reject(err);
}

function exec(db: sqlite3.Database, sql: string): Promise<void> {
  return new Promise((resolve, reject) => db.exec(sql, (err) => settle(err, resolve, reject)));
}

function run(db: sqlite3.Database, sql: string, params: unknown[]): Promise<void> {
  return new Promise((resolve, reject) => db.run(sql, params, (err) => settle(err, resolve, reject)));
}

function all<Row>(db: sqlite3.Database, sql: string): Promise<Row[]> {
  return new Promise((resolve, reject) => db.all(sql, (err: Error | null, rows: Row[]) => settle(err, () => resolve(rows), reject)));
}

function prepare(db: sqlite3.Database, sql: string): Promise<sqlite3.Statement> {
  return new Promise((resolve, reject) => {
    const statement: sqlite3.Statement = db.prepare(sql, (err: Error | null) => settle(err, () => resolve(statement), reject));
  });
}

function runStatement(statement: sqlite3.Statement, params: unknown[]): Promise<void> {
  return new Promise((resolve, reject) => statement.run(params, (err: Error | null) => settle(err, resolve, reject)));
}

function closeDb(db: sqlite3.Database): Promise<void> {
  return new Promise((resolve, reject) => db.close((err) => settle(err, resolve, reject)));
}
