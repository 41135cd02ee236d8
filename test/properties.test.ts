/**
 * Properties checked over generated inputs (fast-check): the line splitter against String.split whatever
 * the chunking, the segment log's recovery from a torn tail, and the APL parser on any text. A failure
 * prints the seed and the smallest input that breaks the property.
 */
import { readdirSync, statSync, truncateSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SegmentLog } from '../src/agent/queue/segment-log.js';
import { LineSplitter } from '../src/agent/sources/lines.js';
import { AplError } from '../src/apl/errors.js';
import { parseQuery } from '../src/apl/parser/parser.js';
import { tempDir } from './helpers.js';

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
        fc.array(fc.array(fc.uint8Array({ minLength: 1, maxLength: 300 }), { minLength: 1, maxLength: 5 }), {
          minLength: 1,
          maxLength: 8,
        }),
        fc.nat(),
        async (groups, cutAt) => {
          const dir = tempDir('ferry-prop-log-');
          let log = await SegmentLog.open(dir, { segmentBytes: 2048 });
          const written: Buffer[] = [];
          for (const g of groups) {
            const records = g.map((r) => Buffer.from(r));
            await log.append(records);
            written.push(...records);
          }
          await log.close();
          // A crash mid-write: the last segment loses a tail of any length.
          const last = readdirSync(dir)
            .filter((f) => f.endsWith('.log'))
            .sort()
            .at(-1)!;
          const size = statSync(join(dir, last)).size;
          const cut = cutAt % (size + 1);
          truncateSync(join(dir, last), cut);
          log = await SegmentLog.open(dir, { segmentBytes: 2048 });
          const read = (await log.read(10_000)).map((r) => Buffer.from(r.payload));
          expect(written.slice(0, read.length)).toEqual(read);
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
    const ident = fc.constantFrom('status', 'method', 'uri', 'request_time', '_time', "['a.b']");
    const value = fc.oneof(
      fc.integer({ min: -1000, max: 1000 }).map(String),
      fc.constantFrom("'x'", '"y"', 'true', '1.5', 'now()', 'ago(1h)', 'datetime(2024-01-01)'),
    );
    const cmp = fc.constantFrom('==', '!=', '>', '<=', 'contains', 'startswith', '=~', 'has');
    const where = fc.tuple(ident, cmp, value).map(([a, op, v]) => `where ${a} ${op} ${v}`);
    const summarize = fc
      .tuple(fc.constantFrom('count()', 'avg(request_time)', 'dcount(uri)', 'max(status)'), fc.option(ident))
      .map(([agg, by]) => `summarize ${agg}${by ? ` by ${by}` : ''}`);
    const other = fc.oneof(
      fc.tuple(ident, value).map(([a, v]) => `extend z = strcat(tostring(${a}), ${v})`),
      ident.map((a) => `project ${a}`),
      fc.integer({ min: 0, max: 100 }).map((n) => `take ${n}`),
      ident.map((a) => `sort by ${a} desc`),
      fc.constant('count'),
    );
    fc.assert(
      fc.property(fc.array(fc.oneof(where, summarize, other), { maxLength: 6 }), (ops) => {
        const text = ["['logs']", ...ops].join('\n| ');
        expect(parseQuery(text).body).toBeDefined();
      }),
      { numRuns: 500 },
    );
  });
});
