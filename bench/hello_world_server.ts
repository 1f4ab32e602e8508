// The HTTP floor for `npm run bench`: a uWebSockets.js server that reads each request body to its end and answers
// every POST with 202 and an empty body (Content-Length 0), doing nothing else. bench/run.ts starts it as its own
// child process (`node dist/bench/hello_world_server.js --port 0 --host 127.0.0.1`), reads the port from the
// stdout line {"msg":"listening","port":N} (the broker's pino shape), and stops it with SIGTERM.
// Single-threaded, like the broker's front thread; whatever the broker does beyond this costs throughput.
import { parseArgs } from 'node:util';
import uWS from 'uWebSockets.js';
import type { HttpResponse, us_listen_socket, us_socket } from 'uWebSockets.js';

interface HelloOptions {
  host: string;
  port: number;
}

function readOptions(): HelloOptions {
  const { values } = parseArgs({
    options: { host: { type: 'string', default: '127.0.0.1' }, port: { type: 'string', default: '0' } },
    strict: true,
  });
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port must be 0..65535, got ${values.port}`);
  return { host: values.host ?? '127.0.0.1', port };
}

/** Reads the body to its last chunk (so the floor pays for receiving it, as a produce does), then answers 202. */
function onPost(res: HttpResponse): void {
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  res.onData((_chunk, isLast) => {
    if (!isLast || aborted) return;
    res.cork(() => {
      res.writeStatus('202 Accepted').end();
    });
  });
}

function main(): void {
  const options = readOptions();
  const app = uWS.App();
  app.post('/*', onPost);
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').end();
  });
  let listenSocket: us_listen_socket | null = null;
  app.listen(options.host, options.port, (socket) => {
    if (socket === false) {
      process.stderr.write(`hello_world_server: cannot listen on ${options.host}:${options.port}\n`);
      process.exit(1);
    }
    listenSocket = socket;
    const port = uWS.us_socket_local_port(socket as unknown as us_socket);
    process.stdout.write(JSON.stringify({ level: 30, msg: 'listening', host: options.host, port, pid: process.pid }) + '\n');
  });
  const stop = (): void => {
    if (listenSocket !== null) uWS.us_listen_socket_close(listenSocket);
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main();
