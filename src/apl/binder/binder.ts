/**
 * The binder: resolves names against dataset schemas and let bindings, types every expression, checks
 * functions and their arguments, and turns the operator pipeline into stages over known relations
 * (./bound.ts). Everything a query gets wrong is reported here, with its position, before any SQL runs.
 *
 * By concern: ./scope.ts (names and context), ./tabular.ts (sources and operators), ./summarize.ts
 * (summarize, make-series, totals), ./expressions.ts (expressions and calls), ./relation.ts (the pure
 * facts of relations and bound expressions). This file binds the statements and the query's result.
 */
import type { Expr, LiteralType, Query, TabularExpr } from '../parser/ast.js';
import { TYPE_NAMES } from '../parser/parser.js';
import type { BExpr, BoundQuery, BoundStage, Relation, Stage } from './bound.js';
import { Expressions } from './expressions.js';
import { conversionFor, expressionSize, nestedPipelines, stageExpressions } from './relation.js';
import { Scope, type BindOptions } from './scope.js';
import { Summaries, totalsStages } from './summarize.js';
import { Tabular } from './tabular.js';

export type { BindOptions } from './scope.js';

export function bind(query: Query, source: string, opts: BindOptions): BoundQuery {
  return new Binder(new Scope(source, opts)).bindQuery(query);
}

class Binder {
  private readonly exprs: Expressions;
  private readonly tabular: Tabular;

  constructor(private readonly scope: Scope) {
    this.exprs = new Expressions(scope);
    this.tabular = new Tabular(scope, this.exprs, new Summaries(scope, this.exprs));
  }

  bindQuery(q: Query): BoundQuery {
    const empty: Relation = { columns: [], rowIdentity: false, order: [], groups: [] };
    for (const st of q.statements) {
      if (st.kind === 'let') {
        if (st.tabular)
          this.scope.lets.set(st.name, {
            kind: 'tabular',
            expr: st.value as TabularExpr,
            env: new Map(this.scope.lets),
          });
        else {
          const e = st.value as Expr;
          // `let T = ['dataset'];` names a table.
          if (e.kind === 'name' && !this.scope.lets.has(e.name) && this.scope.opts.schema(e.name)) {
            this.scope.lets.set(st.name, {
              kind: 'tabular',
              expr: { pos: e.pos, source: { kind: 'table', pos: e.pos, name: e.name }, ops: [] },
              env: new Map(this.scope.lets),
            });
          } else {
            const value = this.exprs.expr(e, empty);
            this.checkSize(value, st.pos, `the let "${st.name}"`);
            this.scope.lets.set(st.name, { kind: 'scalar', expr: value });
          }
        }
      } else if (st.kind === 'set') {
        if (st.name === 'stricttypes') this.scope.typeCtx.strict = true;
        else this.scope.fail(`unknown query option "${st.name}" (only stricttypes is supported)`, st.pos);
      } else {
        for (const p of st.params) {
          const type = TYPE_NAMES[p.type]!;
          const value: BExpr = p.default
            ? this.coerceConstant(this.exprs.expr(p.default, empty), type, p.pos)
            : { k: 'lit', type, value: type === 'string' ? '' : null };
          this.scope.lets.set(p.name, { kind: 'scalar', expr: value });
        }
      }
    }
    const stages = this.tabular.tabular(q.body);
    this.checkTotalTerms(stages, q.body.pos);
    const matchedPrefix = matchedPrefixLength(stages);
    const out: BoundQuery = {
      stages,
      datasets: [...this.scope.datasets],
      matchedPrefix,
      matchedMode: matchedModeOf(stages, matchedPrefix),
      messages: this.scope.messages,
      usesRangeLength: this.scope.binAutoUsed || this.scope.rangeLengthUsed,
    };
    const last = stages[stages.length - 1]!.stage;
    if (last.kind === 'limit') out.queryLimit = last.n;
    if (last.kind === 'order' && last.limit !== undefined) out.queryLimit = last.limit;
    if (this.scope.binAutoUsed) out.binAutoNs = this.scope.opts.binAutoNs;
    out.totals = totalsStages(stages);
    return out;
  }

  /** One expression with its lets written out: within the terms and the nesting the limits allow. */
  private checkSize(e: BExpr, pos: number, what: string): void {
    const limits = this.scope.opts.limits;
    if (!limits) return;
    const { terms, depth } = expressionSize(e);
    if (depth > limits.depth.max)
      this.scope.fail(
        `${what} nests ${depth} levels deep once the lets it uses are written out, more than ${limits.depth.max} (${limits.depth.setting})`,
        pos,
      );
    if (terms > limits.terms.max)
      this.scope.fail(
        `${what} has ${fmtTerms(terms)} terms once the lets it uses are written out, more than the limit of ${limits.terms.max} (${limits.terms.setting}); a let used twice is written out twice`,
        pos,
      );
  }

  /** The whole query's expressions together, with their lets written out. */
  private checkTotalTerms(stages: BoundStage[], pos: number): void {
    const limits = this.scope.opts.limits;
    if (!limits) return;
    let total = 0;
    const todo = [stages];
    while (todo.length > 0) {
      for (const bs of todo.pop()!) {
        for (const e of stageExpressions(bs.stage)) {
          const { terms, depth } = expressionSize(e);
          total += terms;
          const at = e.k === 'call' || e.k === 'agg' ? e.pos : pos;
          if (depth > limits.depth.max || total > limits.terms.max) this.checkSize(e, at, 'this expression');
          if (total > limits.terms.max)
            this.scope.fail(
              `the query has ${fmtTerms(total)} terms or more once its lets are written out, more than the limit of ${limits.terms.max} (${limits.terms.setting}); a let used twice is written out twice`,
              at,
            );
        }
        todo.push(...nestedPipelines(bs.stage));
      }
    }
  }

  private coerceConstant(e: BExpr, type: LiteralType, pos: number): BExpr {
    if (e.k !== 'lit') this.scope.fail('a parameter default must be a constant', pos);
    return e.type === type ? e : { k: 'call', type, fn: conversionFor(type), args: [e], pos };
  }
}

function matchedPrefixLength(stages: BoundStage[]): number {
  // Rows are counted from the last stage that produces rows from its own inputs (a scan or a union).
  let i = 1;
  stages.forEach((s, k) => {
    if (s.stage.kind === 'union') i = k + 1;
  });
  const rowPreserving = (s: Stage) =>
    s.kind === 'filter' || s.kind === 'select' || (s.kind === 'order' && s.limit === undefined);
  while (i < stages.length && rowPreserving(stages[i]!.stage)) i++;
  return i;
}

function matchedModeOf(stages: BoundStage[], prefix: number): BoundQuery['matchedMode'] {
  if (stages[0]!.stage.kind !== 'scan' || stages.some((s) => s.stage.kind === 'union' || s.stage.kind === 'join'))
    return 'query';
  if (!stages.slice(1, prefix).some((s) => s.stage.kind === 'filter')) return 'examined';
  const boundary = stages[prefix]?.stage;
  if (!boundary) return 'query';
  if (boundary.kind === 'count' && prefix === stages.length - 1) return 'count';
  // The count rides along only while every later stage passes its column through unchanged.
  const passThrough = stages
    .slice(prefix + 1)
    .every((s) => s.stage.kind === 'order' || s.stage.kind === 'limit' || s.stage.kind === 'top-groups');
  if (!passThrough) return 'query';
  if (boundary.kind === 'aggregate') return 'window';
  // A window over the matched rows themselves costs more than a materialised CTE (docs/benchmarks.md);
  // DuckDB runs one query at a time here (threads = 1), so a count query adds its whole scan.
  return boundary.kind === 'order' || boundary.kind === 'limit' ? 'cte' : 'query';
}

const fmtTerms = (n: number) => (n < 1e15 ? String(Math.round(n)) : n.toExponential(1));
