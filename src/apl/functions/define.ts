/**
 * Helpers for defining scalar functions: argument checks, implicit conversions and the common shapes of
 * catalog entries, shared by every family of functions (./scalar.ts, ./math.ts, ./strings.ts...).
 */
import { ArgumentError, type ArgInfo, type ScalarFunction } from './catalog.js';
import { convertSql, type SqlArg } from './sql.js';
import { isNumeric, type AplType } from '../types.js';

export const fail = (m: string): never => {
  throw new ArgumentError(m);
};

/** A function of fixed result type whose arguments are converted to the given types. */
export function fixed(
  result: AplType,
  argTypes: AplType[],
  sql: (a: string[]) => string,
  optional = 0,
): ScalarFunction {
  return {
    minArgs: argTypes.length - optional,
    maxArgs: argTypes.length,
    returns(args) {
      args.forEach((a, i) => checkConvertible(a, argTypes[i]!, i));
      return result;
    },
    sql: (args) =>
      sql(
        args.map((a, i) =>
          a.type === argTypes[i] || (argTypes[i] === 'real' && a.type === 'long') ? a.sql : convertSql(a, argTypes[i]!),
        ),
      ),
  };
}

export function checkConvertible(a: ArgInfo, to: AplType, i: number): void {
  if (a.type === to || a.type === 'dynamic' || to === 'dynamic' || to === 'string') return;
  if (isNumeric(to) && (isNumeric(a.type) || a.type === 'string')) return;
  if (to === 'timespan' && a.type === 'long') return;
  if (to === 'bool' && a.type === 'string') return;
  if (to === 'datetime' && a.type === 'string') return;
  fail(`argument ${i + 1} must be ${to}, not ${a.type}`);
}

/** A conversion: its unnamed column keeps the converted value's name. */
export function conversion(result: AplType, sql: (a: SqlArg) => string): ScalarFunction {
  return { minArgs: 1, maxArgs: 1, resultName: 'argument', returns: () => result, sql: ([a]) => sql(a!) };
}

/** The common type of several values (iff branches, case results, coalesce). */
export function unify(types: AplType[], what: string): AplType {
  const known = types.filter((t) => t !== undefined);
  let t = known[0]!;
  for (const u of known.slice(1)) {
    if (u === t) continue;
    if (isNumeric(u) && isNumeric(t)) t = 'real';
    // A number beside a timespan counts nanoseconds (iff(isnull(d), 0, d) over a timespan d).
    else if ((isNumeric(u) && t === 'timespan') || (u === 'timespan' && isNumeric(t))) t = 'timespan';
    else if (t === 'dynamic' || u === 'dynamic') t = 'dynamic';
    else fail(`${what} mixes ${t} and ${u}`);
  }
  return t;
}

export const castTo = (a: SqlArg, t: AplType) => (a.type === t ? a.sql : convertSql(a, t));
