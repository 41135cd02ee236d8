/**
 * Barriers against a filter that DuckDB writes out exponentially.
 *
 * DuckDB pushes a filter down through a projection, and through a summary onto its group keys, by writing
 * the expressions that define the columns it reads in place of those columns, level after level
 * (its FilterPushdown), and nothing it writes twice is shared. A column defined from the one before it
 * twice (`extend s = strcat(s, s)`) doubles the filter with every such line: sixteen of them and a
 * `where strlen(s) > 0` made a filter that computes the first `s` 65,536 times a row, which held 1.8 GB
 * of a service whose memory_limit was 512 MB for 31 s until the query's time ran out (docs/benchmarks.md).
 *
 * So each column a stage defines is weighed by the column references its definition stands for once the
 * definitions under it are written into it, and one past MAX_PUSHED_REFERENCES is computed behind a
 * volatile expression: DuckDB does not push a filter through a projection whose column it reads is
 * volatile, so the filter reads the computed column where it stands, as written. Below the limit nothing
 * changes: a filter over a few computed columns is still pushed down to the scan.
 */

/** The column references one column may stand for, written out, before it is computed behind a barrier. */
export const MAX_PUSHED_REFERENCES = 64;

/** How many column references each column of a relation stands for, by alias (a column not named: 1). */
export type Weights = ReadonlyMap<string, number>;

export const NO_WEIGHTS: Weights = new Map();

/**
 * The column references a SQL expression stands for: each double-quoted identifier, weighed by `weights`.
 * Text in single quotes (string literals, JSON paths) is skipped; an identifier that names no column
 * counts as one, which only ever errs towards a barrier.
 */
export function weightOf(sql: string, weights: Weights): number {
  let total = 0;
  for (let i = 0; i < sql.length; i++) {
    const c = sql.charCodeAt(i);
    if (c === QUOTE) {
      // '' inside a literal ends it and starts the next at once: the same as skipping it.
      i = sql.indexOf("'", i + 1);
      if (i < 0) break;
    } else if (c === DOUBLE_QUOTE) {
      let end = sql.indexOf('"', i + 1);
      let name = sql.slice(i + 1, end < 0 ? sql.length : end);
      while (end >= 0 && sql.charCodeAt(end + 1) === DOUBLE_QUOTE) {
        const next = sql.indexOf('"', end + 2);
        name += `"${sql.slice(end + 2, next < 0 ? sql.length : next)}`;
        end = next;
      }
      total += weights.get(name) ?? 1;
      if (end < 0) break;
      i = end;
    }
  }
  return Math.max(1, total);
}

const QUOTE = "'".charCodeAt(0);
const DOUBLE_QUOTE = '"'.charCodeAt(0);

/** `sql` computed where it stands: DuckDB pushes no filter that reads it into its definition. */
export function behindBarrier(sql: string): string {
  return `CASE WHEN random() >= 0 THEN ${sql} END`;
}

/** A column's definition as written, and the references it stands for. */
export interface Weighed {
  sql: string;
  weight: number;
  /** Its weight passed the limit: it is to be computed behind a barrier, where it then weighs 1. */
  heavy: boolean;
}

export function weigh(sql: string, weights: Weights): Weighed {
  const weight = weightOf(sql, weights);
  return { sql, weight, heavy: weight > MAX_PUSHED_REFERENCES };
}

/** A projection's column: behind a barrier when it is heavy. */
export function projected(sql: string, weights: Weights): { sql: string; weight: number } {
  const w = weigh(sql, weights);
  return w.heavy ? { sql: behindBarrier(sql), weight: 1 } : w;
}
