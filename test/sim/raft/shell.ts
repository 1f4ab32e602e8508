// A simulated Raft shell for tests: what src/raft/shell does for real, kept in memory. It stores exactly what the
// Ready contract says (snapshot replaces the stored log, entries overwrite from entries[0].index, hard state),
// applies committed entries to a state machine that is the list of applied entry keys (snapshot data = that list,
// JSON-encoded), and can crash (losing everything but storage) and restart from storage. Used by the scripted
// interaction tests (test/unit/raft_scripts) and the deterministic simulation (test/sim/raft_sim.test.ts).
import { RaftNode, bootstrapEntries, type HardState, type LogEntry, type RaftConfig, type Ready, type RestoredState, type Snapshot } from '../../../src/raft/core/raft.js';

export interface Storage {
  hardState: HardState;
  snapshot: Snapshot | null;
  entries: LogEntry<string>[];
}

/** A stable text for an entry: its term and payload (index is its position). Two nodes applying different keys at
 *  one index violate state machine safety. */
export function entryKey(entry: LogEntry<string>): string {
  const p = entry.payload;
  switch (p.kind) {
    case 'command':
      return `${entry.term}:${p.command}`;
    case 'conf':
      return `${entry.term}:${p.change.type}(${p.change.node})`;
    case 'noop':
      return `${entry.term}:noop`;
  }
}

export function encodeState(keys: readonly string[]): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(keys));
}

export function decodeState(data: Uint8Array): string[] {
  const parsed: unknown = JSON.parse(new TextDecoder().decode(data));
  if (!Array.isArray(parsed) || !parsed.every((k) => typeof k === 'string')) throw new Error('sim: snapshot data is not a key list');
  return parsed as string[];
}

export class SimShellError extends Error {
  override name = 'SimShellError';
}

function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new SimShellError(message);
}

export class SimShell {
  readonly id: number;
  storage: Storage;
  core: RaftNode<string> | null = null;
  /** The state machine: keys of applied entries, position i holds index i + 1. */
  applied: string[] = [];
  /** Called for every entry applied (index, key), also re-applies after a restart. */
  onApply: (id: number, index: number, key: string) => void = () => {};
  private readonly makeConfig: () => RaftConfig;

  constructor(id: number, makeConfig: () => RaftConfig, storage: Storage) {
    this.id = id;
    this.makeConfig = makeConfig;
    this.storage = storage;
    this.start();
  }

  get up(): boolean {
    return this.core !== null;
  }

  node(): RaftNode<string> {
    check(this.core !== null, `sim: node ${this.id} is down`);
    return this.core;
  }

  /** Starts the core from storage; the state machine restarts from the stored snapshot (or empty). */
  start(): void {
    const { hardState, snapshot, entries } = this.storage;
    const restored: RestoredState<string> = { hardState: { ...hardState }, snapshot, entries: [...entries] };
    this.core = new RaftNode<string>(this.makeConfig(), restored);
    this.applied = snapshot === null ? [] : decodeState(snapshot.data);
    check(this.applied.length === (snapshot?.index ?? 0), `sim: node ${this.id} snapshot at ${snapshot?.index} holds ${this.applied.length} entries`);
  }

  crash(): void {
    this.core = null;
  }

  /** Writes what ready asks to storage (the durable part of handling it). */
  persist(ready: Ready<string>): void {
    const s = this.storage;
    if (ready.snapshot !== undefined) {
      s.snapshot = ready.snapshot;
      s.entries = [];
    }
    const first = ready.entries[0];
    if (first !== undefined) {
      const base = s.snapshot?.index ?? 0;
      const storedLast = base + s.entries.length;
      check(first.index > base && first.index <= storedLast + 1, `sim: node ${this.id} persists ${first.index} after stored ${base}..${storedLast}`);
      s.entries = s.entries.slice(0, first.index - base - 1).concat(ready.entries);
    }
    if (ready.hardState !== undefined) s.hardState = { ...ready.hardState };
  }

  /** Applies ready's snapshot (restore) and committed entries to the state machine. */
  apply(ready: Ready<string>): void {
    if (ready.snapshot !== undefined) {
      const keys = decodeState(ready.snapshot.data);
      check(keys.length === ready.snapshot.index, `sim: node ${this.id} got snapshot ${ready.snapshot.index} holding ${keys.length} entries`);
      check(keys.length > this.applied.length, `sim: node ${this.id} got snapshot ${keys.length} at or below applied ${this.applied.length}`);
      this.applied = keys;
      keys.forEach((key, i) => this.onApply(this.id, i + 1, key));
    }
    for (const entry of ready.committed) {
      check(entry.index === this.applied.length + 1, `sim: node ${this.id} applies ${entry.index} after ${this.applied.length}`);
      const key = entryKey(entry);
      this.applied.push(key);
      this.onApply(this.id, entry.index, key);
    }
  }

  /** Serializes the state machine at its applied index and hands it to the core; stores the snapshot. */
  compact(index: number = this.applied.length): Snapshot {
    check(index <= this.applied.length, `sim: node ${this.id} compacts at ${index} beyond applied ${this.applied.length}`);
    const snapshot = this.node().compact(index, encodeState(this.applied.slice(0, index)));
    const base = this.storage.snapshot?.index ?? 0;
    this.storage.snapshot = snapshot;
    this.storage.entries = this.storage.entries.slice(index - base);
    return snapshot;
  }
}

/** The storage of a node of a new cluster (bootstrap entries), or of a node that joins later (empty). */
export function initialStorage(voters: number[] | null): Storage {
  if (voters === null) return { hardState: { term: 0, vote: 0, commit: 0 }, snapshot: null, entries: [] };
  return { hardState: { term: 1, vote: 0, commit: voters.length }, snapshot: null, entries: bootstrapEntries(voters) };
}
