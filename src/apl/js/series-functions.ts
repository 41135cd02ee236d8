/**
 * The series_* functions of event pipelines, over an event's arrays of numbers, meaning what
 * ../functions/series.ts's SQL means: a series is read as numbers (a number, a numeric string or a
 * boolean; anything else null), results that are not finite numbers are null, and an operand that is not
 * an array is one number for every element. The loops (filters, transforms, fills) are the store's own
 * (../functions/series-loops.ts).
 */
import { seriesCall } from '../functions/series-loops.js';
import type { Call, Compiler, JsFunction } from './function-kit.js';
import { toDynamicValue, toRealValue, type Value } from './values.js';

type Row = Readonly<Record<string, unknown>>;
type Series = (number | null)[];

/** An element as DuckDB's TRY_CAST of JSON to DOUBLE reads it. */
function element(x: unknown): number | null {
  if (typeof x === 'number') return x;
  if (typeof x === 'boolean') return x ? 1 : 0;
  if (typeof x === 'string') return toRealValue(x, 'string');
  return null;
}

const numbers = (v: unknown): Series | null => (Array.isArray(v) ? v.map(element) : null);
const finite = (x: number | null) => (x !== null && Number.isFinite(x) ? x : null);

/** An argument as a dynamic value (typed ones as JSON would hold them). */
function dynamicOf(call: Call, c: Compiler, i: number) {
  const e = call.args[i]!;
  const f = c.compile(e);
  return (row: Row) => toDynamicValue(f(row), e.type) ?? null;
}

function unary(f: (x: number) => number): JsFunction {
  return (call, c) => {
    const a = dynamicOf(call, c, 0);
    return (row) => numbers(a(row))?.map((x) => (x === null ? null : finite(f(x)))) ?? null;
  };
}

/**
 * f over the elements at each place of two operands; the longer series sets the length, and an operand
 * that is not an array is one value (a number, or null) for every place.
 */
function binary(f: (x: number, y: number) => number | boolean): JsFunction {
  return (call, c) => {
    const [a, b] = [dynamicOf(call, c, 0), dynamicOf(call, c, 1)];
    return (row) => {
      const [va, vb] = [a(row), b(row)];
      const [sa, sb] = [numbers(va), numbers(vb)];
      if (!sa && !sb) return null;
      const n = Math.max(sa?.length ?? 0, sb?.length ?? 0);
      const xa = sa
        ? (i: number) => sa[i] ?? null
        : (
            (v) => () =>
              v
          )(element(va));
      const xb = sb
        ? (i: number) => sb[i] ?? null
        : (
            (v) => () =>
              v
          )(element(vb));
      const out: Value[] = [];
      for (let i = 0; i < n; i++) {
        const [x, y] = [xa(i), xb(i)];
        if (x === null || y === null) out.push(null);
        else {
          const r = f(x, y);
          out.push(typeof r === 'boolean' ? r : finite(r));
        }
      }
      return out;
    };
  };
}

/** A number of one series; null unless finite. */
function scalar(f: (x: Series) => number | null): JsFunction {
  return (call, c) => {
    const a = dynamicOf(call, c, 0);
    return (row) => {
      const s = numbers(a(row));
      return s === null ? null : finite(f(s));
    };
  };
}

/** A number of two series; null unless finite. */
function pair(f: (x: Series, y: Series) => number | null): JsFunction {
  return (call, c) => {
    const [a, b] = [dynamicOf(call, c, 0), dynamicOf(call, c, 1)];
    return (row) => {
      const [x, y] = [numbers(a(row)), numbers(b(row))];
      return x === null || y === null ? null : finite(f(x, y));
    };
  };
}

/** list_sum: the sum of the numbers, null when there are none. */
function sum(s: Series): number | null {
  let total: number | null = null;
  for (const x of s) if (x !== null) total = (total ?? 0) + x;
  return total;
}

const dot = (a: Series, b: Series) => {
  const n = Math.min(a.length, b.length);
  return sum(Array.from({ length: n }, (_, i) => (a[i] === null || b[i] === null ? null : a[i]! * b[i]!)));
};
const norm = (a: Series) => {
  const s = sum(a.map((x) => (x === null ? null : x * x)));
  return s === null ? null : Math.sqrt(s);
};

function pearson(a: Series, b: Series): number | null {
  const xs: number[] = [];
  const ys: number[] = [];
  const n = Math.max(a.length, b.length);
  for (let i = 0; i < n; i++)
    if (a[i] != null && b[i] != null) {
      xs.push(a[i]!);
      ys.push(b[i]!);
    }
  if (xs.length === 0) return null;
  const mx = xs.reduce((p, x) => p + x, 0) / xs.length;
  const my = ys.reduce((p, y) => p + y, 0) / ys.length;
  let cov = 0;
  let vx = 0;
  let vy = 0;
  for (let i = 0; i < xs.length; i++) {
    cov += (xs[i]! - mx) * (ys[i]! - my);
    vx += (xs[i]! - mx) ** 2;
    vy += (ys[i]! - my) ** 2;
  }
  return cov / Math.sqrt(vx * vy);
}

/** {min, min_idx, max, max_idx, avg, variance, stdev} over the numbers (sample variance, Welford's sums). */
function stats(s: Series): Value {
  const xs = s.filter((x): x is number => x !== null);
  if (xs.length === 0)
    return { min: null, min_idx: null, max: null, max_idx: null, avg: null, variance: null, stdev: null };
  const min = Math.min(...xs);
  const max = Math.max(...xs);
  let mean = 0;
  let m2 = 0;
  xs.forEach((x, i) => {
    const d = x - mean;
    mean += d / (i + 1);
    m2 += d * (x - mean);
  });
  const variance = xs.length > 1 ? m2 / (xs.length - 1) : null;
  return {
    min,
    min_idx: s.indexOf(min),
    max,
    max_idx: s.indexOf(max),
    avg: xs.reduce((p, x) => p + x, 0) / xs.length,
    variance,
    stdev: variance === null ? null : Math.sqrt(variance),
  };
}

/** A function that loops over the series, with the store's own code. */
function loop(op: string): JsFunction {
  return (call, c) => {
    const args = call.args.map((_, i) => dynamicOf(call, c, i));
    return (row) => {
      const values = args.map((a) => a(row));
      return numbers(values[0]) === null ? null : (seriesCall(op, values) as Value);
    };
  };
}

export const SERIES_JS_FUNCTIONS: Record<string, JsFunction> = {
  series_abs: unary(Math.abs),
  series_sign: unary(Math.sign),
  series_ceiling: unary(Math.ceil),
  series_floor: unary(Math.floor),
  series_exp: unary(Math.exp),
  series_log: unary((x) => (x > 0 ? Math.log(x) : NaN)),
  series_sin: unary(Math.sin),
  series_cos: unary(Math.cos),
  series_tan: unary(Math.tan),
  series_asin: unary((x) => (x >= -1 && x <= 1 ? Math.asin(x) : NaN)),
  series_acos: unary((x) => (x >= -1 && x <= 1 ? Math.acos(x) : NaN)),
  series_atan: unary(Math.atan),
  series_pow: binary((x, y) => x ** y),
  series_add: binary((x, y) => x + y),
  series_subtract: binary((x, y) => x - y),
  series_multiply: binary((x, y) => x * y),
  series_divide: binary((x, y) => x / y),
  series_max: binary((x, y) => Math.max(x, y)),
  series_min: binary((x, y) => Math.min(x, y)),
  series_greater: binary((x, y) => x > y),
  series_greater_equals: binary((x, y) => x >= y),
  series_less: binary((x, y) => x < y),
  series_less_equals: binary((x, y) => x <= y),
  series_equals: binary((x, y) => x === y),
  series_not_equals: binary((x, y) => x !== y),
  series_sum: scalar(sum),
  series_magnitude: scalar(norm),
  series_dot_product: pair(dot),
  series_cosine_similarity: pair((a, b) => {
    const [d, na, nb] = [dot(a, b), norm(a), norm(b)];
    return d === null || na === null || nb === null ? null : d / (na * nb);
  }),
  series_pearson_correlation: pair(pearson),
  series_stats: (call, c) => {
    const a = dynamicOf(call, c, 0);
    return (row) => {
      const s = numbers(a(row));
      return s === null ? null : stats(s);
    };
  },
  series_fir: loop('fir'),
  series_iir: loop('iir'),
  series_fft: loop('fft'),
  series_ifft: loop('ifft'),
  series_fill_forward: loop('fill_forward'),
  series_fill_backward: loop('fill_backward'),
  series_fill_const: loop('fill_const'),
  series_fill_linear: loop('fill_linear'),
};
SERIES_JS_FUNCTIONS.series_stats_dynamic = SERIES_JS_FUNCTIONS.series_stats!;
