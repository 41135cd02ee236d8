/**
 * APL scalar functions (apl.md 2.3, Appendix A) and their DuckDB translations. Conversion rules follow the
 * Go semantics of Axiom's backend (apl.md 4.2); see ./sql.ts.
 */
import type { ArgInfo, ScalarFunction } from './catalog.js';
import { castTo, checkConvertible, conversion, fail, fixed, unify } from './define.js';
import {
  constantNumber,
  JSON_QUOTING,
  longest,
  regexReplacedBytes,
  stringReplacedBytes,
  together,
} from './made-bytes.js';
import { ARRAY_FUNCTIONS } from './arrays.js';
import { GENAI_FUNCTIONS } from './genai.js';
import { HASH_FUNCTIONS } from './hash.js';
import { IP_FUNCTIONS } from './ip.js';
import { SERIES_FUNCTIONS } from './series.js';
import { queryParamsSql, STRING_FUNCTIONS } from './strings.js';
import { MATH_FUNCTIONS } from './math.js';
import {
  asStringSql,
  toBoolSql,
  toDatetimeSql,
  toDynamicSql,
  toLongSql,
  toRealSql,
  toStringSql,
  toTimespanSql,
  type SqlArg,
} from './sql.js';
import { isNumeric, type AplType } from '../types.js';
import { lookupTable } from '../../util/lookup.js';

/** Rounds toward −∞ to a multiple of `size`; datetimes are anchored at 0001-01-01 (Monday weeks), as Go's Truncate. */
export function binSql(v: SqlArg, size: SqlArg): string {
  if (v.type === 'datetime') {
    const s = size.sql;
    // Offset of 0001-01-01T00:00:00Z from the Unix epoch, reduced mod the size so it never overflows.
    const anchorMod =
      size.constant && typeof size.constant.value === 'bigint' && size.constant.value > 0n
        ? `CAST(${mod(-62135596800n * 1_000_000_000n, size.constant.value)} AS BIGINT)`
        : `CAST(((-62135596800000000000::HUGEINT % ${s}) + ${s}) % ${s} AS BIGINT)`;
    const e = `epoch_ns(${v.sql})`;
    return `(CASE WHEN ${s} > 0 THEN make_timestamp_ns(${e} - (((${e} - ${anchorMod}) % ${s}) + ${s}) % ${s}) END)`;
  }
  if (v.type === 'long' || v.type === 'timespan') {
    const s = size.type === 'long' || size.type === 'timespan' ? size.sql : `CAST(${size.sql} AS BIGINT)`;
    return `(CASE WHEN ${s} > 0 THEN ${v.sql} - ((${v.sql} % ${s}) + ${s}) % ${s} END)`;
  }
  const x = castTo(v, 'real');
  return `(CASE WHEN ${size.sql} > 0 THEN floor(${x} / ${size.sql}) * ${size.sql} END)`;
}

function mod(a: bigint, m: bigint): bigint {
  return ((a % m) + m) % m;
}

function binReturns(args: ArgInfo[]): AplType {
  const [v, size] = args as [ArgInfo, ArgInfo];
  if (!isNumeric(size.type) && size.type !== 'timespan')
    fail(`the bin size must be a number or a timespan, not ${size.type}`);
  if (v.type === 'datetime') {
    if (size.type !== 'timespan') fail('bin() of a datetime needs a timespan size, such as 1h');
    return 'datetime';
  }
  if (v.type === 'timespan') return 'timespan';
  if (v.type === 'long' && size.type === 'long') return 'long';
  if (isNumeric(v.type) || v.type === 'dynamic' || v.type === 'string') return 'real';
  return fail(`bin() is not defined for ${v.type}`);
}

/** The date part functions: DuckDB date_part names. */
function datePart(part: string): ScalarFunction {
  return fixed('long', ['datetime'], ([d]) => `CAST(date_part('${part}', ${d}) AS BIGINT)`);
}

/** startof... / endof... with an optional offset in units. */
function startOf(unit: 'day' | 'week' | 'month' | 'year', end: boolean): ScalarFunction {
  return {
    minArgs: 1,
    maxArgs: 2,
    returns(args) {
      checkConvertible(args[0]!, 'datetime', 0);
      if (args[1]) checkConvertible(args[1], 'long', 1);
      return 'datetime';
    },
    sql([d, off]) {
      const dt = castTo(d!, 'datetime');
      // DuckDB weeks start on Monday; APL's startofweek is Sunday.
      const base =
        unit === 'week'
          ? `CAST(date_trunc('day', ${dt}) - to_days(CAST(date_part('dow', ${dt}) AS INTEGER)) AS TIMESTAMP_NS)`
          : `CAST(date_trunc('${unit}', ${dt}) AS TIMESTAMP_NS)`;
      const interval =
        unit === 'week' ? 'to_weeks' : unit === 'day' ? 'to_days' : unit === 'month' ? 'to_months' : 'to_years';
      const n = off ? `CAST(${castTo(off, 'long')} AS INTEGER)` : '0';
      const start = `CAST(${base} + ${interval}(${n}) AS TIMESTAMP_NS)`;
      if (!end) return start;
      return `make_timestamp_ns(epoch_ns(CAST(${start} + ${interval}(1) AS TIMESTAMP_NS)) - 1)`;
    },
  };
}

const DATETIME_PARTS: Record<string, string> = lookupTable({
  year: 'year',
  quarter: 'quarter',
  month: 'month',
  week: 'week',
  day: 'day',
  hour: 'hour',
  minute: 'minute',
  second: 'second',
  millisecond: 'millisecond',
  microsecond: 'microsecond',
  nanosecond: 'nanosecond',
});

function partName(a: SqlArg): string {
  const v = a.constant?.value;
  const p = typeof v === 'string' ? DATETIME_PARTS[v.toLowerCase()] : undefined;
  if (!p) fail(`the date part must be a constant, one of ${Object.keys(DATETIME_PARTS).join(', ')}`);
  return p!;
}

/** replace_regex(regex, rewrite, text), also named replace: `$1` in the rewrite is the first group. */
const REPLACE_REGEX: ScalarFunction = {
  ...fixed(
    'string',
    ['string', 'string', 'string'],
    ([re, r, s]) => `regexp_replace(${s}, ${re}, regexp_replace(${r}, '\\$(\\d)', '\\\\\\1', 'g'), 'g')`,
  ),
  madeBytes: regexReplacedBytes,
};

export const SCALAR_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  ...MATH_FUNCTIONS,
  ...ARRAY_FUNCTIONS,
  ...STRING_FUNCTIONS,
  ...IP_FUNCTIONS,
  ...SERIES_FUNCTIONS,
  ...GENAI_FUNCTIONS,
  ...HASH_FUNCTIONS,
  // ---- rounding
  bin: { minArgs: 2, maxArgs: 2, resultName: 'argument', returns: binReturns, sql: ([v, s]) => binSql(v!, s!) },
  // bin() by the size the query's time range gives (at most 100 buckets).
  bin_auto: {
    minArgs: 1,
    maxArgs: 1,
    reads: 'binAuto',
    resultName: 'argument',
    returns: ([, v]) => (v!.type === 'datetime' ? 'datetime' : fail('it bins a datetime, such as _time')),
    sql: ([size, v]) => binSql(v!, size!),
  },
  floor: {
    minArgs: 1,
    maxArgs: 2,
    resultName: 'argument',
    returns: (a) => (a[1] ? binReturns(a) : a[0]!.type === 'long' ? 'long' : 'real'),
    sql: ([v, s]) => (s ? binSql(v!, s) : v!.type === 'long' ? v!.sql : `floor(${castTo(v!, 'real')})`),
  },
  ceiling: {
    minArgs: 1,
    maxArgs: 1,
    returns: (a) => (a[0]!.type === 'long' ? 'long' : 'real'),
    sql: ([v]) => (v!.type === 'long' ? v!.sql : `ceiling(${castTo(v!, 'real')})`),
  },
  round: {
    minArgs: 1,
    maxArgs: 2,
    returns: (a) => (a[0]!.type === 'long' && !a[1] ? 'long' : 'real'),
    sql: ([v, p]) =>
      v!.type === 'long' && !p
        ? v!.sql
        : `round(${castTo(v!, 'real')}, ${p ? `CAST(${castTo(p, 'long')} AS INTEGER)` : '0'})`,
  },
  // ---- conditional
  iff: {
    minArgs: 3,
    maxArgs: 3,
    returns: (a) => {
      checkConvertible(a[0]!, 'bool', 0);
      return unify([a[1]!.type, a[2]!.type], 'iff()');
    },
    sql: ([c, a, b]) => {
      const t = unify([a!.type, b!.type], 'iff()');
      return `(CASE WHEN ${castTo(c!, 'bool')} THEN ${castTo(a!, t)} ELSE ${castTo(b!, t)} END)`;
    },
    madeBytes: ([, a, b]) => longest([a, b]),
  },
  case: {
    minArgs: 3,
    maxArgs: 1001,
    returns: (a) => {
      if (a.length % 2 === 0) fail('case() takes pairs of (predicate, value) and a final else value');
      return unify(
        a.filter((_, i) => i % 2 === 1 || i === a.length - 1).map((x) => x.type),
        'case()',
      );
    },
    sql: (a) => {
      const t = unify(
        a.filter((_, i) => i % 2 === 1 || i === a.length - 1).map((x) => x.type),
        'case()',
      );
      let s = 'CASE';
      for (let i = 0; i + 1 < a.length; i += 2) s += ` WHEN ${castTo(a[i]!, 'bool')} THEN ${castTo(a[i + 1]!, t)}`;
      return `(${s} ELSE ${castTo(a[a.length - 1]!, t)} END)`;
    },
    madeBytes: (a) => longest(a.filter((_, i) => i % 2 === 1 || i === a.length - 1)),
  },
  // ---- conversion
  tostring: conversion('string', toStringSql),
  toint: conversion('long', toLongSql),
  tolong: conversion('long', toLongSql),
  toreal: conversion('real', toRealSql),
  todouble: conversion('real', toRealSql),
  tobool: conversion('bool', toBoolSql),
  toboolean: conversion('bool', toBoolSql),
  todatetime: conversion('datetime', toDatetimeSql),
  totimespan: conversion('timespan', toTimespanSql),
  todynamic: {
    minArgs: 1,
    maxArgs: 1,
    resultName: 'argument',
    returns: () => 'dynamic',
    sql: ([a]) => (a!.type === 'string' ? `TRY_CAST(${a!.sql} AS JSON)` : toDynamicSql(a!)),

    madeBytes: ([a]) => a!.bytes + 2,
  },
  // parse_json returns the original string when it is not JSON (apl.md 4.2).
  parse_json: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'dynamic',
    sql: ([a]) =>
      a!.type === 'string' ? `COALESCE(TRY_CAST(${a!.sql} AS JSON), to_json(${a!.sql}))` : toDynamicSql(a!),

    // Counted as the text itself: a text that is not JSON comes back quoted, where only a quote, a
    // backslash or a control character takes more than its byte, and reads back as the text it quoted.
    madeBytes: ([a]) => a!.bytes + 2,
  },
  // ---- strings
  isempty: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'bool',
    sql: ([a]) => (a!.type === 'string' ? `(${a!.sql} IS NULL OR ${a!.sql} = '')` : `(${a!.sql} IS NULL)`),
  },
  isnotempty: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'bool',
    sql: ([a]) => (a!.type === 'string' ? `(${a!.sql} IS NOT NULL AND ${a!.sql} <> '')` : `(${a!.sql} IS NOT NULL)`),
  },
  isnull: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'bool',
    sql: ([a]) =>
      a!.type === 'dynamic' ? `(${a!.sql} IS NULL OR json_type(${a!.sql}) = 'NULL')` : `(${a!.sql} IS NULL)`,
  },
  isnotnull: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'bool',
    sql: ([a]) =>
      a!.type === 'dynamic' ? `(${a!.sql} IS NOT NULL AND json_type(${a!.sql}) <> 'NULL')` : `(${a!.sql} IS NOT NULL)`,
  },
  strcat: { minArgs: 1, maxArgs: 64, returns: () => 'string', sql: (a) => `concat(${a.map(toStringSql).join(', ')})` },
  strcat_delim: {
    minArgs: 2,
    maxArgs: 65,
    returns: () => 'string',
    sql: ([d, ...a]) => `concat_ws(${toStringSql(d!)}, ${a.map(toStringSql).join(', ')})`,
    madeBytes: ([d, ...a]) => together(a) + d!.bytes * Math.max(0, a.length - 1),
  },
  strlen: { minArgs: 1, maxArgs: 1, returns: () => 'long', sql: ([a]) => `CAST(length(${asStringSql(a!)}) AS BIGINT)` },
  string_size: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'long',
    sql: ([a]) => `CAST(strlen(${asStringSql(a!)}) AS BIGINT)`,
  },
  tolower: { minArgs: 1, maxArgs: 1, returns: () => 'string', sql: ([a]) => `lower(${asStringSql(a!)})` },
  toupper: { minArgs: 1, maxArgs: 1, returns: () => 'string', sql: ([a]) => `upper(${asStringSql(a!)})` },
  substring: {
    minArgs: 2,
    maxArgs: 3,
    returns: () => 'string',
    sql: ([s, start, len]) => {
      const st = `GREATEST(${castTo(start!, 'long')}, 0) + 1`;
      return len
        ? `COALESCE(substring(${asStringSql(s!)}, ${st}, GREATEST(${castTo(len, 'long')}, 0)), '')`
        : `COALESCE(substring(${asStringSql(s!)}, ${st}), '')`;
    },
    // A character takes four bytes at most.
    madeBytes: ([s, , len]) => Math.min(s!.bytes, 4 * Math.max(0, constantNumber(len) ?? Infinity)),
  },
  coalesce: {
    minArgs: 1,
    maxArgs: 64,
    returns: (a) =>
      unify(
        a.map((x) => x.type),
        'coalesce()',
      ),
    sql: (a) => {
      const t = unify(
        a.map((x) => x.type),
        'coalesce()',
      );
      // For strings the first non-empty value wins (apl.md 4.1).
      const parts = a.map((x, i) =>
        t === 'string' && i < a.length - 1 ? `NULLIF(${castTo(x, t)}, '')` : castTo(x, t),
      );
      return `COALESCE(${parts.join(', ')})`;
    },
    madeBytes: longest,
  },
  trim: fixed('string', ['string', 'string'], ([cut, s]) => `trim(${s}, ${cut})`),
  trim_start: fixed('string', ['string', 'string'], ([cut, s]) => `ltrim(${s}, ${cut})`),
  trim_end: fixed('string', ['string', 'string'], ([cut, s]) => `rtrim(${s}, ${cut})`),
  trim_space: fixed('string', ['string'], ([s]) => `trim(${s})`),
  reverse: fixed('string', ['string'], ([s]) => `reverse(${s})`),
  replace_string: {
    ...fixed('string', ['string', 'string', 'string'], ([l, r, s]) => `replace(${s}, ${l}, ${r})`),
    madeBytes: stringReplacedBytes,
  },
  replace_regex: REPLACE_REGEX,
  replace: REPLACE_REGEX,
  extract: {
    minArgs: 3,
    maxArgs: 3,
    returns: () => 'string',
    sql: ([re, g, s]) =>
      `NULLIF(regexp_extract(${asStringSql(s!)}, ${asStringSql(re!)}, CAST(${castTo(g!, 'long')} AS INTEGER)), '')`,
    madeBytes: ([, , s]) => s!.bytes,
  },
  countof: fixed(
    'long',
    ['string', 'string'],
    ([l, s]) => `CAST((length(${s}) - length(replace(${s}, ${l}, ''))) // GREATEST(length(${l}), 1) AS BIGINT)`,
  ),
  split: {
    ...fixed('dynamic', ['string', 'string'], ([s, d]) => `to_json(string_split(${s}, ${d}))`),
    shape: 'array',
    elementBytes: ([s]) => JSON_QUOTING * s!.bytes + 2,
  },
  url_encode: { ...fixed('string', ['string'], ([s]) => `url_encode(${s})`), madeBytes: ([s]) => 3 * s!.bytes },
  url_decode: fixed('string', ['string'], ([s]) => `url_decode(${s})`),
  base64_encode_tostring: {
    ...fixed('string', ['string'], ([s]) => `to_base64(encode(${s}))`),
    madeBytes: ([s]) => 4 * Math.ceil(s!.bytes / 3),
  },
  base64_decode_tostring: fixed('string', ['string'], ([s]) => `TRY(decode(from_base64(${s})))`),
  gettype: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'string',
    sql: ([a]) => {
      const name: Record<AplType, string> = {
        string: 'string',
        long: 'long',
        real: 'real',
        bool: 'bool',
        datetime: 'datetime',
        timespan: 'timespan',
        dynamic: 'dynamic',
      };
      if (a!.type !== 'dynamic') return `(CASE WHEN ${a!.sql} IS NULL THEN 'null' ELSE '${name[a!.type]}' END)`;
      return `(CASE json_type(${a!.sql}) WHEN 'ARRAY' THEN 'array' WHEN 'OBJECT' THEN 'dictionary' WHEN 'VARCHAR' THEN 'string' WHEN 'BIGINT' THEN 'long' WHEN 'UBIGINT' THEN 'long' WHEN 'DOUBLE' THEN 'real' WHEN 'BOOLEAN' THEN 'bool' ELSE 'null' END)`;
    },
  },
  // ---- datetime
  // One `now` for the whole query: with constant offsets both fold to timestamp constants.
  now: {
    minArgs: 0,
    maxArgs: 1,
    reads: 'now',
    returns: ([, off]) => timeOffset(off),
    fold: ([now, off]) => (now === null || off === null ? null : (now as bigint) + ((off as bigint | undefined) ?? 0n)),
    sql: ([now, off]) => (off ? `make_timestamp_ns(epoch_ns(${now!.sql}) + ${off.sql})` : now!.sql),
  },
  ago: {
    minArgs: 1,
    maxArgs: 1,
    reads: 'now',
    returns: ([, off]) => timeOffset(off),
    fold: ([now, off]) => (now === null || off === null ? null : (now as bigint) - (off as bigint)),
    sql: ([now, off]) => `make_timestamp_ns(epoch_ns(${now!.sql}) - ${off!.sql})`,
  },
  datetime_add: {
    minArgs: 3,
    maxArgs: 3,
    returns: () => 'datetime',
    sql: ([p, n, d]) => {
      const part = partName(p!);
      const dt = castTo(d!, 'datetime');
      const k = castTo(n!, 'long');
      const fixedNs: Record<string, bigint> = {
        week: 604800000000000n,
        day: 86400000000000n,
        hour: 3600000000000n,
        minute: 60000000000n,
        second: 1000000000n,
        millisecond: 1000000n,
        microsecond: 1000n,
        nanosecond: 1n,
      };
      if (fixedNs[part]) return `make_timestamp_ns(epoch_ns(${dt}) + ${k} * ${fixedNs[part]})`;
      const months = part === 'year' ? `${k} * 12` : part === 'quarter' ? `${k} * 3` : k;
      return `CAST(${dt} + to_months(CAST(${months} AS INTEGER)) AS TIMESTAMP_NS)`;
    },
  },
  // DuckDB's date_diff has no nanosecond part: that one is the difference of the epoch nanoseconds.
  datetime_diff: {
    minArgs: 3,
    maxArgs: 3,
    returns: () => 'long',
    sql: ([p, a, b]) => {
      const [x, y] = [castTo(a!, 'datetime'), castTo(b!, 'datetime')];
      const part = partName(p!);
      if (part === 'nanosecond') return `(epoch_ns(${x}) - epoch_ns(${y}))`;
      return `CAST(date_diff('${part}', ${y}, ${x}) AS BIGINT)`;
    },
  },
  // Parts below the second count within the second (KQL), where DuckDB's count within the minute.
  datetime_part: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'long',
    sql: ([p, d]) => {
      const dt = castTo(d!, 'datetime');
      const part = partName(p!);
      const perUnit = { millisecond: 1_000_000, microsecond: 1_000, nanosecond: 1 }[part as 'millisecond'];
      if (perUnit) return `CAST((((epoch_ns(${dt}) % 1000000000) + 1000000000) % 1000000000) // ${perUnit} AS BIGINT)`;
      return `CAST(date_part('${part}', ${dt}) AS BIGINT)`;
    },
  },
  hourofday: datePart('hour'),
  dayofmonth: datePart('day'),
  dayofyear: datePart('doy'),
  getmonth: datePart('month'),
  monthofyear: datePart('month'),
  getyear: datePart('year'),
  week_of_year: datePart('week'),
  // APL's dayofweek is an int 0–6 with Sunday = 0 (apl.md 2.3), DuckDB's dow exactly.
  dayofweek: datePart('dow'),
  startofday: startOf('day', false),
  startofweek: startOf('week', false),
  startofmonth: startOf('month', false),
  startofyear: startOf('year', false),
  endofday: startOf('day', true),
  endofweek: startOf('week', true),
  endofmonth: startOf('month', true),
  endofyear: startOf('year', true),
  unixtime_seconds_todatetime: epochToDatetime(1_000_000_000),
  unixtime_milliseconds_todatetime: epochToDatetime(1_000_000),
  unixtime_microseconds_todatetime: epochToDatetime(1_000),
  unixtime_nanoseconds_todatetime: fixed('datetime', ['long'], ([n]) => `make_timestamp_ns(${n})`),
  // ---- math
  abs: {
    minArgs: 1,
    maxArgs: 1,
    returns: (a) => (a[0]!.type === 'long' || a[0]!.type === 'timespan' ? a[0]!.type : 'real'),
    sql: ([a]) => `abs(${isNumeric(a!.type) || a!.type === 'timespan' ? a!.sql : castTo(a!, 'real')})`,
  },
  sqrt: fixed('real', ['real'], ([x]) => `(CASE WHEN ${x} >= 0 THEN sqrt(${x}) END)`),
  pow: fixed('real', ['real', 'real'], ([x, y]) => `pow(${x}, ${y})`),
  log: fixed('real', ['real'], ([x]) => `(CASE WHEN ${x} > 0 THEN ln(${x}) END)`),
  log10: fixed('real', ['real'], ([x]) => `(CASE WHEN ${x} > 0 THEN log10(${x}) END)`),
  log2: fixed('real', ['real'], ([x]) => `(CASE WHEN ${x} > 0 THEN log2(${x}) END)`),
  exp: fixed('real', ['real'], ([x]) => `exp(${x})`),
  pi: fixed('real', [], () => 'pi()'),
  isnan: fixed('bool', ['real'], ([x]) => `isnan(${x})`),
  isinf: fixed('bool', ['real'], ([x]) => `isinf(${x})`),
  isfinite: fixed('bool', ['real'], ([x]) => `isfinite(${x})`),
  sign: fixed('real', ['real'], ([x]) => `sign(${x})`),
  not: fixed('bool', ['bool'], ([x]) => `(NOT ${x})`),
  max_of: {
    minArgs: 2,
    maxArgs: 64,
    returns: (a) =>
      unify(
        a.map((x) => x.type),
        'max_of()',
      ),
    sql: (a) =>
      `GREATEST(${a
        .map((x) =>
          castTo(
            x,
            unify(
              a.map((y) => y.type),
              'max_of()',
            ),
          ),
        )
        .join(', ')})`,
  },
  min_of: {
    minArgs: 2,
    maxArgs: 64,
    returns: (a) =>
      unify(
        a.map((x) => x.type),
        'min_of()',
      ),
    sql: (a) =>
      `LEAST(${a
        .map((x) =>
          castTo(
            x,
            unify(
              a.map((y) => y.type),
              'min_of()',
            ),
          ),
        )
        .join(', ')})`,
  },
  // ---- arrays and bags
  array_length: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'long',
    sql: ([a]) =>
      `(CASE WHEN json_type(${toDynamicSql(a!)}) = 'ARRAY' THEN CAST(json_array_length(${toDynamicSql(a!)}) AS BIGINT) END)`,
  },
  len: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'long',
    sql: ([a]) =>
      a!.type === 'string'
        ? `CAST(length(${a!.sql}) AS BIGINT)`
        : `(CASE WHEN json_type(${toDynamicSql(a!)}) = 'ARRAY' THEN CAST(json_array_length(${toDynamicSql(a!)}) AS BIGINT) END)`,
  },
  pack_array: {
    shape: 'array',
    minArgs: 0,
    maxArgs: 64,
    returns: () => 'dynamic',
    sql: (a) => `json_array(${a.map(jsonArg).join(', ')})`,
  },
  bag_pack: { shape: 'dictionary', minArgs: 0, maxArgs: 128, returns: packReturns, sql: packSql },
  pack: { shape: 'dictionary', minArgs: 0, maxArgs: 128, returns: packReturns, sql: packSql },
  pack_dictionary: { shape: 'dictionary', minArgs: 0, maxArgs: 128, returns: packReturns, sql: packSql },
  bag_keys: {
    shape: 'array',
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'dynamic',
    sql: ([a]) => `to_json(json_keys(${toDynamicSql(a!)}))`,
  },
  array_concat: {
    shape: 'array',
    minArgs: 1,
    maxArgs: 64,
    returns: () => 'dynamic',
    sql: (a) => `to_json(flatten([${a.map((x) => `CAST(${toDynamicSql(x)} AS JSON[])`).join(', ')}]))`,
  },
  array_sum: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'real',
    sql: ([a]) => `list_sum(CAST(${toDynamicSql(a!)} AS DOUBLE[]))`,
  },
  array_index_of: {
    minArgs: 2,
    maxArgs: 2,
    returns: () => 'long',
    sql: ([a, v]) =>
      `CAST(COALESCE(list_position(CAST(${toDynamicSql(a!)} AS JSON[]), ${toDynamicSql(v!)}), 0) - 1 AS BIGINT)`,
  },
  array_slice: {
    shape: 'array',
    minArgs: 3,
    maxArgs: 3,
    returns: () => 'dynamic',
    sql: ([a, s, e]) =>
      `to_json(list_slice(CAST(${toDynamicSql(a!)} AS JSON[]), ${castTo(s!, 'long')} + 1, ${castTo(e!, 'long')} + 1))`,
  },
  extract_all: {
    shape: 'array',
    minArgs: 2,
    maxArgs: 3,
    returns: () => 'dynamic',
    sql: (a) => {
      const [re, groups, text] = a.length === 3 ? a : [a[0], undefined, a[1]];
      const reText = typeof re!.constant?.value === 'string' ? re!.constant.value : undefined;
      // Capture groups of a constant pattern: with one, an array of its matches; with several, an array of arrays.
      const n =
        reText === undefined ? 1 : (reText.match(/\((?!\?)/g) ?? []).length + (reText.match(/\(\?P?</g) ?? []).length;
      if (
        groups &&
        !(
          Array.isArray(groups.constant?.value) &&
          (groups.constant!.value as unknown[]).every((g) => Number.isInteger(g) && (g as number) >= 0)
        )
      ) {
        fail('the capture groups must be a constant array of group numbers, such as dynamic([1, 2])');
      }
      const wanted = groups ? (groups.constant!.value as number[]) : Array.from({ length: n }, (_, i) => i + 1);
      const s = asStringSql(text!);
      const pattern = asStringSql(re!);
      if (wanted.length <= 1) return `to_json(regexp_extract_all(${s}, ${pattern}, ${wanted[0] ?? 0}))`;
      return `to_json(list_transform(regexp_extract_all(${s}, ${pattern}, 0), m -> [${wanted.map((g) => `regexp_extract(m, ${pattern}, ${g})`).join(', ')}]))`;
    },
    // Each match (one at each position, if the expression may match nothing) gives each group asked for,
    // at most the text quoted as JSON strings.
    madeBytes: (a) => {
      const [groups, text] = a.length === 3 ? [a[1], a[2]] : [undefined, a[1]];
      const asked = groups ? Math.max(1, Math.ceil(groups.bytes / 2)) : 1;
      return asked * (JSON_QUOTING * text!.bytes + 4 * (text!.bytes + 1)) + 2;
    },
  },
  parse_url: {
    shape: 'dictionary',
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'dynamic',
    sql: ([u]) => {
      const re = `'^([a-zA-Z][a-zA-Z0-9+.-]*)://(?:([^:@/]*)(?::([^@/]*))?@)?([^:/?#]*)(?::([0-9]+))?([^?#]*)(?:\\?([^#]*))?(?:#(.*))?$'`;
      const s = asStringSql(u!);
      const g = (i: number) => `regexp_extract(${s}, ${re}, ${i})`;
      const params = queryParamsSql(g(7));
      return `(CASE WHEN regexp_matches(${s}, ${re}) THEN json_object('Scheme', ${g(1)}, 'Host', ${g(4)}, 'Port', ${g(5)}, 'Path', ${g(6)}, 'Username', ${g(2)}, 'Password', ${g(3)}, 'Query Parameters', ${params}, 'Fragment', ${g(8)}) END)`;
    },
  },
  format_bytes: {
    minArgs: 1,
    maxArgs: 3,
    returns: () => 'string',
    sql: ([v, p]) => {
      if (p && typeof p.constant?.value !== 'bigint') fail('the precision must be a whole number constant');
      const digits = p ? Number(p.constant!.value) : 0;
      const x = castTo(v!, 'real');
      const fmt = (div: string, unit: string) =>
        `format('{:.${Math.max(0, Math.min(digits, 10))}f} ${unit}', ${x} / ${div})`;
      return `(CASE WHEN ${x} IS NULL THEN NULL WHEN abs(${x}) < 1024 THEN ${fmt('1', 'Bytes')} WHEN abs(${x}) < 1048576 THEN ${fmt('1024', 'KB')}
        WHEN abs(${x}) < 1073741824 THEN ${fmt('1048576', 'MB')} WHEN abs(${x}) < 1099511627776 THEN ${fmt('1073741824', 'GB')}
        WHEN abs(${x}) < 1125899906842624 THEN ${fmt('1099511627776', 'TB')} ELSE ${fmt('1125899906842624', 'PB')} END)`;
    },
  },
  // ---- ip
});
SCALAR_FUNCTIONS.iif = SCALAR_FUNCTIONS.iff!;

/**
 * The names Axiom gives an unnamed call on a column (read from its language service): after the column for
 * these, by a rule of their own for a few, and `ColumnN` for every other function.
 */
const NAMED_AFTER_ARGUMENT = [
  'abs',
  'acos',
  'asin',
  'atan',
  'atan2',
  'ceiling',
  'cos',
  'exp',
  'exp10',
  'exp2',
  'format_bytes',
  'gamma',
  'log',
  'log10',
  'log2',
  'loggamma',
  'parse_bytes',
  'parse_csv',
  'parse_json',
  'parse_pair',
  'pow',
  'round',
  'sin',
  'split',
  'sqrt',
  'tan',
  'tohex',
];
const NAMED_BY_RULE: Record<string, (argument: string) => string> = lookupTable({
  len: (a) => `len_${a}`,
  strlen: (a) => `strlen_${a}`,
  string_size: (a) => `string_size_${a}`,
  array_sort_asc: (a) => `${a}_sorted`,
  array_sort_desc: (a) => `${a}_sorted`,
  gettype: (a) => `type_${a}`,
});
for (const name of NAMED_AFTER_ARGUMENT) SCALAR_FUNCTIONS[name]!.resultName = 'argument';
for (const [name, rule] of Object.entries(NAMED_BY_RULE)) SCALAR_FUNCTIONS[name]!.resultName = rule;
// extend-valid's test of a value (the binder builds it): a non-empty string, array or map; else tobool.
SCALAR_FUNCTIONS['valid#'] = {
  minArgs: 1,
  maxArgs: 1,
  returns: () => 'bool',
  sql: ([a]) => {
    const v = a!;
    if (v.type === 'string') return `COALESCE(${v.sql} <> '', FALSE)`;
    if (v.type === 'dynamic') {
      return `COALESCE(CASE json_type(${v.sql}) WHEN 'ARRAY' THEN json_array_length(${v.sql}) > 0 WHEN 'OBJECT' THEN len(json_keys(${v.sql})) > 0 WHEN 'VARCHAR' THEN json_extract_string(${v.sql}, '$') <> '' ELSE ${toBoolSql(v)} END, FALSE)`;
    }
    return `COALESCE(${toBoolSql(v)}, FALSE)`;
  },
};
// parse-kv's value of one key: the pattern's first group, or its second when the first (quoted) did not take part.
SCALAR_FUNCTIONS['parse_kv#'] = {
  minArgs: 3,
  maxArgs: 3,
  returns: () => 'string',
  sql: ([s, re, quoted]) =>
    quoted!.constant?.value
      ? `(CASE WHEN regexp_matches(${s!.sql}, ${re!.sql}) THEN COALESCE(NULLIF(regexp_extract(${s!.sql}, ${re!.sql}, 1), ''), regexp_extract(${s!.sql}, ${re!.sql}, 2)) END)`
      : `(CASE WHEN regexp_matches(${s!.sql}, ${re!.sql}) THEN regexp_extract(${s!.sql}, ${re!.sql}, 1) END)`,
};
// cursor_current(): the cursor of an event from its time and ingest sequence (the binder builds it;
// ferry_cursor is JavaScript, the engine's own encoding of cursors).
SCALAR_FUNCTIONS['cursor#'] = {
  minArgs: 2,
  maxArgs: 2,
  returns: () => 'string',
  sql: ([t, s]) => `ferry_cursor(epoch_ns(${t!.sql}), ${s!.sql})`,
};
// redact's masking of one string column (the binder builds it; ferry_redact is JavaScript, ./redact.ts).
SCALAR_FUNCTIONS['redact#'] = {
  minArgs: 2,
  maxArgs: 2,
  returns: () => 'string',
  sql: ([s, options]) => `ferry_redact(${s!.sql}, ${options!.sql})`,
};
// The text of a parse pattern's capture group; null when the pattern does not match (the binder builds it).
SCALAR_FUNCTIONS['parse_capture#'] = {
  minArgs: 3,
  maxArgs: 3,
  returns: () => 'string',
  sql: ([s, re, g]) =>
    `(CASE WHEN regexp_matches(${s!.sql}, ${re!.sql}) THEN regexp_extract(${s!.sql}, ${re!.sql}, ${String(g!.constant!.value)}) END)`,
};

/** Epoch numbers in a unit → datetime; whole numbers stay exact (a double would lose the nanoseconds). */
function epochToDatetime(nsPerUnit: number): ScalarFunction {
  return {
    minArgs: 1,
    maxArgs: 1,
    returns(args) {
      checkConvertible(args[0]!, 'real', 0);
      return 'datetime';
    },
    sql: ([n]) =>
      n!.type === 'long'
        ? `make_timestamp_ns(${n!.sql} * ${nsPerUnit})`
        : `make_timestamp_ns(CAST(round(${castTo(n!, 'real')} * ${nsPerUnit}) AS BIGINT))`,
  };
}

/** now()'s and ago()'s offset: a timespan (or a number of nanoseconds). */
function timeOffset(off: ArgInfo | undefined): AplType {
  if (off && off.type !== 'timespan' && off.type !== 'long')
    fail(`the offset must be a timespan, such as 1h, not ${off.type}`);
  return 'datetime';
}

function jsonArg(a: SqlArg): string {
  return toDynamicSql(a);
}

function packReturns(a: ArgInfo[]): AplType {
  if (a.length % 2 !== 0) fail('bag_pack() takes key, value pairs');
  a.forEach((k, i) => {
    if (i % 2 === 0 && k.type !== 'string') fail(`key ${i / 2 + 1} of bag_pack() must be a string`);
  });
  return 'dynamic';
}

function packSql(a: SqlArg[]): string {
  const parts: string[] = [];
  for (let i = 0; i + 1 < a.length; i += 2) parts.push(a[i]!.sql, jsonArg(a[i + 1]!));
  return `json_object(${parts.join(', ')})`;
}
