/**
 * A result binned by time, as chart series: one point per time bucket, one series per numeric column and
 * group (the other `by` columns). Undefined for a result that is not binned by time.
 */
import type { TabularTable } from './api';

export interface ChartData {
  /** Bucket times, seconds since the epoch, ascending. */
  times: number[];
  series: { label: string; values: (number | null)[] }[];
}

const NUMERIC = /^(integer|float|long|real|int|double|decimal|timespan)/;

export function chartData(t: TabularTable): ChartData | undefined {
  const timeAt = t.fields.findIndex((f) => f.name === '_time' && /datetime/.test(f.type));
  if (timeAt < 0 || !t.groups.some((g) => g.name === '_time')) return undefined;
  const groupNames = new Set(t.groups.map((g) => g.name));
  const groupCols = t.fields.flatMap((f, i) => (groupNames.has(f.name) && i !== timeAt ? [i] : []));
  const valueCols = t.fields.flatMap((f, i) => (!groupNames.has(f.name) && NUMERIC.test(f.type) ? [i] : []));
  if (valueCols.length === 0) return undefined;
  const timeCol = t.columns[timeAt] ?? [];
  const times = [...new Set(timeCol.map((v) => Date.parse(String(v)) / 1000))].sort((a, b) => a - b);
  const timeIndex = new Map(times.map((s, i) => [s, i]));
  const series = new Map<string, (number | null)[]>();
  for (let row = 0; row < timeCol.length; row++) {
    const group = groupCols.map((c) => String(t.columns[c]?.[row] ?? '')).join(', ');
    const x = timeIndex.get(Date.parse(String(timeCol[row])) / 1000)!;
    for (const c of valueCols) {
      const label = [valueCols.length > 1 || !group ? t.fields[c]!.name : '', group].filter(Boolean).join(' · ');
      let values = series.get(label);
      if (!values) series.set(label, (values = new Array<number | null>(times.length).fill(null)));
      const v = t.columns[c]?.[row];
      values[x] = typeof v === 'number' ? v : v === null || v === undefined ? null : Number(v);
    }
  }
  return { times, series: [...series].map(([label, values]) => ({ label, values })) };
}

/** Stacked: each series' values added to those below it (a bucket a series lacks counts as 0). */
export function stacked(d: ChartData): ChartData {
  const sums = new Array<number>(d.times.length).fill(0);
  return {
    times: d.times,
    series: d.series.map((s) => ({
      label: s.label,
      values: s.values.map((v, i) => (sums[i]! += v ?? 0)),
    })),
  };
}
