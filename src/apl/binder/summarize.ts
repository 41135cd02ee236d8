/**
 * Summaries: summarize (groups, aggregations, rate, arg_max/arg_min), make-series, the names of unnamed
 * aggregation columns and what tabular results say of each (agg.name, fields, args), and the `_totals`
 * pipeline of a summary by a time bin.
 */
import type { Assignment, Expr, LiteralValue, Operator } from '../parser/ast.js';
import { AGGREGATE_FUNCTIONS } from '../functions/aggregate.js';
import type { AggMeta, BExpr, BoundColumn, BoundStage, OrderKey, Relation } from './bound.js';
import type { Expressions } from './expressions.js';
import { colRef, containsAgg, shapeOf, timeBinSize } from './relation.js';
import type { Scope } from './scope.js';

export class Summaries {
  constructor(
    private readonly scope: Scope,
    private readonly exprs: Expressions,
  ) {}

  summarize(op: Extract<Operator, { op: 'summarize' }>, rel: Relation): BoundStage[] {
    const keys: { alias: string; expr: BExpr }[] = [];
    const cols: BoundColumn[] = [];
    const names = new Map<string, number>();
    const unique = (n: string) => {
      const seen = names.get(n);
      names.set(n, (seen ?? 0) + 1);
      return seen === undefined ? n : `${n}${seen}`;
    };
    let timeBin: Relation['timeBin'];
    for (const k of op.by) {
      const e = this.exprs.expr(k.expr, rel);
      const name = unique(k.name ?? this.scope.derivedName(k.expr, true));
      const alias = this.scope.alias();
      keys.push({ alias, expr: e });
      cols.push({ name, type: e.type, alias, shape: shapeOf(e) });
      const size = timeBinSize(e);
      if (!timeBin && size !== undefined) timeBin = { alias, name, sizeNs: size };
    }
    const aggs: { alias: string; expr: BExpr }[] = [];
    for (const a of op.aggs) {
      if (a.expr.kind === 'call' && a.expr.name === 'rate') {
        const { expr, meta } = this.rate(a.expr, rel, timeBin?.sizeNs);
        const alias = this.scope.alias();
        aggs.push({ alias, expr });
        cols.push({
          name: unique(a.name ?? this.aggName({ ...a.expr, name: 'sum' }).replace(/^sum_/, 'rate_')),
          type: 'real',
          alias,
          agg: meta,
        });
        continue;
      }
      if (a.expr.kind === 'call' && (a.expr.name === 'arg_max' || a.expr.name === 'arg_min')) {
        this.argExtreme(
          a,
          a.expr,
          rel,
          keys.map((k, i) => ({ ...cols[i]!, expr: k.expr })),
          unique,
          aggs,
          cols,
        );
        continue;
      }
      const e = this.exprs.expr(a.expr, rel, true);
      if (!containsAgg(e))
        this.scope.fail('summarize needs an aggregation function here, such as count() or avg(x)', a.expr.pos);
      const name = unique(a.name ?? this.aggName(a.expr));
      const alias = this.scope.alias();
      aggs.push({ alias, expr: e });
      cols.push({ name, type: e.type, alias, shape: shapeOf(e), agg: this.aggMeta(e) });
    }
    const groups = cols.slice(0, keys.length).map((c) => c.name);
    const aggCols = cols.slice(keys.length);
    const order: OrderKey[] = [];
    if (timeBin)
      order.push({
        expr: { k: 'col', type: 'datetime', alias: timeBin.alias, name: timeBin.name },
        desc: false,
        nullsFirst: false,
        field: timeBin.name,
      });
    const firstAgg = aggCols[0];
    if (firstAgg && (firstAgg.type === 'long' || firstAgg.type === 'real' || firstAgg.type === 'timespan')) {
      order.push({ expr: colRef(firstAgg), desc: true, nullsFirst: false, field: firstAgg.name });
    }
    for (const c of cols.slice(0, keys.length))
      if (c.alias !== timeBin?.alias) order.push({ expr: colRef(c), desc: false, nullsFirst: false });
    return [
      {
        stage: { kind: 'aggregate', keys, aggs },
        out: { columns: cols, rowIdentity: false, order, timeBin, groups },
      },
    ];
  }

  /**
   * rate(x [, per]): the sum of x per second (or per `per`) over each time bucket of the summary, or over the
   * query's time range when the summary has no time bin.
   */
  private rate(
    call: Extract<Expr, { kind: 'call' }>,
    rel: Relation,
    bucketNs: bigint | undefined,
  ): { expr: BExpr; meta: AggMeta } {
    if (call.args.length < 1 || call.args.length > 2)
      this.scope.fail('rate() takes a value and optionally the interval to count per, such as 1m', call.pos);
    const x = this.exprs.expr(call.args[0]!, rel);
    let perNs = 1_000_000_000n;
    if (call.args[1]) {
      const p = this.exprs.expr(call.args[1], rel);
      if (p.k !== 'lit' || p.type !== 'timespan' || typeof p.value !== 'bigint' || p.value <= 0n)
        this.scope.fail('rate(): the interval must be a positive timespan constant', call.args[1].pos);
      perNs = p.value as bigint;
    }
    if (bucketNs === undefined) this.scope.rangeLengthUsed = true;
    const windowNs = bucketNs ?? this.scope.opts.rangeNs;
    const sum: BExpr = {
      k: 'agg',
      type: 'real',
      fn: 'sum',
      args: [
        x.type === 'long' || x.type === 'real'
          ? x
          : { k: 'call', type: 'real', fn: 'toreal', args: [x], pos: call.pos },
      ],
      pos: call.pos,
    };
    const factor: BExpr = { k: 'lit', type: 'real', value: Number(perNs) / Number(windowNs > 0n ? windowNs : 1n) };
    return {
      expr: {
        k: 'call',
        type: 'real',
        fn: '*',
        args: [{ k: 'call', type: 'real', fn: 'toreal', args: [sum], pos: call.pos }, factor],
        pos: call.pos,
      },
      meta: { name: 'rate', fields: x.k === 'col' ? [x.name] : [], args: call.args[1] ? [Number(perNs)] : [] },
    };
  }

  /**
   * arg_max(e, c1, c2…) / arg_min: the row where e is largest (smallest), as columns e, c1, c2 (`*`: every
   * column not already a group key).
   */
  private argExtreme(
    a: Assignment,
    call: Extract<Expr, { kind: 'call' }>,
    rel: Relation,
    keyCols: (BoundColumn & { expr: BExpr })[],
    unique: (n: string) => string,
    aggs: { alias: string; expr: BExpr }[],
    cols: BoundColumn[],
  ): void {
    const [first, ...rest] = call.args;
    if (!first || rest.length === 0)
      this.scope.fail(`${call.name}() takes the expression to maximise and at least one column or *`, call.pos);
    const by = this.exprs.expr(first, rel);
    if (by.type === 'dynamic' || by.type === 'bool')
      this.scope.fail(`${call.name}(): cannot order by a ${by.type} value`, first.pos);
    const isMax = call.name === 'arg_max';
    const meta: AggMeta = { name: isMax ? 'argmax' : 'argmin', fields: [], args: [] };
    const keyNames = new Set(keyCols.map((k) => k.name));
    const byName = a.name ?? this.scope.derivedName(first, true);
    const add = (name: string, e: BExpr, fn: string) => {
      const alias = this.scope.alias();
      aggs.push({
        alias,
        expr: { k: 'agg', type: e.type, fn, args: fn === (isMax ? 'max' : 'min') ? [e] : [e, by], pos: call.pos },
      });
      cols.push({ name: unique(name), type: e.type, alias, shape: shapeOf(e), agg: meta });
      meta.fields.push(name);
    };
    add(byName, by, isMax ? 'max' : 'min');
    for (const arg of rest) {
      if (arg.kind === 'star') {
        for (const c of rel.columns)
          if (!keyNames.has(c.name) && c.name !== byName) add(c.name, colRef(c), isMax ? 'arg_max#' : 'arg_min#');
      } else if (arg.kind === 'named') add(arg.name, this.exprs.expr(arg.value, rel), isMax ? 'arg_max#' : 'arg_min#');
      else add(this.scope.derivedName(arg, true), this.exprs.expr(arg, rel), isMax ? 'arg_max#' : 'arg_min#');
    }
  }

  private aggMeta(e: BExpr): AggMeta {
    if (e.k !== 'agg') return { name: 'computed', fields: [], args: [] };
    const fn = AGGREGATE_FUNCTIONS[e.fn]!;
    const fields: string[] = [];
    const args: unknown[] = [];
    e.args.forEach((a, i) => {
      if (fn.constantArgs?.includes(i) && a.k === 'lit') args.push(jsonLiteral(a.value));
      else if (fn.predicateArgs?.includes(i)) return;
      else if (a.k === 'col') fields.push(a.name);
    });
    return { name: fn.op, fields, args };
  }

  /** `<prefix>_<argument>` (count_, avg_x, percentile_x_95), or ColumnN for other expressions. */
  private aggName(e: Expr): string {
    if (e.kind !== 'call' || !AGGREGATE_FUNCTIONS[e.name]) return this.scope.nextColumnName();
    const fn = AGGREGATE_FUNCTIONS[e.name]!;
    const first = e.args[0] && !fn.predicateArgs?.includes(0) ? this.scope.derivedName(e.args[0], false) : '';
    let name = `${fn.prefix}_${first}`;
    const named = fn.namedConstant === undefined ? undefined : e.args[fn.namedConstant];
    if (named?.kind === 'literal') name += `_${String(named.value).replace('.', '_')}`;
    return name;
  }

  makeSeries(op: Extract<Operator, { op: 'make-series' }>, rel: Relation): BoundStage {
    const axis = this.exprs.expr(op.axis, rel);
    if (axis.type !== 'datetime' && axis.type !== 'long' && axis.type !== 'real')
      this.scope.fail(`make-series needs a datetime or numeric axis, not ${axis.type}`, op.axis.pos);
    const step = this.exprs.expr(op.step, rel);
    const stepValue = step.k === 'lit' ? step.value : null;
    if (axis.type === 'datetime' ? step.type !== 'timespan' : step.type !== 'long' && step.type !== 'real')
      this.scope.fail(
        `make-series step must be a ${axis.type === 'datetime' ? 'timespan' : 'number'} constant`,
        op.step.pos,
      );
    if (stepValue === null || !(Number(stepValue) > 0))
      this.scope.fail('make-series step must be a constant greater than 0', op.step.pos);
    const bound = (e: Expr | undefined) => {
      if (!e) return undefined;
      const b = this.exprs.expr(e, rel);
      if (b.type !== axis.type && !(axis.type !== 'datetime' && (b.type === 'long' || b.type === 'real')))
        this.scope.fail(`make-series from/to must be ${axis.type}`, e.pos);
      return b;
    };
    const from = bound(op.from);
    const to = bound(op.to);
    const names = new Map<string, number>();
    const unique = (n: string) => {
      const seen = names.get(n);
      names.set(n, (seen ?? 0) + 1);
      return seen === undefined ? n : `${n}${seen}`;
    };
    const keys: { alias: string; expr: BExpr }[] = [];
    const cols: BoundColumn[] = [];
    for (const k of op.by) {
      const e = this.exprs.expr(k.expr, rel);
      const alias = this.scope.alias();
      keys.push({ alias, expr: e });
      cols.push({ name: unique(k.name ?? this.scope.derivedName(k.expr, true)), type: e.type, alias });
    }
    const aggs: { alias: string; expr: BExpr; default: BExpr }[] = [];
    for (const a of op.aggs) {
      const e = this.exprs.expr(a.expr, rel, true);
      if (!containsAgg(e))
        this.scope.fail('make-series needs an aggregation function here, such as count() or avg(x)', a.expr.pos);
      const def = a.default
        ? this.exprs.expr(a.default, rel)
        : { k: 'lit' as const, type: e.type, value: e.type === 'long' ? 0n : e.type === 'real' ? 0 : null };
      if (def.k !== 'lit') this.scope.fail('make-series default must be a constant', a.default!.pos);
      const alias = this.scope.alias();
      aggs.push({ alias, expr: e, default: def });
      cols.push({
        name: unique(a.name ?? this.aggName(a.expr)),
        type: 'dynamic',
        shape: 'array',
        alias,
        agg: this.aggMeta(e),
      });
    }
    const axisAlias = this.scope.alias();
    cols.push({
      name: unique(this.scope.derivedName(op.axis, true)),
      type: 'dynamic',
      shape: 'array',
      alias: axisAlias,
    });
    return {
      stage: { kind: 'series', keys, aggs, axis, axisAlias, step: stepValue as number | bigint, from, to },
      out: { columns: cols, rowIdentity: false, order: [], groups: cols.slice(0, keys.length).map((c) => c.name) },
    };
  }
}

/** For a summary by a time bin: the same pipeline, summarized without the time key (the `_totals` table). */
export function totalsStages(stages: BoundStage[]): BoundStage[] | undefined {
  let idx = -1;
  stages.forEach((s, i) => {
    if (s.stage.kind === 'aggregate') idx = i;
  });
  if (idx < 0) return undefined;
  const agg = stages[idx]!;
  if (!agg.out.timeBin || agg.stage.kind !== 'aggregate') return undefined;
  // Only when nothing but ordering and limits follow the summary: otherwise totals would not describe the result.
  if (
    stages
      .slice(idx + 1)
      .some((s) => s.stage.kind !== 'order' && s.stage.kind !== 'limit' && s.stage.kind !== 'top-groups')
  )
    return undefined;
  const timeAlias = agg.out.timeBin.alias;
  const keys = agg.stage.keys.filter((k) => k.alias !== timeAlias);
  const columns = agg.out.columns.filter((c) => c.alias !== timeAlias);
  const order = agg.out.order.filter((o) => !(o.expr.k === 'col' && o.expr.alias === timeAlias));
  const totals: BoundStage = {
    stage: { kind: 'aggregate', keys, aggs: agg.stage.aggs },
    out: { columns, rowIdentity: false, order, groups: agg.out.groups.filter((g) => g !== agg.out.timeBin!.name) },
  };
  return [...stages.slice(0, idx), totals];
}

function jsonLiteral(v: LiteralValue): unknown {
  return typeof v === 'bigint' ? Number(v) : v;
}
