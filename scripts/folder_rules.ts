// The folder map of docs/architecture.md as data, and the checks tidy runs over the import graph of src/ and workers/:
// each folder imports only what its row allows (type-only imports may also reach the rows' `types`), and no two
// folders import each other, directly or around a loop. Pure functions over (file, specifier, typeOnly) triples so
// tests can feed samples (test/unit/folder_rules.test.ts). A file directly under src/ is a node of its own.
import { dirname, join, normalize } from 'node:path';

export interface ImportEdge {
  file: string;
  /** The imported file, relative to the root, with its .ts name. */
  target: string;
  line: number;
  typeOnly: boolean;
}

interface FolderRule {
  imports: string[];
  /** Reached only by `import type`: erased at build, so they fix no load order. */
  types?: string[];
}

const leaf = ['src/util', 'src/config.ts', 'src/errors.ts'];
const below = (...folders: string[]): string[] => [...folders, 'src/protocol', ...leaf];

/** Each folder (or file directly under src/) and what it may import besides itself. */
export const folderMap: Record<string, FolderRule> = {
  'src/util': { imports: [] },
  /** The password-file rule lives in the client (a leaf) so the CLI and the node read one file alike. */
  'src/config.ts': { imports: ['src/client'] },
  'src/errors.ts': { imports: [] },
  'src/client': { imports: [] },
  'src/protocol': { imports: ['src/util'], types: ['src/errors.ts'] },
  'src/metadata': { imports: below() },
  'src/raft/core': { imports: below() },
  'src/raft/shell': { imports: below('src/raft/core', 'src/metadata', 'src/transport') },
  'src/transport': { imports: below() },
  'src/node_link': { imports: below('src/transport') },
  'src/schema': { imports: below() },
  'src/body': { imports: below('src/schema') },
  'src/pool': { imports: below('src/body', 'src/schema') },
  'src/front/ingress': { imports: below('src/transport') },
  'src/front': { imports: below('src/front/ingress', 'src/metadata', 'src/pool', 'src/schema', 'src/body', 'src/transport') },
  'src/front/moves': { imports: below('src/front', 'src/front/ingress', 'src/metadata', 'src/transport') },
  'src/front/handlers': { imports: below('src/front', 'src/front/ingress', 'src/metadata', 'src/pool', 'src/schema', 'src/body', 'src/transport') },
  'src/front/server': {
    imports: below('src/front/handlers', 'src/front/moves', 'src/front', 'src/front/ingress', 'src/node_link', 'src/metadata', 'src/pool', 'src/schema', 'src/body', 'src/transport'),
  },
  'src/cluster_settings.ts': { imports: below('src/transport') },
  'src/main.ts': { imports: below('src/cluster_settings.ts', 'src/front/server', 'src/front', 'src/node_link', 'src/transport') },
  'workers/core': { imports: below() },
  'workers/store': { imports: below('workers/core') },
  'workers/fanout': { imports: below('workers/store', 'workers/core') },
  workers: { imports: below('workers/fanout', 'workers/store', 'workers/core', 'src/metadata', 'src/body') },
};

/** The map's node a file belongs to: its folder, or the file itself when it sits directly under src/. */
export function folderOf(file: string): string {
  const folder = dirname(file);
  return folder === 'src' ? file : folder;
}

/** The relative imports of one source file (static, re-exports and dynamic), resolved against its path. */
export function importsOf(file: string, source: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  source.split('\n').forEach((text, i) => {
    for (const match of text.matchAll(/(?:from\s+|import\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)\.js'/g)) {
      const typeOnly = /^\s*(import|export)\s+type\b/.test(text);
      edges.push({ file, target: normalize(join(dirname(file), `${match[1]!}.ts`)), line: i + 1, typeOnly });
    }
  });
  return edges;
}

/** Imports a folder's row does not allow. */
export function forbiddenImports(edges: ImportEdge[]): string[] {
  const problems: string[] = [];
  for (const edge of edges) {
    const from = folderOf(edge.file);
    const to = folderOf(edge.target);
    if (from === to) continue;
    const rule = folderMap[from];
    if (rule === undefined) {
      problems.push(`${edge.file}:${edge.line}: ${from} has no row in the folder map (scripts/folder_rules.ts)`);
      continue;
    }
    if (rule.imports.includes(to) || (edge.typeOnly && rule.types?.includes(to))) continue;
    problems.push(`${edge.file}:${edge.line}: ${from} imports ${edge.target} (its row allows ${[...rule.imports, ...(rule.types ?? [])].join(', ') || 'nothing'})`);
  }
  return problems;
}

/** Every loop of folders importing each other (Tarjan's strongly connected components), with one import per step. */
export function folderCycles(edges: ImportEdge[]): string[] {
  const graph = new Map<string, Map<string, ImportEdge>>();
  for (const edge of edges) {
    const from = folderOf(edge.file);
    const to = folderOf(edge.target);
    if (from === to) continue;
    if (!graph.has(from)) graph.set(from, new Map());
    if (!graph.get(from)!.has(to)) graph.get(from)!.set(to, edge);
  }
  return stronglyConnected(graph).map((members) => {
    const steps = members.flatMap((a) => members.filter((b) => graph.get(a)?.has(b)).map((b) => {
      const edge = graph.get(a)!.get(b)!;
      return `${a} -> ${b} (${edge.file}:${edge.line})`;
    }));
    return `import cycle between folders: ${steps.join('; ')}`;
  });
}

function stronglyConnected(graph: Map<string, Map<string, unknown>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1) components.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return components;
}
