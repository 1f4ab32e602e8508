// The audit log of spec §6 (v3.1.0): one structured pino line per user create, delete, password change and
// grants change, written on the node the client called, with message `audit`, component=audit, event, actor
// (empty with security off), target, status (what the client got) and outcome; a denial is logged at warning
// level. Front thread; handlers wrap the part of a request that comes after the checks a request may fail
// without an audit line (caller not admin, malformed body: spec §6).
import { limits } from '../config.js';
import { BrokerError } from '../errors.js';
import type { Logger } from '../util/log.js';
import type { Reply } from './respond.js';
import type { RequestContext } from './request_context.js';

export type AuditEvent = 'user.create' | 'user.delete' | 'user.password' | 'user.grants' | 'cluster.forget' | 'cluster.decommission'
  | 'cluster.decommission.cancel';

/** Spec §6 outcome: ok applied; denied 403; rejected another 4xx; failed a 5xx; unknown no known decision. */
export type AuditOutcome = 'ok' | 'denied' | 'rejected' | 'failed' | 'unknown';

/** Spec §7: 499 records a client that went away; it is never sent. */
const clientGoneStatus = 499;

export interface AuditRecord {
  event: AuditEvent;
  actor: string;
  target: string;
  status: number;
}

export function auditOutcome(status: number): AuditOutcome {
  if (status === clientGoneStatus) return 'unknown';
  if (status < 400) return 'ok';
  if (status === 403) return 'denied';
  if (status < 500) return 'rejected';
  return 'failed';
}

export function writeAudit(log: Logger, record: AuditRecord): void {
  const outcome = auditOutcome(record.status);
  const line = { component: 'audit', event: record.event, actor: record.actor, target: record.target.slice(0, limits.audit_target_chars_max), status: record.status, outcome };
  if (outcome === 'denied') log.warn(line, 'audit');
  else log.info(line, 'audit');
}

/**
 * Runs the audited part of a user-route request and writes its one audit line with the status the client
 * gets: the reply's, the error's (anything not a BrokerError answers 500), or 499 when the client went away.
 */
export async function audited(log: Logger, ctx: RequestContext, event: AuditEvent, target: string, work: () => Promise<Reply>): Promise<Reply> {
  const actor = ctx.user?.username ?? '';
  let reply: Reply;
  try {
    reply = await work();
  } catch (error) {
    const status = ctx.aborted ? clientGoneStatus : error instanceof BrokerError ? error.status : 500;
    writeAudit(log, { event, actor, target, status });
    throw error;
  }
  writeAudit(log, { event, actor, target, status: ctx.aborted ? clientGoneStatus : reply.status });
  return reply;
}
