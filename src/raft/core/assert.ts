// Invariant checks for the pure Raft core, which may not import node:assert (STYLE §3: src/raft/core imports
// nothing from node:*). Runs on whichever thread hosts the core (the metadata thread, or a test). A failed check
// throws and the metadata thread dies, so the process stops and the restart recovers from the stored log.

export class RaftInvariantError extends Error {
  override name = 'RaftInvariantError';
}

/** Throws when an invariant the core relies on does not hold (a programmer error or a damaged log). */
export function assertRaft(condition: boolean, message: string): asserts condition {
  if (!condition) throw new RaftInvariantError(message);
}
