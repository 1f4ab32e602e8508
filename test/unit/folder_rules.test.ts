// Goal: tidy's folder rules (scripts/folder_rules.ts) read every kind of relative import, refuse an import the folder
// map does not allow (type-only ones only where the row says so), and name each loop of folders importing each other.
// Method: small sample sources; then the real tree must pass, so a later move that breaks the map fails here too.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { folderCycles, folderMap, folderOf, forbiddenImports, importsOf, type ImportEdge } from '../../scripts/folder_rules.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

t.test('imports are read with their line, resolved target and type-only flag', async (t) => {
  const source = [
    "import { a } from '../util/frame.js';",
    "import type { B } from '../errors.js';",
    "export type { C } from './thread_messages.js';",
    "const d = await import('../front/server/server.js');",
    "import 'node:fs';",
    "import x from 'msgpackr';",
  ].join('\n');
  t.same(importsOf('src/protocol/x.ts', source), [
    { file: 'src/protocol/x.ts', target: 'src/util/frame.ts', line: 1, typeOnly: false },
    { file: 'src/protocol/x.ts', target: 'src/errors.ts', line: 2, typeOnly: true },
    { file: 'src/protocol/x.ts', target: 'src/protocol/thread_messages.ts', line: 3, typeOnly: true },
    { file: 'src/protocol/x.ts', target: 'src/front/server/server.ts', line: 4, typeOnly: false },
  ]);
  t.equal(folderOf('src/main.ts'), 'src/main.ts');
  t.equal(folderOf('workers/store/segment_log.ts'), 'workers/store');
});

t.test('an import outside the row is refused; a type-only one passes only where the row lists types', async (t) => {
  const edge = (file: string, target: string, typeOnly = false): ImportEdge => ({ file, target, line: 3, typeOnly });
  t.same(forbiddenImports([edge('src/protocol/a.ts', 'src/util/frame.ts'), edge('src/protocol/a.ts', 'src/errors.ts', true)]), []);
  t.same(forbiddenImports([edge('src/protocol/a.ts', 'src/errors.ts')]), [
    'src/protocol/a.ts:3: src/protocol imports src/errors.ts (its row allows src/util, src/errors.ts)',
  ]);
  t.match(forbiddenImports([edge('src/metadata/a.ts', 'src/raft/core/raft.ts', true)])[0], /src\/metadata imports src\/raft\/core\/raft.ts/);
  t.match(forbiddenImports([edge('src/newfolder/a.ts', 'src/util/frame.ts')])[0], /src\/newfolder has no row in the folder map/);
  t.same(forbiddenImports([edge('workers/store/a.ts', 'workers/store/b.ts')]), [], 'a folder imports itself freely');
});

t.test('a loop of folders is named with one import per step; a chain is no loop', async (t) => {
  const edge = (file: string, target: string): ImportEdge => ({ file, target, line: 1, typeOnly: true });
  t.same(folderCycles([edge('a/x.ts', 'b/y.ts'), edge('b/y.ts', 'c/z.ts')]), []);
  const cycles = folderCycles([edge('a/x.ts', 'b/y.ts'), edge('b/y.ts', 'c/z.ts'), edge('c/z.ts', 'a/w.ts'), edge('d/q.ts', 'a/x.ts')]);
  t.equal(cycles.length, 1);
  t.match(cycles[0], /a -> b \(a\/x.ts:1\); b -> c \(b\/y.ts:1\); c -> a \(c\/z.ts:1\)/);
});

t.test('the tree itself keeps the map: every folder has a row, no import breaks it, no loop', async (t) => {
  const edges: ImportEdge[] = [];
  for (const top of ['src', 'workers']) {
    const entries = await readdir(join(root, top), { withFileTypes: true, recursive: true });
    for (const entry of entries.filter((e) => e.isFile() && e.name.endsWith('.ts'))) {
      const file = join(top, (entry.parentPath ?? entry.path).slice(join(root, top).length), entry.name);
      edges.push(...importsOf(file, await readFile(join(root, file), 'utf8')));
    }
  }
  t.ok(edges.length > 300, `read ${edges.length} imports`);
  t.same(forbiddenImports(edges), []);
  t.same(folderCycles(edges), []);
  t.ok(Object.keys(folderMap).includes('src/metadata'));
});
