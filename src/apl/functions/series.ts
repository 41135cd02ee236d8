/**
 * Time-series functions over dynamic arrays of numbers (what make-series and make_list produce).
 * Element-wise arithmetic, comparisons and statistics are DuckDB list expressions; filters, Fourier
 * transforms and fills, which loop over the series, are a JavaScript function registered with DuckDB
 * (service/query/series-functions.ts). A series is read as DOUBLE[]: elements that are not numbers are
 * null, and results that are not finite numbers (log of 0, 0/0) are null, as JSON cannot hold them.
 */
import { longest, SCALAR_TEXT_BYTES } from './made-bytes.js';
import type { ArgInfo, ScalarFunction } from './catalog.js';
import { castTo, fail } from './define.js';
import { bindSql, toDynamicSql, type SqlArg } from './sql.js';
import { DEADLINE_SQL } from '../../sql/deadline.js';
import { lookupTable } from '../../util/lookup.js';

/** A series as DOUBLE[], or null when the value is not an array. */
const nums = (a: SqlArg) => `TRY_CAST(${toDynamicSql(a)} AS DOUBLE[])`;

/** A number a series may hold: finite, else null. */
const finiteOrNull = (v: string) => `(CASE WHEN isfinite(${v}) THEN ${v} END)`;

const seriesResult: Pick<ScalarFunction, 'shape' | 'returns' | 'madeBytes'> = {
  shape: 'array',
  returns: () => 'dynamic',
  // An element for each of the longest argument's (each two bytes of it at least), a number written out in full.
  madeBytes: (args) => Math.ceil(longest(args) / 2) * (SCALAR_TEXT_BYTES + 2) + 2,
};

/** f applied to every element. */
function unary(f: (x: string) => string): ScalarFunction {
  return {
    ...seriesResult,
    minArgs: 1,
    maxArgs: 1,
    sql: ([a]) => `to_json(list_transform(${nums(a!)}, x -> ${finiteOrNull(f('x'))}))`,
  };
}

/** At least one operand of an element-wise operation must be a series; the other may be a number. */
function checkOperands(args: ArgInfo[]): void {
  if (!args.some((a) => a.type === 'dynamic')) fail('one of the operands must be a dynamic array (a series)');
  for (const a of args)
    if (a.type !== 'dynamic' && a.type !== 'long' && a.type !== 'real')
      fail(`a series operand must be an array or a number, not ${a.type}`);
}

/**
 * f over the elements at each position of two operands (series or numbers); the longer series sets the
 * length. The series are zipped rather than indexed from a lambda: a lambda that captures a list copies it
 * for every element of the chunk's lists, which made a few hundred rows of long series run out of memory.
 */
function binary(f: (x: string, y: string) => string, finite = true): ScalarFunction {
  return {
    ...seriesResult,
    minArgs: 2,
    maxArgs: 2,
    returns: (args) => {
      checkOperands(args);
      return 'dynamic';
    },
    sql: ([a, b]) => {
      const body = (v: string) => (finite ? finiteOrNull(v) : v);
      if (a!.type === 'dynamic' && b!.type === 'dynamic')
        return `to_json(list_transform(list_zip(${nums(a!)}, ${nums(b!)}), p -> ${body(f('p[1]', 'p[2]'))}))`;
      if (a!.type === 'dynamic')
        return `to_json(list_transform(${nums(a!)}, x -> ${body(f('x', castTo(b!, 'real')))}))`;
      return `to_json(list_transform(${nums(b!)}, y -> ${body(f(castTo(a!, 'real'), 'y'))}))`;
    },
  };
}

/** A number from a series; null unless it is a finite number. */
function scalar(sql: (args: SqlArg[]) => string, minArgs = 1, maxArgs = minArgs): ScalarFunction {
  return { minArgs, maxArgs, returns: () => 'real', sql: (args) => finiteOrNull(sql(args)) };
}

const dot = (a: string, b: string) => `list_sum(list_transform(list_zip(${a}, ${b}, true), p -> p[1] * p[2]))`;
const norm = (a: string) => `sqrt(list_sum(list_transform(${a}, x -> x * x)))`;

/** A number of two series, each read once. */
function pair(f: (a: string, b: string) => string): ScalarFunction {
  return scalar(([a, b]) => bindSql({ a: nums(a!), b: nums(b!) }, (v) => f(v.a!, v.b!)), 2);
}

/** Pearson's r over the positions where both series have a number. */
function pearsonSql(a: string, b: string): string {
  const both = `list_filter(list_zip(${a}, ${b}, true), p -> p[1] IS NOT NULL AND p[2] IS NOT NULL)`;
  return bindSql({ x: `list_transform(${both}, p -> p[1])`, y: `list_transform(${both}, p -> p[2])` }, ({ x, y }) =>
    bindSql({ x: x!, y: y!, mx: `list_avg(${x})`, my: `list_avg(${y})` }, (v) => {
      const cov = `list_sum(list_transform(list_zip(${v.x}, ${v.y}), p -> (p[1] - ${v.mx}) * (p[2] - ${v.my})))`;
      const vx = `list_sum(list_transform(${v.x}, e -> (e - ${v.mx}) * (e - ${v.mx})))`;
      const vy = `list_sum(list_transform(${v.y}, e -> (e - ${v.my}) * (e - ${v.my})))`;
      return `(${cov} / sqrt(${vx} * ${vy}))`;
    }),
  );
}

/** {min, min_idx, max, max_idx, avg, variance, stdev} over the numbers of a series (sample variance). */
function statsSql(a: SqlArg): string {
  return bindSql({ l: nums(a) }, ({ l }) => {
    const idx = (v: string) => `CAST(list_position(${l}, ${v}) - 1 AS BIGINT)`;
    return `(CASE WHEN ${l} IS NOT NULL THEN json_object('min', list_min(${l}), 'min_idx', ${idx(`list_min(${l})`)}, 'max', list_max(${l}), 'max_idx', ${idx(`list_max(${l})`)}, 'avg', list_avg(${l}), 'variance', list_aggregate(${l}, 'var_samp'), 'stdev', list_aggregate(${l}, 'stddev_samp')) END)`;
  });
}

/** A call of the JavaScript series function: its arguments passed as one JSON array. */
function js(op: string, minArgs: number, maxArgs: number): ScalarFunction {
  return {
    ...seriesResult,
    minArgs,
    maxArgs,
    sql: (args) => {
      const json = `json_array(${args.map((a) => `COALESCE(${toDynamicSql(a)}, 'null'::JSON)`).join(', ')})`;
      return `(CASE WHEN ${nums(args[0]!)} IS NOT NULL THEN CAST(ferry_series('${op}', CAST(${json} AS VARCHAR), ${DEADLINE_SQL}) AS JSON) END)`;
    },
  };
}

export const SERIES_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  series_abs: unary((x) => `abs(${x})`),
  series_sign: unary((x) => `sign(${x})`),
  series_ceiling: unary((x) => `ceil(${x})`),
  series_floor: unary((x) => `floor(${x})`),
  series_exp: unary((x) => `exp(${x})`),
  series_log: unary((x) => `(CASE WHEN ${x} > 0 THEN ln(${x}) END)`),
  series_sin: unary((x) => `sin(${x})`),
  series_cos: unary((x) => `cos(${x})`),
  series_tan: unary((x) => `tan(${x})`),
  series_asin: unary((x) => `(CASE WHEN ${x} BETWEEN -1 AND 1 THEN asin(${x}) END)`),
  series_acos: unary((x) => `(CASE WHEN ${x} BETWEEN -1 AND 1 THEN acos(${x}) END)`),
  series_atan: unary((x) => `atan(${x})`),
  series_pow: binary((x, y) => `pow(${x}, ${y})`),
  series_add: binary((x, y) => `(${x} + ${y})`),
  series_subtract: binary((x, y) => `(${x} - ${y})`),
  series_multiply: binary((x, y) => `(${x} * ${y})`),
  series_divide: binary((x, y) => `(${x} / ${y})`),
  series_max: binary((x, y) => `(CASE WHEN ${x} IS NOT NULL AND ${y} IS NOT NULL THEN greatest(${x}, ${y}) END)`),
  series_min: binary((x, y) => `(CASE WHEN ${x} IS NOT NULL AND ${y} IS NOT NULL THEN least(${x}, ${y}) END)`),
  series_greater: binary((x, y) => `(${x} > ${y})`, false),
  series_greater_equals: binary((x, y) => `(${x} >= ${y})`, false),
  series_less: binary((x, y) => `(${x} < ${y})`, false),
  series_less_equals: binary((x, y) => `(${x} <= ${y})`, false),
  series_equals: binary((x, y) => `(${x} = ${y})`, false),
  series_not_equals: binary((x, y) => `(${x} <> ${y})`, false),
  series_sum: scalar(([a]) => `list_sum(${nums(a!)})`),
  series_magnitude: scalar(([a]) => norm(nums(a!))),
  series_dot_product: pair(dot),
  series_cosine_similarity: pair((a, b) => `(${dot(a, b)} / (${norm(a)} * ${norm(b)}))`),
  series_pearson_correlation: pair(pearsonSql),
  series_stats: { shape: 'dictionary', minArgs: 1, maxArgs: 1, returns: () => 'dynamic', sql: ([a]) => statsSql(a!) },
  series_stats_dynamic: {
    shape: 'dictionary',
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'dynamic',
    sql: ([a]) => statsSql(a!),
  },
  series_fir: js('fir', 2, 4),
  series_iir: js('iir', 3, 3),
  series_fft: js('fft', 1, 2),
  series_ifft: js('ifft', 1, 2),
  series_fill_forward: js('fill_forward', 1, 2),
  series_fill_backward: js('fill_backward', 1, 2),
  series_fill_const: js('fill_const', 1, 3),
  series_fill_linear: js('fill_linear', 1, 4),
});
