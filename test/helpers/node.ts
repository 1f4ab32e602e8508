// Starts a real broker node as a child process for black-box tests: `node dist/src/main.js` on a free loopback
// port (--port 0, the node logs the port it got) with a temp data dir. Imports nothing from src/.
// Used by test/http and test/cluster; every node is killed in the test's teardown.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const mainJs = fileURLToPath(new URL('../../src/main.js', import.meta.url));

export const adminPassword = 'test-admin-password';

export interface NodeOptions {
  dataDir?: string;
  security?: boolean;
  /** Extra command-line flags, e.g. ['--set', 'http.max_header_bytes=8192']. */
  args?: string[];
  env?: Record<string, string>;
  startTimeoutMs?: number;
}

export interface StartedNode {
  url: string;
  port: number;
  dataDir: string;
  process: ChildProcess;
  /** Everything the node wrote to stdout and stderr so far. */
  output(): string;
  /** Basic credentials of the root admin. */
  auth: string;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
  /** SIGTERM and wait; resolves to the exit code. */
  stop(): Promise<number | null>;
}

export async function makeDataDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'svc-test-'));
}

export function basicAuth(user: string, password: string): string {
  return 'Basic ' + Buffer.from(`${user}:${password}`).toString('base64');
}

/** Starts a node and resolves once it logs that it listens. Rejects with its output when it exits or times out. */
export async function startNode(options: NodeOptions = {}): Promise<StartedNode> {
  const dataDir = options.dataDir ?? (await makeDataDir());
  const security = options.security ?? true;
  const args = [mainJs, '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir, '--security', security ? 'on' : 'off',
    '--admin-password', adminPassword, '--profile', 'test_min', ...(options.args ?? [])];
  const child = spawn(process.execPath, args, { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const port = await new Promise<number>((resolve, reject) => {
    // Generous: a node loads native modules before it listens, which takes many seconds on a busy machine.
    const timeoutMs = options.startTimeoutMs ?? 60_000;
    const timer = setTimeout(() => done(new Error(`node did not start within ${timeoutMs} ms:\n${output}`)), timeoutMs);
    const poll = setInterval(() => {
      const match = /"msg":"listening"[^\n]*"port":(\d+)|"port":(\d+)[^\n]*"msg":"listening"/.exec(output);
      if (match) done(null, Number(match[1] ?? match[2]));
    }, 20);
    void exited.then((code) => done(new Error(`node exited with ${code} before listening:\n${output}`)));
    function done(error: Error | null, value?: number): void {
      clearTimeout(timer);
      clearInterval(poll);
      // A node that never listened is nobody's to tear down: it must not outlive the test.
      if (error && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      if (error) reject(error);
      else resolve(value!);
    }
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    process: child,
    output: () => output,
    auth: basicAuth('admin', adminPassword),
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export async function removeDataDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
}

/** What the helpers below need of tap's `t`: somewhere to register cleanup. */
export interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Starts a node that t's teardown kills, then removes its data dir. */
export async function startNodeFor(t: Teardown, options: NodeOptions = {}): Promise<StartedNode> {
  const node = await startNode(options);
  t.teardown(async () => {
    await node.kill();
    await removeDataDir(node.dataDir);
  });
  return node;
}

/**
 * A node that restart cases start again on the same data dir. create() makes the data dir and registers its
 * cleanup with t before any process starts: the teardown kills the latest process and removes the dir.
 */
export class RestartableNode {
  /** The latest process start() began; undefined before the first. */
  current: StartedNode | undefined;

  private constructor(readonly dataDir: string, private readonly options: NodeOptions) {}

  static async create(t: Teardown, options: NodeOptions = {}): Promise<RestartableNode> {
    const restartable = new RestartableNode(options.dataDir ?? (await makeDataDir()), options);
    t.teardown(async () => {
      await restartable.current?.kill();
      await removeDataDir(restartable.dataDir);
    });
    return restartable;
  }

  /** Starts a process on the data dir; the previous one must have exited (stop() or kill()). */
  async start(): Promise<StartedNode> {
    this.current = await startNode({ ...this.options, dataDir: this.dataDir });
    return this.current;
  }
}
