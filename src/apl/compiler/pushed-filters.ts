/**
 * Filters kept where they stand when DuckDB would write them out many times over.
 *
 * DuckDB pushes a filter down through a projection, and through a summary onto its group keys, by writing
 * the definitions of the columns it reads in place of those columns, level after level (its
 * FilterPushdown), and shares nothing it writes twice. Over columns each made from the one before it
 * twice (`extend s = strcat(s, s)`), the filter doubles with every line: sixteen lines and a
 * `where strlen(s) > 0` computed the first `s` 65,536 times a row, which held 1.8 GB of a service whose
 * memory_limit was 512 MB for 31 s until the query's time ran out (docs/benchmarks.md). What the filter
 * computes again below is work and memory beside what the projections compute once: long texts made twice
 * held their size again for each copy.
 *
 * So each column a stage defines carries the computed expressions a reference to it stands for once the
 * definitions under it are written in (a column as read: none), and a filter that would make DuckDB compute
 * more than MAX_PUSHED_COMPUTATIONS of them again is kept where it stands, reading a volatile column
 * (DuckDB pushes no filter through the projection that makes one). A filter over columns as read, or a few
 * computed ones, is pushed down to the scan as before.
 */

/**
 * Computed expressions a filter may have DuckDB compute again beneath it before it is kept where it stands:
 * enough for a condition over a few computed columns to still reach the scan, while three levels of long
 * texts each made twice from the one before (seven expressions) held 917 MiB more for one filter.
 */
export const MAX_PUSHED_COMPUTATIONS = 4;

/** The computed expressions a reference to each column stands for, by alias (a column not named: none). */
export type Weights = ReadonlyMap<string, number>;

export const NO_WEIGHTS: Weights = new Map();

/** Weights past this are all too heavy alike: a cap keeps a long doubling from overflowing. */
const HEAVIEST = 2 ** 30;

/**
 * The computed expressions a SQL condition or definition reads through its column references: each
 * double-quoted identifier, by its weight. Text in single quotes (string literals, JSON paths) is skipped.
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
      total = Math.min(HEAVIEST, total + (weights.get(name) ?? 0));
      if (end < 0) break;
      i = end;
    }
  }
  return total;
}

const QUOTE = "'".charCodeAt(0);
const DOUBLE_QUOTE = '"'.charCodeAt(0);

/** A column's weight from its definition: another column as it is, or one computed expression over what it reads. */
export function definitionWeight(sql: string, weights: Weights): number {
  if (/^"(?:[^"]|"")*"$/.test(sql)) return weightOf(sql, weights);
  return Math.min(HEAVIEST, 1 + weightOf(sql, weights));
}

/** Whether DuckDB pushing this condition down would compute too much again beneath it. */
export function tooHeavyToPush(condition: string, weights: Weights): boolean {
  return weightOf(condition, weights) > MAX_PUSHED_COMPUTATIONS;
}

/** `sql` computed where it stands: DuckDB pushes no filter that reads it into its definition. */
export function behindBarrier(sql: string): string {
  return `CASE WHEN random() >= 0 THEN ${sql} END`;
}

/**
 * The rows of `relation` (a SELECT) for which every condition holds, each tested where it stands: it reads
 * a volatile column, so DuckDB leaves it there. It stays a filter: computed in a projection, a large
 * condition cost DuckDB seconds to plan, which its elimination of common subexpressions spends there.
 * DuckDB no longer combines such conditions with others (the caller keeps only the heavy parts of an AND).
 */
export function keptFilter(relation: string, conditions: string[], i: number): string {
  const tests = conditions.map((c) => `CASE WHEN "__keep" >= 0 THEN (${c}) END`).join(' AND ');
  return `SELECT * EXCLUDE ("__keep") FROM (SELECT *, random() AS "__keep" FROM (${relation}) AS k${i}) AS kept${i} WHERE ${tests}`;
}
