// What the bench's smoke tests share (test/bench/bench_smoke*.test.ts): running dist/bench/run.js with --json, reading
// the JSON result it names (and removing it afterwards), and checking that figures are numbers.
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { onExit } from 'signal-exit';
import type { Test } from 'tap';
import { onPath, redisBaselineMissing } from '../../bench/peers.js';

const runJs = fileURLToPath(new URL('../../bench/run.js', import.meta.url));

export const hasWrk = onPath('wrk') !== null;
export const hasRedis = redisBaselineMissing() === null;

/** Process groups of the bench runs in flight. Each run has a group of its own, which its nodes, floors and peers
 *  join: a run cut short takes them with it. A killed bench cannot stop them itself, and a CI run once left a node
 *  running after the runner timed the file out. signal-exit's onExit, not process.on('exit'): tap ends a timed-out
 *  file with SIGALRM, which emits no 'exit'. */
const runningGroups = new Set<number>();
onExit(() => {
  for (const group of runningGroups) killGroup(group, 'SIGKILL');
});

function killGroup(group: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-group, signal);
  } catch {
    // Already gone.
  }
}

export function bench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [runJs, ...args, '--json'], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const group = child.pid!;
    runningGroups.add(group);
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    // SIGTERM first: the bench then stops what it started and removes its temp dirs; the whole group goes after 5 s.
    let hardKill: NodeJS.Timeout | undefined;
    const timer = setTimeout(() => {
      killGroup(group, 'SIGTERM');
      hardKill = setTimeout(() => killGroup(group, 'SIGKILL'), 5_000);
    }, 100_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (hardKill !== undefined) clearTimeout(hardKill);
      // Whatever the bench left in its group (it stops its children before it exits; this is for when it could not).
      killGroup(group, 'SIGKILL');
      runningGroups.delete(group);
      resolve({ code, stdout, stderr });
    });
  });
}

export type Json = Record<string, unknown>;

export async function jsonResult(t: Test, stdout: string): Promise<Json> {
  const path = /wrote (\S+\.json)/.exec(stdout)?.[1];
  t.ok(path, 'the JSON result file is named');
  if (path === undefined) return {};
  t.teardown(() => rm(path, { force: true }));
  const report = JSON.parse(await readFile(path, 'utf8')) as Json;
  t.type(report.commit, 'string', 'the JSON names the commit');
  t.type((report.machine as Json | undefined)?.cpuCount, 'number', 'and the machine');
  return report;
}

/** Each key of obj (a dotted path each) holds a finite number. */
export function numbers(t: Test, obj: unknown, keys: string[], label: string): void {
  for (const key of keys) {
    const value = key.split('.').reduce<unknown>((at, part) => (at as Json | undefined)?.[part], obj);
    t.ok(typeof value === 'number' && Number.isFinite(value), `${label}: ${key} is a number (${String(value)})`);
  }
}

export const latencyKeys = ['latencyMs.p50', 'latencyMs.p90', 'latencyMs.p99', 'latencyMs.p999', 'latencyMs.max'];
export const cpuKeys = ['clientCpuPercent', 'serverCpuPercent'];

export function run(report: Json, name: string): Json | undefined {
  return (report.runs as Json[] | undefined)?.find((r) => r.name === name);
}

export const quick = ['--warmup', '0.5'];

/** The rows of report named `name`, in the order run. */
export function rows(report: Json, name: string): Json[] {
  return ((report.runs as Json[] | undefined) ?? []).filter((r) => r.name === name);
}

