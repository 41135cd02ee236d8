/**
 * Number functions of event pipelines beyond the core ones in ./functions.ts, meaning what
 * ../functions/{math,hash,scalar,strings}.ts's SQL means: cot, Γ and ln|Γ| (null at their poles), rand,
 * the isint/isutf8/isascii tests, xxHash64 (hash, hash_xxhash64: the store's ferry_xxhash64, with the same
 * xxhash-wasm), byte sizes both ways (format_bytes, parse_bytes) and tohex.
 */
import xxhash from 'xxhash-wasm';
import type { AplType } from '../types.js';
import { real1, type JsFunction } from './function-kit.js';
import { toStringValue } from './values.js';

const { h64 } = await xxhash();

/** Lanczos's approximation (g = 7, nine terms) of Γ, for arguments that are not whole numbers. */
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

function lanczosSum(x: number): number {
  let a = LANCZOS[0]!;
  for (let i = 1; i < 9; i++) a += LANCZOS[i]! / (x + i);
  return a;
}

/** n! for whole n from 1 to 171, multiplied out (exact up to 22!, as the C library's tgamma is). */
function factorial(n: number): number {
  let p = 1;
  for (let i = 2; i < n; i++) p *= i;
  return p;
}

function gamma(x: number): number {
  if (Number.isInteger(x) && x >= 1) return x > 171 ? Infinity : factorial(x);
  if (x < 0.5) return Math.PI / (Math.sin(Math.PI * x) * gamma(1 - x));
  const y = x - 1;
  const t = y + 7.5;
  return Math.sqrt(2 * Math.PI) * t ** (y + 0.5) * Math.exp(-t) * lanczosSum(y);
}

function logGamma(x: number): number {
  if (Number.isInteger(x) && x >= 1 && x <= 171) return Math.log(factorial(x));
  if (x < 0.5) return Math.log(Math.PI / Math.abs(Math.sin(Math.PI * x))) - logGamma(1 - x);
  const y = x - 1;
  const t = y + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(lanczosSum(y));
}

const notAPole = (x: number) => !(x <= 0 && x === Math.floor(x));

/** xxHash64 of a value's text, as a signed 64-bit number (BIGINT), then as a JSON number. */
const xxhash64 = (s: string, seed: bigint) => BigInt.asIntN(64, h64(s, BigInt.asUintN(64, seed)));

/** A value's text for hashing (tostring), null for null. */
function textOf(c: Parameters<JsFunction>[1], e: Parameters<JsFunction>[0]['args'][number]) {
  const f = c.compile(e);
  const t: AplType = e.type;
  return (row: Readonly<Record<string, unknown>>) => toStringValue(f(row), t);
}

/** printf's %.Nf: the nearest decimal, a tie (exact in binary) to the even digit, as {fmt} writes it. */
function fixedDigits(x: number, digits: number): string {
  const text = x.toFixed(digits);
  const scaled = Math.abs(x) * 10 ** digits;
  if (scaled % 1 !== 0.5) return text;
  const down = (Math.sign(x) * Math.floor(scaled)) / 10 ** digits;
  return Math.floor(scaled) % 2 === 0 ? down.toFixed(digits) : text;
}

const BYTE_STEPS: [number, string][] = [
  [1024, 'Bytes'],
  [1048576, 'KB'],
  [1073741824, 'MB'],
  [1099511627776, 'GB'],
  [1125899906842624, 'TB'],
];

/** Byte units of parse_bytes, by power of the base. */
const BYTE_UNITS = new Map<string, number>([
  ['', 0],
  ['B', 0],
  ['K', 1],
  ['KB', 1],
  ['KIB', 1],
  ['M', 2],
  ['MB', 2],
  ['MIB', 2],
  ['G', 3],
  ['GB', 3],
  ['GIB', 3],
  ['T', 4],
  ['TB', 4],
  ['TIB', 4],
  ['P', 5],
  ['PB', 5],
  ['PIB', 5],
]);

const roundHalfAway = (x: number) => Math.sign(x) * Math.round(Math.abs(x));

export const NUMBER_JS_FUNCTIONS: Record<string, JsFunction> = {
  cot: real1(
    (x) => 1 / Math.tan(x),
    (x) => Math.sin(x) !== 0,
  ),
  gamma: real1(gamma, notAPole),
  loggamma: real1(logGamma, notAPole),
  // A new value on every event, as the store's random() on every row.
  rand: () => () => Math.random(),
  isint: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const t = a!.type;
    if (t !== 'long' && t !== 'real' && t !== 'dynamic') return () => false;
    return (row) => {
      const v = f(row);
      if (v === null) return false;
      return t === 'long' || (typeof v === 'number' && Number.isFinite(v) && Number.isInteger(v));
    };
  },
  // Text is always valid UTF-8 (ingest and the event reader replace what is not), so any string is.
  isutf8: ({ args: [a] }, c) => {
    const f = c.compile(a!);
    const t = a!.type;
    return (row) => (t === 'string' || t === 'dynamic') && typeof f(row) === 'string';
  },
  isascii: ({ args: [a] }, c) => {
    const f = c.as(a!, 'string');
    return (row) => {
      const v = f(row);
      return typeof v === 'string' && /^[\x00-\x7f]*$/.test(v);
    };
  },
  hash: ({ args: [v, salt] }, c) => {
    const text = textOf(c, v!);
    const seed = salt ? c.as(salt, 'long') : () => 0;
    return (row) => {
      const s = text(row);
      const n = seed(row) as number | null;
      return s === null || n === null ? null : Number(xxhash64(s, BigInt(n)));
    };
  },
  hash_xxhash64: ({ args: [v, mod] }, c) => {
    const text = textOf(c, v!);
    const m = mod ? c.as(mod, 'long') : undefined;
    return (row) => {
      const s = text(row);
      if (s === null) return null;
      const h = xxhash64(s, 0n);
      if (!m) return Number(h);
      const n = m(row) as number | null;
      if (n === null || n <= 0) return null;
      const b = BigInt(n);
      return Number(((h % b) + b) % b);
    };
  },
  format_bytes: ({ args: [v, p] }, c) => {
    const x = c.as(v!, 'real');
    const digits = Math.max(0, Math.min(p ? Number((p as { value: bigint }).value) : 0, 10));
    return (row) => {
      const n = x(row) as number | null;
      if (n === null) return null;
      let div = 1;
      let unit = 'PB';
      for (const [limit, name] of BYTE_STEPS) {
        if (Math.abs(n) < limit) {
          unit = name;
          break;
        }
        div = limit;
      }
      if (unit === 'PB') div = 1125899906842624;
      return `${fixedDigits(n / div, digits)} ${unit}`;
    };
  },
  parse_bytes: ({ args: [s, base] }, c) => {
    const text = c.text(s!);
    const b = base ? c.as(base, 'long') : () => 1024;
    return (row) => {
      const v = text(row);
      if (v === null) return 0;
      const m = /^([0-9]+(?:\.[0-9]+)?)\s*([A-Z]*)$/.exec(v.replace(/^ +| +$/g, '').toUpperCase());
      const power = m ? BYTE_UNITS.get(m[2]!) : undefined;
      if (!m || power === undefined) return 0;
      const n = roundHalfAway(Number(m[1]) * (b(row) === 10 ? 1000 : 1024) ** power);
      return Math.abs(n) < 2 ** 63 ? n : 0;
    };
  },
  // Two's complement for negative numbers; a minimum length pads with zeros.
  tohex: ({ args: [v, min] }, c) => {
    const x = c.as(v!, 'long');
    const width = min ? c.as(min, 'long') : () => null;
    return (row) => {
      const n = x(row) as number | null;
      if (n === null) return null;
      const hex = BigInt.asUintN(64, BigInt(n)).toString(16);
      const w = width(row) as number | null;
      return w === null || w <= hex.length ? hex : hex.padStart(w, '0');
    };
  },
};
