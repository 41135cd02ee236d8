/** The wire shapes of query results: tabular (current) and legacy (matches and buckets). Pure functions. */
import { wireType } from '../../apl/types.js';
import { formatRfc3339Nano } from '../../util/time.js';
import type { FieldRecord } from '../store/event-store.js';
import type { QueryOutcome, ResultTable } from './engine.js';

export type FieldsMeta = (dataset: string) => FieldRecord[];

function fullStatus(o: QueryOutcome): Record<string, unknown> {
  const s = o.status;
  return {
    elapsedTime: s.elapsedTime,
    minCursor: s.minCursor,
    maxCursor: s.maxCursor,
    blocksExamined: s.blocksExamined,
    blocksCached: 0,
    blocksMatched: s.blocksExamined,
    rowsExamined: s.rowsExamined,
    rowsMatched: s.rowsMatched,
    numGroups: s.numGroups,
    isPartial: s.isPartial,
    isEstimate: false,
    cacheStatus: 1,
    minBlockTime: s.minBlockTime,
    maxBlockTime: s.maxBlockTime,
    ...(s.messages.length ? { messages: s.messages } : {}),
  };
}

function fieldsMetaMap(o: QueryOutcome, meta: FieldsMeta): Record<string, unknown[]> {
  const out: Record<string, unknown[]> = {};
  for (const ds of o.datasets) {
    out[ds] = meta(ds).map((f) => ({
      name: f.name,
      type: f.type,
      unit: f.unit,
      hidden: f.hidden,
      description: f.description,
    }));
  }
  return out;
}

export function tabularResult(o: QueryOutcome, meta: FieldsMeta): Record<string, unknown> {
  const range = { field: '_time', start: formatRfc3339Nano(o.startNs ?? 0n), end: formatRfc3339Nano(o.endNs) };
  return {
    format: 'tabular',
    status: fullStatus(o),
    tables: o.tables.map((t) => ({
      name: t.name,
      sources: o.datasets.map((name) => ({ name })),
      fields: t.columns.map((c) => ({
        name: c.name,
        type: wireType(c.type, c.shape),
        ...(c.agg ? { agg: c.agg } : {}),
      })),
      order: t.order,
      groups: t.groups.map((name) => ({ name })),
      range,
      ...(t.buckets ? { buckets: t.buckets } : {}),
      columns: t.values,
    })),
    datasetNames: o.datasets,
    fieldsMetaMap: fieldsMetaMap(o, meta),
  };
}

/** Legacy: events as matches; summaries as buckets.totals (and buckets.series per time bucket). */
export function legacyResult(o: QueryOutcome, meta: FieldsMeta, request?: unknown): Record<string, unknown> {
  const main = o.tables[0]!;
  const out: Record<string, unknown> = {
    format: 'legacy',
    status: fullStatus(o),
    matches: [],
    buckets: { series: [], totals: [] },
  };
  if (main.rows) out.matches = matchesOf(main);
  else {
    const totalsTable = o.tables.find((t) => t.name === '_totals');
    if (main.buckets) {
      const size = BigInt(main.buckets.size);
      const timeIdx = main.columns.findIndex((c) => c.name === main.buckets!.field);
      const series = new Map<string, { startTime: string; endTime: string; groups: unknown[] }>();
      entries(main, [timeIdx]).forEach((e, i) => {
        const start = main.values[timeIdx]![i] as string | null;
        // Rows without a time (a datatable's, through a union) belong to no bucket; totals count them.
        if (start === null || Number.isNaN(Date.parse(start))) return;
        let s = series.get(start);
        if (!s) {
          const ns = BigInt(Date.parse(start)) * 1_000_000n;
          s = { startTime: start, endTime: formatRfc3339Nano(ns + size), groups: [] };
          series.set(start, s);
        }
        s.groups.push(e);
      });
      (out.buckets as Record<string, unknown>).series = [...series.values()];
      if (totalsTable) (out.buckets as Record<string, unknown>).totals = entries(totalsTable, []);
    } else (out.buckets as Record<string, unknown>).totals = entries(main, []);
  }
  out.datasetNames = o.datasets;
  out.fieldsMeta = o.datasets.flatMap((ds) =>
    meta(ds).map((f) => ({ name: f.name, type: f.type, unit: f.unit, hidden: f.hidden, description: f.description })),
  );
  if (request !== undefined) out.request = request;
  return out;
}

function matchesOf(t: ResultTable): unknown[] {
  const out: unknown[] = [];
  for (let i = 0; i < t.rows!.length; i++) {
    const r = t.rows![i]!;
    const data: Record<string, unknown> = {};
    t.columns.forEach((c, j) => {
      if (c.name === '_time' || c.name === '_sysTime') return;
      const v = t.values[j]![i];
      if (v !== null && v !== undefined) data[c.name] = v;
    });
    out.push({ _time: formatRfc3339Nano(r.timeNs), _sysTime: formatRfc3339Nano(r.sysTimeNs), _rowId: r.cursor, data });
  }
  return out;
}

/** Rows of a summary as legacy entry groups: {id, group: {key: value}, aggregations: [{op, value}]}. */
function entries(t: ResultTable, skip: number[]): unknown[] {
  const n = t.values[0]?.length ?? 0;
  const groupIdx = t.columns
    .map((c, i) => (t.groups.includes(c.name) && !skip.includes(i) ? i : -1))
    .filter((i) => i >= 0);
  const aggIdx = t.columns
    .map((c, i) => (!t.groups.includes(c.name) && !skip.includes(i) ? i : -1))
    .filter((i) => i >= 0);
  const out: unknown[] = [];
  for (let r = 0; r < n; r++) {
    const group: Record<string, unknown> = {};
    for (const i of groupIdx) group[t.columns[i]!.name] = t.values[i]![r];
    out.push({ id: r, group, aggregations: aggIdx.map((i) => ({ op: t.columns[i]!.name, value: t.values[i]![r] })) });
  }
  return out;
}
