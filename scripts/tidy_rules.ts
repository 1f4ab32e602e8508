// The text rules scripts/tidy.ts applies, as pure functions of one file's source so tests can feed them samples
// (test/unit/tidy_rules.test.ts). A small lexer blanks comments, strings, templates and regex literals first, so a
// brace or a phrase inside them never counts; then functions are found by their headers and measured by brace
// matching. Runs in node on the TypeScript sources, never in the broker.

/** STYLE §2-3: a function longer than this many lines (header line to closing brace) fails tidy. */
export const functionLinesMax = 70;

/** The source with every comment, string, template and regex literal replaced by spaces (newlines kept), so offsets
 *  and line numbers stay those of the source. */
export function codeOnly(source: string): string {
  const out = source.split('');
  const blank = (from: number, to: number): void => {
    for (let i = from; i < to && i < out.length; i++) if (out[i] !== '\n') out[i] = ' ';
  };
  let i = 0;
  let lastSignificant = '';
  while (i < source.length) {
    const c = source[i]!;
    const next = source[i + 1];
    let end = i;
    if (c === '/' && next === '/') end = lineEnd(source, i);
    else if (c === '/' && next === '*') end = blockCommentEnd(source, i);
    else if (c === "'" || c === '"') end = quotedEnd(source, i, c);
    else if (c === '`') end = templateEnd(source, i);
    else if (c === '/' && regexMayStart(lastSignificant, source, i)) end = regexEnd(source, i);
    if (end > i) {
      // Keep the delimiters' places blank too: only code characters survive.
      blank(i, end);
      i = end;
      if (c === "'" || c === '"' || c === '`' || c === '/') lastSignificant = 'a';
      continue;
    }
    if (!/\s/.test(c)) lastSignificant = c;
    i += 1;
  }
  return out.join('');
}

function lineEnd(source: string, from: number): number {
  const at = source.indexOf('\n', from);
  return at < 0 ? source.length : at;
}

function blockCommentEnd(source: string, from: number): number {
  const at = source.indexOf('*/', from + 2);
  return at < 0 ? source.length : at + 2;
}

function quotedEnd(source: string, from: number, quote: string): number {
  for (let i = from + 1; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i += 1;
    else if (c === quote || c === '\n') return i + 1;
  }
  return source.length;
}

/** A template literal with its ${...} parts (their braces are counted, their strings not told apart: rare enough). */
function templateEnd(source: string, from: number): number {
  let depth = 0;
  for (let i = from + 1; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i += 1;
    else if (depth === 0 && c === '`') return i + 1;
    else if (c === '$' && source[i + 1] === '{') {
      depth += 1;
      i += 1;
    } else if (depth > 0 && c === '{') depth += 1;
    else if (depth > 0 && c === '}') depth -= 1;
  }
  return source.length;
}

/** A '/' starts a regex literal after an operator or opening punctuation, or after `return`; else it divides. */
function regexMayStart(lastSignificant: string, source: string, at: number): boolean {
  if (lastSignificant === '' || '(,=:[!&|?{};+-*%<>~^'.includes(lastSignificant)) return true;
  return /\b(return|typeof|case|in|of)\s*$/.test(source.slice(Math.max(0, at - 12), at));
}

function regexEnd(source: string, from: number): number {
  let inClass = false;
  for (let i = from + 1; i < source.length; i++) {
    const c = source[i];
    if (c === '\\') i += 1;
    else if (c === '\n') return from + 1;
    else if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    else if (c === '/' && !inClass) {
      let end = i + 1;
      while (end < source.length && /[a-z]/.test(source[end]!)) end += 1;
      return end;
    }
  }
  return from + 1;
}

export interface FunctionSpan {
  /** 1-based line of the header and of the closing brace. */
  startLine: number;
  endLine: number;
  lines: number;
}

const notFunctionNames = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'return', 'await', 'new', 'throw',
  'typeof', 'void', 'delete', 'super', 'import', 'export', 'else', 'do', 'in', 'of', 'function']);
const methodHeader = /^\s*(?:(?:public|private|protected|static|async|override|get|set|readonly)\s+)*(\*?\s*[\w$]+)\s*(?:<[^>]*>)?\s*\(/;
const functionKeyword = /\bfunction\b\s*\*?\s*[\w$]*\s*(?:<[^>]*>)?\s*\(/g;

/** Every function, method and block-bodied arrow of a source file, with its length in lines. */
export function functionSpans(source: string): FunctionSpan[] {
  const code = codeOnly(source);
  const lineStarts = [0];
  for (let i = 0; i < code.length; i++) if (code[i] === '\n') lineStarts.push(i + 1);
  const lineOf = (offset: number): number => {
    let lo = 0;
    let hi = lineStarts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (lineStarts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  const bodies = new Map<number, number>();
  const headerAt = (headerOffset: number, parenOffset: number): void => {
    const body = bodyAfterParams(code, parenOffset);
    if (body !== null && !bodies.has(body)) bodies.set(body, headerOffset);
  };
  for (let line = 0; line < lineStarts.length; line++) {
    const start = lineStarts[line]!;
    const end = line + 1 < lineStarts.length ? lineStarts[line + 1]! - 1 : code.length;
    const text = code.slice(start, end);
    const method = methodHeader.exec(text);
    if (method !== null && !notFunctionNames.has(method[1]!.replace('*', '').trim())) headerAt(start, start + method[0].length - 1);
  }
  for (const match of code.matchAll(functionKeyword)) headerAt(match.index, match.index + match[0].length - 1);
  for (const match of code.matchAll(/=>\s*\{/g)) {
    const body = match.index + match[0].length - 1;
    if (!bodies.has(body)) bodies.set(body, arrowHeader(code, match.index));
  }
  const spans: FunctionSpan[] = [];
  for (const [body, header] of bodies) {
    const close = matching(code, body, '{', '}');
    if (close === null) continue;
    const startLine = lineOf(header);
    const endLine = lineOf(close);
    spans.push({ startLine, endLine, lines: endLine - startLine + 1 });
  }
  return spans.sort((a, b) => a.startLine - b.startLine);
}

/** The offset of the closing bracket matching the one at `open`, or null. */
function matching(code: string, open: number, opener: string, closer: string): number | null {
  let depth = 0;
  for (let i = open; i < code.length; i++) {
    if (code[i] === opener) depth += 1;
    else if (code[i] === closer && --depth === 0) return i;
  }
  return null;
}

/** After a parameter list opened at `paren`: the offset of the body's `{`, skipping a return type; null when what
 *  follows is no body (a call, a signature in an interface, an expression-bodied arrow). */
function bodyAfterParams(code: string, paren: number): number | null {
  const close = matching(code, paren, '(', ')');
  if (close === null) return null;
  let i = skipSpace(code, close + 1);
  if (code[i] === '{') return i;
  if (code[i] !== ':') return null;
  // A return type: brackets of every kind nest; an object type `{...}` right after `:`, `|`, `&`, `<` or `,` is skipped.
  let depth = 0;
  let previous = ':';
  for (i += 1; i < code.length; i++) {
    const c = code[i]!;
    if (/\s/.test(c)) continue;
    if (c === '{' && depth === 0 && ':|&<,'.includes(previous)) {
      const end = matching(code, i, '{', '}');
      if (end === null) return null;
      i = end;
      previous = '}';
      continue;
    }
    if (c === '{' && depth === 0) return i;
    if (c === ';' || (c === '=' && code[i + 1] !== '>') || (c === '}' && depth === 0)) return null;
    if ('(<['.includes(c)) depth += 1;
    else if (c === ')' || c === ']' || (c === '>' && code[i - 1] !== '=')) depth -= 1;
    if (depth < 0) return null;
    previous = c;
  }
  return null;
}

/** Where an arrow's header starts: its parameter list's `(`, or the single parameter before `=>`. */
function arrowHeader(code: string, arrow: number): number {
  let i = arrow - 1;
  while (i > 0 && /\s/.test(code[i]!)) i -= 1;
  if (code[i] !== ')') return i;
  let depth = 0;
  for (; i >= 0; i--) {
    if (code[i] === ')') depth += 1;
    else if (code[i] === '(' && --depth === 0) return i;
  }
  return arrow;
}

function skipSpace(code: string, from: number): number {
  let i = from;
  while (i < code.length && /\s/.test(code[i]!)) i += 1;
  return i;
}

/** Functions of a file over functionLinesMax lines, as tidy problems. */
export function longFunctionProblems(file: string, source: string, linesMax = functionLinesMax): string[] {
  return functionSpans(source)
    .filter((span) => span.lines > linesMax)
    .map((span) => `${file}:${span.startLine}: function of ${span.lines} lines (at most ${linesMax}, header to closing brace)`);
}

/** STYLE §5: errors are made by the catalog only; everywhere else names a catalog entry. */
export function brokerErrorProblems(file: string, source: string): string[] {
  const problems: string[] = [];
  codeOnly(source).split('\n').forEach((line, i) => {
    if (/\bnew\s+BrokerError\s*\(/.test(line)) problems.push(`${file}:${i + 1}: new BrokerError( outside src/errors.ts (add a catalog entry)`);
  });
  return problems;
}

/** src/client ships as svc-broker/client without the server (issue 32): its files import only each other and node:
 *  built-ins, never src/ outside src/client nor a package; the CLI (src/client/cli.ts) may also import commander.
 *  `file` is relative to the repository root. */
export function clientImportProblems(file: string, source: string): string[] {
  const problems: string[] = [];
  const dir = file.split('/').slice(0, -1);
  source.split('\n').forEach((line, i) => {
    for (const [, specifier] of line.matchAll(/(?:from\s+|import\s*\(\s*)'([^']+)'/g)) {
      if (specifier!.startsWith('node:') || (file === 'src/client/cli.ts' && specifier === 'commander')) continue;
      const parts = [...dir];
      for (const part of specifier!.split('/')) {
        if (part === '..') parts.pop();
        else if (part !== '.') parts.push(part);
      }
      const inside = specifier!.startsWith('.') && parts.slice(0, 2).join('/') === 'src/client';
      if (!inside) problems.push(`${file}:${i + 1}: src/client imports ${specifier} (the client imports only src/client and node:*)`);
    }
  });
  return problems;
}
