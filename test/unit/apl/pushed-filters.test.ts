/**
 * Filters DuckDB would write out many times over, kept where they stand (src/apl/compiler/pushed-filters.ts):
 * what a column weighs, and which filters the compiler keeps. What DuckDB then does with them is shown
 * against the real service in test/integration/service/query/budgets.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { definitionWeight, weightOf } from '../../../src/apl/compiler/pushed-filters.js';
import { ACCESS, compiledSql } from '../../support/apl-sql.js';

const sql = (q: string) => compiledSql(q, { logs: ACCESS });

const kept = (s: string) => s.split('AS "__keep"').length - 1;

describe('a column’s weight', () => {
  it('counts the computed expressions its references stand for; a column as read stands for none', () => {
    const w = new Map([['c6', 5]]);
    expect(weightOf(`concat(COALESCE("c6", ''), COALESCE("c6", ''))`, w)).toBe(10);
    expect(weightOf(`"a" + "b"`, w)).toBe(0);
    expect(definitionWeight(`"a" + "b"`, w)).toBe(1);
    expect(definitionWeight(`concat("c6", "c6")`, w)).toBe(11);
    // Another column as it is weighs what that column weighs.
    expect(definitionWeight(`"c6"`, w)).toBe(5);
    expect(definitionWeight(`"a"`, w)).toBe(0);
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
    expect(weightOf(`"c6" || "c6`, w)).toBe(10);
  });

  it('does not overflow over a long doubling', () => {
    let w: Map<string, number> = new Map();
    for (let i = 0; i < 200; i++) w = new Map([['s', definitionWeight(`concat("s", "s")`, w)]]);
    expect(w.get('s')).toBe(2 ** 30);
  });
});

describe('the filters the compiler keeps where they stand', () => {
  it('none that read columns as read, or a few computed ones: they still reach the scan', () => {
    for (const q of [
      "['logs'] | where status >= 500 and method != 'a' and uri has 'x' and status < 600 and isnotempty(method) | count",
      "['logs'] | extend m = tolower(uri) | where m contains 'error' | count",
      "['logs'] | extend a = status * 2, b = status + status | extend c = a + b | where c > 10 | project c",
      "['logs'] | summarize n = count() by s = strcat(uri, uri) | where s != ''",
      "['logs'] | extend s = strcat(uri, uri) | extend t = strcat(s, s) | where t != '' | count",
      "['logs'] | summarize h = histogram(status, 10), p = phrases(uri) by method",
    ]) {
      expect(kept(sql(q)), q).toBe(0);
    }
  });

  it('one that would compute columns made from one another again many times, however they were made', () => {
    for (const q of [
      `['logs'] | extend s = uri${' | extend s = strcat(s, s)'.repeat(24)} | where s != '' | count`,
      `['logs'] | extend s = uri${' | summarize c = count() by s = strcat(s, s)'.repeat(24)} | where s != ''`,
      `['logs'] | extend s = uri${' | extend s = strrep(s, 1)'.repeat(24)} | where s != '' | count`,
      `union (['logs'] | extend s = uri${' | extend s = strcat(s, s)'.repeat(3)}), (['logs'] | extend s = uri) | where s != ''`,
      // Few levels, but a condition that reads them many times.
      `['logs'] | extend s = strcat(uri, uri) | where strlen(strcat(s, s, s, s, s)) > 0 | count`,
    ]) {
      expect(kept(sql(q)), q).toBe(1);
    }
  });

  it('only the heavy parts of an AND: the light ones still reach the scan', () => {
    const q = sql(
      `['logs'] | extend s = uri${' | extend s = strcat(s, s)'.repeat(6)} | where status == 500 and s != '' and method == 'GET' | count`,
    );
    expect(kept(q)).toBe(1);
    const keptTests = q.slice(q.indexOf('WHERE CASE WHEN "__keep"'));
    expect(keptTests).not.toMatch(/500|'GET'/);
    expect(q).toMatch(/WHERE \(\("c\d+" = CAST\(500 AS BIGINT\)\)\) AND \(\("c\d+" = 'GET'\)\)/);
  });

  it('no column of a page is computed behind a barrier: DuckDB still computes them only for the rows a sort keeps', () => {
    const q = sql(
      `['logs'] | extend s = uri${' | extend s = strcat(s, s)'.repeat(12)} | where s != '' | top 5 by status`,
    );
    expect(q.split('random()').length - 1).toBe(1);
    expect(q).toMatch(/random\(\) AS "__keep" FROM .* WHERE CASE WHEN "__keep" >= 0 THEN \(.*\) END/);
  });
});
