/**
 * Reading a monitor's query result into observations, one per alert group (management.md §1.3). Pure.
 *
 * - Threshold: a group is positive when any of its values crosses the threshold (any point of a binned
 *   result, any numeric value of a table); `columnName` picks the column, else every numeric non-key one.
 * - AnomalyDetection: each group's latest bin is compared with the band around its expected value (see
 *   anomalyBand).
 * - Without notifyByGroup every row belongs to one group, "".
 */
import type { ResultTable } from '../query/engine.js';
import type { Monitor, Operator } from './monitor.js';
import { valueColumns } from './monitor-query.js';

export interface Observation {
  /** The alert group: "" for the whole monitor, else the JSON of the group's values. */
  key: string;
  groupKeys: string[] | null;
  groupValues: unknown[] | null;
  /** The value that decided: the most extreme crossing when positive, the closest to crossing otherwise. */
  value: number | null;
  positive: boolean;
  noData: boolean;
  sentence: string;
}

const PHRASE: Record<Operator, string> = {
  Above: 'above',
  AboveOrEqual: 'above or equal to',
  Below: 'below',
  BelowOrEqual: 'below or equal to',
  AboveOrBelow: 'outside',
};

export function crosses(op: Operator | '', v: number, threshold: number): boolean {
  switch (op) {
    case 'Above':
      return v > threshold;
    case 'AboveOrEqual':
      return v >= threshold;
    case 'Below':
      return v < threshold;
    case 'BelowOrEqual':
      return v <= threshold;
    default:
      return false;
  }
}

function formatNumber(v: number): string {
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
}

function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}

interface Rows {
  groupNames: string[];
  byGroup: Map<string, { values: unknown[]; rows: number[] }>;
}

/** Rows by alert group: by every non-time group column with notifyByGroup, else all in "". */
function groupRows(t: ResultTable, byGroup: boolean): Rows {
  const timeField = t.buckets?.field;
  const groupNames = byGroup ? t.groups.filter((g) => g !== timeField && g !== '_time') : [];
  const idx = groupNames.map((g) => t.columns.findIndex((c) => c.name === g));
  const n = t.values[0]?.length ?? 0;
  const out = new Map<string, { values: unknown[]; rows: number[] }>();
  for (let r = 0; r < n; r++) {
    const values = idx.map((i) => t.values[i]?.[r] ?? null);
    const key = groupNames.length ? JSON.stringify(values) : '';
    let g = out.get(key);
    if (!g) out.set(key, (g = { values, rows: [] }));
    g.rows.push(r);
  }
  return { groupNames, byGroup: out };
}

function noData(
  m: Monitor,
  key = '',
  groupKeys: string[] | null = null,
  groupValues: unknown[] | null = null,
): Observation {
  return {
    key,
    groupKeys,
    groupValues,
    value: null,
    noData: true,
    positive: m.alertOnNoData,
    sentence: m.alertOnNoData ? 'The query returned no data' : 'No data',
  };
}

export function evaluateThreshold(m: Monitor, t: ResultTable): Observation[] {
  const cols = valueColumns(t.columns, t.groups, t.buckets?.field, m.columnName).map((c) => t.columns.indexOf(c));
  const { groupNames, byGroup } = groupRows(t, m.notifyByGroup);
  if (byGroup.size === 0) return [noData(m)];
  const upward = m.operator === 'Above' || m.operator === 'AboveOrEqual';
  const out: Observation[] = [];
  for (const [key, g] of byGroup) {
    const groupKeys = groupNames.length ? groupNames : null;
    const groupValues = groupNames.length ? g.values : null;
    let extreme: number | null = null;
    let crossing: number | null = null;
    for (const r of g.rows) {
      for (const c of cols) {
        const v = toNumber(t.values[c]?.[r]);
        if (v === null) continue;
        if (extreme === null || (upward ? v > extreme : v < extreme)) extreme = v;
        if (crosses(m.operator, v, m.threshold) && (crossing === null || (upward ? v > crossing : v < crossing)))
          crossing = v;
      }
    }
    if (extreme === null) {
      out.push(noData(m, key, groupKeys, groupValues));
      continue;
    }
    const value = crossing ?? extreme;
    const positive = crossing !== null;
    const phrase = PHRASE[m.operator as Operator];
    out.push({
      key,
      groupKeys,
      groupValues,
      value,
      positive,
      noData: false,
      sentence: positive
        ? `Current value of ${formatNumber(value)} is ${phrase} the threshold value of ${formatNumber(m.threshold)}`
        : `Current value of ${formatNumber(value)} is no longer ${phrase} the threshold value of ${formatNumber(m.threshold)}`,
    });
  }
  return out;
}

/** Mean and population standard deviation. */
function stats(xs: number[]): { mean: number; sd: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
  return { mean, sd };
}

/**
 * The band a value may move in before it is anomalous: the expected value ± (2 standard deviations of the
 * history + `tolerance` percent of the expected value). tolerance widens the band, from the bare 2σ at 0.
 */
export function anomalyBand(
  history: number[],
  tolerance: number,
): { expected: number; low: number; high: number } | undefined {
  if (history.length < MIN_HISTORY) return undefined;
  const { mean, sd } = stats(history);
  const half = 2 * sd + Math.abs(mean) * (tolerance / 100);
  return { expected: mean, low: mean - half, high: mean + half };
}

/** Points of history an anomaly verdict needs. */
export const MIN_HISTORY = 3;

/** One group's series: the values of the value column in time order. */
function seriesOf(t: ResultTable, rows: number[], col: number): number[] {
  const timeIdx = t.columns.findIndex((c) => c.name === t.buckets?.field);
  const sorted =
    timeIdx >= 0
      ? [...rows].sort((a, b) => String(t.values[timeIdx]![a]).localeCompare(String(t.values[timeIdx]![b])))
      : rows;
  return sorted.map((r) => toNumber(t.values[col]?.[r])).filter((v): v is number => v !== null);
}

/**
 * AnomalyDetection: each group's latest point against the band of its history: the group's earlier
 * points in the window, or with compareDays the same window that many days before (`baseline`).
 */
export function evaluateAnomaly(m: Monitor, t: ResultTable, baseline?: ResultTable): Observation[] {
  const col = t.columns.indexOf(valueColumns(t.columns, t.groups, t.buckets?.field, m.columnName)[0]!);
  const { groupNames, byGroup } = groupRows(t, m.notifyByGroup);
  if (byGroup.size === 0) return [noData(m)];
  const base = baseline ? groupRows(baseline, m.notifyByGroup).byGroup : undefined;
  const baseCol = baseline ? baseline.columns.findIndex((c) => c.name === t.columns[col]!.name) : -1;
  const out: Observation[] = [];
  for (const [key, g] of byGroup) {
    const groupKeys = groupNames.length ? groupNames : null;
    const groupValues = groupNames.length ? g.values : null;
    const series = seriesOf(t, g.rows, col);
    if (!series.length) {
      out.push(noData(m, key, groupKeys, groupValues));
      continue;
    }
    const value = series[series.length - 1]!;
    const history =
      base && baseCol >= 0 ? seriesOf(baseline!, base.get(key)?.rows ?? [], baseCol) : series.slice(0, -1);
    const band = anomalyBand(history, m.tolerance);
    if (!band) {
      out.push({
        key,
        groupKeys,
        groupValues,
        value,
        positive: false,
        noData: false,
        sentence: `Not enough history to judge the value of ${formatNumber(value)} (${history.length} of ${MIN_HISTORY} points)`,
      });
      continue;
    }
    const above = value > band.high;
    const below = value < band.low;
    const positive =
      (m.operator === 'Above' && above) ||
      (m.operator === 'Below' && below) ||
      (m.operator === 'AboveOrBelow' && (above || below));
    const range = `${formatNumber(band.low)} to ${formatNumber(band.high)}`;
    out.push({
      key,
      groupKeys,
      groupValues,
      value,
      positive,
      noData: false,
      sentence: positive
        ? `Current value of ${formatNumber(value)} is ${above ? 'above' : 'below'} the expected range of ${range} (expected ${formatNumber(band.expected)})`
        : `Current value of ${formatNumber(value)} is within the expected range of ${range}`,
    });
  }
  return out;
}

/** A MatchEvent result's rows, each an event object of its columns; oldest first when `byTime` and rows carry times. */
export function matchedEvents(t: ResultTable, byTime = false): Record<string, unknown>[] {
  const n = t.values[0]?.length ?? 0;
  const order = Array.from({ length: n }, (_, i) => i);
  if (byTime && t.rows)
    order.sort((a, b) =>
      t.rows![a]!.timeNs < t.rows![b]!.timeNs ? -1 : t.rows![a]!.timeNs > t.rows![b]!.timeNs ? 1 : a - b,
    );
  const out: Record<string, unknown>[] = [];
  for (const r of order) {
    const e: Record<string, unknown> = {};
    t.columns.forEach((c, i) => (e[c.name] = t.values[i]?.[r] ?? null));
    out.push(e);
  }
  return out;
}
