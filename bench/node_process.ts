// Child server processes for bench/run.ts: starts a Node script (the hello-world floor or the broker node), waits
// for its stdout line with "msg":"listening" and "port":N, keeps draining its output (a full pipe would stall the
// server's logger), reads its CPU time from /proc/<pid>/stat, and stops it (SIGTERM, then SIGKILL after a grace
// period). Runs on the bench process's main thread; every child started here is stopped by run.ts's cleanup.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Bytes of the child's combined stdout and stderr kept for error reports; older output is dropped. */
const outputTailBytesMax = 64 * 1024;
/** How long a child may take to log "listening" before the bench gives up on it. */
const startTimeoutMsDefault = 30_000;
/** How long a child gets after SIGTERM before SIGKILL. */
const stopGraceMs = 5_000;

export interface ChildServerOptions {
  /** Shown in messages, e.g. "hello-world" or "broker". */
  name: string;
  /** Path of the script to run with this Node binary. */
  script: string;
  args: string[];
  /** Flags for Node itself, before the script (e.g. --cpu-prof). */
  nodeFlags?: string[];
  env?: Record<string, string>;
  startTimeoutMs?: number;
}

export interface ChildServer {
  name: string;
  pid: number;
  port: number;
  url: string;
  /** Resolves with the exit code or signal name once the child has exited, whoever stopped it. */
  exited: Promise<string>;
  /** True once the child has exited. */
  hasExited(): boolean;
  /** The last outputTailBytesMax bytes the child wrote to stdout and stderr. */
  outputTail(): string;
  /** SIGTERM, then SIGKILL after the grace period; resolves once it has exited. */
  stop(): Promise<string>;
}

/** Matches the pino line the broker (and the hello-world server) writes once it listens, in either key order. */
const listeningPattern = /"msg":"listening"[^\n]*"port":(\d+)|"port":(\d+)[^\n]*"msg":"listening"/;

export async function startChildServer(options: ChildServerOptions): Promise<ChildServer> {
  const child = spawn(process.execPath, [...(options.nodeFlags ?? []), options.script, ...options.args], {
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let tail = '';
  const append = (chunk: string): void => {
    tail += chunk;
    if (tail.length > outputTailBytesMax * 2) tail = tail.slice(-outputTailBytesMax);
  };
  child.stdout!.setEncoding('utf8').on('data', append);
  child.stderr!.setEncoding('utf8').on('data', append);
  let exitedFlag = false;
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      exitedFlag = true;
      resolve(signal ?? String(code));
    });
    child.once('error', (error) => {
      exitedFlag = true;
      resolve(`spawn error: ${error.message}`);
    });
  });
  const outputTail = (): string => tail.slice(-outputTailBytesMax);
  const port = await waitForListening(options, () => tail, exited, child);
  return {
    name: options.name,
    pid: child.pid!,
    port,
    url: `http://127.0.0.1:${port}`,
    exited,
    hasExited: () => exitedFlag,
    outputTail,
    stop: () => stopChild(child, exited),
  };
}

function waitForListening(options: ChildServerOptions, output: () => string, exited: Promise<string>,
  child: ChildProcess): Promise<number> {
  const timeoutMs = options.startTimeoutMs ?? startTimeoutMsDefault;
  return new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      void stopChild(child, exited);
      done(new Error(`${options.name} did not log "listening" within ${timeoutMs} ms; its output:\n${output()}`));
    }, timeoutMs);
    const poll = setInterval(() => {
      const match = listeningPattern.exec(output());
      if (match) done(null, Number(match[1] ?? match[2]));
    }, 20);
    void exited.then((how) => done(new Error(`${options.name} exited (${how}) before listening; its output:\n${output()}`)));
    let settled = false;
    function done(error: Error | null, port?: number): void {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearInterval(poll);
      if (error) reject(error);
      else resolve(port!);
    }
  });
}

async function stopChild(child: ChildProcess, exited: Promise<string>): Promise<string> {
  if (child.exitCode !== null || child.signalCode !== null) return exited;
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), stopGraceMs);
  try {
    return await exited;
  } finally {
    clearTimeout(timer);
  }
}

let clockTicksPerSecond: number | null = null;

/** USER_HZ, the unit of utime and stime in /proc/<pid>/stat (100 on Linux almost everywhere). */
function clockTicks(): number {
  if (clockTicksPerSecond === null) {
    try {
      clockTicksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicksPerSecond = 100;
    }
  }
  return clockTicksPerSecond;
}

/**
 * CPU time (user + system, ms) that process pid has used so far, all its threads included, read from
 * /proc/<pid>/stat. Null when that cannot be read (no /proc, process gone, not ours). Resolution: 1 / CLK_TCK s.
 */
export function readProcessCpuMs(pid: number): number | null {
  return readStatCpuMs(`/proc/${pid}/stat`);
}

/**
 * CPU time (ms) of each thread of process pid so far, by thread id, from /proc/<pid>/task/<tid>/stat. The main
 * thread's id is pid (in the broker that is the front thread). Node 20 leaves every thread's name "node", so ids
 * are all there is to tell them apart. Null when /proc cannot be read.
 */
export function readThreadCpuMs(pid: number): Map<number, number> | null {
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return null;
  }
  const byTid = new Map<number, number>();
  for (const tid of tids) {
    const ms = readStatCpuMs(`/proc/${pid}/task/${tid}/stat`);
    if (ms !== null) byTid.set(Number(tid), ms);
  }
  return byTid;
}

function readStatCpuMs(path: string): number | null {
  // Fields after the command name: state(3) ppid(4) ... utime(14) stime(15), i.e. indexes 11 and 12.
  return sumStatFieldsMs(path, 11);
}

/**
 * The sum of two adjacent clock-tick fields of a /proc stat file (indexes first and first + 1, counted from the
 * state field), in ms; null when the file cannot be read or the fields are not numbers.
 */
function sumStatFieldsMs(path: string, first: number): number | null {
  let stat: string;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces, so split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const a = Number(fields[first]);
  const b = Number(fields[first + 1]);
  if (!Number.isFinite(a) || !Number.isFinite(b)) return null;
  return ((a + b) * 1000) / clockTicks();
}

/**
 * CPU time (ms) every core of the machine has spent busy so far (user, nice, system, irq, softirq, steal), from
 * the first line of /proc/stat. The bench subtracts its own and the server's share to show what other processes
 * took during a run: on a shared machine that is the noise. Null without /proc.
 */
export function readMachineBusyCpuMs(): number | null {
  let stat: string;
  try {
    stat = readFileSync('/proc/stat', 'utf8');
  } catch {
    return null;
  }
  const fields = stat.slice(0, stat.indexOf('\n')).trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest and guest_nice are already inside user and nice).
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  const busy = user + nice + system + irq + softirq + steal;
  return Number.isFinite(busy) ? (busy * 1000) / clockTicks() : null;
}

/**
 * CPU time (ms) of this process's children that have exited and been waited for (cutime + cstime of
 * /proc/self/stat). Around a child tool's run (wrk, redis-benchmark) its difference is that tool's CPU. Null
 * without /proc.
 */
export function readExitedChildrenCpuMs(): number | null {
  // cutime(16) cstime(17), i.e. indexes 13 and 14 after the command name.
  return sumStatFieldsMs('/proc/self/stat', 13);
}

/** Resident set size of process pid (VmRSS of /proc/<pid>/status), bytes; null when it cannot be read. */
export function readRssBytes(pid: number): number | null {
  let status: string;
  try {
    status = readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
  return match === null ? null : Number(match[1]) * 1024;
}
