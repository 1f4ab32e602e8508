// Style checks run by `npm test` (STYLE §9): the pure cores use no clock, randomness, timers or file system,
// src/protocol has no `any`, each folder imports only what the folder map allows and no folders import each other
// in a loop (folder_rules.ts), no function in src/, workers/ or bench/ is over 70 lines, and only src/errors.ts
// makes a BrokerError. Runs with node on the compiled tree's sources; exits 1 naming each violation. The text rules are in
// tidy_rules.ts (tested on samples).
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { folderCycles, forbiddenImports, importsOf, type ImportEdge } from './folder_rules.js';
import { brokerErrorProblems, clientImportProblems, longFunctionProblems } from './tidy_rules.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pureCores = ['src/raft/core', 'src/metadata', 'src/schema', 'workers/core'];
/** Shells stay shells: the worker's entry wires its parts, main.ts starts threads (issue 39 point 8). */
const shellLinesMax: Record<string, number> = { 'workers/partition_worker.ts': 400, 'src/main.ts': 200 };
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

/** Folder rules of docs/architecture.md's map over every relative import of src/ and workers/ (folder_rules.ts). */
async function folderProblems(): Promise<string[]> {
  const edges: ImportEdge[] = [];
  for (const folder of ['src', 'workers']) {
    for (const file of await filesUnder(folder)) edges.push(...importsOf(file, await readFile(join(root, file), 'utf8')));
  }
  return [...forbiddenImports(edges), ...folderCycles(edges)];
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
  problems.push(...(await folderProblems()));
  for (const [file, linesMax] of Object.entries(shellLinesMax)) {
    const lines = (await readFile(join(root, file), 'utf8')).split('\n').length;
    if (lines > linesMax) problems.push(`${file}: ${lines} lines (a shell: at most ${linesMax}; move a part into a module of its own)`);
  }
  for (const file of await filesUnder('src/client')) problems.push(...clientImportProblems(file, await readFile(join(root, file), 'utf8')));
  for (const folder of ['src', 'workers', 'bench']) {
    for (const file of await filesUnder(folder)) problems.push(...longFunctionProblems(file, await readFile(join(root, file), 'utf8')));
  }
  for (const folder of ['src', 'workers', 'scripts', 'bench', 'test']) {
    for (const file of await filesUnder(folder)) {
      if (file !== join('src', 'errors.ts')) problems.push(...brokerErrorProblems(file, await readFile(join(root, file), 'utf8')));
    }
  }
  if (problems.length > 0) {
    process.stderr.write(`tidy: ${problems.length} problem(s)\n${problems.join('\n')}\n`);
    process.exit(1);
  }
  process.stdout.write('tidy: ok\n');
}

await main();
