/**
 * Barriers against filters DuckDB writes out exponentially (src/apl/compiler/pushdown-barriers.ts): what a
 * column weighs, and where the compiler puts a barrier. What DuckDB then does with them is shown against
 * the real service in test/integration/service/query/budgets.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { bind } from '../../../src/apl/binder/binder.js';
import { compile } from '../../../src/apl/compiler/compiler.js';
import { MAX_PUSHED_REFERENCES, weightOf } from '../../../src/apl/compiler/pushdown-barriers.js';
import { parseQuery } from '../../../src/apl/parser/parser.js';
import type { DatasetSchema } from '../../../src/apl/types.js';

const LOGS: DatasetSchema = {
  table: 't_logs',
  fields: [
    { name: 'msg', column: 'f1', type: 'string' },
    { name: 'status', column: 'f2', type: 'long' },
  ],
};

function sql(q: string): string {
  const bound = bind(parseQuery(q), q, {
    schema: (d) => (d === 'logs' ? LOGS : undefined),
    nowNs: 0n,
    binAutoNs: 60_000_000_000n,
    rangeNs: 3_600_000_000_000n,
    datasets: () => ['logs'],
  });
  return compile(bound.stages).sql;
}

const barriers = (s: string) => s.split('random()').length - 1;

describe('a column’s weight', () => {
  it('counts each quoted identifier by the weight of the column it names, one for any other', () => {
    const w = new Map([['c6', 5]]);
    expect(weightOf(`concat(COALESCE("c6", ''), COALESCE("c6", ''))`, w)).toBe(10);
    expect(weightOf(`"a" + "b"`, w)).toBe(2);
    expect(weightOf(`42`, w)).toBe(1);
  });

  it('skips text in single quotes, whatever quotes it holds, and reads doubled quotes in a name', () => {
    const w = new Map([
      ['c6', 5],
      ['a"b', 7],
    ]);
    expect(weightOf(`'say "c6" twice ''"c6"''' || "c6"`, w)).toBe(5);
    expect(weightOf(`json_extract("c6", '$."c6"')`, w)).toBe(5);
    expect(weightOf(`"a""b" || "c6"`, w)).toBe(12);
    // Unterminated text or names end the count rather than the compile.
    expect(weightOf(`"c6" || 'open`, w)).toBe(5);
    expect(weightOf(`"c6" || "open`, w)).toBe(6);
  });
});

describe('the barriers the compiler writes', () => {
  it('none in queries whose filters DuckDB writes out a few times at most: they still reach the scan', () => {
    for (const q of [
      "['logs'] | where status >= 500 | count",
      "['logs'] | extend m = tolower(msg) | where m contains 'error' | count",
      "['logs'] | extend a = status * 2, b = status + status | extend c = a + b | where c > 10 | project c",
      "['logs'] | summarize n = count() by s = strcat(msg, msg) | where s != ''",
      "['logs'] | extend s = strcat(msg, msg) | extend s = strcat(s, s) | extend s = strcat(s, s) | where s != '' | count",
    ]) {
      expect(barriers(sql(q)), q).toBe(0);
    }
  });

  it('one every few lines of columns each made from the one before twice, so no column weighs more than the limit', () => {
    for (const step of [
      ' | extend s = strcat(s, s)',
      ' | summarize c = count() by s = strcat(s, s)',
      ' | extend s = strrep(s, 1)',
    ]) {
      const lines = (n: number) => `['logs'] | extend s = msg${step.repeat(n)} | where s != '' | count`;
      // Each line doubles the weight at least: a barrier at least every log2(limit) + 1 lines.
      const perBarrier = Math.log2(MAX_PUSHED_REFERENCES) + 1;
      expect(barriers(sql(lines(24))), step).toBeGreaterThanOrEqual(Math.floor(24 / perBarrier));
      expect(barriers(sql(lines(2))), step).toBe(0);
    }
  });

  it('behind the barrier, the filter reads the column as the extend made it', () => {
    const q = sql(`['logs'] | extend s = msg${' | extend s = strcat(s, s)'.repeat(8)} | where s != '' | count`);
    expect(q).toMatch(/CASE WHEN random\(\) >= 0 THEN concat\(.*\) END AS "c\d+"/);
  });
});
