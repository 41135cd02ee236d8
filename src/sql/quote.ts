/**
 * Quoting for DuckDB SQL text, used by the store (ingest plans, paths) and by the APL compiler alike, so a
 * value reaches SQL one way only.
 */

/** A SQL string literal. DuckDB's parser stops at NUL, so NUL is written as chr(0). */
export function sqlText(s: string): string {
  if (!s.includes('\u0000')) return `'${s.replace(/'/g, "''")}'`;
  return `(${s
    .split('\u0000')
    .map((p) => `'${p.replace(/'/g, "''")}'`)
    .join(' || chr(0) || ')})`;
}

/** A double-quoted SQL identifier. */
export function sqlIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
