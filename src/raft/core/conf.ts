// Membership configurations (Raft thesis §4.1, single-server changes): applying a change, and whether a proposed
// change is allowed. Pure; used by the Raft core on whichever thread hosts it. A configuration takes effect as
// soon as its entry is in the log, so the core recomputes it from the snapshot's ConfState plus the log's conf
// entries whenever the log gains or loses one.
import type { ConfChange, ConfState, LogEntry } from './types.js';

export function emptyConf(): ConfState {
  return { voters: [], learners: [] };
}

export function cloneConf(conf: ConfState): ConfState {
  return { voters: [...conf.voters], learners: [...conf.learners] };
}

export function isVoter(conf: ConfState, id: number): boolean {
  return conf.voters.includes(id);
}

export function isMember(conf: ConfState, id: number): boolean {
  return conf.voters.includes(id) || conf.learners.includes(id);
}

/** Every member, voters then learners. */
export function members(conf: ConfState): number[] {
  return [...conf.voters, ...conf.learners];
}

/** The config after change. addLearner of a voter is a no-op (demotion is not supported; proposals refuse it). */
export function applyConfChange(conf: ConfState, change: ConfChange): ConfState {
  const voters = conf.voters.filter((id) => id !== change.node);
  const learners = conf.learners.filter((id) => id !== change.node);
  switch (change.type) {
    case 'addVoter':
      voters.push(change.node);
      break;
    case 'addLearner':
      if (conf.voters.includes(change.node)) return cloneConf(conf);
      learners.push(change.node);
      break;
    case 'removeVoter':
      break;
  }
  return { voters: voters.sort((a, b) => a - b), learners: learners.sort((a, b) => a - b) };
}

/** The config of a snapshot's conf (or empty) followed by the conf entries among entries, in order. */
export function confAfter<T>(base: ConfState | null, entries: readonly LogEntry<T>[]): ConfState {
  let conf = base === null ? emptyConf() : cloneConf(base);
  for (const entry of entries) {
    if (entry.payload.kind === 'conf') conf = applyConfChange(conf, entry.payload.change);
  }
  return conf;
}

/** Why change may not be proposed against conf, or null when it may. */
export function confChangeProblem(conf: ConfState, change: ConfChange): string | null {
  const { node } = change;
  if (!Number.isSafeInteger(node) || node <= 0) return `node must be a positive integer, got ${node}`;
  switch (change.type) {
    case 'addVoter':
      if (conf.voters.includes(node)) return `node ${node} is already a voter`;
      if (!conf.learners.includes(node)) return `node ${node} must be added as a learner first and catch up (thesis §4.2.1)`;
      return null;
    case 'addLearner':
      if (conf.voters.includes(node)) return `node ${node} is a voter; demotion is not supported`;
      if (conf.learners.includes(node)) return `node ${node} is already a learner`;
      return null;
    case 'removeVoter':
      if (!isMember(conf, node)) return `node ${node} is not a member`;
      if (conf.voters.length === 1 && conf.voters[0] === node) return `node ${node} is the last voter`;
      return null;
    default:
      return `unknown change type ${(change as { type: unknown }).type as string}`;
  }
}
