/**
 * The console's pure parts: a time-binned result as chart series (one point per bucket, one series per
 * group, gaps as null, stacking), a query shared through the URL fragment and read back exactly, and an
 * APL error's line and column as a place in the text.
 */
import { describe, expect, it } from 'vitest';
import { errorPlace } from '../../../src/console/app/apl-errors';
import type { TabularTable } from '../../../src/console/app/api';
import { chartData, stacked } from '../../../src/console/app/chart-data';
import { decodeShared, encodeShared } from '../../../src/console/app/share';
import { resolveRange } from '../../../src/console/app/time-range';

const t = (m: number) => `2026-11-27T10:0${m}:00Z`;

const binned: TabularTable = {
  name: '0',
  fields: [
    { name: '_time', type: 'datetime' },
    { name: 'status', type: 'integer' },
    { name: 'count_', type: 'integer' },
  ],
  groups: [{ name: '_time' }, { name: 'status' }],
  // Out of order, and 404 has no row at minute 1.
  columns: [
    [t(1), t(0), t(0), t(2), t(2), t(1)],
    [200, 404, 200, 200, 404, 200],
    [5, 1, 2, 7, 3, 6],
  ],
};

describe('chart data', () => {
  it('has one point per bucket and one series per group, a missing bucket null', () => {
    const d = chartData(binned)!;
    expect(d.times).toEqual([0, 1, 2].map((m) => Date.parse(t(m)) / 1000));
    expect(d.series).toEqual([
      // Rows at minute 1 for 200 come twice: the last one stands.
      { label: '200', values: [2, 6, 7] },
      { label: '404', values: [1, null, 3] },
    ]);
    expect(stacked(d).series.map((s) => s.values)).toEqual([
      [2, 6, 7],
      [3, 6, 10],
    ]);
  });

  it('names series by column when there are several, and charts nothing not binned by time', () => {
    const two: TabularTable = {
      ...binned,
      fields: [
        binned.fields[0]!,
        { name: 'host', type: 'string' },
        binned.fields[2]!,
        { name: 'avg_ms', type: 'float' },
      ],
      groups: [{ name: '_time' }],
      columns: [
        [t(0), t(1)],
        ['x', 'y'],
        [1, 2],
        [0.5, 1.5],
      ],
    };
    expect(chartData(two)!.series.map((s) => s.label)).toEqual(['count_', 'avg_ms']);
    expect(chartData({ ...binned, groups: [{ name: 'status' }] })).toBeUndefined();
    expect(
      chartData({ ...binned, fields: binned.fields.slice(0, 2), columns: binned.columns.slice(0, 2) }),
    ).toBeUndefined();
  });
});

describe('a shared query', () => {
  it('reads back exactly what was shared, whatever the text holds', () => {
    for (const apl of ["['web'] | where msg has '&last=7d#x' and path == \"/a?b=c%20d+e\"", 'a\nb\tc  ü €', '']) {
      expect(decodeShared(encodeShared({ apl, range: { last: '6h' } }))).toEqual({ apl, range: { last: '6h' } });
      const range = { start: '2026-11-27T10:00:00.000Z', end: '2026-11-27T11:00:00.000Z' };
      expect(decodeShared(encodeShared({ apl, range }))).toEqual({ apl, range });
    }
    expect(decodeShared('#/datasets')).toBeUndefined();
    expect(decodeShared('')).toBeUndefined();
  });

  it('resolves a relative range at the time it runs', () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    expect(resolveRange({ last: '15m' }, now)).toEqual({
      startTime: '2026-11-27T11:45:00.000Z',
      endTime: '2026-11-27T12:00:00.000Z',
    });
  });
});

describe("an APL error's place", () => {
  it('is the line and column the service names, over the word there', () => {
    const text = "['web']\n| where status >= \n| take 5";
    const place = errorPlace(text, 'line 3, column 3: expected an expression, found take');
    expect(place).toEqual({
      from: text.indexOf('take'),
      to: text.indexOf('take') + 4,
      reason: 'expected an expression, found take',
    });
    // A column past the end of its line is kept on the line.
    expect(errorPlace('ab', 'line 1, column 9: x')).toEqual({ from: 2, to: 2, reason: 'x' });
    expect(errorPlace(text, 'no such dataset')).toBeUndefined();
  });
});
