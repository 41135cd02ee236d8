/**
 * What two of the store's JavaScript SQL functions compute (service/query/js-functions.ts), shared with
 * event pipelines (../js/) so both give one answer: ferry_parse_csv (parse_csv) and ferry_json_sorted
 * (dynamic_to_json).
 */
import { parse as parseCsv } from 'csv-parse/sync';

/** The fields of the first record of a line of CSV, as a JSON array of strings; null when it does not parse. */
export function csvFields(text: string): string | null {
  try {
    const records = parseCsv(text, { relax_quotes: true, relax_column_count: true }) as string[][];
    return JSON.stringify(records[0] ?? []);
  } catch {
    return null;
  }
}

/** JSON text with every object's keys in order, so equal values have equal text. */
export function sortedJson(text: string): string | null {
  const sort = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sort);
    if (v === null || typeof v !== 'object') return v;
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sort((v as Record<string, unknown>)[k])]),
    );
  };
  try {
    return JSON.stringify(sort(JSON.parse(text)));
  } catch {
    return null;
  }
}
