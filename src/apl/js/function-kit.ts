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
