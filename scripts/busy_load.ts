// Busy-loops N child processes beside a test run, so that a test leaning on timing the contract does not promise
// fails here rather than on a busy machine (issue 39 point 6). The loader and each child stop by themselves at the
// deadline, and as soon as the process that started them is gone, so a killed shell or loader leaves no spinner.
// Usage: node dist/scripts/busy_load.js [--processes N] [--seconds S]   (npm run busy-load -- --seconds 600)
import { spawn } from 'node:child_process';
import { parseArgs } from 'node:util';

/** A child spins this long between looks at its deadline and parent; short enough to stop promptly. */
const spinSliceMs = 100;
/** How often the loader looks whether its parent is still there. */
const parentCheckMs = 1000;

const { values } = parseArgs({
  options: {
    processes: { type: 'string', default: '2' },
    seconds: { type: 'string', default: '1800' },
    'child-until': { type: 'string' },
  },
});

if (values['child-until'] !== undefined) spin(Number(values['child-until']));
else startLoad();

function startLoad(): void {
  const processes = Number(values.processes);
  const seconds = Number(values.seconds);
  if (!Number.isInteger(processes) || processes < 1 || processes > 64) throw new Error('--processes: an integer from 1 to 64');
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400) throw new Error('--seconds: a number above 0, at most 86400');
  const until = Date.now() + seconds * 1000;
  const children = Array.from({ length: processes }, () =>
    spawn(process.execPath, [process.argv[1]!, '--child-until', String(until)], { stdio: 'ignore' }));
  const parent = process.ppid;
  const stop = (): void => {
    for (const child of children) child.kill('SIGKILL');
    process.exit(0);
  };
  setInterval(() => { if (process.ppid !== parent || Date.now() >= until) stop(); }, parentCheckMs);
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  console.log(`busy_load: ${processes} spinning processes for ${seconds} s (pid ${process.pid})`);
}

function spin(until: number): void {
  const parent = process.ppid;
  const slice = (): void => {
    if (Date.now() >= until || process.ppid !== parent) process.exit(0);
    const sliceEnd = Date.now() + spinSliceMs;
    while (Date.now() < sliceEnd) { /* spin: the load is the point */ }
    setImmediate(slice);
  };
  slice();
}
