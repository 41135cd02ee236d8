/**
 * Expressions: names, member access, operators and function calls, typed and checked against the function
 * catalog (../functions). A call's query values (now, the bin_auto size) are passed as constants, and a
 * call the catalog can fold becomes a constant.
 */
import { parseDatetimeText, TYPE_NAMES } from '../parser/parser.js';
import type { Expr, LiteralValue } from '../parser/ast.js';
import { AGGREGATE_FUNCTIONS } from '../functions/aggregate.js';
import { ArgumentError, type ArgInfo, type QueryValue } from '../functions/catalog.js';
import { OPERATORS } from '../functions/operators.js';
import { SCALAR_FUNCTIONS } from '../functions/scalar.js';
import { regexEscape, type SqlArg } from '../functions/sql.js';
import { UNSUPPORTED_FUNCTIONS } from '../functions/unsupported.js';
import type { BExpr, Relation } from './bound.js';
import { colRef, conversionFor } from './relation.js';
import type { Scope } from './scope.js';

export class Expressions {
  constructor(private readonly scope: Scope) {}

  expr(e: Expr, rel: Relation, allowAgg = false): BExpr {
    switch (e.kind) {
      case 'literal':
        return { k: 'lit', type: e.type, value: e.value };
      case 'typeof':
        return this.scope.fail('typeof() is only allowed as an argument of functions that take a type', e.pos);
      case 'star':
        return this.scope.fail('"*" is not allowed here', e.pos);
      case 'named':
        return this.scope.fail(`a named argument (${e.name} = ...) is only taken by arg_max and arg_min`, e.pos);
      case 'name':
        return this.name(e, rel);
      case 'member':
      case 'index':
        return this.access(e, rel);
      case 'unary': {
        const x = this.expr(e.operand, rel, allowAgg);
        if (e.op === '+') return x;
        if (x.k === 'lit' && x.value !== null && (typeof x.value === 'bigint' || typeof x.value === 'number'))
          return { ...x, value: -x.value as never };
        return this.op('unary-', [x], e.pos);
      }
      case 'binary': {
        if (e.left.kind === 'star') {
          // `where * has "x"`: the test applied to every column (apl.md 2.1).
          if (e.right.kind !== 'literal' || typeof e.right.value !== 'string')
            this.scope.fail('"*" on the left needs a string constant on the right', e.right.pos);
          if (!OPERATORS[e.op] || !/^!?[a-z_]+|matches regex$/.test(e.op) || e.op === 'and' || e.op === 'or')
            this.scope.fail(`"*" works with string operators such as has or contains, not "${e.op}"`, e.pos);
          return this.anyColumn({ op: e.op, text: e.right.value as string }, rel, e.pos);
        }
        if (e.op === 'matches regex' || e.op === '!matches regex') {
          return this.op(e.op, [this.expr(e.left, rel, allowAgg), this.expr(e.right, rel, allowAgg)], e.pos);
        }
        const left = this.expr(e.left, rel, allowAgg);
        const right = this.expr(e.right, rel, allowAgg);
        if (
          left.type === 'datetime' &&
          right.k === 'lit' &&
          right.type === 'string' &&
          typeof right.value === 'string' &&
          COMPARISON.has(e.op)
        ) {
          return this.op(e.op, [left, this.datetimeConstant(right.value, e.right.pos)], e.pos);
        }
        return this.op(e.op, [left, right], e.pos);
      }
      case 'list':
        return this.list(e, rel, allowAgg);
      case 'between': {
        const left = this.expr(e.left, rel, allowAgg);
        let low = this.expr(e.low, rel, allowAgg);
        let high = this.expr(e.high, rel, allowAgg);
        if (left.type === 'datetime' && high.type === 'timespan' && low.type === 'datetime') {
          high = this.op('+', [low, high], e.high.pos);
        }
        for (const [b, pos] of [
          [low, e.low.pos],
          [high, e.high.pos],
        ] as const) {
          try {
            OPERATORS['<=']!.returns([left, b], this.scope.typeCtx);
          } catch (err) {
            this.scope.fail(`between: ${(err as Error).message}`, pos);
          }
        }
        if (left.type === 'datetime' && low.k === 'lit' && low.type === 'string')
          low = this.datetimeConstant(String(low.value), e.low.pos);
        return { k: 'between', type: 'bool', negated: e.negated, left, low, high };
      }
      case 'call':
        return this.call(e, rel, allowAgg);
    }
  }

  private datetimeConstant(text: string, pos: number): BExpr {
    const ns = parseDatetimeText(text);
    if (ns === null) this.scope.fail(`"${text}" is not a datetime`, pos);
    return { k: 'lit', type: 'datetime', value: ns };
  }

  op(name: string, args: BExpr[], pos: number): BExpr {
    const fn = OPERATORS[name];
    if (!fn) return this.scope.fail(`unknown operator "${name}"`, pos);
    try {
      const type = fn.returns(args.map(argInfo), this.scope.typeCtx);
      trialSql(fn, args);
      return { k: 'call', type, fn: name, args, pos };
    } catch (err) {
      if (err instanceof ArgumentError) this.scope.fail(err.message, pos);
      throw err;
    }
  }

  private name(e: Extract<Expr, { kind: 'name' }>, rel: Relation): BExpr {
    const col = rel.columns.find((c) => c.name === e.name);
    if (col) return colRef(col);
    const letValue = this.scope.lets.get(e.name);
    if (letValue?.kind === 'scalar') return letValue.expr;
    if (letValue) this.scope.fail(`"${e.name}" is a table, not a scalar`, e.pos);
    if (!e.quoted && e.name === 'null') return { k: 'lit', type: 'dynamic', value: null };
    if (this.scope.opts.unknownNames === 'null') return { k: 'lit', type: 'dynamic', value: null };
    if (this.scope.opts.unknownNames === 'field')
      // Every event has a time; its other fields are whatever it holds.
      return e.name === '_time'
        ? { k: 'col', type: 'datetime', alias: e.name, name: e.name, open: true }
        : { k: 'col', type: 'dynamic', alias: e.name, name: e.name, open: true };
    return this.scope.fail(`unknown column or variable "${e.name}"`, e.pos);
  }

  /** `a.b.c` (a flat dotted column first, then member access into a dynamic column), `m['k']`, `arr[0]`. */
  private access(e: Extract<Expr, { kind: 'member' | 'index' }>, rel: Relation): BExpr {
    const chain: Extract<Expr, { kind: 'member' | 'index' }>[] = [];
    let root: Expr = e;
    while (root.kind === 'member' || root.kind === 'index') {
      chain.unshift(root as Extract<Expr, { kind: 'member' | 'index' }>);
      root = root.target;
    }
    // Unquoted a.b.c: the longest prefix that names a column wins (`geo.city` is usually a flat column).
    let start = 0;
    let base: BExpr | undefined;
    if (root.kind === 'name') {
      let name = root.name;
      if (!this.scope.lets.has(name)) {
        for (let i = 0; i < chain.length; i++) {
          const link = chain[i]!;
          if (link.kind !== 'member') break;
          name += `.${link.name}`;
          const col = rel.columns.find((c) => c.name === name);
          if (col) {
            base = colRef(col);
            start = i + 1;
          }
        }
      }
    }
    if (!base) base = this.expr(root, rel);
    if (start === chain.length) return base;
    if (base.type !== 'dynamic')
      this.scope.fail(
        `"${this.scope.derivedName(root, false) || 'this value'}" is ${base.type}; only dynamic values (maps, arrays) have members`,
        chain[start]!.pos,
      );
    const path: (string | number | BExpr)[] = [];
    for (const link of chain.slice(start)) {
      if (link.kind === 'member') path.push(link.name);
      else {
        const idx = this.expr(link.index, rel);
        if (idx.k === 'lit' && typeof idx.value === 'string') path.push(idx.value);
        else if (idx.k === 'lit' && typeof idx.value === 'bigint') path.push(Number(idx.value));
        else if (idx.type === 'string' || idx.type === 'long') path.push(idx);
        else this.scope.fail('an index must be a string key or an integer position', link.pos);
      }
    }
    return { k: 'path', type: 'dynamic', target: base, path };
  }

  private list(e: Extract<Expr, { kind: 'list' }>, rel: Relation, allowAgg: boolean): BExpr {
    const left = this.expr(e.left, rel, allowAgg);
    const items: BExpr[] = [];
    for (const item of e.items) {
      const b = this.expr(item, rel, allowAgg);
      // dynamic arrays in the list are flattened (apl.md 4.13).
      if (b.k === 'lit' && b.type === 'dynamic' && Array.isArray(b.value))
        items.push(...flattenDynamic(b.value).map(literalOfJs));
      else items.push(b);
    }
    if (e.op === 'has_any' || e.op === 'has_any_cs' || e.op === 'has_all') {
      if (e.op === 'has_all') this.scope.fail('has_all is not an APL operator; use has for each term', e.pos);
      const terms = items.map((i) => {
        if (i.k !== 'lit' || i.value === null) this.scope.fail('has_any takes constant terms', e.pos);
        return String(i.value);
      });
      return { k: 'has_any', type: 'bool', left, terms, caseSensitive: e.op === 'has_any_cs' };
    }
    return { k: 'in', type: 'bool', op: e.op, left, items };
  }

  private call(e: Extract<Expr, { kind: 'call' }>, rel: Relation, allowAgg: boolean): BExpr {
    // column_ifexists reads the relation, not a value: the default is bound only when the column is missing.
    if (e.name === 'column_ifexists') {
      const [n, def] = e.args;
      if (!n || n.kind !== 'literal' || typeof n.value !== 'string' || !def)
        this.scope.fail('column_ifexists() takes a column name and a default value', e.pos);
      const col = rel.columns.find((c) => c.name === n.value);
      return col ? colRef(col) : this.expr(def, rel, allowAgg);
    }
    const rowValue = this.rowFunction(e, rel);
    if (rowValue) return rowValue;
    const agg = AGGREGATE_FUNCTIONS[e.name];
    if (agg) {
      if (!allowAgg) this.scope.fail(`the aggregation ${e.name}() is only allowed in summarize`, e.pos);
      const args = e.args.map((a) => this.expr(a, rel, false));
      this.arity(e, agg.minArgs, agg.maxArgs);
      try {
        const type = agg.returns(args.map(argInfo), this.scope.typeCtx);
        trialSql(agg, args);
        return { k: 'agg', type, fn: e.name, args, pos: e.pos };
      } catch (err) {
        if (err instanceof ArgumentError) this.scope.fail(`${e.name}(): ${err.message}`, e.pos);
        throw err;
      }
    }
    const fn = SCALAR_FUNCTIONS[e.name];
    if (!fn) {
      const unsupported = UNSUPPORTED_FUNCTIONS[e.name];
      if (unsupported) {
        this.scope.fail(
          `the ${unsupported.kind} ${e.name}() is not supported by this service${unsupported.why ? `: ${unsupported.why}` : ''}`,
          e.pos,
        );
      }
      return this.scope.fail(`unknown function "${e.name}"`, e.pos);
    }
    this.arity(e, fn.minArgs, fn.maxArgs);
    const args = e.args.map((a) => this.expr(a, rel, allowAgg));
    if (fn.reads) args.unshift(this.queryValue(fn.reads));
    try {
      const type = fn.returns(args.map(argInfo), this.scope.typeCtx);
      trialSql(fn, args);
      if (fn.fold && args.every((a) => a.k === 'lit')) {
        return { k: 'lit', type, value: fn.fold(args.map((a) => (a as Extract<BExpr, { k: 'lit' }>).value)) };
      }
      return { k: 'call', type, fn: e.name, args, pos: e.pos };
    } catch (err) {
      if (err instanceof ArgumentError) this.scope.fail(`${e.name}(): ${err.message}`, e.pos);
      throw err;
    }
  }

  /**
   * Functions of the row rather than of their arguments: ingestion_time() (the event's _sysTime),
   * cursor_current() (the event's cursor, as query results give it) and ensure_field(name, typeof(t))
   * (the field if the rows have it, converted to t, else a null of t).
   */
  private rowFunction(e: Extract<Expr, { kind: 'call' }>, rel: Relation): BExpr | undefined {
    switch (e.name) {
      case 'ingestion_time': {
        this.arity(e, 0, 0);
        const col = rel.columns.find((c) => c.name === '_sysTime' && c.type === 'datetime');
        return col ? colRef(col) : { k: 'lit', type: 'datetime', value: null };
      }
      case 'cursor_current': {
        this.arity(e, 0, 0);
        if (!rel.rowIdentity) {
          this.scope.fail(
            'cursor_current() needs rows that are events, before any summarize, join or mv-expand',
            e.pos,
          );
        }
        const t: BExpr = { k: 'hidden', type: 'datetime', alias: '__t' };
        const seq: BExpr = { k: 'hidden', type: 'long', alias: '__s' };
        return { k: 'call', type: 'string', fn: 'cursor#', args: [t, seq], pos: e.pos };
      }
      case 'ensure_field': {
        const [n, t] = e.args;
        if (e.args.length !== 2 || n?.kind !== 'literal' || typeof n.value !== 'string' || t?.kind !== 'typeof') {
          this.scope.fail(
            'ensure_field() takes a field name and its type, such as ensure_field("status", typeof(string))',
            e.pos,
          );
        }
        const type = TYPE_NAMES[t.typeName]!;
        const col = rel.columns.find((c) => c.name === n.value);
        if (!col) return { k: 'lit', type, value: null };
        return col.type === type
          ? colRef(col)
          : { k: 'call', type, fn: conversionFor(type), args: [colRef(col)], pos: e.pos };
      }
      default:
        return undefined;
    }
  }

  /** A value of the query a function reads (its catalog entry's `reads`), as a constant argument. */
  private queryValue(value: QueryValue): BExpr {
    switch (value) {
      case 'now': {
        const now = this.scope.opts.nowNs;
        return now === 'live'
          ? { k: 'hidden', type: 'datetime', alias: '__now' }
          : { k: 'lit', type: 'datetime', value: now };
      }
      case 'binAuto':
        this.scope.binAutoUsed = true;
        return { k: 'lit', type: 'timespan', value: this.scope.opts.binAutoNs };
    }
  }

  private arity(e: Extract<Expr, { kind: 'call' }>, min: number, max: number): void {
    const n = e.args.length;
    if (n < min || n > max) {
      const want = min === max ? `${min}` : max > 60 ? `at least ${min}` : `${min} to ${max}`;
      this.scope.fail(`${e.name}() takes ${want} argument${want === '1' ? '' : 's'}, not ${n}`, e.pos);
    }
  }

  /** search's predicate: a bare string is a term looked for in every column ("x*" prefix, "*x" suffix, "*x*" substring). */
  searchPredicate(e: Expr, rel: Relation, caseSensitive: boolean): BExpr {
    if (e.kind === 'literal' && e.type === 'string')
      return this.anyColumn(searchTerm(String(e.value), caseSensitive), rel, e.pos);
    if (e.kind === 'binary' && (e.op === 'and' || e.op === 'or')) {
      return this.op(
        e.op,
        [this.searchPredicate(e.left, rel, caseSensitive), this.searchPredicate(e.right, rel, caseSensitive)],
        e.pos,
      );
    }
    if (e.kind === 'call' && e.name === 'not' && e.args.length === 1)
      return this.op('not#', [this.searchPredicate(e.args[0]!, rel, caseSensitive)], e.pos);
    if (
      e.kind === 'binary' &&
      e.op === 'has' &&
      e.left.kind === 'name' &&
      e.right.kind === 'literal' &&
      typeof e.right.value === 'string'
    ) {
      const col = this.expr(e.left, rel);
      const { op, text } = searchTerm(e.right.value, caseSensitive);
      return this.op(op, [col, { k: 'lit', type: 'string', value: text }], e.pos);
    }
    const b = this.expr(e, rel);
    if (b.type !== 'bool')
      this.scope.fail(`a search predicate must be a term or a bool expression, not ${b.type}`, e.pos);
    return b;
  }

  /** `term` tested against every column, as an or. */
  anyColumn(term: { op: string; text: string }, rel: Relation, pos: number): BExpr {
    const cols = rel.columns.filter(
      (c) => c.type === 'string' || c.type === 'dynamic' || c.type === 'long' || c.type === 'real' || c.type === 'bool',
    );
    if (cols.length === 0) return { k: 'lit', type: 'bool', value: false };
    const tests = cols.map((c) => this.op(term.op, [colRef(c), { k: 'lit', type: 'string', value: term.text }], pos));
    return tests.reduce((a, b) => this.op('or', [a, b], pos));
  }
}

const COMPARISON = new Set(['==', '!=', '<', '<=', '>', '>=']);

/**
 * Builds a call's SQL once with placeholder operands: a function that needs a constant (a date part, a
 * percentile) reports a bad one here, as an ArgumentError with the call's position, not later as a 500.
 */
function trialSql(fn: { sql(args: SqlArg[], ctx: { filter: boolean }): string }, args: BExpr[]): void {
  fn.sql(
    args.map((a) => ({ sql: 'x', type: a.type, constant: a.k === 'lit' ? { value: a.value } : undefined })),
    { filter: false },
  );
}

export function argInfo(b: BExpr): ArgInfo {
  return {
    type: b.type,
    constant: b.k === 'lit' ? { value: b.value } : undefined,
    column: b.k === 'col' ? b.name : undefined,
  };
}

function flattenDynamic(v: unknown[]): unknown[] {
  return v.flatMap((x) => (Array.isArray(x) ? flattenDynamic(x) : [x]));
}

function literalOfJs(v: unknown): BExpr {
  if (typeof v === 'string') return { k: 'lit', type: 'string', value: v };
  if (typeof v === 'boolean') return { k: 'lit', type: 'bool', value: v };
  if (typeof v === 'number')
    return Number.isInteger(v) ? { k: 'lit', type: 'long', value: BigInt(v) } : { k: 'lit', type: 'real', value: v };
  return { k: 'lit', type: 'dynamic', value: v as LiteralValue };
}

/** A search term as an operator: "x" has, "x*" hasprefix, "*x" hassuffix, "*x*" contains, other wildcards a regex. */
function searchTerm(term: string, caseSensitive: boolean): { op: string; text: string } {
  const cs = caseSensitive ? '_cs' : '';
  const inner = term.replace(/^\*/, '').replace(/\*$/, '');
  if (!/[*?]/.test(inner)) {
    if (term.startsWith('*') && term.endsWith('*') && term.length > 1) return { op: `contains${cs}`, text: inner };
    if (term.endsWith('*')) return { op: `hasprefix${cs}`, text: inner };
    if (term.startsWith('*')) return { op: `hassuffix${cs}`, text: inner };
    return { op: `has${cs}`, text: term };
  }
  const body = term
    .split('')
    .map((ch) => (ch === '*' ? '.*' : ch === '?' ? '.' : regexEscape(ch)))
    .join('');
  return { op: 'matches regex', text: `${caseSensitive ? '' : '(?i)'}\\b${body}\\b` };
}
