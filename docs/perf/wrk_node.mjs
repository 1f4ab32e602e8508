// What docs/perf's A/B tools share: a fresh node of a built tree (security on, temp data dir, the bench's own
// startBroker) with a topic, or the bench's hello-world floor server, and wrk driving single produce at it in the
// bench's produce-single shape (its default partitions, message size and connections: 6, 100 B, 256; wrk -t1 through
// the bench's own runWrk, so only 2xx answers count). The tools measure around the wrk windows.
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('../..', import.meta.url));
const { parseOptions, UsageError } = await import(join(here, 'dist/bench/options.js'));
const { startBroker, createTopic, makePayload, cleanup } = await import(join(here, 'dist/bench/common.js'));
const { onPath, installHint, runWrk } = await import(join(here, 'dist/bench/peers.js'));
const { startChildServer } = await import(join(here, 'dist/bench/node_process.js'));

/** Exits with 2 and the install hint when wrk is not on PATH. */
export function requireWrk() {
  if (onPath('wrk') === null) {
    console.error(`wrk not found: ${installHint} installs it`);
    process.exit(2);
  }
}

/** benchArgs (bench options a tool passes on, e.g. ['--partitions', '108']) when the bench takes them; else exits
 *  with 2 and the bench's own message, so no tool restates the bench's ranges, and a bad one fails before any run. */
export function requireBenchArgs(benchArgs) {
  try {
    parseOptions(['produce-single', ...benchArgs]);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(error.message);
    process.exit(2);
  }
  return benchArgs;
}

/** The bench's produce-single request (its message size and connections) as one wrk run of `seconds` against the
 *  server at url: the bench's own figures (runWrk), in which only 2xx answers count. */
function produceWindow(options, { url, path, authorization, serverPid }, seconds) {
  const headers = { 'content-type': 'application/json', ...(authorization === null ? {} : { authorization }) };
  return runWrk({ name: 'single produce', url, path, headers, body: makePayload(options.messageBytes),
    connections: options.connections, durationSec: seconds, messageBytes: options.messageBytes, serverPid });
}

/**
 * Starts a node of tree (env added to its environment), creates `topic` with the bench's options (benchArgs added to
 * them, e.g. ['--partitions', '108']) and gives `use` the node's pid and `window(seconds)` (the bench's figures of a
 * wrk run); stops the node afterwards, whatever happens.
 */
export async function withProduceNode(tree, { topic, env = {}, benchArgs = [] }, use) {
  const options = parseOptions(['produce-single', '--node-script', join(resolve(tree), 'dist/src/main.js'), ...benchArgs]);
  const target = await startBroker(options, env);
  try {
    await createTopic(target, topic, options.partitions);
    const path = `/v1/topics/${topic}/produce`;
    const window = (seconds) => produceWindow(options, { url: target.url, path, authorization: target.authorization,
      serverPid: target.serverPid }, seconds);
    return await use({ window, serverPid: target.serverPid });
  } finally {
    await cleanup();
  }
}

/** As withProduceNode, for the bench's hello-world floor server of tree (node started with nodeFlags). */
export async function withFloorServer(tree, { nodeFlags = [] }, use) {
  const options = parseOptions(['produce-single']);
  const server = await startChildServer({ name: 'hello-world', script: join(resolve(tree), 'dist/bench/hello_world_server.js'),
    args: ['--port', '0', '--host', '127.0.0.1'], nodeFlags });
  try {
    const window = (seconds) => produceWindow(options, { url: server.url, path: '/v1/topics/floor/produce',
      authorization: null, serverPid: server.pid }, seconds);
    return await use({ window, serverPid: server.pid });
  } finally {
    await server.stop();
    await cleanup();
  }
}
