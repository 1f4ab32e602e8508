// HTTP/1.1 load generator for bench/run.ts: N keep-alive connections to one loopback server, each with at most one
// request in flight, for a warm-up and then a measured window. Closed loop by default (send, wait for the whole
// response, send again); with ratePerSec, open loop: requests come due on a fixed schedule, go out on an idle
// connection (or wait in a bounded backlog for one) and their latency counts from the scheduled time, so a slow
// server cannot slow the arrivals down (no coordinated omission). Two clients: 'net' (raw node:net, one pre-built
// request buffer written per request, a minimal response parser) and 'undici' (a Pool with pipelining 1, closed
// loop only). Runs on the bench process's main thread; every run ends by itself after warm-up + duration + drain,
// and closes all its sockets.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Histogram } from 'hdr-histogram-js';
import { Pool } from 'undici';
import { formatInt, latencySummaryMs, newHistogram, recordUs, sleep, type LatencySummaryMs } from './common.js';
import { requestBuffer } from './http_conn.js';
import { ResponseParser } from './http_response_parser.js';

export type ClientKind = 'net' | 'undici';

/** One request shape, sent unchanged on every connection for the whole run. */
export interface LoadRequest {
  method: 'POST';
  path: string;
  /** Header names in lower case; host and content-length are added by the client. */
  headers: Record<string, string>;
  body: Buffer;
}

export interface LoadOptions {
  /** Shown on progress lines. */
  label: string;
  /** http://127.0.0.1:PORT (plain HTTP only). */
  url: string;
  request: LoadRequest;
  connections: number;
  warmupMs: number;
  durationMs: number;
  client: ClientKind;
  /** Status that counts as success; every other status is an error, counted by status. */
  expectedStatus: number;
  /** After the window, how long to wait for requests still in flight before closing their sockets. */
  drainTimeoutMs?: number;
  /** Stops the run early (e.g. the server died); the result then covers what was measured. */
  signal?: AbortSignal;
  /** Called right when the measured window opens and closes (server CPU is sampled there). */
  onWindowStart?: () => void;
  onWindowEnd?: () => void;
  /** Receives one progress line a second. */
  onProgress?: (line: string) => void;
  /** Open loop: requests per second on a fixed schedule ('net' client only); absent = closed loop. */
  ratePerSec?: number;
}

/** What an open-loop run could not do on time. Counts cover requests that came due inside the window. */
export interface OpenLoopFigures {
  ratePerSec: number;
  /** Requests that came due inside the window. */
  due: number;
  /** Sent more than lateThresholdMs after their scheduled time (no idle connection, or the client was late). */
  sentLate: number;
  /** Never sent: dropped because the backlog was full, or still waiting for a connection when the window closed. */
  notSent: number;
  lateThresholdMs: number;
  /** How long after its scheduled time each request of the window went out. */
  sendLatenessMs: LatencySummaryMs;
}

export interface LoadResult {
  label: string;
  client: ClientKind;
  connections: number;
  /** Length of the measured window as it happened, ms. */
  windowMs: number;
  /** Responses with any status completed inside the window. */
  responses: number;
  /** Responses with expectedStatus inside the window. */
  okResponses: number;
  /** Responses inside the window by status ("202": n, ...). */
  statusCounts: Record<string, number>;
  /** Everything that is not expectedStatus: other statuses by number, transport failures by error code. */
  errorCounts: Record<string, number>;
  /** Latency of responses completed inside the window (all statuses), from write to last byte. */
  latencyMs: LatencySummaryMs;
  /** The bench process's own CPU over the window: % of one core, and µs per response. */
  clientCpuPercent: number;
  clientCpuUsPerResponse: number;
  /** TCP connections opened over the whole run (connections, plus reconnects after closes). */
  connectionsOpened: number;
  /** Requests still in flight when the drain timeout ran out (their sockets were destroyed). */
  abandonedInFlight: number;
  /** Open loop only; latencyMs then counts from each request's scheduled time, not its write. */
  openLoop: OpenLoopFigures | null;
}

const drainTimeoutMsDefault = 10_000;
/** Pause before reconnecting after a failed connection, so a dead server does not make a hot loop. */
const reconnectDelayMs = 50;
/** Open loop: a request sent later than this after its scheduled time counts as late. The scheduler runs on a
 * timer of about 1 ms, so requests due within one tick go out together up to about 1 ms after their time. */
const lateThresholdMs = 2;
/** Open loop: requests waiting for a connection, at most this many seconds' worth (and at least 1,000). */
const backlogSecondsMax = 5;

type Phase = 'warmup' | 'measure' | 'drain' | 'done';

/** Shared counters of one run; the clients report every response and failure here. */
class RunState {
  phase: Phase = 'warmup';
  inFlight = 0;
  connectionsOpened = 0;
  completedTotal = 0;
  /** completedTotal when the window opened, for the progress line's average. */
  completedAtWindowStart = 0;
  windowStartMs = 0;
  windowEndMs = 0;
  readonly histogramUs: Histogram = newHistogram();
  /** Index = HTTP status; cheaper than a map on the hot path. */
  readonly statusInWindow = new Float64Array(600);
  readonly failuresInWindow = new Map<string, number>();
  onDrained: (() => void) | null = null;
  /** Open loop only. */
  openLoop: OpenLoop | null = null;

  constructor(readonly expectedStatus: number) {}

  get sending(): boolean {
    return this.phase === 'warmup' || this.phase === 'measure';
  }

  /** A whole response arrived for a request written at startedMs. */
  complete(startedMs: number, status: number): void {
    this.inFlight--;
    this.completedTotal++;
    if (this.phase === 'measure') {
      recordUs(this.histogramUs, performance.now() - startedMs);
      this.statusInWindow[status >= 0 && status < 600 ? status : 0]!++;
    }
    if (this.inFlight === 0 && this.onDrained !== null) this.onDrained();
  }

  /** The request in flight failed without a response (reset, closed, protocol error). */
  fail(code: string): void {
    this.inFlight--;
    if (this.phase === 'measure') this.failuresInWindow.set(code, (this.failuresInWindow.get(code) ?? 0) + 1);
    if (this.inFlight === 0 && this.onDrained !== null) this.onDrained();
  }
}

interface ClientHandle {
  /** Destroys every socket; requests still in flight are abandoned. */
  close(): Promise<void>;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const state = new RunState(options.expectedStatus);
  if (options.ratePerSec !== undefined) {
    if (options.client !== 'net') throw new Error('open loop (ratePerSec) needs the net client');
    state.openLoop = new OpenLoop(options.ratePerSec, state);
  }
  const client = options.client === 'net' ? startNetClient(options, state) : startUndiciClient(options, state);
  const progress = startProgress(options, state);
  let cpuStart = process.cpuUsage();
  const abort = abortPromise(options.signal);
  await Promise.race([sleep(options.warmupMs), abort]);
  state.phase = 'measure';
  state.windowStartMs = performance.now();
  state.completedAtWindowStart = state.completedTotal;
  cpuStart = process.cpuUsage();
  options.onWindowStart?.();
  await Promise.race([sleep(options.durationMs), abort]);
  state.phase = 'drain';
  state.windowEndMs = performance.now();
  state.openLoop?.stop();
  const cpu = process.cpuUsage(cpuStart);
  options.onWindowEnd?.();
  await waitForDrain(state, options.drainTimeoutMs ?? drainTimeoutMsDefault);
  const abandonedInFlight = state.inFlight;
  state.phase = 'done';
  clearInterval(progress);
  await client.close();
  return summarize(options, state, cpu, abandonedInFlight);
}

function summarize(options: LoadOptions, state: RunState, cpu: NodeJS.CpuUsage, abandonedInFlight: number): LoadResult {
  const windowMs = state.windowEndMs - state.windowStartMs;
  const statusCounts: Record<string, number> = {};
  const errorCounts: Record<string, number> = {};
  let responses = 0;
  state.statusInWindow.forEach((count, status) => {
    if (count === 0) return;
    responses += count;
    statusCounts[String(status)] = count;
    if (status !== options.expectedStatus) errorCounts[String(status)] = count;
  });
  for (const [code, count] of state.failuresInWindow) errorCounts[code] = count;
  const cpuUs = cpu.user + cpu.system;
  return {
    label: options.label,
    client: options.client,
    connections: options.connections,
    windowMs,
    responses,
    okResponses: statusCounts[String(options.expectedStatus)] ?? 0,
    statusCounts,
    errorCounts,
    latencyMs: latencySummaryMs(state.histogramUs),
    clientCpuPercent: windowMs > 0 ? (cpuUs / 1000 / windowMs) * 100 : 0,
    clientCpuUsPerResponse: responses > 0 ? cpuUs / responses : 0,
    connectionsOpened: state.connectionsOpened,
    abandonedInFlight,
    openLoop: state.openLoop?.figures() ?? null,
  };
}

function startProgress(options: LoadOptions, state: RunState): NodeJS.Timeout {
  const startedMs = performance.now();
  let lastCompleted = 0;
  let lastMs = startedMs;
  return setInterval(() => {
    const now = performance.now();
    const delta = state.completedTotal - lastCompleted;
    const rate = (delta * 1000) / (now - lastMs);
    lastCompleted = state.completedTotal;
    lastMs = now;
    let average = '';
    if (state.phase === 'measure' && now - state.windowStartMs >= 100) {
      const inWindow = state.completedTotal - state.completedAtWindowStart;
      average = `  avg ${formatInt((inWindow * 1000) / (now - state.windowStartMs))} req/s`;
    }
    const elapsedSec = Math.round((now - startedMs) / 1000);
    options.onProgress?.(`  [${options.label}] ${state.phase.padEnd(7)} ${String(elapsedSec).padStart(3)}s  ` +
      `${formatInt(rate).padStart(9)} req/s${average}  in flight ${state.inFlight}` +
      `${state.openLoop === null ? '' : `  waiting for a connection ${state.openLoop.waiting}`}`);
  }, 1000);
}

function waitForDrain(state: RunState, timeoutMs: number): Promise<void> {
  if (state.inFlight === 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, timeoutMs);
    state.onDrained = done;
    function done(): void {
      clearTimeout(timer);
      state.onDrained = null;
      resolve();
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Raw node:net client.

function startNetClient(options: LoadOptions, state: RunState): ClientHandle {
  const url = new URL(options.url);
  const target = { host: url.hostname, port: Number(url.port || 80) };
  // The whole request (head and body) as one buffer, written as-is for every request.
  const { method, path, headers, body } = options.request;
  const request = requestBuffer(options.url, method, path, headers, body);
  const connections: NetConnection[] = [];
  for (let i = 0; i < options.connections; i++) connections.push(new NetConnection(target, request, state));
  return {
    async close() {
      for (const connection of connections) connection.destroy();
    },
  };
}

/** One keep-alive connection with at most one request in flight; reconnects while the run is sending. */
class NetConnection {
  private socket: net.Socket | null = null;
  private startedMs = 0;
  private inFlight = false;
  private lastError: string | null = null;
  private destroyed = false;
  private readonly parser = new ResponseParser({
    awaitingResponse: () => this.inFlight,
    onResponse: (status, _body, closeAfter) => this.onResponse(status, closeAfter),
    onProtocolError: (code) => this.protocolError(code),
  }, false);

  constructor(private readonly target: { host: string; port: number }, private readonly requestBuffer: Buffer,
    private readonly state: RunState) {
    this.connect();
  }

  destroy(): void {
    this.destroyed = true;
    this.socket?.destroy();
  }

  private connect(): void {
    if (this.destroyed || !this.state.sending) return;
    const socket = net.connect(this.target);
    this.socket = socket;
    this.parser.reset();
    socket.setNoDelay(true);
    socket.on('connect', () => {
      this.state.connectionsOpened++;
      this.send();
    });
    socket.on('data', (chunk: Buffer) => this.parser.push(chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.lastError = error.code ?? 'socket_error';
    });
    socket.on('close', () => this.onClose(socket));
  }

  /** Closed loop: sends now. Open loop: sends the oldest request waiting in the backlog, or parks as idle. */
  send(): void {
    if (!this.state.sending || this.socket === null) return;
    const openLoop = this.state.openLoop;
    const startedMs = openLoop === null ? performance.now() : openLoop.takeFor(this);
    if (Number.isNaN(startedMs)) return;
    this.sendScheduled(startedMs);
  }

  /** Writes the request; its latency counts from startedMs (now, or the scheduled time in an open loop). */
  sendScheduled(startedMs: number): void {
    if (this.socket === null) return;
    this.inFlight = true;
    this.state.inFlight++;
    this.startedMs = startedMs;
    this.socket.write(this.requestBuffer);
  }

  get idle(): boolean {
    return !this.inFlight && this.socket !== null && !this.destroyed;
  }

  private onClose(socket: net.Socket): void {
    if (socket !== this.socket) return;
    this.socket = null;
    if (this.inFlight) {
      this.inFlight = false;
      this.state.fail(this.lastError ?? 'connection_closed');
    } else if (this.lastError !== null && this.state.phase === 'measure') {
      // A connect that failed: no request was in flight, but the reader should see it.
      this.state.failuresInWindow.set(this.lastError, (this.state.failuresInWindow.get(this.lastError) ?? 0) + 1);
    }
    const delay = this.lastError === null ? 0 : reconnectDelayMs;
    this.lastError = null;
    if (!this.destroyed && this.state.sending) setTimeout(() => this.connect(), delay);
  }

  private protocolError(code: string): void {
    this.lastError = code;
    this.socket?.destroy();
  }

  /** A whole response: report it and send the next request (or close, when the server asked to). */
  private onResponse(status: number, closeAfter: boolean): void {
    this.inFlight = false;
    this.state.complete(this.startedMs, status);
    if (closeAfter) {
      this.socket?.end();
      return;
    }
    this.send();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Open loop.

/**
 * The schedule of an open-loop run: request i is due at start + i / rate. A timer sends the requests that came due
 * on idle connections; when none is idle they wait in a backlog (oldest first) that connections take from as their
 * responses arrive, and a full backlog drops them (counted as not sent). Latency counts from the scheduled time.
 */
class OpenLoop {
  private readonly intervalMs: number;
  private readonly startMs = performance.now();
  private next = 0;
  private readonly idle: NetConnection[] = [];
  /** Scheduled times of requests waiting for a connection, oldest first, from backlogHead on. */
  private backlog: number[] = [];
  private backlogHead = 0;
  private readonly backlogMax: number;
  private timer: NodeJS.Timeout | null = null;
  private due = 0;
  private sentLate = 0;
  private notSent = 0;
  private readonly latenessUs: Histogram = newHistogram();

  constructor(private readonly ratePerSec: number, private readonly state: RunState) {
    this.intervalMs = 1000 / ratePerSec;
    this.backlogMax = Math.max(1000, Math.ceil(ratePerSec * backlogSecondsMax));
    this.tick();
  }

  /** A connection is free: the scheduled time of the request it should send now, or NaN (it waits as idle). */
  takeFor(connection: NetConnection): number {
    if (this.backlogHead < this.backlog.length) {
      const scheduledMs = this.backlog[this.backlogHead++]!;
      if (this.backlogHead > 4096 && this.backlogHead * 2 > this.backlog.length) {
        this.backlog = this.backlog.slice(this.backlogHead);
        this.backlogHead = 0;
      }
      this.noteSent(scheduledMs);
      return scheduledMs;
    }
    this.idle.push(connection);
    return NaN;
  }

  /** Requests due that wait for a free connection. */
  get waiting(): number {
    return this.backlog.length - this.backlogHead;
  }

  stop(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    // Requests due in the window that never went out.
    this.notSent += this.backlog.length - this.backlogHead;
    this.backlog = [];
    this.backlogHead = 0;
  }

  figures(): OpenLoopFigures {
    return { ratePerSec: this.ratePerSec, due: this.due, sentLate: this.sentLate, notSent: this.notSent,
      lateThresholdMs, sendLatenessMs: latencySummaryMs(this.latenessUs) };
  }

  private tick(): void {
    this.timer = null;
    if (!this.state.sending) return;
    const now = performance.now();
    // Bounded: at most one second of requests per tick, even after a long stall of the client.
    const dueNow = Math.min(Math.floor((now - this.startMs) / this.intervalMs) + 1, this.next + Math.ceil(this.ratePerSec));
    for (; this.next < dueNow; this.next++) {
      const scheduledMs = this.startMs + this.next * this.intervalMs;
      const counting = this.state.phase === 'measure';
      if (counting) this.due++;
      const connection = this.popIdle();
      if (connection !== null) {
        this.noteSent(scheduledMs);
        connection.sendScheduled(scheduledMs);
      } else if (this.backlog.length - this.backlogHead < this.backlogMax) {
        this.backlog.push(scheduledMs);
      } else if (counting) {
        this.notSent++;
      }
    }
    const nextMs = this.startMs + this.next * this.intervalMs;
    this.timer = setTimeout(() => this.tick(), Math.max(0, nextMs - performance.now()));
  }

  private popIdle(): NetConnection | null {
    while (this.idle.length > 0) {
      const connection = this.idle.pop()!;
      if (connection.idle) return connection;
    }
    return null;
  }

  /** Counts a request's send lateness when it was scheduled inside the window (not a warm-up leftover). */
  private noteSent(scheduledMs: number): void {
    if (this.state.phase !== 'measure' || scheduledMs < this.state.windowStartMs) return;
    const latenessMs = performance.now() - scheduledMs;
    recordUs(this.latenessUs, latenessMs);
    if (latenessMs > lateThresholdMs) this.sentLate++;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// undici client.

function startUndiciClient(options: LoadOptions, state: RunState): ClientHandle {
  const pool = new Pool(options.url, {
    connections: options.connections,
    pipelining: 1,
    keepAliveTimeout: 60_000,
    keepAliveMaxTimeout: 60_000,
  });
  pool.on('connect', () => {
    state.connectionsOpened++;
  });
  const { request } = options;
  const loops: Promise<void>[] = [];
  const loop = async (): Promise<void> => {
    while (state.sending) {
      state.inFlight++;
      const startedMs = performance.now();
      try {
        const response = await pool.request({ method: request.method, path: request.path, headers: request.headers,
          body: request.body });
        await response.body.dump();
        state.complete(startedMs, response.statusCode);
      } catch (error) {
        state.fail((error as { code?: string }).code ?? 'request_error');
        await sleep(reconnectDelayMs);
      }
    }
  };
  for (let i = 0; i < options.connections; i++) loops.push(loop());
  return {
    async close() {
      await pool.destroy();
      await Promise.allSettled(loops);
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------

/** Never resolves without a signal; resolves once the signal aborts. */
function abortPromise(signal: AbortSignal | undefined): Promise<void> {
  if (signal === undefined) return new Promise<void>(() => undefined);
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
