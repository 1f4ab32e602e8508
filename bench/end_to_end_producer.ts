// The producer thread of end-to-end and soak (bench/end_to_end.ts starts it as a worker_threads Worker, so the
// open-loop producer does not share an event loop with the consumers): message i is due at start + i / rate; it goes
// out on an idle connection or waits in a bounded backlog; its produce latency counts from the scheduled time. Each
// send and 202 goes into the ledger ring shared with the main thread, on the epoch clock both threads read. It stops
// when the main thread sets the drain phase (and fails when that has not come by setup.stopWithinMs), waits up to the
// delivery grace for the produces in flight, closes its sockets and posts its totals; then it has nothing left to run
// and ends.
import { performance } from 'node:perf_hooks';
import { parentPort, workerData } from 'node:worker_threads';
import { latencySummaryMs, newHistogram, recordUs, sleep } from './common.js';
import {
  deliveryGraceMs, epochMs, failureCode, flowPayload, lateThresholdMs, SharedLedger, summary, type ProducerMessage,
  type ProducerSetup, type ProducerTotals,
} from './end_to_end.js';
import { HttpConnection, requestBuffer } from './http_conn.js';

const setup = workerData as ProducerSetup;
const ledger = new SharedLedger(setup.ledger);

function post(message: ProducerMessage): void {
  parentPort!.postMessage(message);
}

class Counters {
  due = 0;
  sentLate = 0;
  notSent = 0;
  acceptedInWindow = 0;
  lost = 0;
  readonly produceUs = newHistogram();
  readonly latenessUs = newHistogram();
  readonly produceStatus = new Map<string, number>();
  readonly errors = new Map<string, number>();

  get counting(): boolean {
    return ledger.phase() === 'measure';
  }

  bump(map: Map<string, number>, key: string): void {
    if (this.counting) map.set(key, (map.get(key) ?? 0) + 1);
  }

  totals(): ProducerTotals {
    return { due: this.due, sentLate: this.sentLate, notSent: this.notSent, acceptedInWindow: this.acceptedInWindow,
      lost: this.lost, produceMs: summary(this.produceUs), sendLatenessMs: latencySummaryMs(this.latenessUs),
      produceStatusCounts: Object.fromEntries(this.produceStatus), errorCounts: Object.fromEntries(this.errors) };
  }
}

/** Resolves when the drain phase stopped the schedule; the produces then in flight may still be answered. */
function produce(connections: HttpConnection[], counters: Counters): Promise<void> {
  const { url, path, headers, messageBytes } = setup;
  const intervalMs = 1000 / setup.ratePerSec;
  const backlogMax = Math.max(1000, Math.ceil(setup.ratePerSec * 5));
  const idle: HttpConnection[] = [...connections];
  const backlog: Array<{ id: number; scheduledMs: number }> = [];
  let backlogHead = 0;
  let producing = true;
  const send = (connection: HttpConnection, id: number, scheduledMs: number): void => {
    // Messages scheduled during the warm-up and sent late into the window stay out of the window's figures.
    const counting = counters.counting && epochMs(scheduledMs) >= ledger.windowStartEpochMs();
    const latenessMs = performance.now() - scheduledMs;
    if (counting) {
      recordUs(counters.latenessUs, latenessMs);
      if (latenessMs > lateThresholdMs) counters.sentLate++;
    }
    if (ledger.sent(id, counting)) counters.lost++;
    const sentEpochUs = Math.round(epochMs(performance.now()) * 1000);
    const request = requestBuffer(url, 'POST', path, headers, flowPayload(id, sentEpochUs, messageBytes));
    connection.request(request).then((reply) => {
      counters.bump(counters.produceStatus, String(reply.status));
      if (reply.status === 202) {
        ledger.answered(id, epochMs(reply.endedMs));
        if (counting) {
          counters.acceptedInWindow++;
          recordUs(counters.produceUs, reply.endedMs - scheduledMs);
        }
      } else {
        ledger.answered(id, NaN);
        counters.bump(counters.errors, `produce ${reply.status}`);
      }
    }, (error: unknown) => {
      ledger.answered(id, NaN);
      counters.bump(counters.errors, `produce ${failureCode(error)}`);
    }).finally(() => {
      // The connection is free: the oldest waiting message goes next, else it parks as idle.
      if (backlogHead < backlog.length && producing) {
        const next = backlog[backlogHead++]!;
        if (backlogHead > 4096 && backlogHead * 2 > backlog.length) {
          backlog.splice(0, backlogHead);
          backlogHead = 0;
        }
        send(connection, next.id, next.scheduledMs);
      } else {
        idle.push(connection);
      }
    });
  };
  const startMs = performance.now();
  const stopByMs = startMs + setup.stopWithinMs;
  let next = 0;
  return new Promise<void>((resolve, reject) => {
    const tick = (): void => {
      const now = performance.now();
      const draining = ledger.phase() === 'drain';
      if (draining || now > stopByMs) {
        producing = false;
        counters.notSent += backlog.length - backlogHead;
        if (draining) return resolve();
        return reject(new Error(`no drain phase from the main thread within ${setup.stopWithinMs / 1000} s of the start`));
      }
      const dueNow = Math.min(Math.floor((now - startMs) / intervalMs) + 1, next + Math.ceil(setup.ratePerSec));
      for (; next < dueNow; next++) {
        const scheduledMs = startMs + next * intervalMs;
        if (counters.counting) counters.due++;
        const connection = idle.pop();
        if (connection !== undefined) send(connection, next, scheduledMs);
        else if (backlog.length - backlogHead < backlogMax) backlog.push({ id: next, scheduledMs });
        else if (counters.counting) counters.notSent++;
      }
      setTimeout(tick, Math.max(0, startMs + next * intervalMs - performance.now()));
    };
    post({ kind: 'started' });
    tick();
  });
}

const address = HttpConnection.forUrl(setup.url);
const connections = Array.from({ length: setup.connections }, () => new HttpConnection(address));
const counters = new Counters();
try {
  await produce(connections, counters);
  const graceEnd = performance.now() + deliveryGraceMs;
  while (connections.some((connection) => connection.busy) && performance.now() < graceEnd) await sleep(10);
} finally {
  for (const connection of connections) connection.destroy();
}
post({ kind: 'done', totals: counters.totals() });
