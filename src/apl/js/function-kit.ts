/**
 * What the JavaScript functions of event pipelines are built with (./functions.ts and its families,
 * ./ip-functions.ts, ./time-functions.ts, ./collection-functions.ts): the compiler an entry asks for its
 * arguments, and the shapes most entries share.
 */
import type { BExpr } from '../binder/bound.js';
import type { AplType } from '../types.js';
import type { Ev } from './compile.js';
import type { Value } from './values.js';

export type Call = Extract<BExpr, { k: 'call' }>;

/** What an entry builds its closure with: its arguments compiled, as they are or converted. */
export interface Compiler {
  compile(e: BExpr): Ev;
  as(e: BExpr, to: AplType): Ev;
  /** A value's text (null stays null). */
  text(e: BExpr): (row: Readonly<Record<string, unknown>>) => string | null;
}

export type JsFunction = (call: Call, c: Compiler) => Ev;

/** A function of strings that keeps null. */
export function text1(f: (s: string) => Value): JsFunction {
  return ({ args: [a] }, c) => {
    const s = c.text(a!);
    return (row) => {
      const v = s(row);
      return v === null ? null : f(v);
    };
  };
}

/** A function whose arguments are converted to fixed types, null when any is null (as SQL's are). */
export function fixed(types: AplType[], f: (...args: never[]) => Value): JsFunction {
  return ({ args }, c) => {
    const parts = args.map((a, i) => c.as(a, types[i]!));
    return (row) => {
      const vals: Value[] = [];
      for (const p of parts) {
        const v = p(row);
        if (v === null) return null;
        vals.push(v);
      }
      return (f as (...a: Value[]) => Value)(...vals);
    };
  };
}

/** A real function with a domain: null outside it. */
export const real1 = (f: (x: number) => number, inDomain: (x: number) => boolean = () => true): JsFunction =>
  fixed(['real'], (x: number) => (inDomain(x) ? f(x) : null));

export const NS_PER_DAY = 86_400_000_000_000n;
export const floorMod = (a: bigint, m: bigint) => ((a % m) + m) % m;

/** A datetime's UTC calendar fields. */
export const utc = (ns: bigint) => new Date(Number(ns / 1_000_000n - (ns % 1_000_000n < 0n ? 1n : 0n)));

/** Half to even, as DuckDB rounds a JSON number cast to a whole one. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * A JSON element as DuckDB's TRY_CAST to BIGINT gives it: a number rounded (half to even), a boolean 1 or
 * 0, a string of an integer (spaces around it allowed); anything else, or beyond 64 bits, null.
 */
function bigintElement(x: unknown): number | null {
  if (typeof x === 'number') {
    const n = roundHalfEven(x);
    return Number.isFinite(n) && Math.abs(n) < 2 ** 63 ? n + 0 : null;
  }
  if (typeof x === 'boolean') return x ? 1 : 0;
  if (typeof x === 'string' && /^\s*[+-]?\d+\s*$/.test(x)) {
    const n = Number(x);
    return Math.abs(n) < 2 ** 63 ? n : null;
  }
  return null;
}

/** A dynamic value as DuckDB's TRY_CAST to BIGINT[] reads it: null when it is no array, each element cast. */
export const bigintList = (v: unknown): (number | null)[] | null => (Array.isArray(v) ? v.map(bigintElement) : null);

/** A JSON element as DuckDB's TRY_CAST to BOOLEAN reads it: numbers by zero, a few words, else null. */
export function jsonBool(x: unknown): boolean | null {
  if (typeof x === 'boolean') return x;
  if (typeof x === 'number') return x !== 0;
  if (typeof x !== 'string') return null;
  const w = x.toLowerCase();
  return w === 'true' || w === 't' || w === 'yes' ? true : w === 'false' || w === 'f' || w === 'no' ? false : null;
}
