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
import { formatBytes, formatDuration, formatRetention, formatSpan } from '../../../src/console/app/format';
import { draftOf, EMPTY, fieldOfMessage, monitorBody } from '../../../src/console/app/monitor-body';
import { layoutTimeline, monitorState } from '../../../src/console/app/timeline';
import type { Monitor, MonitorRun } from '../../../src/console/app/api';
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

describe('figures as the datasets page writes them', () => {
  it('bytes in binary units with three digits, durations in their two largest units, retention', () => {
    expect([0, 999, 1024, 1536, 10_240, 5 * 1024 ** 2 + 1, 300 * 1024 ** 3].map(formatBytes)).toEqual([
      '0 B',
      '999 B',
      '1.00 KiB',
      '1.50 KiB',
      '10.0 KiB',
      '5.00 MiB',
      '300 GiB',
    ]);
    expect(
      [0, 45_000, 200_000, 7_500_000, 86_400_000 + 59 * 60_000, 3 * 86_400_000 + 4 * 3_600_000 + 5_000].map(
        formatDuration,
      ),
    ).toEqual(['0s', '45s', '3m 20s', '2h 5m', '1d 59m', '3d 4h']);
    expect(formatSpan('2026-11-01T00:00:00Z', '2026-11-01T02:30:00.123456789Z')).toBe(
      '2026-11-01 00:00:00 → 2026-11-01 02:30:00 (2h 30m)',
    );
    expect(formatSpan(null, null)).toBe('');
    expect(formatRetention({ retentionDays: 0, useRetentionPeriod: true })).toBe('forever');
    expect(formatRetention({ retentionDays: 7, useRetentionPeriod: true })).toBe('7 days');
    expect(formatRetention({ retentionDays: 7, useRetentionPeriod: false })).toBe('service default');
  });
});

describe("a monitor's timeline and form", () => {
  const start = new Date('2026-11-27T10:00:00Z');
  const end = new Date('2026-11-27T11:00:00Z');
  const run = (min: number, state: string): MonitorRun => ({
    _time: new Date(start.getTime() + min * 60_000).toISOString(),
    state,
    value: min,
    durationMs: 1,
    rowsMatched: 0,
    opened: 0,
    closed: 0,
    notified: 0,
    notificationsFailed: 0,
  });

  it('places runs at their time and alerts from opening to closing, one still open to the end', () => {
    const line = layoutTimeline(
      [run(30, 'triggered'), run(15, 'normal'), run(90, 'normal')],
      [
        { state: 'open', timestamp: '2026-11-27T10:06:00Z' },
        { state: 'open', timestamp: '2026-11-27T10:12:00Z' },
        { state: 'closed', timestamp: '2026-11-27T10:18:00Z' },
        { state: 'closed', timestamp: '2026-11-27T10:24:00Z' },
        { state: 'open', timestamp: '2026-11-27T10:45:00Z' },
      ],
      start,
      end,
    );
    expect(line.runs.map((r) => [r.at, r.state])).toEqual([
      [0.25, 'normal'],
      [0.5, 'triggered'],
      [1, 'normal'],
    ]);
    expect(line.alerts).toEqual([
      { from: 0.1, to: 0.4, open: false },
      { from: 0.75, to: 1, open: true },
    ]);
    // A close whose opening is before the strip starts at its left edge.
    expect(layoutTimeline([], [{ state: 'closed', timestamp: '2026-11-27T10:30:00Z' }], start, end).alerts).toEqual([
      { from: 0, to: 0.5, open: false },
    ]);
  });

  it('states a monitor by its switch and its last run', () => {
    const now = Date.parse('2026-11-27T11:00:00Z');
    expect(monitorState({ disabled: true, disabledUntil: null }, run(1, 'normal'), now)).toBe('disabled');
    expect(monitorState({ disabled: false, disabledUntil: '2026-11-27T12:00:00Z' }, undefined, now)).toBe('disabled');
    expect(monitorState({ disabled: true, disabledUntil: '2026-11-27T10:00:00Z' }, run(1, 'error'), now)).toBe('error');
    expect(monitorState({ disabled: false, disabledUntil: null }, undefined, now)).toBe('not run yet');
  });

  it('sends the monitor back whole with the form on top, numbers as numbers, and finds the field a message names', () => {
    const m = {
      ...Object.fromEntries(Object.keys(EMPTY).map((k) => [k, EMPTY[k]])),
      id: 'mon_1',
      createdAt: 'x',
      createdBy: 'y',
      updatedAt: 'z',
      notifierIDs: ['n1'],
      notifierIds: ['n1'],
      mplQuery: '',
      secondDelay: 30,
      threshold: 5,
      type: 'Threshold',
    } as unknown as Monitor;
    const draft = { ...draftOf(m), threshold: '2.5', tolerance: '' };
    const body = monitorBody(m, draft);
    expect(body).toMatchObject({ threshold: 2.5, secondDelay: 30, notifierIds: ['n1'], intervalMinutes: 5 });
    for (const k of ['id', 'createdAt', 'createdBy', 'updatedAt', 'notifierIDs', 'tolerance'])
      expect(body).not.toHaveProperty(k);
    // An MPL monitor keeps its query: the form edits mplQuery in place of aplQuery.
    expect(
      monitorBody(
        { ...m, mplQuery: 'm:cpu | align using avg' } as Monitor,
        draftOf({ ...m, mplQuery: 'm:cpu | align using avg' } as Monitor),
      ),
    ).toMatchObject({ aplQuery: '', mplQuery: 'm:cpu | align using avg' });
    expect(monitorBody(undefined, { ...EMPTY, type: 'MatchEvent', operator: 'Above' }).operator).toBe('');
    // A snoozed monitor keeps its snooze unless the switch is changed, which ends it.
    const snoozed = { ...m, disabled: false, disabledUntil: '2030-01-01T00:00:00Z' } as Monitor;
    expect(monitorBody(snoozed, draftOf(snoozed)).disabledUntil).toBe('2030-01-01T00:00:00Z');
    expect(monitorBody(snoozed, { ...draftOf(snoozed), disabled: true })).toMatchObject({
      disabled: true,
      disabledUntil: null,
    });
    expect(fieldOfMessage('operator is required for a Threshold monitor')).toBe('operator');
    expect(fieldOfMessage('aplQuery is not a query this service can run: line 1, column 3: x')).toBe('aplQuery');
    expect(fieldOfMessage('monitor "mon_x" not found')).toBeUndefined();
  });
});
