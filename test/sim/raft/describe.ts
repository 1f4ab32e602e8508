// How a Raft message or entry reads in the checked-in scripts (test/unit/raft_scripts) and in the simulation's traces:
// one line each, every field that decides behaviour.
import type { LogEntry, RaftMessage } from '../../../src/raft/core/raft.js';
import { entryKey } from './shell.js';

export function fmtEntry(e: LogEntry): string {
  return `${e.index}@${e.term} ${entryKey(e as LogEntry<string>).replace(/^\d+:/, '')}`;
}

export function fmtMessage(m: RaftMessage): string {
  const head = `${m.from}->${m.to} ${m.type} term ${m.term}`;
  switch (m.type) {
    case 'app':
      return `${head} prev ${m.index}@${m.logTerm} commit ${m.commit} entries [${m.entries.map(fmtEntry).join(', ')}]`;
    case 'appResp':
      return m.reject ? `${head} reject ${m.index} hint ${m.rejectHint}@${m.logTerm}` : `${head} index ${m.index}`;
    case 'heartbeat':
      return `${head} commit ${m.commit}`;
    case 'preVote':
    case 'vote':
      return `${head} last ${m.index}@${m.logTerm}${m.transfer ? ' transfer' : ''}`;
    case 'preVoteResp':
    case 'voteResp':
      return `${head} ${m.reject ? 'reject' : 'grant'}`;
    case 'snap':
      return `${head} snapshot ${m.snapshot.index}@${m.snapshot.term} voters=(${m.snapshot.confState.voters.join(',')}) learners=(${m.snapshot.confState.learners.join(',')})`;
    case 'heartbeatResp':
    case 'timeoutNow':
      return head;
  }
}
