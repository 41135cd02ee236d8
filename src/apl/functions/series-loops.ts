/**
 * The time-series functions whose work is a loop over the series (filters, transforms, fills), in
 * JavaScript: the store registers them with DuckDB (service/query/series-functions.ts) and event
 * pipelines call them (../js/series-functions.ts). Element-wise arithmetic and statistics are SQL in the
 * store (./series.ts). Pure functions; the Fourier transforms are O(n log n).
 */

type Series = (number | null)[];

/** The numbers of a JSON array; anything that is not a finite number is null. */
function numbers(v: unknown): Series | null {
  if (!Array.isArray(v)) return null;
  return v.map((x) => (typeof x === 'number' && Number.isFinite(x) ? x : null));
}

/** Finite numbers, or null: JSON has no NaN or infinity. */
const finite = (x: number): number | null => (Number.isFinite(x) ? x : null);

/** A series as doubles, null counted as 0 (V8 keeps a typed array's loops on unboxed numbers). */
const zeroed = (x: Series): Float64Array => Float64Array.from(x, (v) => v ?? 0);

/** FIR filter: out[i] = Σ f[j]·x[i − j] (centered: the window's middle at i); values outside are 0. */
export function fir(x: Series, filter: Series, normalize = true, center = false): Series {
  const xs = zeroed(x);
  const f = zeroed(filter);
  const n = xs.length;
  let sum = 0;
  for (let j = 0; j < f.length; j++) sum += f[j]!;
  const scale = normalize && sum !== 0 ? 1 / sum : 1;
  const shift = center ? Math.floor((f.length - 1) / 2) : 0;
  const out: Series = new Array<number | null>(n);
  for (let i = 0; i < n; i++) {
    // Only the taps that land inside the series: the others multiply 0.
    const first = Math.max(0, i + shift - n + 1);
    const last = Math.min(f.length - 1, i + shift);
    let acc = 0;
    for (let j = first; j <= last; j++) acc += f[j]! * xs[i - j + shift]!;
    out[i] = finite(acc * scale);
  }
  return out;
}

/** IIR filter: a[0]·y[n] = Σ b[i]·x[n−i] − Σ_{j≥1} a[j]·y[n−j]; null inputs count as 0. */
export function iir(x: Series, b: Series, a: Series): Series {
  const a0 = a[0] ?? 0;
  if (a0 === 0) return x.map(() => null);
  const xs = zeroed(x);
  const bs = zeroed(b);
  const as = zeroed(a);
  const y = new Float64Array(xs.length);
  for (let n = 0; n < xs.length; n++) {
    let acc = 0;
    for (let i = 0, last = Math.min(bs.length - 1, n); i <= last; i++) acc += bs[i]! * xs[n - i]!;
    for (let j = 1, last = Math.min(as.length - 1, n); j <= last; j++) acc -= as[j]! * y[n - j]!;
    y[n] = acc / a0;
  }
  return Array.from(y, finite);
}

/** In-place iterative radix-2 FFT of a power-of-two length (sign -1 forward, +1 inverse, unscaled). */
function radix2(re: Float64Array, im: Float64Array, sign: number): void {
  const n = re.length;
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      [re[i], re[j]] = [re[j]!, re[i]!];
      [im[i], im[j]] = [im[j]!, im[i]!];
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const angle = (sign * 2 * Math.PI) / len;
    const wr = Math.cos(angle);
    const wi = Math.sin(angle);
    for (let i = 0; i < n; i += len) {
      let cr = 1;
      let ci = 0;
      for (let k = 0; k < len / 2; k++) {
        const a = i + k;
        const b = a + len / 2;
        const tr = re[b]! * cr - im[b]! * ci;
        const ti = re[b]! * ci + im[b]! * cr;
        re[b] = re[a]! - tr;
        im[b] = im[a]! - ti;
        re[a] = re[a]! + tr;
        im[a] = im[a]! + ti;
        [cr, ci] = [cr * wr - ci * wi, cr * wi + ci * wr];
      }
    }
  }
}

/**
 * The discrete Fourier transform of any length in O(n log n): radix-2 for powers of two, Bluestein's
 * chirp-z convolution (three power-of-two FFTs) for the rest.
 */
function transform(re: Float64Array, im: Float64Array, sign: number): [Float64Array, Float64Array] {
  const n = re.length;
  if (n === 0 || (n & (n - 1)) === 0) {
    radix2(re, im, sign);
    return [re, im];
  }
  let m = 1;
  while (m < 2 * n - 1) m <<= 1;
  const cr = new Float64Array(n);
  const ci = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    // k² mod 2n keeps the angle exact for large k.
    const angle = (sign * Math.PI * ((k * k) % (2 * n))) / n;
    cr[k] = Math.cos(angle);
    ci[k] = Math.sin(angle);
  }
  const ar = new Float64Array(m);
  const ai = new Float64Array(m);
  for (let k = 0; k < n; k++) {
    ar[k] = re[k]! * cr[k]! - im[k]! * ci[k]!;
    ai[k] = re[k]! * ci[k]! + im[k]! * cr[k]!;
  }
  const br = new Float64Array(m);
  const bi = new Float64Array(m);
  br[0] = cr[0]!;
  bi[0] = -ci[0]!;
  for (let k = 1; k < n; k++) {
    br[k] = br[m - k] = cr[k]!;
    bi[k] = bi[m - k] = -ci[k]!;
  }
  radix2(ar, ai, -1);
  radix2(br, bi, -1);
  for (let k = 0; k < m; k++) {
    const r = ar[k]! * br[k]! - ai[k]! * bi[k]!;
    ai[k] = ar[k]! * bi[k]! + ai[k]! * br[k]!;
    ar[k] = r;
  }
  radix2(ar, ai, 1);
  const outR = new Float64Array(n);
  const outI = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    const xr = ar[k]! / m;
    const xi = ai[k]! / m;
    outR[k] = xr * cr[k]! - xi * ci[k]!;
    outI[k] = xr * ci[k]! + xi * cr[k]!;
  }
  return [outR, outI];
}

/** The discrete Fourier transform (inverse: conjugate and scale by 1/n), as {real, imag} per element. */
export function dft(re: Series, im: Series, inverse: boolean): { real: number | null; imag: number | null }[] {
  const n = re.length;
  const [r, i] = transform(
    Float64Array.from(re, (v) => v ?? 0),
    Float64Array.from({ length: n }, (_, k) => im[k] ?? 0),
    inverse ? 1 : -1,
  );
  const scale = inverse && n > 0 ? 1 / n : 1;
  return Array.from({ length: n }, (_, k) => ({ real: finite(r[k]! * scale), imag: finite(i[k]! * scale) }));
}

/** The longest series the Fourier transforms take (each is O(n log n), in the service's one JavaScript thread). */
export const MAX_DFT_POINTS = 1_048_576;

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
  // The known point before and after each index, found in one pass each way: linear in the series.
  const n = x.length;
  const before = new Int32Array(n).fill(-1);
  const after = new Int32Array(n).fill(-1);
  for (let i = 0, last = -1; i < n; i++) {
    before[i] = last;
    if (!isMissing(x[i]!, missing)) last = i;
  }
  for (let i = n - 1, last = -1; i >= 0; i--) {
    after[i] = last;
    if (!isMissing(x[i]!, missing)) last = i;
  }
  if (!x.some((v) => !isMissing(v, missing))) return [...x];
  return x.map((v, i) => {
    if (!isMissing(v, missing)) return v;
    const next = after[i]! >= 0 ? after[i] : undefined;
    const prev = before[i]! >= 0 ? before[i] : undefined;
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

/**
 * The most multiply-adds one filter call may do. The functions run on the service's one JavaScript thread,
 * which answers every request: a call past this is refused instead of holding them all up.
 */
export const MAX_FILTER_WORK = 50_000_000;

function checkWork(op: string, points: number, taps: number): void {
  if (points * taps > MAX_FILTER_WORK) {
    throw new Error(
      `series_${op}: ${points} points through ${taps} coefficients is more work than one call may do (${MAX_FILTER_WORK} multiply-adds)`,
    );
  }
}

/** One call: the operation's name and its arguments as parsed JSON; null for a series that is not one. */
export function seriesCall(op: string, args: unknown[]): unknown {
  const x = numbers(args[0]);
  if (!x) return null;
  switch (op) {
    case 'fir': {
      const f = numbers(args[1]);
      if (!f) return null;
      checkWork(op, x.length, f.length);
      return fir(x, f, bool(args[2], true), bool(args[3], false));
    }
    case 'iir': {
      const b = numbers(args[1]);
      const a = numbers(args[2]);
      if (!b || !a) return null;
      checkWork(op, x.length, b.length + a.length);
      return iir(x, b, a);
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
