/**
 * What one call whose value grows with a count read from the rows (range's length, strrep's repetitions,
 * tohex's width) may make for a row: its share of service.query_limits.max_made_text_bytes, which the
 * engine finds for a query (service/query/made-text-budget.ts) and the connection sets before each of its
 * statements whose SQL reads it. The call checks each row's count against it before making the value, so
 * a count too large fails the statement instead of filling memory; unset, nothing is checked.
 */
export const ROW_SHARE_VARIABLE = 'ferry_made_text_row_share';

/** `sql`, unless the row's `bytes` (an SQL expression) pass the row share: then the statement fails naming `fn` and the key. */
export function withinRowShare(fn: string, bytes: string, sql: string): string {
  const share = `getvariable('${ROW_SHARE_VARIABLE}')`;
  const message = `'${fn}(): a row would make ' || CAST(${bytes} AS VARCHAR) || ' bytes, more than the ' || CAST(${share} AS VARCHAR) || ' one call may make a row in this query (its share of service.query_limits.max_made_text_bytes); make fewer or shorter values a row'`;
  return `(CASE WHEN ${bytes} > ${share} THEN error(${message}) ELSE ${sql} END)`;
}
