/** Renders a tabular query result for `ferry query`: an aligned table, JSON, NDJSON or CSV. Pure functions. */
import { stringify } from 'csv-stringify/sync';

export interface TabularTable {
  name: string;
  fields: { name: string }[];
  columns: unknown[][];
}

export type OutputFormat = 'table' | 'json' | 'ndjson' | 'csv';

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function rowsOf(t: TabularTable): unknown[][] {
  const n = t.columns[0]?.length ?? 0;
  return Array.from({ length: n }, (_, i) => t.fields.map((_f, j) => t.columns[j]?.[i] ?? null));
}

/** Columns padded to their widest cell; numbers right-aligned, as a person reads them. */
/** Rows of cells under named columns, as a table (a command's listing). */
export function renderRows(name: string, fields: string[], rows: unknown[][]): string {
  return renderTable({
    name,
    fields: fields.map((f) => ({ name: f })),
    columns: fields.map((_, j) => rows.map((r) => r[j])),
  });
}

export function renderTable(t: TabularTable): string {
  const rows = rowsOf(t);
  if (t.fields.length === 0) return '(no columns)\n';
  const text = rows.map((r) => r.map(cell));
  const widths = t.fields.map((f, j) => Math.max(f.name.length, ...text.map((r) => [...r[j]!].length)));
  const numeric = t.fields.map(
    (_f, j) => rows.length > 0 && rows.every((r) => r[j] === null || typeof r[j] === 'number'),
  );
  const pad = (s: string, j: number) => (numeric[j] ? s.padStart(widths[j]!) : s.padEnd(widths[j]!));
  const lines = [
    t.fields
      .map((f, j) => pad(f.name, j))
      .join('  ')
      .trimEnd(),
    widths.map((w) => '-'.repeat(w)).join('  '),
    ...text.map((r) =>
      r
        .map((c, j) => pad(c, j))
        .join('  ')
        .trimEnd(),
    ),
  ];
  return `${lines.join('\n')}\n(${rows.length} row${rows.length === 1 ? '' : 's'})\n`;
}

export function renderNdjson(t: TabularTable): string {
  return rowsOf(t)
    .map((r) => `${JSON.stringify(Object.fromEntries(t.fields.map((f, j) => [f.name, r[j]])))}\n`)
    .join('');
}

export function renderCsv(t: TabularTable): string {
  return stringify([t.fields.map((f) => f.name), ...rowsOf(t).map((r) => r.map(cell))]);
}

/** The whole result in the chosen format; `table` also prints a _totals table under the main one. */
export function renderResult(result: { tables: TabularTable[] }, format: OutputFormat): string {
  const [main, ...rest] = result.tables;
  if (format === 'json') return `${JSON.stringify(result, null, 2)}\n`;
  if (!main) return '';
  if (format === 'ndjson') return renderNdjson(main);
  if (format === 'csv') return renderCsv(main);
  let out = renderTable(main);
  for (const t of rest) out += `\n${t.name}:\n${renderTable(t)}`;
  return out;
}

export interface MplSeriesOut {
  metric: string;
  tags: Record<string, unknown>;
  start: number;
  resolution: number;
  data: (number | null)[];
}

/**
 * An MPL result (`ferry query --mpl`) as rows: a row a point with a value, columns `_time`, `metric`, each
 * tag any series has, and `value`; `json` prints the service's answer as it is.
 */
export function renderMplResult(result: { series?: MplSeriesOut[] }, format: OutputFormat): string {
  if (format === 'json') return `${JSON.stringify(result, null, 2)}\n`;
  const series = result.series ?? [];
  const tags = [...new Set(series.flatMap((s) => Object.keys(s.tags)))].sort();
  const rows: unknown[][] = [];
  for (const s of series)
    s.data.forEach((v, i) => {
      if (v === null) return;
      const time = new Date((s.start + i * s.resolution) * 1000).toISOString().replace('.000Z', 'Z');
      rows.push([time, s.metric, ...tags.map((k) => s.tags[k] ?? null), v]);
    });
  const fields = ['_time', 'metric', ...tags, 'value'];
  const table: TabularTable = {
    name: 'series',
    fields: fields.map((name) => ({ name })),
    columns: fields.map((_, j) => rows.map((r) => r[j])),
  };
  if (format === 'ndjson') return renderNdjson(table);
  if (format === 'csv') return renderCsv(table);
  return renderTable(table);
}
