// Majority rules, and nothing else: which index a majority of voters has persisted, and how an election tallies.
// Pure; used by the Raft core. Learners never appear in `voters`, so they count neither for commit nor for votes.
import { assertRaft } from './assert.js';

/**
 * The highest index persisted by a majority of voters (Raft §5.3): sorted descending, the value at position
 * floor(n/2) is reached by n - floor(n/2) voters, a majority. The caller still applies §5.4.2 (count only
 * entries of the current term).
 */
export function committedIndex(matchOf: (voter: number) => number, voters: readonly number[]): number {
  assertRaft(voters.length > 0, 'quorum: no voters');
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  const index = matches[Math.floor(voters.length / 2)];
  assertRaft(index !== undefined, 'quorum: majority position outside the voter list');
  return index;
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** Votes from non-voters are ignored; an empty voter list never wins. */
export function voteResult(votes: ReadonlyMap<number, boolean>, voters: readonly number[]): VoteResult {
  if (voters.length === 0) return 'lost';
  const needed = Math.floor(voters.length / 2) + 1;
  let granted = 0;
  let rejected = 0;
  for (const voter of voters) {
    const vote = votes.get(voter);
    if (vote === true) granted += 1;
    else if (vote === false) rejected += 1;
  }
  if (granted >= needed) return 'won';
  if (voters.length - rejected < needed) return 'lost';
  return 'pending';
}

/** True when the voters for which active() holds are a majority. */
export function quorumActive(active: (voter: number) => boolean, voters: readonly number[]): boolean {
  return voters.filter(active).length >= Math.floor(voters.length / 2) + 1;
}
