// The HTTP floor for `npm run bench`: a uWebSockets.js server that reads each request body to its end and answers
// every POST with 202 and an empty body (Content-Length 0), doing nothing else. bench/produce.ts starts it as its own
// child process (`node dist/bench/hello_world_server.js --port 0 --host 127.0.0.1`), reads the port from the
// stdout line {"msg":"listening","port":N} (the broker's pino shape), and stops it with SIGTERM.
// Single-threaded, like the broker's front thread; whatever the broker does beyond this costs throughput.
import uWS from 'uWebSockets.js';
import type { HttpRequest, HttpResponse } from 'uWebSockets.js';
import { readFloorBody, readFloorOptions, serveFloor } from './floor_server.js';

/** Reads the body to its end, then answers 202. */
function onPost(res: HttpResponse, req: HttpRequest): void {
  readFloorBody(res, req, ignoreChunk, (request) => {
    if (!request.aborted) res.cork(() => res.writeStatus('202 Accepted').end());
  });
}

function ignoreChunk(): void {}

function main(): void {
  const options = readFloorOptions([]);
  const app = uWS.App();
  app.post('/*', onPost);
  serveFloor('hello_world_server', app, options.host, options.port);
}

main();
