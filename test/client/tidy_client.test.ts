// Goal: tidy's client import rule (scripts/tidy_rules.ts clientImportProblems) keeps src/client free of the server's
// code and of packages, so svc-broker/client ships on its own; the CLI alone may import commander.
// Method: the rule as a pure function on samples, then on the real src/client files.
import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { clientImportProblems } from '../../scripts/tidy_rules.js';

t.test('imports inside src/client and node: pass; anything else fails', async (t) => {
  t.same(clientImportProblems('src/client/api.ts', "import type * as T from './types.js';\nimport { x } from 'node:fs';"), []);
  t.equal(clientImportProblems('src/client/api.ts', "import { errors } from '../errors.js';").length, 1, 'server code');
  t.equal(clientImportProblems('src/client/api.ts', "import { x } from '../front/respond.js';").length, 1);
  t.equal(clientImportProblems('src/client/api.ts', "const m = await import('../config.js');").length, 1, 'dynamic import');
  t.equal(clientImportProblems('src/client/api.ts', "import { Command } from 'commander';").length, 1, 'a package');
  t.same(clientImportProblems('src/client/cli.ts', "import { Command } from 'commander';"), [], 'the CLI may use commander');
  t.equal(clientImportProblems('src/client/cli.ts', "import pino from 'pino';").length, 1);
});

t.test('the real src/client passes', async (t) => {
  const root = fileURLToPath(new URL('../../..', import.meta.url));
  const files = (await readdir(`${root}/src/client`)).filter((f) => f.endsWith('.ts'));
  t.ok(files.includes('api.ts'));
  for (const file of files) t.same(clientImportProblems(`src/client/${file}`, await readFile(`${root}/src/client/${file}`, 'utf8')), [], file);
});
