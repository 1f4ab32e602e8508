// When the event-loop turn now running began handling I/O: the stamp for answers that one turn reads together.
// An epoll wake-up hands the loop every socket that became readable while it waited, and it reads them one after
// another; after a stall, at 30,000 produces/s, that is hundreds of 202s. Stamping each at its own callback made the
// last ones look later than they arrived by the time spent on those before them; stamping all with the turn's first
// reading errs by how long they waited before the turn began, the same for each. Per thread (module
// state of the thread's own loop); setImmediate runs after the turn's poll phase, which ends the stamp.
import { performance } from 'node:perf_hooks';

let turnStartMs: number | null = null;

function turnEnded(): void {
  turnStartMs = null;
}

/** performance.now() at the first call in this turn of the event loop. For I/O callbacks (the poll phase): a call from
 *  a setImmediate callback would keep its stamp until the next turn's check phase. */
export function turnNow(): number {
  if (turnStartMs === null) {
    turnStartMs = performance.now();
    setImmediate(turnEnded);
  }
  return turnStartMs;
}
