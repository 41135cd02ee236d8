/**
 * Bound APL expressions (../binder/bound.ts) compiled once into JavaScript closures over an event's fields,
 * for pipelines that run on every event as it passes (an agent's `apl` transform), never through DuckDB.
 * Each operator and function here means what the store's SQL makes it mean (../functions/): the same
 * conversions (./values.ts), the same null rules. A function without a JavaScript meaning yet is refused
 * when the pipeline is compiled, naming its line and column.
 */
import { AplError } from '../errors.js';
import type { BExpr } from '../binder/bound.js';
import { argInfo } from '../binder/expressions.js';
import { arithmeticType, comparisonType } from '../functions/operators.js';
import { regexEscape } from '../functions/sql.js';
import { isNumeric, type AplType } from '../types.js';
import { JS_FUNCTIONS, REFUSED_IN_PIPELINES } from './functions.js';
import { matches, regex, regexOf } from './regex.js';
import { converter, toStringValue, type Value } from './values.js';

/** An event's fields, as the pipeline reads them. */
export type Row = Readonly<Record<string, unknown>>;
/** An expression, compiled: its value for an event. */
export type Ev = (row: Row) => Value;

/** Names a position in the pipeline's text for errors found while compiling. */
export interface CompileContext {
  src: string;
}

export function compileExpr(e: BExpr, ctx: CompileContext): Ev {
  switch (e.k) {
    case 'lit': {
      const v = literal(e.value, e.type);
      return () => v;
    }
    case 'col':
      return column(e.name, e.type);
    case 'path':
      return path(e, ctx);
    case 'hidden':
      if (e.alias === '__now') return () => BigInt(Date.now()) * 1_000_000n;
      throw new Error(`the hidden column ${e.alias} has no value in an event`);
    case 'agg':
      throw new AplError(`the aggregation ${e.fn}() needs many events`, ctx.src, e.pos);
    case 'in':
      return inList(e, ctx);
    case 'between':
      return between(e, ctx);
    case 'has_any': {
      const left = asText(e.left, ctx);
      if (e.terms.length === 0) return () => false;
      const re = new RegExp(
        `(?:^|${BOUNDARY})(?:${e.terms.map(regexEscape).join('|')})(?:$|${BOUNDARY})`,
        e.caseSensitive ? 'u' : 'iu',
      );
      return (row) => {
        const s = left(row);
        return s === null ? false : re.test(s);
      };
    }
    case 'call':
      return call(e, ctx);
  }
}

/** A literal as its JS value: longs as numbers (the binder gives bigints), datetimes and timespans as bigints. */
function literal(v: unknown, type: AplType): Value {
  if (v === null || v === undefined) return null;
  if (type === 'long' || type === 'real') return Number(v);
  if (type === 'datetime' || type === 'timespan') return BigInt(v as bigint);
  return v;
}

/** A field: the event's value, converted to the type the pipeline knows it by (dynamic when it knows none). */
function column(name: string, type: AplType, bound: AplType = type): Ev {
  // A field an operator made holds its value as JSON does (a datetime as text): read back as its type.
  // (`_time`, an open field, is read as a datetime.)
  // Only the event's own fields: `constructor` or `toString` is no field of an event that lacks them.
  // A name no object has by its prototype is read in one lookup (events are plain objects).
  const own: (row: Row) => unknown =
    name in Object.prototype ? (row) => (Object.hasOwn(row, name) ? row[name] : undefined) : (row) => row[name];
  if (type === 'dynamic') return (row) => own(row) ?? null;
  // A field of a known type read as another (`as`): its bound type first, as the two steps apart gave.
  if (bound !== 'dynamic' && bound !== type) {
    const read = converter('dynamic', bound);
    const to = converter(bound, type);
    return (row) => to(read(own(row) ?? null));
  }
  // The converter tests first for the type the value mostly has already.
  const read = converter('dynamic', type);
  return (row) => read(own(row) ?? null);
}

/**
 * `a.b.c`, `m['k']`, `arr[0]`: an unquoted dotted name is a flat field first (`host.name` as one key, as
 * the store flattens objects), the longest that exists, then members of the objects inside it.
 */
function path(e: Extract<BExpr, { k: 'path' }>, ctx: CompileContext): Ev {
  const steps = e.path.map((p) => (typeof p === 'object' ? { dynamic: compileExpr(p, ctx), type: p.type } : p));
  const walk = (v: Value, from: number, row: Row): Value => {
    let cur = v;
    for (let i = from; i < steps.length; i++) {
      if (cur === null || cur === undefined || typeof cur !== 'object') return null;
      const s = steps[i]!;
      let key: Value = s;
      if (typeof s === 'object') {
        key = s.dynamic(row);
        if (key === null) return null;
      }
      if (Array.isArray(cur)) {
        if (typeof key !== 'number') return null;
        cur = cur[key < 0 ? cur.length + key : key];
      } else {
        if (typeof key !== 'string') return null;
        cur = Object.hasOwn(cur, key) ? (cur as Record<string, unknown>)[key] : null;
      }
    }
    return cur ?? null;
  };
  const t = e.target;
  if (t.k === 'col' && t.open) {
    // Flat keys for the leading members, longest first: `a.b.c`, then `a.b` and member c, then a.
    let n = 0;
    while (n < steps.length && typeof steps[n] === 'string') n++;
    const keys = Array.from({ length: n + 1 }, (_, i) => [t.name, ...(steps.slice(0, n - i) as string[])].join('.'));
    return (row) => {
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        const own = Object.hasOwn(row, k);
        if (i === keys.length - 1 || (own && row[k] !== undefined))
          return walk(own ? (row[k] ?? null) : null, n - i, row);
      }
      return null;
    };
  }
  const target = compileExpr(t, ctx);
  return (row) => walk(target(row), 0, row);
}

/** A compiled argument converted to a type. */
function as(e: BExpr, to: AplType, ctx: CompileContext): Ev {
  // A field read as the type wanted in one step, and a constant converted once, not for every event.
  if (e.k === 'col') return column(e.name, e.type === to ? e.type : to, e.type);
  const f = compileExpr(e, ctx);
  if (e.type === to) return f;
  const c = converter(e.type, to);
  if (e.k === 'lit') {
    // A constant that does not convert fails on each event, as it did before: counted where it runs.
    try {
      const v = c(f({}));
      return () => v;
    } catch {
      // falls through
    }
  }
  return (row) => c(f(row));
}

/** A value's text for string operators (null stays null). */
function asText(e: BExpr, ctx: CompileContext): (row: Row) => string | null {
  const f = compileExpr(e, ctx);
  if (e.type === 'string') return f as (row: Row) => string | null;
  return (row) => toStringValue(f(row), e.type);
}

const BOUNDARY = '[^\\p{L}\\p{N}]';

/** Orders two non-null values of one type: numbers, bigints, strings, bools; dynamic values by their JSON. */
function order(t: AplType): (x: Value, y: Value) => number {
  if (t === 'dynamic') {
    return (x, y) => {
      // Two numbers (two strings) compare as numbers (strings), as the store's typed columns of the
      // fields do; values of other or different kinds by their JSON.
      if ((typeof x === 'number' && typeof y === 'number') || (typeof x === 'string' && typeof y === 'string'))
        return x < y ? -1 : x > y ? 1 : 0;
      const a = JSON.stringify(x);
      const b = JSON.stringify(y);
      return a < b ? -1 : a > b ? 1 : 0;
    };
  }
  return (x, y) => ((x as number) < (y as number) ? -1 : (x as number) > (y as number) ? 1 : 0);
}

/**
 * The type two values are compared in: an event's field (dynamic) beside a long compares as a real, as the
 * field may hold 0.25 (`dur > 0`), which the store's column of reals compares as a real.
 */
function compareType(op: string, a: BExpr, b: BExpr): AplType {
  const t = comparisonType(op, argInfo(a), argInfo(b), { strict: false });
  return t === 'long' && (a.type === 'dynamic' || b.type === 'dynamic') ? 'real' : t;
}

function comparison(op: string, a: BExpr, b: BExpr, ctx: CompileContext): Ev {
  const t = compareType(op, a, b);
  const x = as(a, t, ctx);
  const y = as(b, t, ctx);
  const cmp = order(t);
  const equal =
    t === 'real' || isNumeric(t) ? (p: Value, q: Value) => p === q : (p: Value, q: Value) => cmp(p, q) === 0;
  switch (op) {
    case '==':
      return (row) => {
        const p = x(row);
        const q = y(row);
        if (p === null || q === null) return p === null && q === null ? null : false;
        return equal(p, q);
      };
    case '!=':
      return (row) => {
        const p = x(row);
        const q = y(row);
        if (p === null || q === null) return p === null && q === null ? null : true;
        return !equal(p, q);
      };
    default: {
      if (t === 'real' || t === 'long') return numericOrder(op, x, y);
      const test =
        op === '<'
          ? (c: number) => c < 0
          : op === '<='
            ? (c: number) => c <= 0
            : op === '>'
              ? (c: number) => c > 0
              : (c: number) => c >= 0;
      return (row) => {
        const p = x(row);
        const q = y(row);
        if (p === null || q === null) return null;
        if (typeof p === 'number' && (Number.isNaN(p) || Number.isNaN(q))) return nanOrder(op, p, q as number);
        return test(cmp(p, q));
      };
    }
  }
}

/**
 * `<`, `<=`, `>`, `>=` between numbers in one closure, no comparator and test called per event (a constant
 * side is read once already: `as`).
 */
function numericOrder(op: string, x: Ev, y: Ev): Ev {
  const less = op === '<' || op === '<=';
  const orEqual = op === '<=' || op === '>=';
  return (row) => {
    const p = x(row) as number | null;
    const q = y(row) as number | null;
    if (p === null || q === null) return null;
    // NaN (p !== p) is ordered as DuckDB orders it.
    if (p !== p || q !== q) return nanOrder(op, p, q);
    return less ? (orEqual ? p <= q : p < q) : orEqual ? p >= q : p > q;
  };
}

/** DuckDB orders NaN above every other number and equal to itself. */
function nanOrder(op: string, p: number, q: number): boolean {
  const rank = (n: number) => (Number.isNaN(n) ? 1 : 0);
  const c = rank(p) - rank(q) || (p < q ? -1 : p > q ? 1 : 0);
  return op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0;
}

const big = (v: Value): bigint => (typeof v === 'bigint' ? v : BigInt(Math.trunc(v as number)));

function arithmetic(op: '+' | '-' | '*' | '/' | '%', a: BExpr, b: BExpr, ctx: CompileContext): Ev {
  const t = arithmeticType(op, argInfo(a), argInfo(b), { strict: false });
  const x = compileExpr(a, ctx);
  const y = compileExpr(b, ctx);
  const both =
    (f: (p: Value, q: Value) => Value): Ev =>
    (row) => {
      const p = x(row);
      const q = y(row);
      return p === null || q === null ? null : f(p, q);
    };
  if (t === 'datetime') {
    const dtFirst = a.type === 'datetime';
    return both((p, q) => {
      const [dt, ts] = dtFirst ? [big(p), big(q)] : [big(q), big(p)];
      return op === '-' ? dt - ts : dt + ts;
    });
  }
  if (a.type === 'datetime' && b.type === 'datetime') return both((p, q) => big(p) - big(q));
  if (t === 'timespan' && (op === '*' || op === '/')) {
    if (a.type === 'long' || b.type === 'long')
      return both((p, q) => (op === '/' ? (big(q) === 0n ? null : big(p) / big(q)) : big(p) * big(q)));
    return both((p, q) => {
      const r = op === '*' ? Number(p) * Number(q) : Number(p) / Number(q);
      return Number.isFinite(r) ? BigInt(Math.round(r)) : null;
    });
  }
  if (b.type === 'timespan' && op === '/' && t === 'real') {
    const n = a.type === 'timespan' || isNumeric(a.type) ? x : as(a, 'real', ctx);
    return (row) => {
      const p = n(row);
      const q = y(row);
      return p === null || q === null ? null : realDivide(Number(p), Number(q));
    };
  }
  if (t === 'long') {
    switch (op) {
      case '/':
        return both((p, q) => ((q as number) === 0 ? null : Math.trunc((p as number) / (q as number))));
      case '%':
        return both((p, q) => ((q as number) === 0 ? null : (p as number) % (q as number)));
      default:
        return both(numeric(op));
    }
  }
  if (t === 'timespan') {
    return both((p, q) => {
      const [m, n] = [big(p), big(q)];
      if (op === '%') return n === 0n ? null : m % n;
      return op === '+' ? m + n : m - n;
    });
  }
  // Real: operands that are not numbers are converted (strings and dynamic values).
  const r = (e: BExpr, f: Ev) => (isNumeric(e.type) ? f : as(e, 'real', ctx));
  const p = r(a, x);
  const q = r(b, y);
  if (op === '/' && (a.type === 'dynamic' || b.type === 'dynamic') && a.type !== 'real' && b.type !== 'real') {
    // A field holding whole numbers is a long in the store (its type is inferred from its values): an
    // event's whole number divides as a long does, truncated.
    const whole = (e: BExpr, f: Ev) =>
      e.type === 'long' ? () => true : e.type === 'dynamic' ? (row: Row) => Number.isInteger(f(row)) : () => false;
    const [wa, wb] = [whole(a, x), whole(b, y)];
    return (row) => {
      const m = p(row) as number | null;
      const n = q(row) as number | null;
      if (m === null || n === null) return null;
      if (wa(row) && wb(row)) return n === 0 ? null : Math.trunc(m / n);
      return realDivide(m, n);
    };
  }
  const f = op === '/' ? (m: number, n: number) => realDivide(m, n) : (numeric(op) as (m: number, n: number) => Value);
  return (row) => {
    const m = p(row);
    const n = q(row);
    return m === null || n === null ? null : f(m as number, n as number);
  };
}

/** DuckDB answers null for a division by zero. */
const realDivide = (m: number, n: number): number | null => (n === 0 ? null : m / n);

function numeric(op: '+' | '-' | '*' | '/' | '%'): (p: Value, q: Value) => Value {
  switch (op) {
    case '+':
      return (p, q) => (p as number) + (q as number);
    case '-':
      return (p, q) => (p as number) - (q as number);
    case '*':
      return (p, q) => (p as number) * (q as number);
    case '/':
      return (p, q) => realDivide(p as number, q as number);
    case '%':
      return (p, q) => ((q as number) === 0 ? null : (p as number) % (q as number));
  }
}

/** A string predicate (contains, has, startswith…): false on null, its negation true. */
function stringPredicate(name: string, a: BExpr, b: BExpr, ctx: CompileContext): Ev | undefined {
  const negated = name.startsWith('!');
  const base = negated ? name.slice(1) : name;
  const test = Object.hasOwn(PREDICATES, base) ? PREDICATES[base] : undefined;
  if (!test) return undefined;
  const l = asText(a, ctx);
  const r = asText(b, ctx);
  return (row) => {
    const s = l(row);
    const t = s === null ? null : r(row);
    if (s === null || t === null) return negated;
    return test(s, t) !== negated;
  };
}

const lower = (s: string) => s.toLowerCase();
const termCache = new Map<string, RegExp>();
const MAX_CACHED_TERM = 4096;

function term(ci: boolean, before: boolean, after: boolean): (s: string, t: string) => boolean {
  return (s, t) => {
    const key = `${ci ? 'i' : ''}${before ? 'b' : ''}${after ? 'a' : ''}:${t}`;
    let re = termCache.get(key);
    if (!re) {
      re = new RegExp(
        `${before ? `(?:^|${BOUNDARY})` : ''}${regexEscape(t)}${after ? `(?:$|${BOUNDARY})` : ''}`,
        ci ? 'iu' : 'u',
      );
      // Terms from events are kept only while short and few.
      if (t.length <= MAX_CACHED_TERM) {
        if (termCache.size > 1000) termCache.clear();
        termCache.set(key, re);
      }
    }
    return re.test(s);
  };
}

/** The string predicates by name; a negation (`!contains`) is the same test, negated. */
const PREDICATES: Record<string, (s: string, t: string) => boolean> = {
  '=~': (s, t) => lower(s) === lower(t),
  // `!~` is the negation of `=~`.
  '~': (s, t) => lower(s) === lower(t),
  contains: (s, t) => lower(s).includes(lower(t)),
  contains_cs: (s, t) => s.includes(t),
  startswith: (s, t) => lower(s).startsWith(lower(t)),
  startswith_cs: (s, t) => s.startsWith(t),
  endswith: (s, t) => lower(s).endsWith(lower(t)),
  endswith_cs: (s, t) => s.endsWith(t),
  has: term(true, true, true),
  has_cs: term(false, true, true),
  hasprefix: term(true, true, false),
  hasprefix_cs: term(false, true, false),
  hassuffix: term(true, false, true),
  hassuffix_cs: term(false, false, true),
};

function matchesRegex(a: BExpr, b: BExpr, ctx: CompileContext, pos: number): Ev {
  const l = asText(a, ctx);
  if (b.k === 'lit' && typeof b.value === 'string') {
    let re: ReturnType<typeof regexOf>;
    try {
      re = regexOf(b.value);
    } catch (err) {
      throw new AplError(`matches regex: ${(err as Error).message}`, ctx.src, pos);
    }
    return (row) => {
      const s = l(row);
      return s === null ? false : matches(re, s);
    };
  }
  const r = asText(b, ctx);
  return (row) => {
    const s = l(row);
    const p = s === null ? null : r(row);
    if (s === null || p === null) return false;
    // A pattern from the event that is no RE2 pattern matches nothing.
    const re = regex(p);
    return re ? matches(re, s) : false;
  };
}

function logical(op: 'and' | 'or', a: BExpr, b: BExpr, ctx: CompileContext): Ev {
  const x = as(a, 'bool', ctx);
  const y = as(b, 'bool', ctx);
  if (op === 'and')
    return (row) => {
      const p = x(row);
      if (p === false) return false;
      const q = y(row);
      if (q === false) return false;
      return p === null || q === null ? null : true;
    };
  return (row) => {
    const p = x(row);
    if (p === true) return true;
    const q = y(row);
    if (q === true) return true;
    return p === null || q === null ? null : false;
  };
}

function call(e: Extract<BExpr, { k: 'call' }>, ctx: CompileContext): Ev {
  const [a, b] = e.args;
  switch (e.fn) {
    case '==':
    case '!=':
    case '<':
    case '<=':
    case '>':
    case '>=':
      return comparison(e.fn, a!, b!, ctx);
    case '+':
    case '-':
    case '*':
    case '/':
    case '%':
      return arithmetic(e.fn, a!, b!, ctx);
    case 'and':
    case 'or':
      return logical(e.fn, a!, b!, ctx);
    case 'not#': {
      const x = as(a!, 'bool', ctx);
      return (row) => {
        const v = x(row);
        return v === null ? null : !v;
      };
    }
    case 'unary-': {
      const x = a!.type === 'dynamic' ? as(a!, 'real', ctx) : compileExpr(a!, ctx);
      return (row) => {
        const v = x(row);
        return v === null ? null : typeof v === 'bigint' ? -v : -(v as number);
      };
    }
    case 'matches regex':
      return matchesRegex(a!, b!, ctx, e.pos);
  }
  const predicate = b && stringPredicate(e.fn, a!, b, ctx);
  if (predicate) return predicate;
  const fn = Object.hasOwn(JS_FUNCTIONS, e.fn) ? JS_FUNCTIONS[e.fn] : undefined;
  if (!fn)
    throw new AplError(
      REFUSED_IN_PIPELINES[e.fn] ?? `${e.fn}() has no meaning in an event pipeline (it runs in queries and monitors)`,
      ctx.src,
      e.pos,
    );
  try {
    return fn(e, { compile: (x) => compileExpr(x, ctx), as: (x, t) => as(x, t, ctx), text: (x) => asText(x, ctx) });
  } catch (err) {
    // What a function refuses at load (a date part that is not a constant) names where it is.
    if (err instanceof AplError || err instanceof RangeError) throw err;
    throw new AplError((err as Error).message, ctx.src, e.pos);
  }
}

function inList(e: Extract<BExpr, { k: 'in' }>, ctx: CompileContext): Ev {
  const negated = e.op.startsWith('!');
  if (e.items.length === 0) return () => negated;
  if (e.op.endsWith('~')) {
    const l = asText(e.left, ctx);
    const items = e.items.map((i) => asText(i, ctx));
    return (row) => {
      const s = l(row);
      if (s === null) return negated;
      const ls = lower(s);
      for (const i of items) {
        const v = i(row);
        if (v !== null && lower(v) === ls) return !negated;
      }
      return negated;
    };
  }
  const types = e.items.map((i) => i.type);
  const t = types.every((x) => x === e.left.type)
    ? e.left.type
    : types.every(isNumeric) && isNumeric(e.left.type)
      ? 'real'
      : e.left.type === 'dynamic'
        ? types[0] === 'long'
          ? 'real'
          : types[0]!
        : e.left.type;
  const l = as(e.left, t, ctx);
  const cmp = order(t);
  const items = e.items.map((i) => as(i, t, ctx));
  return (row) => {
    const v = l(row);
    if (v === null) return negated;
    for (const i of items) {
      const w = i(row);
      if (w !== null && cmp(v, w) === 0) return !negated;
    }
    return negated;
  };
}

function between(e: Extract<BExpr, { k: 'between' }>, ctx: CompileContext): Ev {
  const t = compareType('between', e.left, e.low);
  const x = as(e.left, t, ctx);
  const lo = as(e.low, t, ctx);
  const hi = as(e.high, t, ctx);
  const cmp = order(t);
  return (row) => {
    const v = x(row);
    const l = lo(row);
    const h = hi(row);
    if (v === null || l === null || h === null) return e.negated;
    return (cmp(v, l) >= 0 && cmp(v, h) <= 0) !== e.negated;
  };
}
