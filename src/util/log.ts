// The node's structured logger (pino, JSON lines on stdout). One root logger per thread; children add a
// component. Messages never carry passwords or secrets (STYLE §5).
import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(level: string): Logger {
  return pino({ level, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.epochTime });
}
