/**
 * SQL text builders shared by the function catalog and the compiler: literals and the conversions between
 * APL types as DuckDB expressions. Pure string functions.
 */
import { sqlText } from '../../sql/quote.js';
import { formatRfc3339Nano } from '../../util/time.js';
import type { LiteralValue } from '../parser/ast.js';
import type { AplType } from '../types.js';
import { SQL_TYPE_OF } from '../types.js';

/** A compiled argument: its SQL, its APL type, and its value when it is a constant. */
export interface SqlArg {
  sql: string;
  type: AplType;
  constant?: { value: LiteralValue };
  /** The column's name when the argument is a plain column (spotlight names its fields by it). */
  name?: string;
}

export function sqlLiteral(type: AplType, value: LiteralValue): string {
  if (value === null || value === undefined) return `CAST(NULL AS ${SQL_TYPE_OF[type]})`;
  switch (type) {
    case 'string':
      return sqlText(String(value));
    case 'long':
    case 'timespan':
      return `CAST(${String(value)} AS BIGINT)`;
    case 'real': {
      const n = Number(value);
      if (Number.isNaN(n)) return `CAST('nan' AS DOUBLE)`;
      if (!Number.isFinite(n)) return `CAST('${n > 0 ? 'inf' : '-inf'}' AS DOUBLE)`;
      return `CAST(${String(n)} AS DOUBLE)`;
    }
    case 'bool':
      return value ? 'TRUE' : 'FALSE';
    // A constant timestamp folds at plan time, so time filters prune row groups by their min/max.
    case 'datetime':
      return `CAST('${formatRfc3339Nano(value as bigint)
        .replace('T', ' ')
        .replace('Z', '')}' AS TIMESTAMP_NS)`;
    case 'dynamic':
      return `CAST(${sqlText(JSON.stringify(value))} AS JSON)`;
  }
}

/** Go's FormatFloat(v, 'g'-like, -1) for the common cases: shortest digits, no trailing ".0", Go's Inf/NaN names. */
const REAL_TO_STRING = (x: string) =>
  `CASE WHEN isnan(${x}) THEN 'NaN' WHEN isinf(${x}) THEN (CASE WHEN ${x} > 0 THEN '+Inf' ELSE '-Inf' END) ELSE regexp_replace(CAST(${x} AS VARCHAR), '\\.0$', '') END`;

/** tostring(): the text of any value; null gives "". */
export function toStringSql(a: SqlArg): string {
  switch (a.type) {
    case 'string':
      return `COALESCE(${a.sql}, '')`;
    case 'long':
      return `COALESCE(CAST(${a.sql} AS VARCHAR), '')`;
    case 'real':
      return `COALESCE(${REAL_TO_STRING(a.sql)}, '')`;
    // APL: a null bool prints as "false".
    case 'bool':
      return `(CASE WHEN ${a.sql} THEN 'true' ELSE 'false' END)`;
    case 'datetime':
      return `COALESCE(ferry_rfc3339(${a.sql}), '')`;
    case 'timespan':
      return `COALESCE(ferry_go_duration(${a.sql}), '')`;
    case 'dynamic':
      return `COALESCE((CASE WHEN json_type(${a.sql}) = 'VARCHAR' THEN json_extract_string(${a.sql}, '$') ELSE CAST(${a.sql} AS VARCHAR) END), '')`;
  }
}

/** A string view of a value for string operators: like tostring, but null stays null. */
export function asStringSql(a: SqlArg): string {
  switch (a.type) {
    case 'string':
      return a.sql;
    case 'long':
      return `CAST(${a.sql} AS VARCHAR)`;
    case 'real':
      return REAL_TO_STRING(a.sql);
    case 'bool':
      return `(CASE WHEN ${a.sql} THEN 'true' WHEN NOT ${a.sql} THEN 'false' END)`;
    case 'datetime':
      return `ferry_rfc3339(${a.sql})`;
    case 'timespan':
      return `ferry_go_duration(${a.sql})`;
    case 'dynamic':
      return `(CASE WHEN json_type(${a.sql}) = 'VARCHAR' THEN json_extract_string(${a.sql}, '$') WHEN json_type(${a.sql}) <> 'NULL' THEN CAST(${a.sql} AS VARCHAR) END)`;
  }
}

/** toreal(): Go float syntax for strings, 1/0 for bools, ns for datetime/timespan; otherwise null. */
export function toRealSql(a: SqlArg): string {
  switch (a.type) {
    case 'real':
      return a.sql;
    case 'long':
    case 'timespan':
      return `CAST(${a.sql} AS DOUBLE)`;
    case 'bool':
      return `CAST(CAST(${a.sql} AS INTEGER) AS DOUBLE)`;
    case 'datetime':
      return `CAST(epoch_ns(${a.sql}) AS DOUBLE)`;
    case 'string':
      return `TRY_CAST(trim(${a.sql}) AS DOUBLE)`;
    case 'dynamic':
      return `TRY_CAST(json_extract_string(${a.sql}, '$') AS DOUBLE)`;
  }
}

/** toint()/tolong(): reals truncate; strings must be plain decimal digits (no hex, no fraction). */
export function toLongSql(a: SqlArg): string {
  switch (a.type) {
    case 'long':
    case 'timespan':
      return a.sql;
    case 'real':
      return `TRY_CAST(trunc(${a.sql}) AS BIGINT)`;
    case 'bool':
      return `CAST(${a.sql} AS BIGINT)`;
    case 'datetime':
      return `epoch_ns(${a.sql})`;
    case 'string':
      return `(CASE WHEN regexp_full_match(${a.sql}, '[+-]?[0-9]+') THEN TRY_CAST(${a.sql} AS BIGINT) END)`;
    case 'dynamic': {
      const s = `json_extract_string(${a.sql}, '$')`;
      return `(CASE WHEN json_type(${a.sql}) IN ('BIGINT', 'UBIGINT') THEN TRY_CAST(${s} AS BIGINT) WHEN json_type(${a.sql}) = 'DOUBLE' THEN TRY_CAST(trunc(CAST(${s} AS DOUBLE)) AS BIGINT) WHEN regexp_full_match(${s}, '[+-]?[0-9]+') THEN TRY_CAST(${s} AS BIGINT) END)`;
    }
  }
}

/** tobool(): numbers are true when not 0; strings 1/t/T/TRUE/true/True and 0/f/F/FALSE/false/False. */
export function toBoolSql(a: SqlArg): string {
  switch (a.type) {
    case 'bool':
      return a.sql;
    case 'long':
    case 'real':
    case 'timespan':
      return `(${a.sql} <> 0)`;
    case 'datetime':
      return `(epoch_ns(${a.sql}) <> 0)`;
    case 'string':
      return `(CASE WHEN ${a.sql} IN ('1', 't', 'T', 'TRUE', 'true', 'True') THEN TRUE WHEN ${a.sql} IN ('0', 'f', 'F', 'FALSE', 'false', 'False') THEN FALSE END)`;
    case 'dynamic':
      return `(CASE json_extract_string(${a.sql}, '$') WHEN 'true' THEN TRUE WHEN 'false' THEN FALSE END)`;
  }
}

/** todatetime(): numbers are ns since the epoch; strings are ISO 8601 / RFC 3339 (and a few common forms). */
export function toDatetimeSql(a: SqlArg): string {
  switch (a.type) {
    case 'datetime':
      return a.sql;
    case 'long':
      return `make_timestamp_ns(${a.sql})`;
    case 'real':
      return `make_timestamp_ns(TRY_CAST(${a.sql} AS BIGINT))`;
    case 'string':
      return `ferry_parse_datetime(${a.sql})`;
    case 'dynamic':
      return `ferry_parse_datetime(json_extract_string(${a.sql}, '$'))`;
    default:
      return `CAST(NULL AS TIMESTAMP_NS)`;
  }
}

/** totimespan(): numbers are ns; strings use Go duration syntax. */
export function toTimespanSql(a: SqlArg): string {
  switch (a.type) {
    case 'timespan':
    case 'long':
      return a.sql;
    case 'real':
      return `TRY_CAST(${a.sql} AS BIGINT)`;
    case 'string':
      return `ferry_parse_go_duration(${a.sql})`;
    case 'dynamic':
      return `ferry_parse_go_duration(json_extract_string(${a.sql}, '$'))`;
    default:
      return `CAST(NULL AS BIGINT)`;
  }
}

/** A value as JSON (dynamic). */
export function toDynamicSql(a: SqlArg): string {
  switch (a.type) {
    case 'dynamic':
      return a.sql;
    case 'datetime':
      return `to_json(ferry_rfc3339(${a.sql}))`;
    case 'timespan':
      return `to_json(ferry_go_duration(${a.sql}))`;
    default:
      return `to_json(${a.sql})`;
  }
}

/** Converts an argument to a target type (the implicit coercions of the binder). */
export function convertSql(a: SqlArg, to: AplType): string {
  if (a.type === to) return a.sql;
  switch (to) {
    case 'string':
      return asStringSql(a);
    case 'real':
      return toRealSql(a);
    case 'long':
      return toLongSql(a);
    case 'bool':
      return toBoolSql(a);
    case 'datetime':
      return toDatetimeSql(a);
    case 'timespan':
      return toTimespanSql(a);
    case 'dynamic':
      return toDynamicSql(a);
  }
}

/** Escapes text for a LIKE/ILIKE pattern with ESCAPE '\'. */
export function likeEscape(s: string): string {
  return s.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** Escapes text for use inside an RE2 regular expression. */
export function regexEscape(s: string): string {
  return s.replace(/[\\^$.|?*+()[\]{}]/g, (c) => `\\${c}`);
}

/**
 * Binds values once for an expression that reads them many times. DuckDB evaluates an expression a lambda
 * captures again for every element (a series read from JSON once per element is quadratic), and a macro
 * or a repeated expression again at each mention; a lambda's parameter is evaluated once.
 */
export function bindSql(values: Record<string, string>, body: (bound: Record<string, string>) => string): string {
  const names = Object.keys(values);
  const struct = `{${names.map((n) => `'${n}': ${values[n]}`).join(', ')}}`;
  const refs = Object.fromEntries(names.map((n) => [n, `__b.${n}`]));
  return `(list_transform([${struct}], __b -> ${body(refs)}))[1]`;
}
