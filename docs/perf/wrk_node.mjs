// What docs/perf's A/B tools share: a fresh node of a built tree (security on, temp data dir, the bench's own
// startBroker) with a 6-partition topic, and wrk driving single produce at it with the bench's 100 B payload
// (`wrk -t1 -c256`, the bench's produce-single shape). The tools measure around the wrk windows.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('../..', import.meta.url));
const { parseOptions } = await import(join(here, 'dist/bench/options.js'));
const { startBroker, createTopic, makePayload, cleanup } = await import(join(here, 'dist/bench/common.js'));

/** Exits with 2 and the install hint when wrk is not on PATH. */
export function requireWrk() {
  if (spawnSync('wrk', ['--version']).error !== undefined) {
    console.error('wrk not found: scripts/install-peers.sh installs it');
    process.exit(2);
  }
}

const luaString = (text) => `[==[${text}]==]`;

/**
 * Starts a node of tree (env added to its environment), creates `topic`, writes wrk's script into scratch and gives
 * `wrk(seconds)` (spawnSync's result) and the node's pid to `use`; stops the node afterwards, whatever happens.
 */
export async function withProduceNode(tree, { scratch, topic, env = {} }, use) {
  const options = parseOptions(['produce-single', '--node-script', join(resolve(tree), 'dist/src/main.js')]);
  const target = await startBroker(options, env);
  try {
    await createTopic(target, topic, 6);
    const script = join(scratch, 'produce.lua');
    writeFileSync(script, [
      'wrk.method = "POST"',
      `wrk.body = ${luaString(makePayload(100).toString('latin1'))}`,
      `wrk.headers["authorization"] = ${luaString(target.authorization)}`,
      'wrk.headers["content-type"] = "application/json"',
    ].join('\n'));
    const url = `${target.url}/v1/topics/${topic}/produce`;
    const wrk = (seconds) => spawnSync('wrk', ['-t1', '-c256', `-d${seconds}s`, '--latency', '-s', script, url],
      { encoding: 'utf8', timeout: (seconds + 30) * 1000 });
    return await use({ wrk, serverPid: target.serverPid });
  } finally {
    await cleanup();
  }
}
