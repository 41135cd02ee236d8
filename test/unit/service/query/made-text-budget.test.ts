/**
 * The budget of the text a query may make for a batch (src/service/query/made-text-budget.ts): when the
 * columns' lengths are looked up, when a query is refused, and the row share left to calls whose value
 * grows with a count read from the rows.
 */
import { describe, expect, it } from 'vitest';
import { madeText } from '../../../../src/apl/binder/made-text.js';
import { madeTextBudget } from '../../../../src/service/query/made-text-budget.js';
import { ACCESS, boundQuery } from '../../../support/apl-sql.js';

const MIB = 1024 * 1024;
const stages = (q: string) => boundQuery(q, { access: ACCESS }).stages;

/** The budget with the uri column's longest value at `uri` bytes; the lookups it made. */
async function budget(q: string, uri = 5000, limit = 128 * MIB) {
  const lookups: string[][] = [];
  const result = await madeTextBudget(stages(q), limit, async (dataset, columns) => {
    lookups.push([dataset, ...columns]);
    return new Map(columns.map((c) => [c, c === 'f2' ? uri : 10]));
  });
  return { result, lookups };
}

describe('the budget of the text a query may make', () => {
  it('looks the lengths up only when the estimate depends on them', async () => {
    expect((await budget("['access'] | extend u = tolower(uri)")).lookups).toEqual([]);
    expect((await budget("['access'] | where status == 200")).lookups).toEqual([]);
    const { result, lookups } = await budget("['access'] | extend u = strcat(uri, uri)");
    expect(lookups).toEqual([['access', 'f2']]);
    expect(result).toEqual({});
  });

  it('refuses what may pass the limit for a batch, and counts only the rows a take leaves', async () => {
    const sixteen = `['access'] | extend u = strcat(${Array(16).fill('uri').join(', ')})`;
    const refused = await budget(sixteen);
    expect(refused.result).toMatchObject({
      excess: {
        message: expect.stringMatching(
          /^the query may make up to 146\.5 MiB of text for a batch of rows \(DuckDB's 2048\), more than the 128 MiB of service\.query_limits\.max_made_text_bytes; strcat\(\) here may add up to 74 KiB to a row/,
        ),
        pos: "['access'] | extend u = ".length,
      },
    });
    // A thousand rows taken are half a batch of 2,048; over short texts, the same answers.
    expect((await budget(sixteen.replace("['access']", "['access'] | take 1000"))).result).toEqual({});
    expect((await budget(sixteen, 100)).result).toEqual({});
  });

  it('leaves calls counted from the rows the largest row share the limit allows', async () => {
    const q = "['access'] | extend r = range(1, status), u = strcat(uri, '-')";
    const { result } = await budget(q);
    const share = (result as { rowShare: number }).rowShare;
    // The share is the largest whose estimate stays within the limit.
    const total = (s: number) => madeText(stages(q), (_, c) => (c === 'f2' ? 5000 : 10), s).batch;
    expect(total(share)).toBeLessThanOrEqual(128 * MIB);
    expect(total(share + 1)).toBeGreaterThan(128 * MIB);
    expect(share).toBeGreaterThan(60_000);
    // Two such calls share it; fewer rows read leave each row more.
    const two = await budget("['access'] | extend r = range(1, status), s = strrep(uri, status)");
    expect((two.result as { rowShare: number }).rowShare).toBe(Math.floor((128 * MIB) / 2048 / 2));
    const few = await budget("['access'] | take 10 | extend r = range(1, status)");
    expect((few.result as { rowShare: number }).rowShare).toBe(Math.floor((128 * MIB) / 10));
  });
});
