// Goal: tidy's text rules (scripts/tidy_rules.ts) flag a function over 70 lines and a BrokerError made outside the
// catalog, and are not fooled by braces or phrases in comments, strings, templates and regexes. Method: small sample
// sources built here, with known lengths.
import t from 'tap';
import { brokerErrorProblems, codeOnly, functionLinesMax, functionSpans, longFunctionProblems } from '../../scripts/tidy_rules.js';

/** A function of exactly `lines` lines, header to closing brace, whose body holds tricky text. */
function functionOf(header: string, lines: number): string {
  const body = Array.from({ length: lines - 2 }, (_, i) => {
    switch (i % 5) {
      case 0: return "  const a = '}{';";
      case 1: return '  // } a closing brace in a comment';
      case 2: return '  const b = /[{}]\\}/.test(`${a}}`);';
      case 3: return '  const c = "{" + a.length / 2;';
      default: return '  if (a) { void b; }';
    }
  });
  return [header, ...body, '}'].join('\n');
}

t.test('a function of 70 lines passes, one of 71 fails, with its header line', async (t) => {
  t.same(longFunctionProblems('a.ts', functionOf('function fits(): void {', functionLinesMax)), []);
  const source = `// leading line\n${functionOf('export async function long(x: number): Promise<{ a: number }> {', 71)}\n`;
  t.same(longFunctionProblems('a.ts', source), ['a.ts:2: function of 71 lines (at most 70, header to closing brace)']);
});

t.test('methods, arrows and constructors are measured; signatures and calls are not functions', async (t) => {
  const source = [
    'interface I {',
    '  respond(reply: Reply): void;',
    '}',
    'class C {',
    '  constructor(',
    '    private readonly x: number,',
    '  ) {}',
    '  private get aborted(): boolean {',
    '    return this.x > 0;',
    '  }',
    '  readonly visit = (name: string, value: string): void => {',
    '    call(name);',
    '  };',
    '}',
    'call(a, b);',
    'if (a) {',
    '}',
    'items.forEach((item) => {',
    '  use(item);',
    '});',
  ].join('\n');
  t.same(functionSpans(source).map((s) => [s.startLine, s.endLine]), [[5, 7], [8, 10], [11, 13], [18, 20]]);
});

t.test('codeOnly blanks comments, strings, templates and regexes but keeps lines and offsets', async (t) => {
  const source = "const a = '{'; // }\nconst r = /}/g; const d = x / y / z;\nconst s = `a${b}c`;";
  const code = codeOnly(source);
  t.equal(code.length, source.length);
  t.equal(code.split('\n').length, 3);
  t.notOk(/[{}]/.test(code.split('\n')[0]!), 'braces in a string and a comment are gone');
  t.notOk(code.split('\n')[1]!.includes('}'), 'the brace in a regex is gone');
  t.match(code.split('\n')[1]!, /x \/ y \/ z/, 'division stays code');
});

t.test('new BrokerError( is flagged in code only', async (t) => {
  const source = "// new BrokerError( in a comment\nconst m = 'new BrokerError(';\nthrow new BrokerError(500, 'x');\n";
  t.same(brokerErrorProblems('f.ts', source), ['f.ts:3: new BrokerError( outside src/errors.ts (add a catalog entry)']);
});
