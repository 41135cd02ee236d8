/**
 * SQL expressions that turn an event's time value into TIMESTAMP_NS inside DuckDB, so that no event is
 * parsed in JavaScript: the store's ingest and APL's todatetime() read time the same way. Pure string builders.
 *
 * Without timestamp-format: JSON numbers and numeric strings are epoch values whose unit is guessed from the
 * magnitude (|n| < 1e11 seconds, < 1e14 milliseconds, < 1e17 microseconds, else nanoseconds: the cut-offs keep
 * every unit unambiguous between 1973 and 5138); other strings are read as RFC 3339 / ISO 8601 with any
 * offset, nanosecond precision kept. With timestamp-format: a Go reference layout ("2/Jan/2006:15:04:05
 * -0700"), or one of the names RFC3339, RFC3339Nano, unix, unixms, unixus, unixns.
 */
import { sqlText } from './quote.js';
import { lookupTable } from '../util/lookup.js';

/** Go layout tokens, longest first so that "January" wins over "Jan" and "2006" over "2". */
const GO_TOKENS: [string, string][] = [
  ['January', '%B'],
  ['Monday', '%A'],
  ['Jan', '%b'],
  ['Mon', '%a'],
  ['2006', '%Y'],
  ['Z07:00', '%z'],
  ['-07:00', '%z'],
  ['Z0700', '%z'],
  ['-0700', '%z'],
  ['-07', '%z'],
  ['MST', '%Z'],
  ['.000000000', '.%n'],
  ['.999999999', '.%n'],
  ['.000000', '.%f'],
  ['.999999', '.%f'],
  ['.000', '.%g'],
  ['.999', '.%g'],
  [',000000000', ',%n'],
  [',000000', ',%f'],
  [',000', ',%g'],
  ['002', '%j'],
  ['01', '%m'],
  ['02', '%d'],
  ['_2', '%-d'],
  ['03', '%I'],
  ['04', '%M'],
  ['05', '%S'],
  ['06', '%y'],
  ['15', '%H'],
  ['PM', '%p'],
  ['pm', '%p'],
  ['1', '%-m'],
  ['2', '%-d'],
  ['3', '%-I'],
  ['4', '%-M'],
  ['5', '%-S'],
];

/** Translates a Go reference layout into a DuckDB strptime format. Throws on a layout with no date or time. */
export function goLayoutToStrptime(layout: string): string {
  if (layout.includes('\u0000')) throw new Error('timestamp-format may not contain the NUL character (U+0000)');
  let out = '';
  let matched = 0;
  for (let i = 0; i < layout.length;) {
    const tok = GO_TOKENS.find(([go]) => layout.startsWith(go, i));
    if (tok) {
      out += tok[1];
      i += tok[0].length;
      matched++;
    } else {
      const ch = layout[i]!;
      out += ch === '%' ? '%%' : ch;
      i++;
    }
  }
  if (matched === 0)
    throw new Error(`timestamp-format "${layout}" is not a Go time layout (e.g. 2006-01-02T15:04:05Z07:00)`);
  return out;
}

/** The largest epoch in nanoseconds taken (2261-07-15; TIMESTAMP_NS ends in 2262). */
const NS_LIMIT = 9_200_000_000_000_000_000n;

const NAMED_LAYOUTS: Record<string, string> = lookupTable({
  RFC3339: 'rfc3339',
  RFC3339Nano: 'rfc3339',
  rfc3339: 'rfc3339',
  rfc3339nano: 'rfc3339',
  ISO8601: 'rfc3339',
  unix: 'unix',
  unixms: 'unixms',
  unixus: 'unixus',
  unixns: 'unixns',
  UnixDate: 'Mon Jan _2 15:04:05 MST 2006',
  RFC1123: 'Mon, 02 Jan 2006 15:04:05 MST',
  RFC1123Z: 'Mon, 02 Jan 2006 15:04:05 -0700',
  RFC822: '02 Jan 06 15:04 MST',
  RFC822Z: '02 Jan 06 15:04 -0700',
  Kitchen: '3:04PM',
});

/**
 * Macros the time expressions use; created when the store opens. TIMESTAMP_NS spans 1677..2262, so values
 * outside it become NULL (a reported failure) instead of overflowing the whole query.
 *
 * DuckDB copies a macro's argument wherever the body names it, nested macros multiply the copies, and the
 * planner works through every copy: each body names its argument as few times as it can, which is most of
 * an ingest batch's planning time (docs/benchmarks.md).
 */
export const TIME_MACROS = [
  // The unit of an epoch number, from its magnitude: seconds, milliseconds, microseconds or nanoseconds.
  `CREATE OR REPLACE MACRO ferry_epoch_unit(a) AS CASE WHEN a < 1e11 THEN 1000000000 WHEN a < 1e14 THEN 1000000
     WHEN a < 1e17 THEN 1000 ELSE 1 END`,
  'CREATE OR REPLACE MACRO ferry_epoch_auto(n) AS n * ferry_epoch_unit(abs(n))',
  `CREATE OR REPLACE MACRO ferry_ns_ts(s) AS CASE WHEN abs(s) <= ${NS_LIMIT}
     THEN make_timestamp_ns(s::BIGINT) END`,
];

/**
 * Epoch number → TIMESTAMP_NS. The number is read as DECIMAL(38, 9), which takes integers, decimals and
 * exponent notation ("1.7e9") exactly to the nanosecond; one beyond its range (10^29) is out of the
 * timestamp's range anyway and gives NULL. A TRY_CAST to DECIMAL that fails costs many times one to
 * DOUBLE, so DOUBLE screens out the values that are not numbers first (docs/benchmarks.md).
 */
function epochNs(valueExpr: string, scale: 'auto' | bigint): string {
  const n = `TRY_CAST(${valueExpr} AS DECIMAL(38, 9))`;
  const ts =
    scale === 'auto'
      ? `ferry_ns_ts(ferry_epoch_auto(${n}))`
      : // Bounded before the multiplication, which would otherwise overflow DECIMAL(38, 9) and fail the query.
        `CASE WHEN abs(${n}) <= ${NS_LIMIT / scale} THEN make_timestamp_ns((${n} * ${scale})::BIGINT) END`;
  return `CASE WHEN TRY_CAST(${valueExpr} AS DOUBLE) IS NOT NULL THEN ${ts} END`;
}

/**
 * @param valueExpr VARCHAR expression holding the raw value (json_extract_string: JSON strings unquoted,
 *                  numbers as their text, NULL when absent or JSON null).
 * @returns TIMESTAMP_NS expression, NULL when the value is absent or cannot be read.
 */
export function timeExpression(valueExpr: string, format?: string): string {
  const named = format ? NAMED_LAYOUTS[format] : undefined;
  const mode = format === undefined ? 'auto' : (named ?? format);
  switch (mode) {
    case 'auto':
      // RFC 3339 first: it is the common case, and no numeric string parses as a timestamp.
      return `COALESCE(TRY_CAST(${valueExpr} AS TIMESTAMP_NS), ${epochNs(valueExpr, 'auto')})`;
    case 'rfc3339':
      return `TRY_CAST(${valueExpr} AS TIMESTAMP_NS)`;
    case 'unix':
    case 'unixms':
    case 'unixus':
    case 'unixns':
      return epochNs(valueExpr, { unix: 1_000_000_000n, unixms: 1_000_000n, unixus: 1_000n, unixns: 1n }[mode]);
    default: {
      const fmt = goLayoutToStrptime(mode);
      // strptime's %z does not take "Z"; Go layouts with Z07:00 print Z for UTC.
      const input = fmt.includes('%z') ? `regexp_replace(${valueExpr}, 'Z$', '+00:00')` : valueExpr;
      return `TRY_CAST(try_strptime(${input}, ${sqlText(fmt)}) AS TIMESTAMP_NS)`;
    }
  }
}

/** Validates a timestamp-format up front so a bad layout is a 400, not a failure of every event. */
export function checkTimestampFormat(format: string): void {
  if (NAMED_LAYOUTS[format]) return;
  goLayoutToStrptime(format);
}
