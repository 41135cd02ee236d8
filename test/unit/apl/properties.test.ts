/**
 * Properties checked over generated inputs (fast-check): the line splitter against String.split whatever
 * the chunking, the segment log's recovery from a torn tail, the APL parser on any text, and the APL lexer
 * and parser round trip (a query's tokens, laid out anew, lex and parse to the same thing). A failure
 * prints the seed and the smallest input that breaks the property.
 */
import { readdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SegmentLog } from '../../../src/agent/queue/segment-log.js';
import { LineSplitter } from '../../../src/agent/sources/lines.js';
import { wildcardMatch } from '../../../src/apl/binder/relation.js';
import { AplError } from '../../../src/apl/errors.js';
import { tokenize } from '../../../src/apl/lexer/lexer.js';
import { parseQuery } from '../../../src/apl/parser/parser.js';
import { tempDir } from '../../support/helpers.js';

/** Every line of `bytes` fed in chunks cut at `cuts` (byte offsets, possibly inside a UTF-8 character). */
function split(bytes: Buffer, cuts: number[], maxLineBytes: number): { text: string; truncated: boolean }[] {
  const s = new LineSplitter(maxLineBytes);
  const out: { text: string; truncated: boolean }[] = [];
  const bounds = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  let from = 0;
  for (const to of [...bounds, bytes.length]) {
    s.feed(bytes.subarray(from, to));
    for (let l = s.next(); l; l = s.next()) out.push({ text: l.text, truncated: l.truncated });
    from = to;
  }
  const last = s.finish();
  if (last) out.push({ text: last.text, truncated: last.truncated });
  return out;
}

const lineText = fc.string({
  unit: fc.oneof(fc.constantFrom('a', 'é', '€', '𝄞', ' ', '{', '"'), fc.constant('\n')),
  maxLength: 200,
});

describe('properties', () => {
  it('the line splitter yields the lines String.split does, however the bytes are chunked', () => {
    fc.assert(
      fc.property(lineText, fc.array(fc.nat(), { maxLength: 20 }), (text, cuts) => {
        const want = text.split('\n');
        if (want.at(-1) === '') want.pop(); // a final newline ends the last line; it starts none
        expect(split(Buffer.from(text), cuts, 1 << 20)).toEqual(want.map((t) => ({ text: t, truncated: false })));
      }),
    );
  });

  it('a wildcard pattern matches the names the equivalent anchored regular expression does', () => {
    const text = (chars: string[]) => fc.array(fc.constantFrom(...chars), { maxLength: 12 }).map((a) => a.join(''));
    fc.assert(
      fc.property(text(['a', 'b', '*', '.']), text(['a', 'b', '.']), (pattern, name) => {
        const re = new RegExp(
          `^${pattern
            .split('*')
            .map((p) => p.replace(/\./g, '\\.'))
            .join('.*')}$`,
        );
        expect(wildcardMatch(pattern, name)).toBe(re.test(name));
      }),
      { numRuns: 2000 },
    );
    // Many stars against a long name that almost matches: linear work, where a backtracking regex is not.
    expect(wildcardMatch(`${'*a'.repeat(40)}*b`, 'a'.repeat(5000))).toBe(false);
  });

  it('a line longer than the bound is cut to it and marked, and the lines after it are whole', () => {
    const ascii = fc.string({ unit: fc.constantFrom('a', 'b', ' ', '\n'), maxLength: 300 });
    fc.assert(
      fc.property(ascii, fc.array(fc.nat(), { maxLength: 20 }), fc.integer({ min: 1, max: 40 }), (text, cuts, max) => {
        const want = text.split('\n');
        if (want.at(-1) === '') want.pop();
        expect(split(Buffer.from(text), cuts, max)).toEqual(
          want.map((t) => ({ text: t.slice(0, max), truncated: t.length > max })),
        );
      }),
    );
  });

  it('the segment log recovers the records before a torn tail, and appends after them', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(
            fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 5 }),
            fc.integer({ min: 0, max: 15 }),
          ),
          { minLength: 1, maxLength: 8 },
        ),
        fc.nat(),
        async (groups, cutAt) => {
          const dir = tempDir('ferry-prop-log-');
          let log = await SegmentLog.open(dir, { segmentBytes: 2048 });
          const written: Buffer[] = [];
          const tags: number[] = [];
          for (const [g, tag] of groups) {
            const records = g.map((r) => Buffer.from(r));
            await log.append(records, tag);
            written.push(...records);
            tags.push(...records.map(() => tag));
          }
          await log.close();
          // A crash mid-write: the last segment loses a tail of any length.
          const last = readdirSync(dir)
            .filter((f) => f.endsWith('.seg'))
            .sort()
            .at(-1)!;
          const size = statSync(join(dir, last)).size;
          const cut = cutAt % (size + 1);
          truncateSync(join(dir, last), cut);
          log = await SegmentLog.open(dir, { segmentBytes: 2048 });
          const records = await log.read(10_000);
          const read = records.map((r) => Buffer.from(r.payload));
          expect(written.slice(0, read.length)).toEqual(read);
          expect(records.map((r) => r.tag)).toEqual(tags.slice(0, read.length));
          if (cut === size) expect(read.length).toBe(written.length);
          await log.append([Buffer.from('after')]);
          const again = (await log.read(10_000)).map((r) => r.payload.toString('latin1'));
          expect(again.at(-1)).toBe('after');
          expect(again.length).toBe(read.length + 1);
          await log.close();
        },
      ),
      { numRuns: 40 },
    );
  });

  it('the APL parser answers any text with a query or an AplError naming a line and column inside it', () => {
    const token = fc.constantFrom(
      '|',
      '[',
      ']',
      '(',
      ')',
      "'",
      '"',
      ',',
      '=',
      '==',
      'where',
      'summarize',
      'by',
      'let',
      ';',
      'x',
      '1',
      '1.5',
      'not',
      'in',
      '*',
      '.',
      '\\',
      '\n',
      ' ',
      'bin(_time, 1h)',
      "['d']",
      'count()',
      'and',
      'or',
      '//',
      'project',
      'extend',
      'take',
      '-',
      '{',
      '}',
      '@',
      '#',
      '\u0000',
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 30 }), fc.boolean(), (tokens, spaced) => {
        const text = tokens.join(spaced ? ' ' : '');
        try {
          parseQuery(text);
        } catch (e) {
          expect(e).toBeInstanceOf(AplError);
          const err = e as AplError;
          expect(err.line).toBeGreaterThanOrEqual(1);
          expect(err.line).toBeLessThanOrEqual(text.split('\n').length);
          expect(err.column).toBeGreaterThanOrEqual(1);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('the APL parser takes every pipeline its grammar allows', () => {
    fc.assert(
      fc.property(pipeline, (text) => {
        expect(parseQuery(text).body).toBeDefined();
      }),
      { numRuns: 500 },
    );
  });

  it('the APL lexer round-trips: tokens cover the text, and their texts lexed again give the same tokens', () => {
    fc.assert(
      fc.property(pipeline, fc.constantFrom(' ', '\n  ', ' // note\n'), (text, gap) => {
        const tokens = tokenize(text).filter((t) => t.kind !== 'eof');
        let at = 0;
        for (const t of tokens) {
          // Between tokens only white space and comments.
          expect(
            text
              .slice(at, t.pos)
              .replace(/\/\/[^\n]*/g, '')
              .trim(),
          ).toBe('');
          expect(text.slice(t.pos, t.end)).toBe(t.text);
          at = t.end;
        }
        const again = tokenize(tokens.map((t) => t.text).join(gap)).filter((t) => t.kind !== 'eof');
        expect(again.map(kindAndValue)).toEqual(tokens.map(kindAndValue));
      }),
      { numRuns: 500 },
    );
  });

  it('the APL parser round-trips: the same query laid out anew parses to the same tree', () => {
    fc.assert(
      fc.property(pipeline, (text) => {
        const tokens = tokenize(text).filter((t) => t.kind !== 'eof');
        const relaid = tokens.map((t) => t.text).join(' // a comment\n  ');
        expect(withoutPositions(parseQuery(relaid))).toEqual(withoutPositions(parseQuery(text)));
      }),
      { numRuns: 300 },
    );
  });
});

const ident = fc.constantFrom('status', 'method', 'uri', 'request_time', '_time', "['a.b']", "['geo.city']");
const value = fc.oneof(
  fc.integer({ min: -1000, max: 1000 }).map(String),
  fc.constantFrom(
    "'x'",
    '"y"',
    "'it\\'s'",
    'true',
    '1.5',
    '2.5e3',
    'now()',
    'ago(1h)',
    '30s',
    'datetime(2024-01-01)',
    'dynamic([1, "a"])',
  ),
);
const cmp = fc.constantFrom('==', '!=', '>', '<=', 'contains', 'startswith', '=~', 'has', '!has', 'matches regex');
const where = fc.oneof(
  fc.tuple(ident, cmp, value).map(([a, op, v]) => `where ${a} ${op} ${v}`),
  fc.tuple(ident, value, value).map(([a, v, w]) => `where ${a} in (${v}, ${w})`),
  fc.tuple(ident, cmp, value, ident).map(([a, op, v, b]) => `where ${a} ${op} ${v} and not(isnull(${b}))`),
);
const summarize = fc
  .tuple(
    fc.constantFrom('count()', 'avg(request_time)', 'dcount(uri)', 'max(status)', 'percentile(request_time, 95)'),
    fc.option(fc.oneof(ident, fc.constant('bin(_time, 1h)'))),
  )
  .map(([agg, by]) => `summarize ${agg}${by ? ` by ${by}` : ''}`);
const other = fc.oneof(
  fc.tuple(ident, value).map(([a, v]) => `extend z = strcat(tostring(${a}), ${v})`),
  fc.tuple(ident, value).map(([a, v]) => `extend w = iff(${a} > ${v}, 1, -2 * 3)`),
  ident.map((a) => `project ${a}`),
  ident.map((a) => `project-away ${a}`),
  fc.integer({ min: 0, max: 100 }).map((n) => `take ${n}`),
  ident.map((a) => `sort by ${a} desc`),
  ident.map((a) => `top 5 by ${a} asc`),
  fc.constant('count'),
);
/** A query the grammar allows: a dataset and up to six operators. */
const pipeline = fc
  .array(fc.oneof(where, summarize, other), { maxLength: 6 })
  .map((ops) => ["['logs']", ...ops].join('\n| '));

function kindAndValue(t: { kind: string; value?: unknown }): [string, unknown] {
  return [t.kind, t.value];
}

/** A syntax tree with its source positions taken out, to compare two layouts of one query. */
function withoutPositions(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutPositions);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v)
      .filter(([k]) => k !== 'pos' && k !== 'end')
      .map(([k, x]) => [k, withoutPositions(x)]),
  );
}
