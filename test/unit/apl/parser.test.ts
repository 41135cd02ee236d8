import { describe, expect, it } from 'vitest';
import { AplError } from '../../../src/apl/errors.js';
import { tokenize } from '../../../src/apl/lexer/lexer.js';
import { parseExpression, parseQuery } from '../../../src/apl/parser/parser.js';

function errorOf(q: string): AplError {
  try {
    parseQuery(q);
  } catch (e) {
    if (e instanceof AplError) return e;
    throw e;
  }
  throw new Error(`expected a syntax error for: ${q}`);
}

describe('APL lexer', () => {
  it('reads timespans exactly, hyphenated operators, negated operators and verbatim strings', () => {
    const toks = tokenize("x | project-away a | where b !contains @'C:\\dir' and t > 1.5h and u in~ ('a')");
    const texts = toks.map((t) => t.text);
    expect(texts).toContain('project-away');
    expect(texts).toContain('!contains');
    expect(texts).toContain('in~');
    expect(toks.find((t) => t.kind === 'string')!.value).toBe('C:\\dir');
    expect(toks.find((t) => t.kind === 'timespan')!.value).toBe(5_400_000_000_000n);
  });

  it('unescapes strings and concatenates adjacent literals', () => {
    const e = parseExpression(`"a\\"b\\n" 'c'`);
    expect(e).toMatchObject({ kind: 'literal', type: 'string', value: 'a"b\nc' });
  });

  it('reports an unknown timespan unit with its position', () => {
    const e = errorOf('T | where t > 5parsecs');
    expect(e.line).toBe(1);
    expect(e.column).toBe(15);
    expect(e.message).toContain('unknown timespan unit "parsecs"');
  });
});

describe('APL parser', () => {
  it('parses a realistic pipeline with lets, comments and every Tier 1 operator', () => {
    const q = parseQuery(`// errors by city
let threshold = 500;
let methods = dynamic(['GET', 'POST']);
['sample-http-logs']
| where _time between (ago(1h) .. now()) and toint(status) >= threshold and method in (methods)
| extend slow = req_duration_ms > 100
| summarize n = count(), avg(req_duration_ms), percentile(req_duration_ms, 99.9) by bin(_time, 5m), ['geo.city']
| top 10 by n desc
| project-reorder n
| sort by n asc nulls first
| take 5`);
    expect(q.statements).toHaveLength(2);
    expect(q.body.source).toMatchObject({ kind: 'table', name: 'sample-http-logs' });
    expect(q.body.ops.map((o) => o.op)).toEqual([
      'where',
      'extend',
      'summarize',
      'top',
      'project-reorder',
      'sort',
      'take',
    ]);
    const sort = q.body.ops[5] as { keys: { desc: boolean; nulls?: string }[] };
    expect(sort.keys[0]).toMatchObject({ desc: false, nulls: 'first' });
  });

  it('gives and/or/comparison/arithmetic the KQL precedence', () => {
    const e = parseExpression('a + b * c > 1 or d == 2 and e');
    expect(e).toMatchObject({
      kind: 'binary',
      op: 'or',
      right: { op: 'and' },
      left: { op: '>', left: { op: '+', right: { op: '*' } } },
    });
  });

  it('parses datetime, timespan, typed null and dynamic literals', () => {
    expect(parseExpression('datetime(2024-01-15 14:00:00.5)')).toMatchObject({
      type: 'datetime',
      value: 1705327200500000000n,
    });
    expect(parseExpression("datetime('2022-09-16')")).toMatchObject({ type: 'datetime', value: 1663286400000000000n });
    expect(parseExpression('timespan(15s)')).toMatchObject({ type: 'timespan', value: 15_000_000_000n });
    expect(parseExpression('long(null)')).toMatchObject({ type: 'long', value: null });
    expect(parseExpression("dynamic({'a': [1, 'x', true], b: null})")).toMatchObject({
      type: 'dynamic',
      value: { a: [1, 'x', true], b: null },
    });
  });

  it('is case-sensitive: WHERE is not an operator', () => {
    const e = errorOf("['logs']\n| WHERE x == 1");
    expect([e.line, e.column]).toEqual([2, 3]);
    expect(e.message).toBe('line 2, column 3: unknown tabular operator "WHERE"');
  });

  it('names line and column of syntax errors', () => {
    expect(errorOf('T | where (a == 1').message).toMatch(/^line 1, column 18: expected "\)"/);
    expect(errorOf('T\n| summarize\n| take 1').message).toMatch(/^line 3, column 1: /);
    expect(errorOf("T | where a == 'open").message).toBe('line 1, column 16: unterminated string literal');
    expect(errorOf('T | take 1 x').message).toMatch(/^line 1, column 12: unexpected "x"/);
  });

  it('answers unsupported operators by name and position', () => {
    // The parser accepts them so that the binder reports them by name, not as a syntax error.
    const q = parseQuery('T | evaluate bag_unpack(k) | take 1');
    expect(q.body.ops[0]).toMatchObject({ op: 'unsupported', name: 'evaluate', pos: 4 });
    expect(q.body.ops[1]).toMatchObject({ op: 'take' });
  });

  it('parses redact, parse-kv, extend-valid, project wildcards, search * and named arguments', () => {
    expect(
      parseQuery("T | redact replaceToken='#' redactGroups=true card=@'(\\d+)', @'x' on a, ['b.']*").body.ops[0],
    ).toMatchObject({
      op: 'redact',
      replaceToken: '#',
      replaceHash: false,
      redactGroups: true,
      patterns: [{ name: 'card', regex: '(\\d+)' }, { regex: 'x' }],
      fields: [
        { pattern: 'a', wildcard: false },
        { pattern: 'b.*', wildcard: true },
      ],
    });
    expect(
      parseQuery("T | parse-kv s as (a, b:long) with (pair_delimiter=';', kv_delimiter=':')").body.ops[0],
    ).toMatchObject({
      op: 'parse-kv',
      keys: [{ name: 'a' }, { name: 'b', type: 'long' }],
      pairDelimiter: ';',
      kvDelimiter: ':',
    });
    expect(parseQuery('T | extend-valid x = y').body.ops[0]).toMatchObject({ op: 'extend', valid: true });
    expect(parseQuery("T | project a, ['geo.']*, b * 2").body.ops[0]).toMatchObject({
      op: 'project',
      items: [
        { expr: { kind: 'name', name: 'a' } },
        { pattern: { pattern: 'geo.*', wildcard: true } },
        { expr: { kind: 'binary', op: '*' } },
      ],
    });
    expect(parseQuery('search *').body.source).toMatchObject({
      kind: 'search',
      predicate: { kind: 'literal', value: true },
    });
    expect(parseQuery('T | summarize arg_max(d, longest = s)').body.ops[0]).toMatchObject({
      aggs: [
        {
          expr: {
            kind: 'call',
            args: [{ kind: 'name' }, { kind: 'named', name: 'longest', value: { kind: 'name', name: 's' } }],
          },
        },
      ],
    });
    expect(
      parseQuery("externaldata (a:string) ['https://example.com/x.csv'] with (format='csv')").body.source,
    ).toMatchObject({
      kind: 'unsupported',
      name: 'externaldata',
    });
    expect(() => parseQuery("T | parse-kv s as (a) with (sep=';')")).toThrow(
      /parse-kv takes pair_delimiter, kv_delimiter and quote/,
    );
  });

  it('parses join conditions, union sources, mv-expand and parse patterns', () => {
    const j = parseQuery('T | join kind=leftouter (U | where x > 1) on id, $left.a == $right.b, $right.c == $left.d');
    expect(j.body.ops[0]).toMatchObject({
      op: 'join',
      kind: 'leftouter',
      on: [
        { left: 'id', right: 'id' },
        { left: 'a', right: 'b' },
        { left: 'd', right: 'c' },
      ],
    });
    const u = parseQuery("union withsource=src logs*, ['other'], (T | take 1)");
    expect(u.body.source).toMatchObject({
      kind: 'union',
      withSource: 'src',
      tables: [{ kind: 'pattern', pattern: 'logs*' }, { kind: 'pattern', pattern: 'other' }, { kind: 'tabular' }],
    });
    const m = parseQuery('T | mv-expand kind=array with_itemindex=i a to typeof(long), b limit 5');
    expect(m.body.ops[0]).toMatchObject({
      op: 'mv-expand',
      bagKind: 'array',
      itemIndex: 'i',
      limit: 5,
      items: [{ toType: 'long' }, {}],
    });
    const p = parseQuery("T | parse kind=relaxed msg with * 'took ' ms:real ' ms' rest");
    expect(p.body.ops[0]).toMatchObject({
      op: 'parse',
      kind: 'relaxed',
      parts: [
        { kind: 'star' },
        { kind: 'const', text: 'took ' },
        { kind: 'name', name: 'ms', type: 'real' },
        { kind: 'const', text: ' ms' },
        { kind: 'name', name: 'rest' },
      ],
    });
  });
});

describe('hostile input', () => {
  it('bounds nesting, so no query can exhaust the stack', () => {
    const deep = [
      `print x = ${Array(5000).fill('1').join('+')}`,
      `print x = ${'('.repeat(3000)}1${')'.repeat(3000)}`,
      `print x = ${'-'.repeat(3000)}1`,
      `print x = dynamic(${'['.repeat(3000)}1${']'.repeat(3000)})`,
      `T | join ${'(T | join '.repeat(400)}(T) on a${') on a'.repeat(400)}`,
    ];
    for (const q of deep) expect(() => parseQuery(q)).toThrow(/nested too deeply \(more than 256 levels\)/);
    expect(() => parseQuery(`print x = ${Array(200).fill('1').join('+')}`)).not.toThrow();
  });

  it('every random query either parses or fails with an AplError, and terminates', () => {
    let seed = 12345;
    const r = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const pieces = [
      "['a.b']",
      'x',
      '|',
      'where',
      'summarize',
      'by',
      'count()',
      '(',
      ')',
      '[',
      ']',
      '{',
      '}',
      ',',
      ';',
      '==',
      '=',
      '!',
      '$left',
      '$',
      '.',
      '..',
      "'s",
      '"',
      '@',
      '5m',
      '1.5e',
      '0x',
      'datetime(',
      'dynamic(',
      'let',
      'join',
      'on',
      'mv-expand',
      'parse',
      'with',
      '*',
      '\n',
      '//c',
      'in~',
      '!contains',
      ':',
    ];
    for (let n = 0; n < 3000; n++) {
      const len = 1 + Math.floor(r() * 12);
      let q = '';
      for (let i = 0; i < len; i++) q += `${pieces[Math.floor(r() * pieces.length)]}${r() < 0.5 ? ' ' : ''}`;
      try {
        parseQuery(q);
      } catch (e) {
        if (!(e instanceof AplError)) throw new Error(`query ${JSON.stringify(q)} threw ${String(e)}`);
      }
    }
  });
});
