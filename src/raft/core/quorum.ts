// The commit rule, and nothing else: which index a majority of voters has persisted. Pure; runs inside the
// Raft core on the metadata thread. Kept apart so replication changes how match indexes are learned, not how
// they are counted. With one voter the answer is that voter's own persisted index.
import { assertRaft } from './assert.js';

/**
 * The highest index persisted by a majority of voters (Raft §5.3): sorted descending, the value at position
 * floor(n/2) is reached by n - floor(n/2) voters, which is a majority. A voter missing from matchIndexes has
 * persisted nothing yet. The caller still applies §5.4.2 (count only entries of the current term).
 */
export function committedIndex(matchIndexes: ReadonlyMap<number, number>, voters: readonly number[]): number {
  assertRaft(voters.length > 0, 'quorum: no voters');
  const matches = voters.map((voter) => matchIndexes.get(voter) ?? 0).sort((a, b) => b - a);
  const index = matches[Math.floor(voters.length / 2)];
  assertRaft(index !== undefined, 'quorum: majority position outside the voter list');
  return index;
}
