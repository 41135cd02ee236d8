/**
 * Relations between stages: column references, projections that replace or append a column, what order a
 * projection keeps, and the facts of bound expressions (aggregations inside, a time bin, a dynamic shape).
 * Pure functions.
 */
import { AGGREGATE_FUNCTIONS } from '../functions/aggregate.js';
import { SCALAR_FUNCTIONS } from '../functions/scalar.js';
import type { AplType, DynamicShape } from '../types.js';
import type { BExpr, BoundColumn, BoundStage, OrderKey, Relation, Stage } from './bound.js';

/**
 * Sets a column of a projection: an existing name is replaced in place (KQL; apl.md 4.11), a new one is
 * appended. `items` (the select list, aligned with the columns) is updated in place.
 */
export function setColumn(
  cols: BoundColumn[],
  items: { alias: string; expr: BExpr }[],
  col: BoundColumn,
  expr: BExpr,
): BoundColumn[] {
  const at = cols.findIndex((c) => c.name === col.name);
  if (at < 0) {
    items.push({ alias: col.alias, expr });
    return [...cols, col];
  }
  const out = [...cols];
  out[at] = col;
  items[at] = { alias: col.alias, expr };
  return out;
}

export function colRef(c: BoundColumn): BExpr {
  return { k: 'col', type: c.type, alias: c.alias, name: c.name, shape: c.shape };
}

export function selectOf(cols: BoundColumn[]): Stage {
  return { kind: 'select', items: cols.map((c) => ({ alias: c.alias, expr: colRef(c) })) };
}

export /** What a dynamic value holds: a column's own shape, or what the function's catalog entry says it returns. */
function shapeOf(e: BExpr): DynamicShape {
  if (e.k === 'col') return e.shape;
  if (e.k === 'call') return SCALAR_FUNCTIONS[e.fn]?.shape;
  if (e.k === 'agg') return AGGREGATE_FUNCTIONS[e.fn]?.shape;
  return undefined;
}

export function containsAgg(e: BExpr): boolean {
  switch (e.k) {
    case 'agg':
      return true;
    case 'call':
      return e.args.some(containsAgg);
    case 'in':
      return containsAgg(e.left) || e.items.some(containsAgg);
    case 'between':
      return containsAgg(e.left) || containsAgg(e.low) || containsAgg(e.high);
    case 'has_any':
      return containsAgg(e.left);
    case 'path':
      return containsAgg(e.target);
    default:
      return false;
  }
}

/** The size of a time bin expression (bin(_time, 1h) or bin_auto(_time)), or undefined. */
export function timeBinSize(e: BExpr): bigint | undefined {
  if (e.k === 'call' && (e.fn === 'bin' || e.fn === 'bin_auto') && e.type === 'datetime') {
    // bin(v, size); bin_auto's size is the query value passed before its argument.
    const size = e.fn === 'bin' ? e.args[1] : e.args[0];
    if (size?.k === 'lit' && typeof size.value === 'bigint') return size.value;
  }
  return undefined;
}

/** Keeps the order keys that still exist after a projection (columns carried under the same alias). */
export function remapOrder(order: OrderKey[], after: BoundColumn[]): OrderKey[] {
  const aliases = new Set(after.map((c) => c.alias));
  return order.filter((o) => o.expr.k === 'hidden' || (o.expr.k === 'col' && aliases.has(o.expr.alias)));
}

/** After a project, order keys refer to the projected aliases of the same columns, or are dropped. */
export function remapOrderBySelect(
  order: OrderKey[],
  sel: { alias: string; expr: BExpr }[],
  cols: BoundColumn[],
): OrderKey[] {
  const out: OrderKey[] = [];
  for (const o of order) {
    if (o.expr.k === 'hidden') {
      out.push(o);
      continue;
    }
    if (o.expr.k !== 'col') continue;
    const i = sel.findIndex((s) => s.expr.k === 'col' && s.expr.alias === (o.expr as { alias: string }).alias);
    if (i < 0) break; // the order is only kept as a prefix of its keys
    out.push({ ...o, expr: colRef(cols[i]!), field: cols[i]!.name });
  }
  return out;
}

/** Sorting keeps the stream's own order as the tie-break, so results are deterministic. */
export function withTieBreak(keys: OrderKey[], rel: Relation): OrderKey[] {
  if (!rel.rowIdentity) return keys;
  // In the direction of the first key, so that `sort by _time asc` is ascending in (time, sequence): cursors rely on it.
  const desc = keys[0]?.desc ?? true;
  return [
    ...keys,
    { expr: { k: 'hidden', type: 'datetime', alias: '__t' }, desc, nullsFirst: false },
    { expr: { k: 'hidden', type: 'long', alias: '__s' }, desc, nullsFirst: false },
  ];
}

/**
 * Whether a name matches a pattern where `*` stands for any run of characters. Greedy with one
 * backtrack point, so time is at most the product of the lengths: a regular expression of many `.*`
 * would backtrack exponentially on a hostile pattern.
 */
export function wildcardMatch(pattern: string, name: string): boolean {
  let p = 0;
  let n = 0;
  let star = -1;
  let resume = 0;
  while (n < name.length) {
    if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      resume = n;
    } else if (p < pattern.length && pattern[p] === name[n]) {
      p++;
      n++;
    } else if (star >= 0) {
      p = star + 1;
      n = ++resume;
    } else return false;
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

export function sortNames(cols: BoundColumn[], order: 'asc' | 'desc' | 'granny-asc' | 'granny-desc'): BoundColumn[] {
  const natural = order.startsWith('granny');
  const cmp = (a: BoundColumn, b: BoundColumn) =>
    natural
      ? a.name.localeCompare(b.name, undefined, { numeric: true })
      : a.name < b.name
        ? -1
        : a.name > b.name
          ? 1
          : 0;
  const sorted = [...cols].sort(cmp);
  return order.endsWith('desc') ? sorted.reverse() : sorted;
}

export function conversionFor(t: AplType): string {
  return {
    string: 'tostring',
    long: 'tolong',
    real: 'toreal',
    bool: 'tobool',
    datetime: 'todatetime',
    timespan: 'totimespan',
    dynamic: 'todynamic',
  }[t];
}

/** The dataset a pipeline reads, for union's withsource column. */
export function sourceName(stages: BoundStage[]): string | undefined {
  const first = stages[0]!.stage;
  return first.kind === 'scan' ? first.dataset : undefined;
}

/**
 * extend-valid's value: the expression where it is valid (a non-empty string, array or map; anything else
 * as tobool), else the column's value before (when it has the same type) or null.
 */
export function validOrKept(e: BExpr, old: BoundColumn | undefined, pos: number): BExpr {
  const fallback: BExpr = old && old.type === e.type ? colRef(old) : { k: 'lit', type: e.type, value: null };
  const valid: BExpr = { k: 'call', type: 'bool', fn: 'valid#', args: [e], pos };
  return { k: 'call', type: e.type, fn: 'iff', args: [valid, e, fallback], pos };
}

/** The size of a bound expression with every scalar let written out where it is used. */
export interface ExpressionSize {
  terms: number;
  depth: number;
}

/** Sizes already measured: a let is one node shared by all its uses, measured once. */
const measured = new WeakMap<BExpr, ExpressionSize>();

/** The expressions directly inside a bound expression. */
export function subexpressions(e: BExpr): BExpr[] {
  switch (e.k) {
    case 'call':
    case 'agg':
      return e.args;
    case 'in':
      // A list of constants is one term for DuckDB's planner, however long (a flat list plans in linear time).
      return [e.left, ...e.items.filter((i) => i.k !== 'lit')];
    case 'has_any':
      return [e.left];
    case 'between':
      return [e.left, e.low, e.high];
    case 'path':
      return [e.target, ...e.path.filter((p): p is BExpr => typeof p === 'object')];
    default:
      return [];
  }
}

/**
 * Terms and nesting of an expression as the compiler writes it out, in time linear in its distinct nodes:
 * `let v1 = v0 + v0; let v2 = v1 + v1; …` doubles the terms with each line. The recursion descends only into
 * nodes not measured yet, whose nesting the parser bounds; a let's value is measured as it is bound.
 */
export function expressionSize(e: BExpr): ExpressionSize {
  const known = measured.get(e);
  if (known) return known;
  let terms = 1;
  let depth = 0;
  for (const sub of subexpressions(e)) {
    const s = expressionSize(sub);
    terms += s.terms;
    depth = Math.max(depth, s.depth);
  }
  const size = { terms, depth: depth + 1 };
  measured.set(e, size);
  return size;
}

/** The expressions a stage evaluates (those of nested pipelines, a union's or a join's, not included). */
export function stageExpressions(s: Stage): BExpr[] {
  switch (s.kind) {
    case 'values':
      return s.rows.flat();
    case 'filter':
      return [s.predicate];
    case 'select':
      return s.items.map((i) => i.expr);
    case 'aggregate':
      return [...s.keys, ...s.aggs].map((i) => i.expr);
    case 'order':
      return s.keys.map((k) => k.expr);
    case 'expand':
      return s.items.map((i) => i.expr);
    case 'series':
      return [
        ...s.keys.map((k) => k.expr),
        ...s.aggs.flatMap((a) => [a.expr, a.default]),
        s.axis,
        ...(s.from ? [s.from] : []),
        ...(s.to ? [s.to] : []),
      ];
    default:
      return [];
  }
}

/** The pipelines nested in a stage: a union's inputs, a join's right side. */
export function nestedPipelines(s: Stage): BoundStage[][] {
  if (s.kind === 'union') return s.inputs;
  if (s.kind === 'join') return [s.right];
  return [];
}

/**
 * Stages DuckDB plans as a summary (a GROUP BY, or a count), or with a window over what they read (an
 * innerunique join keeps one left row per key by row_number()): its filter pushdown goes through what each
 * reads twice.
 */
const doublesPlanning = (s: Stage) =>
  s.kind === 'aggregate' ||
  s.kind === 'count' ||
  s.kind === 'series' ||
  (s.kind === 'join' && s.joinKind === 'innerunique');

/**
 * The most summaries (and innerunique joins) nested in one another along any path of a pipeline, nested
 * pipelines included: the time DuckDB takes to plan doubles with each (docs/benchmarks.md), and planning
 * does not heed the query's interrupt.
 */
export function summaryNesting(stages: BoundStage[]): number {
  let depth = 0;
  for (const { stage } of stages) {
    for (const p of nestedPipelines(stage)) depth = Math.max(depth, summaryNesting(p));
    if (doublesPlanning(stage)) depth++;
  }
  return depth;
}
