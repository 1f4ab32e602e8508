// A small evaluator of Go text/template, as Helm runs it, for test/unit/deploy_helm.test.ts: no helm binary is
// installed here (Debian has none), so the chart's own definitions (templates/_helpers.tpl) are executed by this
// instead of being imitated by the test. It knows what those definitions and the StatefulSet's start script use:
// text with {{- -}} trimming, comments, define/include, if/else if/else, range over a list with one variable,
// variables ($x := and $x =, $ for the root), fields, parenthesised pipelines, `|`, and the Sprig functions
// printf (%s %d %v), trunc, trimSuffix, contains, default, list, index, until, append, join, add1, int, quote.
// Anything else throws, so a chart that starts using more fails the test loudly rather than rendering wrongly.
// Test process only; imports nothing from src/.

type Node =
  | { kind: 'text'; text: string }
  | { kind: 'action'; pipe: string }
  | { kind: 'if'; branches: { pipe: string; body: Node[] }[]; otherwise: Node[] }
  | { kind: 'range'; variable: string | null; pipe: string; body: Node[] };

interface Scope {
  dot: unknown;
  root: unknown;
  vars: Map<string, unknown>[];
}

type Segment = { text: string } | { action: string };

/** Text and actions in order, with the whitespace {{- and -}} trim already taken off the text beside them. */
function segments(source: string): Segment[] {
  const out: Segment[] = [];
  const action = /\{\{(-\s)?([\s\S]*?)(\s-)?\}\}/g;
  let at = 0;
  let trimNext = false;
  for (const match of source.matchAll(action)) {
    let text = source.slice(at, match.index);
    if (trimNext) text = text.replace(/^\s+/, '');
    if (match[1] !== undefined) text = text.replace(/\s+$/, '');
    if (text !== '') out.push({ text });
    const body = match[2]!.trim();
    if (!body.startsWith('/*')) out.push({ action: body });
    trimNext = match[3] !== undefined;
    at = match.index + match[0].length;
  }
  const tail = trimNext ? source.slice(at).replace(/^\s+/, '') : source.slice(at);
  if (tail !== '') out.push({ text: tail });
  return out;
}

class Parser {
  private at = 0;
  readonly defines = new Map<string, Node[]>();

  constructor(private readonly items: Segment[]) {}

  /** Nodes up to one of the closing keywords (end, else ...), which is returned with them. */
  list(closers: string[]): { nodes: Node[]; closer: string | null } {
    const nodes: Node[] = [];
    while (this.at < this.items.length) {
      const item = this.items[this.at++]!;
      if ('text' in item) {
        nodes.push({ kind: 'text', text: item.text });
        continue;
      }
      const keyword = /^(\w+)\b\s*([\s\S]*)$/.exec(item.action);
      const word = keyword?.[1] ?? '';
      if (closers.includes(word)) return { nodes, closer: item.action };
      if (word === 'if') nodes.push(this.ifNode(keyword![2]!));
      else if (word === 'range') nodes.push(this.rangeNode(keyword![2]!));
      else if (word === 'define') this.define(keyword![2]!);
      else if (['with', 'template', 'block', 'else', 'end'].includes(word)) throw new Error(`go_template: {{ ${item.action} }} is not supported here`);
      else nodes.push({ kind: 'action', pipe: item.action });
    }
    if (closers.length > 0) throw new Error(`go_template: missing {{ end }} (expected one of ${closers.join(', ')})`);
    return { nodes, closer: null };
  }

  private ifNode(firstPipe: string): Node {
    const branches: { pipe: string; body: Node[] }[] = [];
    let pipe = firstPipe;
    for (;;) {
      const { nodes, closer } = this.list(['else', 'end']);
      branches.push({ pipe, body: nodes });
      if (closer === 'end') return { kind: 'if', branches, otherwise: [] };
      const elseIf = /^else\s+if\s+([\s\S]+)$/.exec(closer!);
      if (elseIf !== null) {
        pipe = elseIf[1]!;
        continue;
      }
      return { kind: 'if', branches, otherwise: this.list(['end']).nodes };
    }
  }

  private rangeNode(spec: string): Node {
    const declared = /^(\$\w+)\s*:=\s*([\s\S]+)$/.exec(spec);
    const body = this.list(['end']).nodes;
    return { kind: 'range', variable: declared?.[1] ?? null, pipe: declared?.[2] ?? spec, body };
  }

  private define(spec: string): void {
    const name = /^"([^"]+)"$/.exec(spec.trim());
    if (name === null) throw new Error(`go_template: define ${spec}`);
    this.defines.set(name[1]!, this.list(['end']).nodes);
  }
}

const tokenPattern = /\s*("(?:[^"\\]|\\.)*"|:=|=|\||\(|\)|-?\d+|\$\w*(?:\.\w+)*|(?:\.\w+)+|\.|\w+)/y;

function tokens(pipe: string): string[] {
  const out: string[] = [];
  tokenPattern.lastIndex = 0;
  while (tokenPattern.lastIndex < pipe.length) {
    const start = tokenPattern.lastIndex;
    const match = tokenPattern.exec(pipe);
    if (match === null) {
      if (pipe.slice(start).trim() === '') break;
      throw new Error(`go_template: cannot read "${pipe.slice(start)}" in {{ ${pipe} }}`);
    }
    out.push(match[1]!);
  }
  return out;
}

function field(value: unknown, path: string[]): unknown {
  let current = value;
  for (const name of path) {
    if (current === null || typeof current !== 'object') throw new Error(`go_template: no field ${name} in ${JSON.stringify(current)}`);
    current = (current as Record<string, unknown>)[name];
  }
  return current;
}

function truthy(value: unknown): boolean {
  if (Array.isArray(value)) return value.length > 0;
  if (value !== null && typeof value === 'object') return Object.keys(value).length > 0;
  return value !== undefined && value !== null && value !== false && value !== 0 && value !== '';
}

function text(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (Array.isArray(value)) return `[${value.map(text).join(' ')}]`;
  return String(value);
}

function printf(format: string, ...args: unknown[]): string {
  let next = 0;
  return format.replace(/%([sdv%])/g, (_, verb: string) => {
    if (verb === '%') return '%';
    const arg = args[next++];
    if (verb === 'd') {
      if (typeof arg !== 'number' || !Number.isInteger(arg)) return `%!d(${text(arg)})`;
      return String(arg);
    }
    return text(arg);
  });
}

function toInt(value: unknown): number {
  const n = typeof value === 'string' ? Number.parseInt(value, 10) : Number(value);
  return Number.isFinite(n) ? Math.trunc(n) : 0;
}

const sprig: Record<string, (...args: any[]) => unknown> = {
  printf,
  trunc: (n: number, s: string) => (n >= 0 ? text(s).slice(0, n) : text(s).slice(n)),
  trimSuffix: (suffix: string, s: string) => (text(s).endsWith(suffix) ? text(s).slice(0, text(s).length - suffix.length) : text(s)),
  contains: (part: string, s: string) => text(s).includes(part),
  default: (fallback: unknown, value?: unknown) => (truthy(value) ? value : fallback),
  list: (...items: unknown[]) => items,
  index: (collection: any, ...keys: (string | number)[]) => keys.reduce((c, k) => c?.[k], collection),
  until: (n: number) => Array.from({ length: toInt(n) }, (_, i) => i),
  append: (items: unknown[], item: unknown) => [...items, item],
  join: (separator: string, items: unknown[]) => items.map(text).join(separator),
  add1: (n: unknown) => toInt(n) + 1,
  int: toInt,
  quote: (value: unknown) => JSON.stringify(text(value)),
};

/** The chart's definitions, and the rendering of template text that may include them. */
export class GoTemplates {
  private readonly defines = new Map<string, Node[]>();

  /** sources: the files whose `define`s are known (a chart's _helpers.tpl); their other text is left out. */
  constructor(sources: readonly string[]) {
    for (const source of sources) {
      const parser = new Parser(segments(source));
      parser.list([]);
      for (const [name, body] of parser.defines) this.defines.set(name, body);
    }
  }

  render(template: string, data: unknown): string {
    const parser = new Parser(segments(template));
    const { nodes } = parser.list([]);
    for (const [name, body] of parser.defines) this.defines.set(name, body);
    return this.run(nodes, { dot: data, root: data, vars: [new Map()] });
  }

  include(name: string, data: unknown): string {
    const body = this.defines.get(name);
    if (body === undefined) throw new Error(`go_template: no template "${name}" is defined`);
    return this.run(body, { dot: data, root: data, vars: [new Map()] });
  }

  private run(nodes: readonly Node[], scope: Scope): string {
    let out = '';
    for (const node of nodes) {
      if (node.kind === 'text') out += node.text;
      else if (node.kind === 'action') out += this.action(node.pipe, scope);
      else if (node.kind === 'if') out += this.runIf(node, scope);
      else out += this.runRange(node, scope);
    }
    return out;
  }

  private runIf(node: Extract<Node, { kind: 'if' }>, scope: Scope): string {
    for (const branch of node.branches) {
      if (truthy(this.pipeline(tokens(branch.pipe), scope))) return this.inBlock(branch.body, scope, scope.dot);
    }
    return this.inBlock(node.otherwise, scope, scope.dot);
  }

  private runRange(node: Extract<Node, { kind: 'range' }>, scope: Scope): string {
    const items = this.pipeline(tokens(node.pipe), scope);
    if (!Array.isArray(items)) throw new Error(`go_template: range over ${JSON.stringify(items)}`);
    return items.map((item) => this.inBlock(node.body, scope, item, node.variable === null ? undefined : [node.variable, item])).join('');
  }

  /** A block's nodes in a scope of their own: variables declared inside end with it, assignments reach out. */
  private inBlock(nodes: readonly Node[], scope: Scope, dot: unknown, declared?: [string, unknown]): string {
    const vars = new Map<string, unknown>(declared === undefined ? [] : [declared]);
    return this.run(nodes, { dot, root: scope.root, vars: [...scope.vars, vars] });
  }

  /** An action: a pipeline printed, or a variable declared or assigned (printing nothing). */
  private action(pipe: string, scope: Scope): string {
    const words = tokens(pipe);
    if (words.length > 2 && words[0]!.startsWith('$') && (words[1] === ':=' || words[1] === '=')) {
      const value = this.pipeline(words.slice(2), scope);
      const name = words[0]!;
      const holder = words[1] === ':=' ? scope.vars[scope.vars.length - 1]! : [...scope.vars].reverse().find((v) => v.has(name));
      if (holder === undefined) throw new Error(`go_template: assignment to undeclared ${name}`);
      holder.set(name, value);
      return '';
    }
    return text(this.pipeline(words, scope));
  }

  /** Commands joined by `|`: each one's value is the last argument of the next. */
  private pipeline(words: readonly string[], scope: Scope): unknown {
    const commands: string[][] = [[]];
    let depth = 0;
    for (const word of words) {
      if (word === '(') depth++;
      if (word === ')') depth--;
      if (word === '|' && depth === 0) commands.push([]);
      else commands[commands.length - 1]!.push(word);
    }
    let piped: unknown[] = [];
    let value: unknown;
    for (const command of commands) {
      value = this.command(command, scope, piped);
      piped = [value];
    }
    return value;
  }

  private command(words: readonly string[], scope: Scope, piped: unknown[]): unknown {
    const operands = this.operands(words, scope);
    const head = words[0]!;
    if (/^[A-Za-z]\w*$/.test(head) && head !== 'true' && head !== 'false') {
      const args = [...operands.slice(1), ...piped];
      if (head === 'include') return this.include(String(args[0]), args[1]);
      const fn = sprig[head];
      if (fn === undefined) throw new Error(`go_template: function ${head} is not supported here`);
      return fn(...args);
    }
    if (operands.length !== 1 || piped.length > 0) throw new Error(`go_template: cannot call ${words.join(' ')}`);
    return operands[0];
  }

  /** Each operand's value; a parenthesised pipeline is one operand, a function name stays a placeholder. */
  private operands(words: readonly string[], scope: Scope): unknown[] {
    const values: unknown[] = [];
    for (let i = 0; i < words.length; i++) {
      const word = words[i]!;
      if (word === '(') {
        let depth = 1;
        let j = i + 1;
        for (; j < words.length && depth > 0; j++) depth += words[j] === '(' ? 1 : words[j] === ')' ? -1 : 0;
        values.push(this.pipeline(words.slice(i + 1, j - 1), scope));
        i = j - 1;
      } else {
        values.push(this.operand(word, scope));
      }
    }
    return values;
  }

  private operand(word: string, scope: Scope): unknown {
    if (word.startsWith('"')) return JSON.parse(word);
    if (/^-?\d+$/.test(word)) return Number(word);
    if (word === '.') return scope.dot;
    if (word.startsWith('.')) return field(scope.dot, word.slice(1).split('.'));
    if (word.startsWith('$')) {
      const [name, ...path] = word.split('.');
      if (name === '$') return field(scope.root, path);
      const holder = [...scope.vars].reverse().find((v) => v.has(name!));
      if (holder === undefined) throw new Error(`go_template: undefined variable ${name}`);
      return field(holder.get(name!), path);
    }
    if (word === 'true' || word === 'false') return word === 'true';
    return undefined; // a function name, called by command()
  }
}
