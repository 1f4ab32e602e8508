// The metadata Raft log, hard state and latest snapshot in SQLite (<dataDir>/metadata/raft.sqlite), entry payloads
// and configurations msgpackr-encoded. Runs on the metadata thread; only the shell calls it, one operation at a time.
// Opened once at start, read back whole by load(), written once per ready (save) and per compaction (compact),
// closed at shutdown. WAL with synchronous=FULL syncs every transaction, so what a save resolved survives kill -9.
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { Packr } from 'msgpackr';
import sqlite3 from 'sqlite3';
import type { ConfState, EntryPayload, HardState, LogEntry, Snapshot } from '../core/raft.js';

/** Bumped when the tables change meaning; a log written by another format is refused rather than misread. */
const storageFormat = 2;

export interface StoredLog {
  /** Term 0, vote 0, commit 0 when nothing was ever stored. */
  hardState: HardState;
  snapshot: Snapshot | null;
  /** Every stored entry after the snapshot (or from index 1), in index order. */
  entries: LogEntry[];
}

/** What one ready asks to make durable, in one transaction. */
export interface StorageWrite {
  hardState?: HardState;
  /** A snapshot received from the leader: it replaces the whole log. */
  snapshot?: Snapshot;
  /** entries[0] may start at or below the last stored index: the stored tail from there on is replaced. */
  entries: readonly LogEntry[];
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

interface SnapshotRow {
  idx: number;
  term: number;
  conf: Buffer;
  data: Buffer;
}

const schemaSql = `
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS entries (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL, data BLOB NOT NULL);
  CREATE TABLE IF NOT EXISTS hard_state (
    id INTEGER PRIMARY KEY CHECK (id = 1), term INTEGER NOT NULL, vote INTEGER NOT NULL, commit_index INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS snapshot (
    id INTEGER PRIMARY KEY CHECK (id = 1), idx INTEGER NOT NULL, term INTEGER NOT NULL, conf BLOB NOT NULL, data BLOB NOT NULL);`;

const insertEntrySql = 'INSERT INTO entries (idx, term, data) VALUES (?, ?, ?)';
const upsertHardStateSql = `INSERT INTO hard_state (id, term, vote, commit_index) VALUES (1, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET term = excluded.term, vote = excluded.vote, commit_index = excluded.commit_index`;
const upsertSnapshotSql = `INSERT INTO snapshot (id, idx, term, conf, data) VALUES (1, ?, ?, ?, ?)
  ON CONFLICT (id) DO UPDATE SET idx = excluded.idx, term = excluded.term, conf = excluded.conf, data = excluded.data`;

/** Stated explicitly rather than relying on library defaults: plain maps and no record extension, so the
 *  bytes of an entry never depend on what else this encoder has seen. */
const packr = new Packr({ useRecords: false, moreTypes: false });

export class SqliteRaftStorage {
  /** Index and term of the last stored entry, or of the snapshot when no entry follows it. */
  private lastIndex = 0;
  private lastTerm = 0;
  private snapshotIndex = 0;
  private snapshotTerm = 0;
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
      const tables = await all<{ name: string }>(db, "SELECT name FROM sqlite_master WHERE type = 'table'");
      const hadTables = tables.length > 0;
      await exec(db, schemaSql);
      const format = await all<{ value: number }>(db, "SELECT value FROM meta WHERE key = 'format'");
      if (format[0] === undefined) {
        if (hadTables) throw new Error(`raft storage: ${path} was written by an older build (no format ${storageFormat} marker); start with a new data dir`);
        await run(db, "INSERT INTO meta (key, value) VALUES ('format', ?)", [storageFormat]);
      } else if (format[0].value !== storageFormat) {
        throw new Error(`raft storage: ${path} has format ${format[0].value}, this build reads ${storageFormat}`);
      }
      const insertEntry = await prepare(db, insertEntrySql);
      const storage = new SqliteRaftStorage(db, insertEntry);
      const snapshot = await all<{ idx: number; term: number }>(db, 'SELECT idx, term FROM snapshot WHERE id = 1');
      const last = await all<{ idx: number; term: number }>(db, 'SELECT idx, term FROM entries ORDER BY idx DESC LIMIT 1');
      storage.snapshotIndex = snapshot[0]?.idx ?? 0;
      storage.snapshotTerm = snapshot[0]?.term ?? 0;
      storage.lastIndex = last[0]?.idx ?? storage.snapshotIndex;
      storage.lastTerm = last[0]?.term ?? snapshot[0]?.term ?? 0;
      return storage;
    } catch (err) {
      await closeDb(db);
      throw err;
    }
  }

  /** The hard state, snapshot and every entry after it, each checked after reading (paired with save's checks). */
  async load(): Promise<StoredLog> {
    const hardStateRows = await all<HardStateRow>(this.db, 'SELECT term, vote, commit_index FROM hard_state WHERE id = 1');
    const hardStateRow = hardStateRows[0];
    const hardState: HardState =
      hardStateRow === undefined ? { term: 0, vote: 0, commit: 0 } : { term: hardStateRow.term, vote: hardStateRow.vote, commit: hardStateRow.commit_index };
    const snapshotRow = (await all<SnapshotRow>(this.db, 'SELECT idx, term, conf, data FROM snapshot WHERE id = 1'))[0];
    const snapshot: Snapshot | null =
      snapshotRow === undefined
        ? null
        : { index: snapshotRow.idx, term: snapshotRow.term, confState: checkedConfState(packr.unpack(snapshotRow.conf)), data: new Uint8Array(snapshotRow.data) };
    const rows = await all<EntryRow>(this.db, 'SELECT idx, term, data FROM entries ORDER BY idx');
    const entries: LogEntry[] = [];
    let previousIndex = snapshot?.index ?? 0;
    let previousTerm = snapshot?.term ?? 0;
    for (const row of rows) {
      checkStored(row.idx === previousIndex + 1, `entry ${row.idx} found where ${previousIndex + 1} belongs`);
      checkStored(Number.isSafeInteger(row.term) && row.term >= previousTerm && row.term > 0, `entry ${row.idx} has term ${row.term} after ${previousTerm}`);
      checkStored(Buffer.isBuffer(row.data), `entry ${row.idx} holds no blob`);
      entries.push({ index: row.idx, term: row.term, payload: checkedPayload(row.idx, packr.unpack(row.data)) });
      previousIndex = row.idx;
      previousTerm = row.term;
    }
    checkStored(previousIndex === this.lastIndex, `read up to entry ${previousIndex}, expected ${this.lastIndex}`);
    checkStored(hardState.term >= previousTerm, `hard state term ${hardState.term} below the last entry's term ${previousTerm}`);
    checkStored(hardState.commit <= previousIndex, `hard state commit ${hardState.commit} beyond the last entry ${previousIndex}`);
    return { hardState, snapshot, entries };
  }

  /** Makes one ready durable in one synced transaction: a received snapshot, entries (replacing a conflicting
   *  stored tail), the hard state. */
  async save(write: StorageWrite): Promise<void> {
    if (this.closed) throw new Error('raft storage: save after close');
    const { entries, hardState, snapshot } = write;
    let lastIndex = snapshot?.index ?? this.lastIndex;
    let lastTerm = snapshot?.term ?? this.lastTerm;
    const first = entries[0];
    if (first !== undefined) {
      const floor = snapshot?.index ?? this.snapshotIndex;
      checkWrite(first.index > floor && first.index <= lastIndex + 1, `entry ${first.index} would leave a gap after ${lastIndex} or reach into the snapshot at ${floor}`);
      // Appending continues the last term; a replaced tail's terms no longer bind, and the term of the entry before
      // it is the core's to check (not held here).
      if (first.index - 1 === floor) lastTerm = snapshot?.term ?? (floor === 0 ? 0 : this.snapshotTerm);
      else if (first.index <= lastIndex) lastTerm = 0;
      lastIndex = first.index - 1;
    }
    const encoded: [number, number, Buffer][] = [];
    for (const entry of entries) {
      checkWrite(entry.index === lastIndex + 1, `entry ${entry.index} would be written where ${lastIndex + 1} belongs`);
      checkWrite(Number.isSafeInteger(entry.term) && entry.term >= lastTerm && entry.term > 0, `entry ${entry.index} has term ${entry.term} after ${lastTerm}`);
      encoded.push([entry.index, entry.term, packr.pack(entry.payload)]);
      lastIndex = entry.index;
      lastTerm = entry.term;
    }
    if (encoded.length === 0 && hardState === undefined && snapshot === undefined) return;
    await this.transaction(async () => {
      if (snapshot !== undefined) {
        await run(this.db, 'DELETE FROM entries', []);
        await run(this.db, upsertSnapshotSql, [snapshot.index, snapshot.term, packr.pack(snapshot.confState), Buffer.from(snapshot.data)]);
      }
      if (first !== undefined) await run(this.db, 'DELETE FROM entries WHERE idx >= ?', [first.index]);
      for (const row of encoded) await runStatement(this.insertEntry, row);
      if (hardState !== undefined) await run(this.db, upsertHardStateSql, [hardState.term, hardState.vote, hardState.commit]);
    });
    if (snapshot !== undefined) {
      this.snapshotIndex = snapshot.index;
      this.snapshotTerm = snapshot.term;
    }
    if (encoded.length > 0 || snapshot !== undefined) {
      this.lastIndex = Math.max(lastIndex, snapshot?.index ?? 0);
      this.lastTerm = lastTerm;
    }
  }

  /** Stores a snapshot the shell took of its own state machine and drops the entries it covers. */
  async compact(snapshot: Snapshot): Promise<void> {
    if (this.closed) throw new Error('raft storage: compact after close');
    checkWrite(snapshot.index > this.snapshotIndex && snapshot.index <= this.lastIndex, `snapshot at ${snapshot.index} outside (${this.snapshotIndex}, ${this.lastIndex}]`);
    await this.transaction(async () => {
      await run(this.db, upsertSnapshotSql, [snapshot.index, snapshot.term, packr.pack(snapshot.confState), Buffer.from(snapshot.data)]);
      await run(this.db, 'DELETE FROM entries WHERE idx <= ?', [snapshot.index]);
    });
    this.snapshotIndex = snapshot.index;
    this.snapshotTerm = snapshot.term;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await new Promise<void>((resolve, reject) => this.insertEntry.finalize((err) => settle(err, resolve, reject)));
    await closeDb(this.db);
  }

  private async transaction(body: () => Promise<void>): Promise<void> {
    await exec(this.db, 'BEGIN IMMEDIATE');
    try {
      await body();
      await exec(this.db, 'COMMIT');
    } catch (err) {
      // The transaction may already be gone (SQLite rolls back on some I/O errors); the first error is the news.
      await exec(this.db, 'ROLLBACK').catch(() => undefined);
      throw err;
    }
  }
}

function checkedPayload(index: number, raw: unknown): EntryPayload<unknown> {
  const payload = raw as { kind?: unknown } | null;
  checkStored(typeof payload === 'object' && payload !== null, `entry ${index} holds no payload object`);
  checkStored(payload.kind === 'command' || payload.kind === 'conf' || payload.kind === 'noop', `entry ${index} holds payload kind ${String(payload.kind)}`);
  return payload as EntryPayload<unknown>;
}

function checkedConfState(raw: unknown): ConfState {
  const conf = raw as { voters?: unknown; learners?: unknown } | null;
  const ids = (value: unknown): value is number[] => Array.isArray(value) && value.every((id) => Number.isSafeInteger(id) && id > 0);
  checkStored(typeof conf === 'object' && conf !== null && ids(conf.voters) && ids(conf.learners), 'snapshot holds no configuration');
  return { voters: conf.voters as number[], learners: conf.learners as number[] };
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
