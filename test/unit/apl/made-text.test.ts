/**
 * The estimate of the text a query's calls may make (src/apl/binder/made-text.ts): what each call may add
 * beyond its longest argument, how column sizes flow through the stages, and which columns it asks the
 * length of. The budget it sets is shown against the real service in
 * test/integration/service/query/budgets.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { BATCH_ROWS, FREE_COPIES, madeText } from '../../../src/apl/binder/made-text.js';
import { ACCESS, boundQuery, TRACES } from '../../support/apl-sql.js';

const URI = 1000;
const METHOD = 10;
const ATTRIBUTES = 2000;
const lengths: Record<string, number> = {
  't_access.f2': URI,
  't_access.f1': METHOD,
  't_access.f7': ATTRIBUTES,
  't_traces.f3': 300,
};

/** The estimate of a query over access and traces, with the column lengths above; the columns it asked for. */
function estimate(apl: string, rowShare = 0) {
  const asked: string[] = [];
  const bound = boundQuery(apl, { access: ACCESS, traces: TRACES });
  const tables: Record<string, string> = { access: 't_access', traces: 't_traces' };
  const made = madeText(
    bound.stages,
    (dataset, column) => {
      const key = `${tables[dataset]}.${column}`;
      asked.push(key);
      return lengths[key] ?? 0;
    },
    rowShare,
  );
  return { ...made, perRow: made.batch / BATCH_ROWS, asked };
}

describe('the text a query may make', () => {
  it('a call adds what its arguments hold beyond the longest of them', () => {
    // strcat: both copies of uri and the call's own 16 bytes, less the longest argument it copies.
    expect(estimate("['access'] | extend u = strcat(uri, uri)").perRow).toBe(URI + 16);
    expect(estimate("['access'] | extend u = strcat(uri, ' ', method)").perRow).toBe(1 + METHOD + 16);
    // Taking from, converting or changing the case of a text adds next to nothing, however long it is.
    for (const q of [
      "['access'] | extend u = tolower(uri)",
      "['access'] | extend u = extract('id=([0-9]+)', 1, uri)",
      "['access'] | extend u = substring(uri, 5)",
      "['access'] | where toupper(uri) == 'X'",
    ])
      expect(estimate(q).perRow, q).toBeLessThanOrEqual(16);
  });

  it('functions that make more than they read say how much', () => {
    expect(estimate("['access'] | extend u = strrep(uri, 3)").perRow).toBe(2 * URI);
    // A count read from the rows: the call makes what its SQL lets a row make, the query's row share.
    const counted = estimate("['access'] | extend u = strrep(uri, status), r = range(1, status)", 5000);
    expect(counted.perRow).toBe(2 * 5000);
    expect(counted.shared.map((c) => c.fn)).toEqual(['strrep', 'range']);
    expect(estimate("['access'] | extend u = strrep(uri, 3)").shared).toEqual([]);
    // Every byte of uri may be a match of '.', each becoming uri.
    expect(estimate("['access'] | extend u = replace_regex('.', uri, uri)").perRow).toBeGreaterThan(URI * URI);
    // A constant lookup of three bytes matches a third of the bytes at most, each becoming 7 bytes longer;
    // a rewrite no longer than what it replaces adds nothing.
    expect(estimate("['access'] | extend u = replace_string('abc', method, uri)").perRow).toBe(
      Math.floor(URI / 3) * (METHOD - 3),
    );
    expect(estimate("['access'] | extend u = replace_string('\\n', ' ', uri)").perRow).toBe(0);
    expect(estimate("['access'] | extend u = replace_regex(@'\\s+', ' ', uri)").perRow).toBe(0);
    expect(estimate("['access'] | extend u = url_encode(uri)").perRow).toBe(2 * URI);
    expect(estimate("['access'] | extend u = substring(strcat(uri, uri), 0, 4)").perRow).toBe(URI + 16);
  });

  it('sizes flow through extend, summarize, union, join and mv-expand', () => {
    const twice = estimate("['access'] | extend a = strcat(uri, uri) | extend b = strcat(a, a)");
    // b copies a, whose own additions count again.
    expect(twice.perRow).toBe(URI + 16 + (2 * URI + 32) + (URI + 16));
    expect(estimate("['access'] | summarize m = max(uri) by method | extend x = strcat(m, m)").perRow).toBe(URI + 16);
    expect(
      estimate("union (['access'] | project s = uri), (['traces'] | project s = service) | extend x = strcat(s, s)")
        .perRow,
    ).toBe(URI + 16);
    expect(
      estimate(
        "['traces'] | join (['access'] | project service = method, uri) on service | extend x = strcat(uri, uri)",
      ).perRow,
    ).toBe(URI + 16);
    // An element of range() is a number, not the whole array.
    expect(estimate('print x = range(1, 100000, 1) | mv-expand x | extend s = strcat(x, x)').perRow).toBe(24 + 24 + 16);
    expect(estimate("['access'] | mv-expand tags | extend s = strcat(tags, tags)").perRow).toBe(16);
  });

  it('a call over constants is made once, not for every row; a call copying a constant, for every row', () => {
    const made = estimate("print s = strrep('ab', 1000)");
    expect(made.batch).toBe(0);
    expect(made.once).toBe(2000);
    // The constant is held once; each row's value holds it again.
    const long = `'${'x'.repeat(5000)}'`;
    expect(estimate(`['access'] | extend u = strcat(${long}, uri)`).perRow).toBe(5000 + 16);
    // rand() is a new value on every row.
    const random = estimate("['access'] | extend u = strrep(strcat(tostring(rand()), 'ab'), 1000)");
    expect(random.once).toBe(0);
    expect(random.perRow).toBeGreaterThan(50_000);
  });

  it('copies of a column count once it has been copied more than a few times', () => {
    const nested = (n: number) => `['access'] | extend u = ${'tolower('.repeat(n)}uri${')'.repeat(n)}`;
    expect(estimate(nested(FREE_COPIES)).perRow).toBeLessThan(1000);
    expect(estimate(nested(30)).perRow).toBeGreaterThan((30 - FREE_COPIES) * URI);
    const columns = (n: number) =>
      `['access'] | extend ${[...Array(n).keys()].map((i) => `c${i} = toupper(uri)`).join(', ')}`;
    expect(estimate(columns(FREE_COPIES)).perRow).toBe(FREE_COPIES * 16);
    expect(estimate(columns(FREE_COPIES + 2)).perRow).toBe((FREE_COPIES + 2) * 16 + 2 * URI);
  });

  it('a count that is not a finite constant is read from the rows, and an extreme key of a summary keeps its size', () => {
    expect(estimate("['access'] | extend u = strrep(uri, real(nan))").shared.map((c) => c.fn)).toEqual(['strrep']);
    expect(estimate("['access'] | summarize arg_max(status, uri) by method | extend x = strcat(uri, uri)").perRow).toBe(
      URI + 16,
    );
  });

  it('members at different paths of a dynamic value are different parts of it, each copied with its own allowance', () => {
    const fields = (paths: string[]) =>
      `['access'] | extend ${paths.map((p, i) => `c${i} = tostring(attributes.${p})`).join(', ')}`;
    const eight = fields(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
    expect(estimate(eight).perRow).toBe(8 * 16);
    const same = fields(Array(FREE_COPIES + 2).fill('a'));
    expect(estimate(same).perRow).toBe((FREE_COPIES + 2) * 16 + 2 * ATTRIBUTES);
  });

  it('a percentile of texts is one of them', () => {
    expect(estimate("['access'] | summarize a = percentile(uri, 50) by method | extend r = strrep(a, 60)").perRow).toBe(
      59 * URI,
    );
  });

  it('counts the keys of a sort, and the rows a take leaves', () => {
    expect(estimate("['access'] | top 1 by strlen(strrep(uri, 1000))").perRow).toBe(999 * URI);
    expect(estimate("['access'] | take 10 | extend u = strcat(uri, uri)").batch).toBe(10 * (URI + 16));
    expect(estimate("['access'] | extend u = strcat(uri, uri) | take 10").batch).toBe(BATCH_ROWS * (URI + 16));
  });

  it('asks the length of only the columns a call making text reads, and names the call that may add the most', () => {
    expect(estimate("['access'] | where status == 200 | project uri, method").asked).toEqual([]);
    expect(estimate("['access'] | where uri contains 'x' | count").asked).toEqual([]);
    const made = estimate("['access'] | extend a = strcat(method, '-'), b = strrep(uri, 5)");
    expect(new Set(made.asked)).toEqual(new Set(['t_access.f1', 't_access.f2']));
    expect(made.largest).toMatchObject({
      fn: 'strrep',
      pos: "['access'] | extend a = strcat(method, '-'), b = ".length,
    });
  });
});
