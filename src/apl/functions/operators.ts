/**
 * APL's scalar operators: arithmetic, comparison, logic, string predicates, set membership and ranges.
 * Null rules (apl.md 4.1): comparisons with null are false except that null != x is true; string
 * predicates on null are false and their negations true.
 */
import { ArgumentError, type ArgInfo, type ScalarFunction, type SqlContext, type TypeContext } from './catalog.js';
import { sqlText } from '../../sql/quote.js';
import { asStringSql, convertSql, likeEscape, regexEscape, type SqlArg } from './sql.js';
import { isNumeric, type AplType } from '../types.js';
import { lookupTable } from '../../util/lookup.js';

const fail = (m: string): never => {
  throw new ArgumentError(m);
};

/** The type two operands are compared in, or an error naming the operator and the operand types. */
export function comparisonType(op: string, a: ArgInfo, b: ArgInfo, ctx: TypeContext): AplType {
  const [x, y] = [a.type, b.type];
  if (x === y) return x;
  if (isNumeric(x) && isNumeric(y)) return 'real';
  if ((x === 'timespan' && y === 'long') || (x === 'long' && y === 'timespan')) return 'timespan';
  if (x === 'dynamic') return y;
  if (y === 'dynamic') return x;
  if (x === 'datetime' && y === 'string' && b.constant) return 'datetime';
  if (y === 'datetime' && x === 'string' && a.constant) return 'datetime';
  if (!ctx.strict && ((x === 'string' && isNumeric(y)) || (y === 'string' && isNumeric(x)))) return 'real';
  return fail(`the operator "${op}" is not defined for ${x} and ${y}`);
}

function convertPair(a: SqlArg, b: SqlArg, t: AplType): [string, string] {
  // BIGINT and DOUBLE compare natively in DuckDB; converting a long column to DOUBLE would only cost time.
  const keep = (s: SqlArg) => (t === 'real' && isNumeric(s.type)) || (t === 'timespan' && s.type === 'long');
  return [keep(a) ? a.sql : convertSql(a, t), keep(b) ? b.sql : convertSql(b, t)];
}

function comparison(op: string, sqlOp: string): ScalarFunction {
  return {
    minArgs: 2,
    maxArgs: 2,
    returns(args, ctx) {
      comparisonType(op, args[0]!, args[1]!, ctx);
      return 'bool';
    },
    sql([a, b], ctx) {
      const t = comparisonType(op, a!, b!, { strict: false });
      const [x, y] = convertPair(a!, b!, t);
      if (op === '==' || op === '!=') return equality(op, x, y, a!, b!, ctx);
      return `(${x} ${sqlOp} ${y})`;
    },
  };
}

/** == and != with APL's null rules: null == null is null, null == x false; null != x true. */
function equality(op: string, x: string, y: string, a: SqlArg, b: SqlArg, ctx: SqlContext): string {
  const constNonNull = (s: SqlArg) => s.constant !== undefined && s.constant.value !== null;
  if (op === '==') {
    if (ctx.filter) return `(${x} = ${y})`;
    if (constNonNull(b) || constNonNull(a)) return `COALESCE(${x} = ${y}, FALSE)`;
    return `(CASE WHEN ${x} IS NULL AND ${y} IS NULL THEN NULL ELSE COALESCE(${x} = ${y}, FALSE) END)`;
  }
  if (constNonNull(b) || constNonNull(a)) return `(${x} IS DISTINCT FROM ${y})`;
  return `(CASE WHEN ${x} IS NULL AND ${y} IS NULL THEN NULL ELSE ${x} IS DISTINCT FROM ${y} END)`;
}

export function arithmeticType(op: string, a: ArgInfo, b: ArgInfo, ctx: TypeContext): AplType {
  const [x, y] = [a.type, b.type];
  const num = (t: AplType) => isNumeric(t) || (!ctx.strict && (t === 'string' || t === 'dynamic'));
  if (x === 'datetime' && y === 'datetime' && op === '-') return 'timespan';
  if (x === 'datetime' && y === 'timespan' && (op === '+' || op === '-')) return 'datetime';
  if (x === 'timespan' && y === 'datetime' && op === '+') return 'datetime';
  if (x === 'timespan' && y === 'timespan') {
    if (op === '+' || op === '-' || op === '%') return 'timespan';
    if (op === '/') return 'real';
  }
  if (x === 'timespan' && isNumeric(y) && (op === '*' || op === '/')) return 'timespan';
  if (isNumeric(x) && y === 'timespan' && op === '*') return 'timespan';
  // A number and a timespan: the number counts nanoseconds (a duration stored as a number), so
  // `duration / 1ms` is that duration in milliseconds and `duration + 1s` a timespan.
  if (num(x) && y === 'timespan' && op === '/') return 'real';
  if (((x === 'timespan' && y === 'long') || (x === 'long' && y === 'timespan')) && (op === '+' || op === '-'))
    return 'timespan';
  if (x === 'long' && y === 'long') return 'long';
  if (num(x) && num(y)) return 'real';
  return fail(`the operator "${op}" is not defined for ${x} and ${y}`);
}

function arithmetic(op: '+' | '-' | '*' | '/' | '%'): ScalarFunction {
  return {
    minArgs: 2,
    maxArgs: 2,
    returns: (args, ctx) => arithmeticType(op, args[0]!, args[1]!, ctx),
    sql([a, b]) {
      const t = arithmeticType(op, a!, b!, { strict: false });
      const x = a!.sql;
      const y = b!.sql;
      if (t === 'datetime') {
        const [dt, ts] = a!.type === 'datetime' ? [x, y] : [y, x];
        return `make_timestamp_ns(epoch_ns(${dt}) ${op} ${ts})`;
      }
      if (a!.type === 'datetime' && b!.type === 'datetime') return `(epoch_ns(${x}) - epoch_ns(${y}))`;
      if (t === 'timespan' && (op === '*' || op === '/')) {
        if (a!.type === 'long' || b!.type === 'long') return op === '/' ? `(${x} // ${y})` : `(${x} * ${y})`;
        return `CAST(round(CAST(${x} AS DOUBLE) ${op} ${y}) AS BIGINT)`;
      }
      if (b!.type === 'timespan' && op === '/' && t === 'real') {
        const n = a!.type === 'timespan' || isNumeric(a!.type) ? x : convertSql(a!, 'real');
        return `(CAST(${n} AS DOUBLE) / ${y})`;
      }
      if (t === 'long') return op === '/' ? `(${x} // ${y})` : `(${x} ${op} ${y})`;
      if (t === 'timespan') return `(${x} ${op} ${y})`;
      const r = (s: SqlArg) => (isNumeric(s.type) ? s.sql : convertSql(s, 'real'));
      // long / long truncates, but anything with a real is real division.
      return op === '/' ? `(CAST(${r(a!)} AS DOUBLE) / ${r(b!)})` : `(${r(a!)} ${op} ${r(b!)})`;
    },
  };
}

function logical(op: 'and' | 'or'): ScalarFunction {
  return {
    minArgs: 2,
    maxArgs: 2,
    returns(args) {
      for (const a of args)
        if (a.type !== 'bool' && a.type !== 'dynamic') fail(`"${op}" needs bool operands, not ${a.type}`);
      return 'bool';
    },
    sql: ([a, b]) => `(${convertSql(a!, 'bool')} ${op.toUpperCase()} ${convertSql(b!, 'bool')})`,
  };
}

const TERM_BOUNDARY = '[^\\p{L}\\p{N}]';

type StringPredicate = (lhs: string, rhs: SqlArg, rhsText: string | undefined) => string;

/**
 * A string predicate and its negation. `build` gets the LHS as text, the RHS, and the RHS's value when it
 * is a constant (constant patterns compile to LIKE/regex literals that DuckDB optimises).
 */
function stringPredicate(name: string, build: StringPredicate): Record<string, ScalarFunction> {
  const make = (negated: boolean): ScalarFunction => ({
    minArgs: 2,
    maxArgs: 2,
    returns(args) {
      const rhs = args[1]!;
      if (rhs.type === 'bool' || rhs.type === 'datetime')
        fail(`"${name}" needs a string on the right, not ${rhs.type}`);
      return 'bool';
    },
    sql([a, b], ctx) {
      const rhsText =
        b!.constant && b!.constant.value !== null && typeof b!.constant.value !== 'object'
          ? String(b!.constant.value)
          : undefined;
      const rhs = b!.type === 'string' ? b! : { ...b!, sql: asStringSql(b!) };
      const pos = build(asStringSql(a!), rhs, rhsText);
      if (negated) return `COALESCE(NOT ${pos}, TRUE)`;
      return ctx.filter ? pos : `COALESCE(${pos}, FALSE)`;
    },
  });
  return { [name]: make(false), [`!${name}`]: make(true) };
}

function termRegex(
  caseInsensitive: boolean,
  before: boolean,
  after: boolean,
): (lhs: string, rhs: SqlArg, text?: string) => string {
  return (lhs, rhs, text) => {
    const flags = caseInsensitive ? '(?i)' : '';
    const pre = before ? `(?:^|${TERM_BOUNDARY})` : '';
    const post = after ? `(?:$|${TERM_BOUNDARY})` : '';
    if (text !== undefined) {
      const re = regexp(lhs, sqlText(`${flags}${pre}${regexEscape(text)}${post}`));
      // A cheap substring test first: most rows fail it, and the regex then runs only on candidates.
      const pre2 = caseInsensitive ? ilike(lhs, '%', text, '%') : `contains(${lhs}, ${sqlText(text)})`;
      return `(${pre2} AND ${re})`;
    }
    return regexp(lhs, `(${sqlText(flags + pre)} || regexp_escape(${rhs.sql}) || ${sqlText(post)})`);
  };
}

const regexp = (s: string, re: string) => `regexp_matches(${s}, ${re})`;

/**
 * `s ILIKE pattern`, with an ESCAPE clause only when the text holds a wildcard character: DuckDB runs a
 * plain `ILIKE '%x%'` on its fast substring path, but not one with ESCAPE.
 */
function ilike(s: string, before: string, text: string, after: string): string {
  if (!/[%_\\]/.test(text)) return `(${s} ILIKE ${sqlText(`${before}${text}${after}`)})`;
  return `(${s} ILIKE ${sqlText(`${before}${likeEscape(text)}${after}`)} ESCAPE '\\')`;
}

export const OPERATORS: Record<string, ScalarFunction> = lookupTable({
  '+': arithmetic('+'),
  '-': arithmetic('-'),
  '*': arithmetic('*'),
  '/': arithmetic('/'),
  '%': arithmetic('%'),
  '==': comparison('==', '='),
  '!=': comparison('!=', '<>'),
  '<': comparison('<', '<'),
  '<=': comparison('<=', '<='),
  '>': comparison('>', '>'),
  '>=': comparison('>=', '>='),
  and: logical('and'),
  or: logical('or'),
  'unary-': {
    minArgs: 1,
    maxArgs: 1,
    returns([a]) {
      if (a!.type === 'long' || a!.type === 'real' || a!.type === 'timespan') return a!.type;
      // A dynamic value (an event's field in an agent's pipeline) is negated as a number.
      if (a!.type === 'dynamic') return 'real';
      return fail(`unary "-" is not defined for ${a!.type}`);
    },
    sql: ([a]) => `(-${a!.type === 'dynamic' ? convertSql(a!, 'real') : a!.sql})`,
  },
  ...stringPredicate('=~', (l, r, t) =>
    t !== undefined ? `(lower(${l}) = ${sqlText(t.toLowerCase())})` : `(lower(${l}) = lower(${r.sql}))`,
  ),
  ...stringPredicate('contains', (l, r, t) =>
    t !== undefined ? ilike(l, '%', t, '%') : `contains(lower(${l}), lower(${r.sql}))`,
  ),
  ...stringPredicate('contains_cs', (l, r) => `contains(${l}, ${r.sql})`),
  ...stringPredicate('startswith', (l, r, t) =>
    t !== undefined ? ilike(l, '', t, '%') : `starts_with(lower(${l}), lower(${r.sql}))`,
  ),
  ...stringPredicate('startswith_cs', (l, r) => `starts_with(${l}, ${r.sql})`),
  ...stringPredicate('endswith', (l, r, t) =>
    t !== undefined ? ilike(l, '%', t, '') : `ends_with(lower(${l}), lower(${r.sql}))`,
  ),
  ...stringPredicate('endswith_cs', (l, r) => `ends_with(${l}, ${r.sql})`),
  ...stringPredicate('has', termRegex(true, true, true)),
  ...stringPredicate('has_cs', termRegex(false, true, true)),
  ...stringPredicate('hasprefix', termRegex(true, true, false)),
  ...stringPredicate('hasprefix_cs', termRegex(false, true, false)),
  ...stringPredicate('hassuffix', termRegex(true, false, true)),
  ...stringPredicate('hassuffix_cs', termRegex(false, false, true)),
  ...stringPredicate('matches regex', (l, r) => regexp(l, r.sql)),
});
OPERATORS['not#'] = { minArgs: 1, maxArgs: 1, returns: () => 'bool', sql: ([a]) => `(NOT ${a!.sql})` };
// `!~` is the negation of `=~`; the table above named it `!=~`.
OPERATORS['!~'] = OPERATORS['!=~']!;
delete OPERATORS['!=~'];

/** `x in (a, b)`, `!in`, and the case-insensitive `in~`, `!in~`. Items are already flattened and typed. */
export function inSql(op: string, lhs: SqlArg, items: SqlArg[], ctx: SqlContext): string {
  const ci = op.endsWith('~');
  const negated = op.startsWith('!');
  if (items.length === 0) return negated ? 'TRUE' : 'FALSE';
  let l: string;
  let list: string[];
  if (ci) {
    l = `lower(${asStringSql(lhs)})`;
    list = items.map((i) =>
      i.constant && typeof i.constant.value === 'string'
        ? sqlText(i.constant.value.toLowerCase())
        : `lower(${asStringSql(i)})`,
    );
  } else {
    const t = items.every((i) => i.type === lhs.type)
      ? lhs.type
      : items.every((i) => isNumeric(i.type)) && isNumeric(lhs.type)
        ? 'real'
        : lhs.type === 'dynamic'
          ? items[0]!.type
          : lhs.type;
    l = lhs.type === t || (t === 'real' && isNumeric(lhs.type)) ? lhs.sql : convertSql(lhs, t);
    list = items.map((i) => (i.type === t || (t === 'real' && isNumeric(i.type)) ? i.sql : convertSql(i, t)));
  }
  const pos = `(${l} IN (${list.join(', ')}))`;
  if (negated) return `COALESCE(NOT ${pos}, TRUE)`;
  return ctx.filter ? pos : `COALESCE(${pos}, FALSE)`;
}

/** has_any: one regex alternation over the terms. */
export function hasAnySql(lhs: SqlArg, terms: string[], caseSensitive: boolean, ctx: SqlContext): string {
  if (terms.length === 0) return 'FALSE';
  const re = `${caseSensitive ? '' : '(?i)'}(?:^|${TERM_BOUNDARY})(?:${terms.map(regexEscape).join('|')})(?:$|${TERM_BOUNDARY})`;
  const pos = regexp(asStringSql(lhs), sqlText(re));
  return ctx.filter ? pos : `COALESCE(${pos}, FALSE)`;
}

/** `x between (a .. b)`: inclusive at both ends. */
export function betweenSql(negated: boolean, x: SqlArg, lo: SqlArg, hi: SqlArg, ctx: SqlContext): string {
  const t = comparisonType('between', x, lo, { strict: false });
  const conv = (s: SqlArg) => (s.type === t || (t === 'real' && isNumeric(s.type)) ? s.sql : convertSql(s, t));
  const pos = `(${conv(x)} BETWEEN ${conv(lo)} AND ${conv(hi)})`;
  if (negated) return `COALESCE(NOT ${pos}, TRUE)`;
  return ctx.filter ? pos : `COALESCE(${pos}, FALSE)`;
}
