// Style checks run by `npm test` (STYLE §9): the pure cores use no clock, randomness, timers or file system,
// and src/protocol has no `any`. Runs with node on the compiled tree's sources; exits 1 naming each violation.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pureCores = ['src/raft/core', 'src/raft/metadata', 'workers/partition_actor.ts', 'workers/lease_table.ts', 'workers/partition_write_core.ts', 'workers/partition_cursors.ts'];
const bannedInPureCores: [RegExp, string][] = [
  [/\bDate\.now\b/, 'Date.now (time arrives as an argument)'],
  [/\bMath\.random\b/, 'Math.random (use an injected seeded PRNG)'],
  [/\bset(Timeout|Interval|Immediate)\b/, 'timers (the shell schedules)'],
  [/from 'node:/, 'node:* imports (pure cores do no I/O)'],
  [/\bawait\b/, 'await (pure cores never wait)'],
];

async function filesUnder(relative: string): Promise<string[]> {
  const path = join(root, relative);
  if (relative.endsWith('.ts')) return readFile(path).then(() => [relative], () => []);
  const entries = await readdir(path, { withFileTypes: true, recursive: true }).catch(() => []);
  return entries.filter((e) => e.isFile() && e.name.endsWith('.ts')).map((e) => join(relative, (e.parentPath ?? e.path).slice(path.length), e.name));
}

async function main(): Promise<void> {
  const problems: string[] = [];
  for (const core of pureCores) {
    for (const file of await filesUnder(core)) {
      const lines = (await readFile(join(root, file), 'utf8')).split('\n');
      lines.forEach((line, i) => {
        if (line.trim().startsWith('//') || line.trim().startsWith('*')) return;
        for (const [pattern, why] of bannedInPureCores) {
          if (pattern.test(line)) problems.push(`${file}:${i + 1}: ${why}`);
        }
      });
    }
  }
  for (const file of await filesUnder('src/protocol')) {
    const lines = (await readFile(join(root, file), 'utf8')).split('\n');
    lines.forEach((line, i) => {
      if (/:\s*any\b|<any>|as any\b/.test(line)) problems.push(`${file}:${i + 1}: 'any' in a boundary type`);
    });
  }
  if (problems.length > 0) {
    process.stderr.write(`tidy: ${problems.length} problem(s)\n${problems.join('\n')}\n`);
    process.exit(1);
  }
  process.stdout.write('tidy: ok\n');
}

await main();
