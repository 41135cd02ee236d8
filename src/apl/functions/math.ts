/**
 * Trigonometric and other mathematical functions, and the type predicates (isint, isreal, isstring...).
 * Where DuckDB fails a whole query outside a function's domain (asin(2), gamma(0)), APL answers null for
 * that row, so each such function tests its domain first.
 */
import type { ScalarFunction } from './catalog.js';
import { castTo, fixed } from './define.js';
import type { SqlArg } from './sql.js';
import type { AplType } from '../types.js';
import { lookupTable } from '../../util/lookup.js';

/** A real function of one real argument, null outside `domain`. */
function partial(domain: (x: string) => string, fn: (x: string) => string): ScalarFunction {
  return fixed('real', ['real'], ([x]) => `(CASE WHEN ${domain(x!)} THEN ${fn(x!)} END)`);
}

const real1 = (fn: string) => fixed('real', ['real'], ([x]) => `${fn}(${x})`);

/** Γ and ln|Γ| have poles at 0 and the negative integers, where APL answers null. */
const notAPole = (x: string) => `NOT (${x} <= 0 AND ${x} = floor(${x}))`;

/** A predicate on what a value is: false for null, and for a dynamic value by the JSON type it holds. */
function typeTest(types: AplType[], jsonTypes: string[]): ScalarFunction {
  return {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'bool',
    sql: ([a]) => {
      const v = a!;
      if (v.type === 'dynamic') {
        if (jsonTypes.length === 0) return 'FALSE';
        return `COALESCE(json_type(${v.sql}) IN (${jsonTypes.map((t) => `'${t}'`).join(', ')}), FALSE)`;
      }
      if (!types.includes(v.type)) return 'FALSE';
      return `(${v.sql} IS NOT NULL)`;
    },
  };
}

/** isint of a dynamic value: a JSON integer, or a JSON real with no fraction. */
function isIntSql(a: SqlArg): string {
  if (a.type === 'long') return `(${a.sql} IS NOT NULL)`;
  if (a.type === 'real') return `COALESCE(isfinite(${a.sql}) AND ${a.sql} = trunc(${a.sql}), FALSE)`;
  if (a.type === 'dynamic') {
    const d = `TRY_CAST(json_extract_string(${a.sql}, '$') AS DOUBLE)`;
    return `COALESCE(json_type(${a.sql}) IN ('BIGINT', 'UBIGINT') OR (json_type(${a.sql}) = 'DOUBLE' AND isfinite(${d}) AND ${d} = trunc(${d})), FALSE)`;
  }
  return 'FALSE';
}

export const MATH_FUNCTIONS: Record<string, ScalarFunction> = lookupTable({
  sin: real1('sin'),
  cos: real1('cos'),
  tan: real1('tan'),
  atan: real1('atan'),
  asin: partial(
    (x) => `${x} BETWEEN -1 AND 1`,
    (x) => `asin(${x})`,
  ),
  acos: partial(
    (x) => `${x} BETWEEN -1 AND 1`,
    (x) => `acos(${x})`,
  ),
  atan2: fixed('real', ['real', 'real'], ([y, x]) => `atan2(${y}, ${x})`),
  // cot(x) is 1/tan(x): infinite where sin(x) is 0, answered as null.
  cot: partial(
    (x) => `sin(${x}) <> 0`,
    (x) => `cot(${x})`,
  ),
  degrees: real1('degrees'),
  radians: real1('radians'),
  exp2: fixed('real', ['real'], ([x]) => `pow(2, ${x})`),
  exp10: fixed('real', ['real'], ([x]) => `pow(10, ${x})`),
  gamma: partial(notAPole, (x) => `gamma(${x})`),
  loggamma: partial(notAPole, (x) => `lgamma(${x})`),
  // A new value on every row: DuckDB's random() is volatile, so it is never folded to one constant.
  rand: { minArgs: 0, maxArgs: 0, returns: () => 'real', sql: () => 'random()' },
  isint: { minArgs: 1, maxArgs: 1, returns: () => 'bool', sql: ([a]) => isIntSql(a!) },
  isreal: typeTest(['real', 'long'], ['DOUBLE', 'BIGINT', 'UBIGINT']),
  isstring: typeTest(['string'], ['VARCHAR']),
  isbool: typeTest(['bool'], ['BOOLEAN']),
  ismap: typeTest([], ['OBJECT']),
  isarray: typeTest([], ['ARRAY']),
  // DuckDB's text is always valid UTF-8 (ingest replaces what is not), so any string is.
  isutf8: typeTest(['string'], ['VARCHAR']),
  isascii: {
    minArgs: 1,
    maxArgs: 1,
    returns: () => 'bool',
    sql: ([a]) => `COALESCE(regexp_full_match(${castTo(a!, 'string')}, '[\\x00-\\x7F]*'), FALSE)`,
  },
});
