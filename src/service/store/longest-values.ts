/**
 * The longest value of a table's text columns, from the statistics DuckDB keeps of every column as it
 * writes (no scan; after a delete still an upper bound). The estimate of the text a query makes reads it
 * (apl/binder/made-text.ts).
 */
import { sqlIdent } from '../../sql/quote.js';

/** One statement reading the statistics of these columns: one row, a text per column, none for an empty table. */
export function statsSql(table: string, columns: readonly string[]): string {
  return `SELECT ${columns.map((c) => `stats(${sqlIdent(c)})`).join(', ')} FROM ${sqlIdent(table)} LIMIT 1`;
}

/** The longest value's bytes in a column's statistics, as `stats()` writes them ("Max String Length: 9000"); undefined when DuckDB kept none. */
export function longestInStats(stats: string): number | undefined {
  const m = /Max String Length: (\d+)/.exec(stats);
  return m ? Number(m[1]) : undefined;
}

/** One statement measuring the longest value of columns whose statistics do not say: a scan. */
export function measureSql(table: string, columns: readonly string[]): string {
  return `SELECT ${columns.map((c) => `max(strlen(CAST(${sqlIdent(c)} AS VARCHAR)))`).join(', ')} FROM ${sqlIdent(table)}`;
}
