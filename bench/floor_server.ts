// What both floors of `npm run bench` share (hello_world_server.ts, fsync_floor_server.ts): --host and --port, a 404
// for any other route, the stdout line {"msg":"listening","port":N} that bench/node_process.ts waits for (the broker's
// pino shape), a clean stop on SIGTERM or SIGINT, and reading a POST's body. Each runs as a child process of the bench.
import { parseArgs } from 'node:util';
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket, us_socket } from 'uWebSockets.js';

/** A request being read or waiting for its answer; aborted once the client went away (nothing is written then). */
export interface FloorRequest {
  res: HttpResponse;
  aborted: boolean;
}

/** Reads a POST's body to its end (so a floor pays for receiving it, as a produce does): onChunk sees each chunk, a
 *  view uWS neuters after the call, then onEnd the request once, also for a request without a body (to which uWS
 *  delivers no data at all). */
export function readFloorBody(res: HttpResponse, req: HttpRequest, onChunk: (chunk: Uint8Array) => void,
  onEnd: (request: FloorRequest) => void): void {
  const request: FloorRequest = { res, aborted: false };
  res.onAborted(() => {
    request.aborted = true;
  });
  const length = req.getHeader('content-length');
  if ((length === '' || length === '0') && req.getHeader('transfer-encoding') === '') {
    onEnd(request);
    return;
  }
  res.onData((chunk, isLast) => {
    onChunk(new Uint8Array(chunk));
    if (isLast) onEnd(request);
  });
}

/** The floor's options: --host (127.0.0.1), --port (0: a free one) and the string options named in `own`. */
export function readFloorOptions<K extends string>(own: readonly K[]): { host: string; port: number; own: Partial<Record<K, string>> } {
  const ownOptions = Object.fromEntries(own.map((name) => [name, { type: 'string' as const }]));
  const { values } = parseArgs({
    options: { host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string', default: '0' }, ...ownOptions },
    strict: true,
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, got ${values.port}`);
  const ownValues: Partial<Record<K, string>> = {};
  for (const name of own) {
    const value = (values as Record<string, string | boolean | undefined>)[name];
    if (typeof value === 'string') ownValues[name] = value;
  }
  return { host: String(values.host), port, own: ownValues };
}

/** Answers any route app does not serve with 404, listens, prints the listening line, and stops on SIGTERM or SIGINT
 *  after `beforeExit`. A failure to listen ends the process with status 1. */
export function serveFloor(name: string, app: TemplatedApp, host: string, port: number, beforeExit: () => void = () => undefined): void {
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });
  let listenSocket: us_listen_socket | null = null;
  app.listen(host, port, (socket) => {
    if (socket === false) {
      process.stderr.write(`${name}: cannot listen on ${host}:${port}\n`);
      process.exit(1);
    }
    listenSocket = socket;
    const bound = uWS.us_socket_local_port(socket as unknown as us_socket);
    process.stdout.write(JSON.stringify({ level: 30, msg: 'listening', host, port: bound, pid: process.pid }) + '\n');
  });
  const stop = (): void => {
    if (listenSocket !== null) uWS.us_listen_socket_close(listenSocket);
    beforeExit();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
