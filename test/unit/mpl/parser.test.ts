/**
 * MPL's lexer and parser: every example query of the reference (metrics.md §7) parses; the shapes of the
 * grammar come out as the syntax tree says; what MPL refuses at parse time is an error naming its line and
 * column.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MplError } from '../../../src/mpl/errors.js';
import { parseMpl } from '../../../src/mpl/parser.js';

const EXAMPLES = JSON.parse(
  readFileSync(new URL('../../fixtures/mpl/reference-examples.json', import.meta.url), 'utf8'),
) as string[];

describe('MPL parser', () => {
  it(`parses the reference's ${EXAMPLES.length} example queries`, () => {
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(50);
    for (const q of EXAMPLES) expect(() => parseMpl(q), q).not.toThrow();
  });

  it('reads a source with its time range and alias, sample, filters, transformations and extend', () => {
    const f = parseMpl(
      'set custom_unit = "ms";\nparam $ns: Option<string>;\n' +
        '`prod-metrics`:`queue.depth`[2h..-5m] as depth | sample 0.5 ' +
        '| where (region == "eu" or region == #/^us-/) and not `k8s.namespace.name` is null and code in [500, 503] ' +
        '| ifdef($ns) { where ns == $ns } ' +
        '| map * 100 | map fill::const(0) | align to 5m using prom::rate | group by region, `service.name` using sum ' +
        '| bucket by le to 1m using interpolate_cumulative_histogram(rate, 0.5, 0.99) | as d2 | offset -1d ' +
        '| extend tier = "gold", weight = -2.5',
    );
    expect(f.directives).toEqual([{ name: 'custom_unit', value: { kind: 'string', value: 'ms', pos: 18 }, pos: 0 }]);
    expect(f.params).toEqual([{ name: 'ns', type: 'string', optional: true, pos: 24 }]);
    const q = f.query;
    if (q.kind !== 'simple') throw new Error('a simple query');
    expect(q.source).toMatchObject({
      dataset: { name: 'prod-metrics' },
      metric: 'queue.depth',
      range: { start: { kind: 'ago', seconds: 7200 }, end: { kind: 'behind', seconds: 300 } },
      alias: 'depth',
    });
    expect(q.sample).toBe(0.5);
    expect(q.filters[0]!.filter).toMatchObject({
      kind: 'and',
      parts: [
        {
          kind: 'or',
          parts: [
            { kind: 'compare', tag: 'region', op: '==', value: { kind: 'string', value: 'eu' } },
            { kind: 'regex', tag: 'region', negated: false, pattern: '^us-' },
          ],
        },
        { kind: 'not', filter: { kind: 'is', tag: 'k8s.namespace.name', type: 'null' } },
        { kind: 'in', tag: 'code', values: { kind: 'array', items: [{ value: 500 }, { value: 503 }] } },
      ],
    });
    expect(q.filters[1]).toMatchObject({
      ifdef: { param: 'ns' },
      filter: { kind: 'compare', tag: 'ns', value: { kind: 'param', name: 'ns' } },
    });
    expect(q.transforms.map((t) => t.kind)).toEqual(['map', 'map', 'align', 'group', 'bucket', 'as', 'offset']);
    expect(q.transforms[0]).toMatchObject({ op: '*', operand: 100 });
    expect(q.transforms[1]).toMatchObject({ func: { name: 'fill::const', arg: 0 } });
    expect(q.transforms[2]).toMatchObject({ to: { seconds: 300 }, using: { name: 'prom::rate' } });
    expect(q.transforms[3]).toMatchObject({ by: ['region', 'service.name'], using: { name: 'sum' } });
    expect(q.transforms[4]).toMatchObject({
      by: ['le'],
      to: { seconds: 60 },
      using: { name: 'interpolate_cumulative_histogram' },
      args: [
        { kind: 'ident', name: 'rate' },
        { kind: 'float', value: 0.5 },
        { kind: 'float', value: 0.99 },
      ],
    });
    expect(q.transforms[6]).toMatchObject({ kind: 'offset', seconds: -86_400 });
    expect(q.extend).toMatchObject([
      { name: 'tier', value: { kind: 'string', value: 'gold' } },
      { name: 'weight', value: { kind: 'float', value: -2.5 } },
    ]);
  });

  it('reads a compute of two queries, and time ranges as RFC 3339, Unix seconds and ahead of now', () => {
    const f = parseMpl(
      '( `m`:errors[2026-03-01T12:00:00Z..+1h] | align to 1m using sum, `m`:requests[-1h..1767225600] | align to 1m using sum, )' +
        ' | compute ratio using / | map * 100',
    );
    const q = f.query;
    if (q.kind !== 'compute') throw new Error('a compute');
    expect(q).toMatchObject({
      name: 'ratio',
      using: { op: '/' },
      transforms: [{ kind: 'map', op: '*', operand: 100 }],
    });
    expect(q.left).toMatchObject({
      source: {
        metric: 'errors',
        range: { start: { kind: 'rfc3339', text: '2026-03-01T12:00:00Z' }, end: { kind: 'ahead', seconds: 3600 } },
      },
    });
    expect(q.right).toMatchObject({
      source: {
        metric: 'requests',
        range: { start: { kind: 'behind', seconds: 3600 }, end: { kind: 'unix', seconds: 1767225600 } },
      },
    });
  });

  it('names the line and column of what it refuses', () => {
    const refused: [string, string][] = [
      [
        '`m`:`q` | where region =~ "eu"',
        'line 1, column 24: "=" is not a comparison: write == (== #/…/ matches a regex)',
      ],
      ['`m`:`q` | where depth < #/1.*/', 'line 1, column 25: a regex is compared with == or != only'],
      [
        '`m`:`q` | align to 5m using avg | where region == "eu"',
        'line 1, column 33: filters (`where`) must come before transformations (map, align, group, bucket)',
      ],
      ["`m`:`q` | where region == 'eu'", 'line 1, column 27: strings are written in double quotes ("…")'],
      ['`m`:`q` | where region == "eu" && q == "a"', 'line 1, column 32: unexpected character "&"'],
      [
        '`m`:`q`\n| align to 1m over 5m using avg',
        'line 2, column 15: sliding windows (align … over) are not implemented',
      ],
      ['`m`:`q` | replace region = zone', 'line 1, column 11: replace is not supported'],
      ['`m`:`q` | align to 500ms using avg', 'line 1, column 20: sub-second intervals are not supported'],
      ['prod-metrics:queue.depth', 'line 1, column 5: expected ":" and the metric (`dataset`:`metric`), found "-"'],
      [
        '`m`:`q`[1h..',
        'line 1, column 13: expected a time (a duration such as 1h, a Unix time or RFC 3339), found the end of the query',
      ],
      ['`m`:`q` | where s == "open', 'line 1, column 22: a string is not closed with "'],
      ['`m`:`q` | where s == "\\u0041"', 'line 1, column 23: unicode escape sequences are not supported'],
      [
        '`m`:`q` | align to 5x using avg',
        'line 1, column 20: "5x" is not a number or a duration (units: ms, s, m, h, d, w, M, y)',
      ],
      [
        'param $x: widget;\n`m`:`q`',
        'line 1, column 11: unknown parameter type "widget" (one of Dataset, Duration, duration, Regex, string, int, float, bool, array, null)',
      ],
      [
        '(`m`:a, `m`:b)[1h..] | compute c using +',
        'line 1, column 15: a time range after a compute is not supported: give each query its own',
      ],
      ['`m`:`q` | where v == 99999999999999999999', 'line 1, column 22: the integer 99999999999999999999 is too large'],
      ['', 'line 1, column 1: expected a dataset (`dataset`:`metric`), found the end of the query'],
    ];
    for (const [q, message] of refused) {
      let caught: unknown;
      try {
        parseMpl(q);
      } catch (e) {
        caught = e;
      }
      expect(caught, q).toBeInstanceOf(MplError);
      expect((caught as Error).message, q).toBe(message);
    }
  });

  it('keeps comments, escapes in backticks and strings, and keywords in backticks as names', () => {
    const f = parseMpl('// host memory\n`my \\`ds\\``:`where` // the metric\n| where `by` == "a\\"b\\n" // done');
    const q = f.query;
    if (q.kind !== 'simple') throw new Error('a simple query');
    expect(q.source).toMatchObject({ dataset: { name: 'my `ds`' }, metric: 'where' });
    expect(q.filters[0]!.filter).toMatchObject({ tag: 'by', value: { value: 'a"b\n' } });
  });
});
