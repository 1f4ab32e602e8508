// The node's structured logger (pino, JSON lines on stdout). One root logger per thread; children add a
// component. Messages never carry passwords or secrets (STYLE §5).
import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

/** destination defaults to stdout's file descriptor; a partition worker passes its own process.stdout, which the
 *  main thread pipes on, so a fail-stop line written just before the worker exits still arrives. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.epochTime }, destination);
}
