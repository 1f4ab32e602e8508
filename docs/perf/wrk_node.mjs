// What docs/perf's A/B tools share: a fresh node of a built tree (security on, temp data dir, the bench's own
// startBroker) with a topic, and wrk driving single produce at it in the bench's produce-single shape (its default
// partitions, message size and connections: 6, 100 B, 256; wrk -t1, the bench's script). The tools measure around the
// wrk windows.
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('../..', import.meta.url));
const { parseOptions } = await import(join(here, 'dist/bench/options.js'));
const { startBroker, createTopic, makePayload, cleanup } = await import(join(here, 'dist/bench/common.js'));
const { writeWrkScript, onPath, installHint } = await import(join(here, 'dist/bench/peers.js'));

/** Exits with 2 and the install hint when wrk is not on PATH. */
export function requireWrk() {
  if (onPath('wrk') === null) {
    console.error(`wrk not found: ${installHint} installs it`);
    process.exit(2);
  }
}

/**
 * Starts a node of tree (env added to its environment), creates `topic`, writes wrk's script into scratch and gives
 * `wrk(seconds)` (spawnSync's result) and the node's pid to `use`; stops the node afterwards, whatever happens.
 */
export async function withProduceNode(tree, { scratch, topic, env = {} }, use) {
  const options = parseOptions(['produce-single', '--node-script', join(resolve(tree), 'dist/src/main.js')]);
  const target = await startBroker(options, env);
  try {
    await createTopic(target, topic, options.partitions);
    const script = writeWrkScript(scratch, makePayload(options.messageBytes),
      { authorization: target.authorization, 'content-type': 'application/json' });
    const url = `${target.url}/v1/topics/${topic}/produce`;
    const wrk = (seconds) => spawnSync('wrk', ['-t1', `-c${options.connections}`, `-d${seconds}s`, '--latency', '-s', script, url],
      { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
    return await use({ wrk, serverPid: target.serverPid });
  } finally {
    await cleanup();
  }
}
