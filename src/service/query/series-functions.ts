/**
 * The time-series functions whose work is a loop over the series (filters, transforms, fills), written
 * in JavaScript and registered with DuckDB as ferry_series(op, args): `args` is a JSON array of the APL
 * call's arguments, the answer JSON text. Element-wise arithmetic and statistics stay in SQL
 * (apl/functions/series.ts). Pure functions, each O(n) but the Fourier transforms.
 */
import { DuckDBScalarFunction, VARCHAR } from '@duckdb/node-api';

type Series = (number | null)[];

/** The numbers of a JSON array; anything that is not a finite number is null. */
function numbers(v: unknown): Series | null {
  if (!Array.isArray(v)) return null;
  return v.map((x) => (typeof x === 'number' && Number.isFinite(x) ? x : null));
}

/** Finite numbers, or null: JSON has no NaN or infinity. */
const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** FIR filter: out[i] = Σ f[j]·x[i − j] (centered: the window's middle at i); values outside are 0. */
export function fir(x: Series, filter: Series, normalize = true, center = false): Series {
  const f = filter.map((v) => v ?? 0);
  const sum = f.reduce((a, b) => a + b, 0);
  const scale = normalize && sum !== 0 ? 1 / sum : 1;
  const shift = center ? Math.floor((f.length - 1) / 2) : 0;
  return x.map((_, i) => {
    let acc = 0;
    for (let j = 0; j < f.length; j++) acc += f[j]! * (x[i - j + shift] ?? 0);
    return finite(acc * scale);
  });
}

/** IIR filter: a[0]·y[n] = Σ b[i]·x[n−i] − Σ_{j≥1} a[j]·y[n−j]; null inputs count as 0. */
export function iir(x: Series, b: Series, a: Series): Series {
  const a0 = a[0] ?? 0;
  if (a0 === 0) return x.map(() => null);
  const y: number[] = [];
  for (let n = 0; n < x.length; n++) {
    let acc = 0;
    for (let i = 0; i < b.length; i++) acc += (b[i] ?? 0) * (n - i >= 0 ? (x[n - i] ?? 0) : 0);
    for (let j = 1; j < a.length; j++) acc -= (a[j] ?? 0) * (n - j >= 0 ? y[n - j]! : 0);
    y.push(acc / a0);
  }
  return y.map(finite);
}

/** The discrete Fourier transform (inverse: conjugate and scale by 1/n), as {real, imag} per element. */
export function dft(re: Series, im: Series, inverse: boolean): { real: number | null; imag: number | null }[] {
  const n = re.length;
  const sign = inverse ? 1 : -1;
  const out: { real: number | null; imag: number | null }[] = [];
  for (let k = 0; k < n; k++) {
    let r = 0;
    let i = 0;
    for (let t = 0; t < n; t++) {
      const angle = (sign * 2 * Math.PI * k * t) / n;
      const xr = re[t] ?? 0;
      const xi = im[t] ?? 0;
      r += xr * Math.cos(angle) - xi * Math.sin(angle);
      i += xr * Math.sin(angle) + xi * Math.cos(angle);
    }
    out.push(inverse ? { real: finite(r / n), imag: finite(i / n) } : { real: finite(r), imag: finite(i) });
  }
  return out;
}

/** The longest series the Fourier transforms take: they are O(n²). */
export const MAX_DFT_POINTS = 8192;

const isMissing = (v: number | null, missing: number | null) => (missing === null ? v === null : v === missing);

export function fillForward(x: Series, missing: number | null = null): Series {
  let last: number | null = null;
  return x.map((v) => (isMissing(v, missing) ? last : (last = v)));
}

export function fillBackward(x: Series, missing: number | null = null): Series {
  return fillForward([...x].reverse(), missing).reverse();
}

export function fillConst(x: Series, value: number | null, missing: number | null = null): Series {
  return x.map((v) => (isMissing(v, missing) ? value : v));
}

/** Linear interpolation between known points; the edges take the nearest known value unless fillEdges is false. */
export function fillLinear(x: Series, missing: number | null = null, fillEdges = true): Series {
  const known = x.map((v, i) => (isMissing(v, missing) ? -1 : i)).filter((i) => i >= 0);
  if (known.length === 0) return [...x];
  return x.map((v, i) => {
    if (!isMissing(v, missing)) return v;
    const next = known.find((k) => k > i);
    const prev = [...known].reverse().find((k) => k < i);
    if (prev !== undefined && next !== undefined) {
      const a = x[prev]!;
      const b = x[next]!;
      return finite(a + ((b - a) * (i - prev)) / (next - prev));
    }
    if (!fillEdges) return v;
    return x[(prev ?? next)!] ?? null;
  });
}

const num = (v: unknown, fallback: number | null): number | null =>
  v === undefined ? fallback : typeof v === 'number' && Number.isFinite(v) ? v : null;
const bool = (v: unknown, fallback: boolean): boolean => (typeof v === 'boolean' ? v : fallback);

/** One call: the operation's name and its arguments as parsed JSON; null for a series that is not one. */
export function seriesCall(op: string, args: unknown[]): unknown {
  const x = numbers(args[0]);
  if (!x) return null;
  switch (op) {
    case 'fir': {
      const f = numbers(args[1]);
      return f ? fir(x, f, bool(args[2], true), bool(args[3], false)) : null;
    }
    case 'iir': {
      const b = numbers(args[1]);
      const a = numbers(args[2]);
      return b && a ? iir(x, b, a) : null;
    }
    case 'fft':
    case 'ifft': {
      if (x.length > MAX_DFT_POINTS)
        throw new Error(`series_${op} takes at most ${MAX_DFT_POINTS} points, not ${x.length}`);
      const im = numbers(args[1]) ?? [];
      return dft(x, im, op === 'ifft');
    }
    case 'fill_forward':
      return fillForward(x, num(args[1], null));
    case 'fill_backward':
      return fillBackward(x, num(args[1], null));
    case 'fill_const':
      return fillConst(x, num(args[1], 0), num(args[2], null));
    case 'fill_linear':
      return fillLinear(x, num(args[1], null), bool(args[2], true));
    default:
      throw new Error(`unknown series operation ${op}`);
  }
}

export function seriesFunction(): DuckDBScalarFunction {
  return DuckDBScalarFunction.create({
    name: 'ferry_series',
    mainFunction: (_info, input, output) => {
      const ops = input.getColumnVector(0);
      const args = input.getColumnVector(1);
      for (let i = 0; i < input.rowCount; i++) {
        const result = seriesCall(String(ops.getItem(i)), JSON.parse(String(args.getItem(i))) as unknown[]);
        output.setItem(i, result === null ? null : JSON.stringify(result));
      }
      output.flush();
    },
    returnType: VARCHAR,
    parameterTypes: [VARCHAR, VARCHAR],
  });
}
