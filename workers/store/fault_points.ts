// Named fault points of the segment stores (Redpanda's failure probes): append (a flush's write), sync (an
// fdatasync), roll (sealing a segment and starting the next) and truncate (cutting a torn or zero tail). Shared by
// whatever thread loads it; only tests arm points. Disarmed, a store pays one boolean check per operation
// (faultPointsArmed), never a lookup or a call.
import assert from 'node:assert/strict';

export type FaultPoint = 'append' | 'sync' | 'roll' | 'truncate';

export interface FaultPointArming {
  /** The errno code the failure carries, as fs would give it (default EIO). */
  code?: string;
  /** Hits that pass before the first failure (default 0: the next one fails). */
  skip?: number;
  /** Failures before the point disarms itself (default: until faultPointsDisarm). */
  times?: number;
}

interface Armed {
  code: string;
  skip: number;
  times: number;
}

const armedPoints = new Map<FaultPoint, Armed>();

/** True while any point is armed: the stores check it before calling faultPointHit, so a production build
 *  never calls into this module on its hot path. A live binding: importers see every change. */
export let faultPointsArmed = false;

/** For tests: makes the point's next hits (after skip) fail with an fs-like error. */
export function faultPointArm(point: FaultPoint, opts: FaultPointArming = {}): void {
  const times = opts.times ?? Infinity;
  const skip = opts.skip ?? 0;
  assert(times > 0 && skip >= 0, `fault point ${point}: times ${times}, skip ${skip}`);
  armedPoints.set(point, { code: opts.code ?? 'EIO', skip, times });
  faultPointsArmed = true;
}

/** For tests: disarms one point, or all of them. */
export function faultPointsDisarm(point?: FaultPoint): void {
  if (point === undefined) armedPoints.clear();
  else armedPoints.delete(point);
  faultPointsArmed = armedPoints.size > 0;
}

/** Called by a store at the point, only while faultPointsArmed: throws what a failed fs call would throw (an Error
 *  with code, errno and syscall) when the point is armed and due. */
export function faultPointHit(point: FaultPoint, path: string): void {
  const armed = armedPoints.get(point);
  if (armed === undefined) return;
  if (armed.skip > 0) {
    armed.skip -= 1;
    return;
  }
  armed.times -= 1;
  if (armed.times <= 0) faultPointsDisarm(point);
  throw Object.assign(new Error(`${armed.code}: fault point ${point}, ${path}`), {
    code: armed.code,
    errno: errnoOf(armed.code),
    syscall: point,
    path,
  });
}

function errnoOf(code: string): number {
  switch (code) {
    case 'EIO':
      return -5;
    case 'ENOSPC':
      return -28;
    default:
      return -1;
  }
}
