// Goal: `npm run bench` keeps working (issue 4: a smoke run of each scenario that checks the output's shape, never
// its speed). Method: run dist/bench/run.js for produce and consume with one-second windows against the nodes the
// harness starts itself; assert the table rows, the ratio lines and the JSON result file, then remove that file.
import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { readFile, rm } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

const runJs = fileURLToPath(new URL('../../bench/run.js', import.meta.url));

function bench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [runJs, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function jsonResult(t: Test, stdout: string): Promise<Record<string, unknown>> {
  const path = /wrote (\S+\.json)/.exec(stdout)?.[1];
  t.ok(path, 'the JSON result file is named');
  if (path === undefined) return {};
  t.teardown(() => rm(path, { force: true }));
  return JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
}

t.test('produce: floor, single and batch rows, ratios and a JSON result', async (t) => {
  const run = await bench(['produce', '--duration', '1', '--warmup', '0.5', '--connections', '16', '--batch-connections', '2',
    '--batch', '100', '--json']);
  t.equal(run.code, 0, `exit 0 (stderr tail: ${run.stderr.slice(-400)})`);
  for (const row of ['http floor (hello world)', 'single produce', 'batch produce (100)']) {
    t.match(run.stdout, new RegExp(`\\n${row.replace(/[()]/g, '\\$&')}\\s+\\d+\\s+[\\d,]+\\s+[\\d,]+`), `a row for ${row}`);
  }
  t.match(run.stdout, /single produce req\/s \/ http floor req\/s: \d+\.\d{3}/);
  t.match(run.stdout, /batch produce msgs\/s: [\d,]+/);
  t.match(run.stderr, /req\/s/, 'progress lines while it runs');
  const report = await jsonResult(t, run.stdout);
  t.equal(report.scenario, 'produce');
  t.ok(Array.isArray(report.runs) && (report.runs as unknown[]).length === 3, 'three runs in the JSON');
});

t.test('consume: single, batch and wake-up rows with the issue 3 targets and a JSON result', async (t) => {
  const run = await bench(['consume', '--duration', '1', '--warmup', '0.5', '--prefill', '40000', '--batch-prefill', '400000',
    '--connections', '8', '--batch-connections', '4', '--json']);
  t.ok(run.code === 0 || run.code === 1, `the run ends by itself (exit ${run.code}; 1 only when a target or window check fails)`);
  t.match(run.stdout, /\nconsume-single\s+8\s/, 'a consume-single row');
  t.match(run.stdout, /\nconsume-batch\s+4\s/, 'a consume-batch row');
  t.match(run.stdout, /wake-up: producer 202 -> consumer has it\s+[\d,]+\s+\d+\.\d{2}/, 'wake-up latency percentiles');
  t.match(run.stdout, /batched consume\+ack >= 300,000 msg\/s: [\d,]+ msg\/s/, 'the batched target line');
  t.match(run.stdout, /wake-up p99 <= 2 ms: \d+\.\d+ ms/, 'the wake-up target line');
  const report = await jsonResult(t, run.stdout);
  t.equal(report.scenario, 'consume');
});
