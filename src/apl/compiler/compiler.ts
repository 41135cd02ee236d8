/**
 * The compiler: a bound query (../binder/bound.ts) → one DuckDB SELECT. Each stage becomes a SELECT over the
 * previous one; DuckDB's optimiser flattens them, pushes filters into the scan and prunes columns. What it
 * cannot flatten is not written (see Relation): a filter is the next stage's WHERE, and a count or a summary
 * over a scan reads its table.
 * Every column has a generated alias (c1, c2…), so APL names (case-sensitive, any characters) never meet
 * SQL's case-insensitive identifiers.
 */
import { AGGREGATE_FUNCTIONS } from '../functions/aggregate.js';
import type { SqlContext } from '../functions/catalog.js';
import { betweenSql, hasAnySql, inSql, OPERATORS } from '../functions/operators.js';
import { SCALAR_FUNCTIONS } from '../functions/scalar.js';
import { sqlIdent, sqlText } from '../../sql/quote.js';
import { convertSql, sqlLiteral, type SqlArg } from '../functions/sql.js';
import { SQL_TYPE_OF } from '../types.js';
import type { BExpr, BoundColumn, BoundStage, OrderKey, Stage } from '../binder/bound.js';
import type { LiteralValue } from '../parser/ast.js';
import { isSideAggregate, type SideFrame, sidePlan } from './side-aggregates.js';
import {
  behindBarrier,
  definitionWeight,
  keptFilter,
  NO_WEIGHTS,
  tooHeavyToPush,
  type Weights,
} from './pushed-filters.js';

export interface Cursor {
  timeNs: bigint;
  seq: bigint;
}

export interface CompileOptions {
  /** Inclusive time range on _time. */
  startNs?: bigint;
  endNs?: bigint;
  /** Rows strictly after this cursor in the result's time order (or at it, with includeCursor). */
  cursor?: { at: Cursor; descending: boolean; inclusive: boolean };
  /** The row limit of the final result. */
  limit?: number;
  /** Adds column __m (the count of rows matched) at this stage index, as a window over a summary's groups. */
  matchedAt?: number;
  /** Materialises the first n stages once (a CTE), counts them into __m and runs the rest over them. */
  matchedCte?: number;
  /** Carry each event's _sysTime to the end (legacy results show it; tabular ones need not read it). */
  sysTime?: boolean;
  /** Read only this percentage of the dataset's vectors (an estimate of how many rows match). */
  samplePercent?: number;
  /**
   * The bytes the result's values may hold (service.query_limits.max_result_bytes), counted as the reader
   * counts them: 8 a value and a text's bytes besides. Rows past it are not returned, and the last column
   * (CompiledQuery.overColumn) is true on the one row that crossed it, its texts left out.
   */
  maxResultBytes?: number;
}

export interface CompiledQuery {
  sql: string;
  columns: BoundColumn[];
  /** The final SELECT also returns __t, __s, __st (epoch ns, sequence, ns) for cursors and legacy matches. */
  rowIdentity: boolean;
  /** The index of the __m column in the result, when it was asked for. */
  matchedColumn?: number;
  /** The index of the column that says the result passed maxResultBytes (the last), when it was given. */
  overColumn?: number;
}

const FILTER: SqlContext = { filter: true };
const VALUE: SqlContext = { filter: false };

export function compile(stages: BoundStage[], opts: CompileOptions = {}): CompiledQuery {
  const last = stages[stages.length - 1]!.out;
  // A sort whose order reaches the end is applied there (with any take); sorting in between is wasted work.
  const finalOrders = last.order.length > 0;
  let cte = '';
  let rel = EMPTY;
  stages.forEach((s, i) => {
    if (i === opts.matchedCte) {
      cte = `WITH "__matched" AS MATERIALIZED (${relationSql(rel, i)}) `;
      rel = { sql: 'SELECT * FROM "__matched"', filters: [], weights: rel.weights };
    }
    if (!(s.stage.kind === 'order' && s.stage.limit === undefined && finalOrders)) rel = stageRelation(s, rel, i, opts);
  });
  // Output columns get names of their own (o1, o2…), so ORDER BY below means the query's columns, not the
  // converted outputs: ordering by an expression over the outputs costs DuckDB its top-N late
  // materialisation (docs/benchmarks.md).
  const cols = last.columns.map((c, i) => `${outputSql(c)} AS "o${i}"`);
  const texts = last.columns.flatMap((c, i) => (TEXT_OUTPUTS.has(c.type) ? [`"o${i}"`] : []));
  if (last.rowIdentity)
    cols.push(
      'epoch_ns("__t") AS "o__t"',
      '"__s" AS "o__s"',
      opts.sysTime ? 'epoch_ns("__st") AS "o__st"' : '0 AS "o__st"',
    );
  let matchedColumn: number | undefined;
  if (opts.matchedAt !== undefined) {
    matchedColumn = cols.length;
    cols.push('"__m" AS "o__m"');
  }
  const order = orderSql(last.order);
  // A count or a summary without groups is one row; a LIMIT on it only costs.
  const lastStage = stages[stages.length - 1]!.stage;
  const oneRow = lastStage.kind === 'count' || (lastStage.kind === 'aggregate' && lastStage.keys.length === 0);
  const limit = opts.limit !== undefined && !oneRow ? ` LIMIT ${opts.limit}` : '';
  // A page with nothing to order, cut or filter is the relation itself: DuckDB plans each SELECT it is given.
  let from = `(${
    order || limit || rel.filters.length
      ? `SELECT * ${fromSql(rel, 'o')}${order ? ` ORDER BY ${order}` : ''}${limit}`
      : rel.sql
  }) AS final`;
  if (cte) {
    matchedColumn = cols.length;
    cols.push('"__count"."n" AS "o__m"');
    from += ' CROSS JOIN (SELECT count(*) AS n FROM "__matched") AS "__count"';
  }
  // The page is already in order; ordering its few rows again keeps them so through the outer SELECT.
  if (!cols.length) cols.push('1 AS "__empty"');
  const page = `SELECT ${cols.join(', ')} FROM ${from}${order ? ` ORDER BY ${order}` : ''}`;
  const compiled = { columns: last.columns, rowIdentity: last.rowIdentity, matchedColumn };
  // Numbers alone, in rows too few to reach the limit, need no running sum (a count, most summaries' pages).
  const rows = oneRow ? 1 : (opts.limit ?? Infinity);
  if (opts.maxResultBytes === undefined || (!texts.length && 8 * cols.length * rows <= opts.maxResultBytes))
    return { sql: cte + page, ...compiled };
  const names = cols.map((c) => c.slice(c.lastIndexOf(' AS ') + 4));
  return { sql: cte + boundedBytes(page, names, texts, opts.maxResultBytes), ...compiled, overColumn: names.length };
}

/** The output types whose values are text (dynamic values are written out as JSON, timespans as Go durations). */
const TEXT_OUTPUTS = new Set<BoundColumn['type']>(['string', 'dynamic', 'timespan']);

/**
 * The page's rows up to the one whose values pass `maxBytes`, and a last column true on that one. DuckDB
 * holds a statement's result whole, outside its memory_limit, before anything reads it: a page of wide rows
 * (long texts made by the query) could hold many times the limit. A running sum over the rows as they
 * stream (DuckDB's streaming window, in the page's order) stops adding them at the limit; the rows after it
 * are still computed and let go a chunk at a time. The crossing row's texts are left out, so what is held
 * stays within the limit and a value's length.
 */
function boundedBytes(page: string, names: string[], texts: string[], maxBytes: number): string {
  const size = [String(8 * names.length), ...texts.map((t) => `coalesce(strlen(${t}), 0)`)].join(' + ');
  const text = new Set(texts);
  const kept = names.map((n) => (text.has(n) ? `CASE WHEN "__n" <= ${maxBytes} THEN ${n} END AS ${n}` : n));
  return (
    `SELECT ${kept.join(', ')}, "__n" > ${maxBytes} AS "o__over" FROM (` +
    `SELECT *, sum("__b") OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS "__n" FROM (` +
    `SELECT *, ${size} AS "__b" FROM (${page}) AS "page") AS "sized") AS "counted" ` +
    `WHERE "__n" - "__b" <= ${maxBytes}`
  );
}

/** SQL counting the rows that reach the end of the first `n` stages (rowsMatched). */
export function compileCount(stages: BoundStage[], n: number, opts: CompileOptions): string {
  let rel = EMPTY;
  stages.slice(0, n).forEach((s, i) => {
    // Order does not change a count.
    if (s.stage.kind !== 'order') rel = stageRelation(s, rel, i, opts);
  });
  const count = (from: string) => `SELECT count(*) AS n ${from}`;
  return rel.scan ? inline(rel.scan, rel.filters, 'matched', count) : count(fromSql(rel, 'matched'));
}

/**
 * A stage's result: a SELECT, and the filters not yet written around it. The stage after a filter takes its
 * condition as its own WHERE, and a count or a plain summary straight over a scan reads the scan's table
 * itself: DuckDB keeps a projection for every SELECT left between a scan and a count (docs/benchmarks.md).
 */
interface Relation {
  sql: string;
  /** Predicates of filters after `sql`, in order. */
  filters: BExpr[];
  /** `sql` is this scan's SELECT. */
  scan?: ScanSource;
  /** The computed expressions a reference to each column stands for in a filter DuckDB pushes (./pushed-filters.ts). */
  weights?: Weights;
  /** `sql` reads a relation more than once: a summary with side aggregations (see sideAggregatesSql). */
  rereads?: boolean;
}

/** What a scan reads: its table (with any sample), its own conditions, and each column's SQL over the table. */
interface ScanSource {
  table: string;
  /** TABLESAMPLE, when the scan reads a sample. */
  sample: string;
  where: string[];
  /** Each field's alias and SQL. */
  fields: [string, string][];
  /** The fields' and the row identity's SQL by alias. */
  columns: Map<string, string>;
}

/** The hidden columns of a scan's rows (event time, sequence, system time) by alias. */
const ROW_IDENTITY: [string, string][] = [
  ['__t', '"_time"'],
  ['__s', '"_seq"'],
  ['__st', '"_sysTime"'],
];

const EMPTY: Relation = { sql: '', filters: [] };

/** The filters' condition, written over the relation's own columns (or over its table's, see inline). */
function whereSql(filters: BExpr[]): string {
  return filters.length === 1 ? filterSql(filters[0]!) : filters.map((f) => `(${filterSql(f)})`).join(' AND ');
}

/** A filter's condition (written once: stageRelation weighs it, whereSql writes it). */
function filterSql(e: BExpr): string {
  if (columnSql) return exprSql(e, FILTER);
  let sql = writtenFilters.get(e);
  if (sql === undefined) writtenFilters.set(e, (sql = exprSql(e, FILTER)));
  return sql;
}

const writtenFilters = new WeakMap<BExpr, string>();

/**
 * The parts of an AND, however nested, when each is a bool: `and` converts a dynamic operand to bool, a
 * condition alone is not converted (such a predicate is kept whole).
 */
function conjuncts(e: BExpr): BExpr[] {
  const parts = (x: BExpr): BExpr[] => (x.k === 'call' && x.fn === 'and' ? x.args.flatMap(parts) : [x]);
  const all = parts(e);
  return all.every((p) => p.type === 'bool') ? all : [e];
}

/** The FROM (and WHERE) of a SELECT over a relation. */
function fromSql(rel: Relation, alias: string): string {
  return `FROM (${rel.sql}) AS ${alias}${rel.filters.length ? ` WHERE ${whereSql(rel.filters)}` : ''}`;
}

/** A relation as a SELECT of its own. */
function relationSql(rel: Relation, i: number): string {
  return rel.filters.length ? `SELECT * ${fromSql(rel, `s${i}`)}` : rel.sql;
}

/**
 * Writes a SELECT over a scan's table itself: `select(from)` is called with column references written as
 * the table's (`columnSql`), and given the FROM and WHERE to use.
 */
function inline(scan: ScanSource, filters: BExpr[], alias: string, select: (from: string) => string): string {
  columnSql = scan.columns;
  try {
    const where = [...scan.where, ...(filters.length ? [whereSql(filters)] : [])];
    return select(`FROM ${scan.table} AS ${alias}${scan.sample}${where.length ? ` WHERE ${where.join(' AND ')}` : ''}`);
  } finally {
    columnSql = undefined;
  }
}

/** Column references are written by this map while a SELECT reads a scan's table itself (see inline). */
let columnSql: Map<string, string> | undefined;

/** Stages whose SELECT can take held filters as its WHERE: SQL filters the FROM rows first. */
const TAKES_WHERE = new Set<Stage['kind']>(['count', 'select', 'order', 'limit', 'distinct']);

function stageRelation(bs: BoundStage, rel: Relation, i: number, opts: CompileOptions): Relation {
  const s = bs.stage;
  if (s.kind === 'filter') {
    const weights = rel.weights ?? NO_WEIGHTS;
    if (!tooHeavyToPush(filterSql(s.predicate), weights)) return { ...rel, filters: [...rel.filters, s.predicate] };
    // Each part of an AND on its own: the light ones still go down to the scan, only heavy ones are kept.
    const light: BExpr[] = [];
    const heavy: string[] = [];
    for (const part of conjuncts(s.predicate)) {
      const sql = filterSql(part);
      if (tooHeavyToPush(sql, weights)) heavy.push(sql);
      else light.push(part);
    }
    const held = { ...rel, filters: [...rel.filters, ...light] };
    return { ...rel, sql: keptFilter(relationSql(held, i), heavy, i), filters: [], scan: undefined };
  }
  if (s.kind === 'scan') {
    const scan = scanSource(s, opts);
    return { sql: scanSql(scan, opts), filters: [], scan };
  }
  const flow: WeightFlow = { in: rel.weights ?? NO_WEIGHTS, rereads: rel.rereads === true };
  const done = (sql: string): Relation => ({ sql, filters: [], weights: flow.out ?? flow.in, rereads: flow.rereads });
  const plain = s.kind === 'aggregate' && !s.aggs.some((a) => isSideAggregate(a.expr));
  if (rel.scan && (plain || s.kind === 'count')) {
    return done(inline(rel.scan, rel.filters, `s${i}`, (from) => stageSql(bs, '', i, opts, flow, from)));
  }
  if (rel.filters.length && (plain || TAKES_WHERE.has(s.kind))) {
    return done(stageSql(bs, '', i, opts, flow, fromSql(rel, `s${i}`)));
  }
  return done(stageSql(bs, relationSql(rel, i), i, opts, flow));
}

/**
 * The weights of the columns a stage reads, and those of the columns it makes when it defines or drops any
 * (left unset, they are the ones it read); whether its SQL, or what it reads, reads a relation more than once.
 */
interface WeightFlow {
  in: Weights;
  out?: Weights;
  rereads: boolean;
}

function outputSql(c: BoundColumn): string {
  const a = sqlIdent(c.alias);
  switch (c.type) {
    case 'datetime':
      return `epoch_ns(${a})`;
    case 'dynamic':
      return `CAST(${a} AS VARCHAR)`;
    case 'timespan':
      return `ferry_go_duration(${a})`;
    default:
      return a;
  }
}

function scanSource(s: Extract<Stage, { kind: 'scan' }>, opts: CompileOptions): ScanSource {
  const fields = s.columns.map((c): [string, string] => [
    c.alias,
    c.readAs ? `TRY_CAST(${sqlIdent(c.physical)} AS ${c.readAs})` : sqlIdent(c.physical),
  ]);
  const columns = new Map([...ROW_IDENTITY, ...fields]);
  const where: string[] = [];
  if (opts.startNs !== undefined) where.push(`"_time" >= ${sqlLiteral('datetime', opts.startNs)}`);
  if (opts.endNs !== undefined) where.push(`"_time" <= ${sqlLiteral('datetime', opts.endNs)}`);
  if (opts.cursor) {
    const { at, descending, inclusive } = opts.cursor;
    const t = sqlLiteral('datetime', at.timeNs);
    const cmp = descending ? '<' : '>';
    where.push(`("_time" ${cmp} ${t} OR ("_time" = ${t} AND "_seq" ${cmp}${inclusive ? '=' : ''} ${at.seq}))`);
    // The plain bound lets DuckDB skip row groups by their _time statistics.
    where.push(`"_time" ${cmp}= ${t}`);
  }
  const sample = opts.samplePercent ? ` TABLESAMPLE ${opts.samplePercent}% (system)` : '';
  return { table: sqlIdent(s.table), sample, where, fields, columns };
}

/** A scan as a SELECT of its own: the row identity, then every column under its alias. */
function scanSql(scan: ScanSource, opts: CompileOptions): string {
  const cols = ['"_time" AS "__t"', '"_seq" AS "__s"', ...(opts.sysTime ? ['"_sysTime" AS "__st"'] : [])];
  for (const [alias, sql] of scan.fields) cols.push(`${sql} AS ${sqlIdent(alias)}`);
  return `SELECT ${cols.join(', ')} FROM ${scan.table}${scan.sample}${scan.where.length ? ` WHERE ${scan.where.join(' AND ')}` : ''}`;
}

/** A stage's SELECT over `prev`, or with the FROM given (filters held before it, a scan's table: see Relation). */
function stageSql(
  bs: BoundStage,
  prev: string,
  i: number,
  opts: CompileOptions,
  flow: WeightFlow,
  given?: string,
): string {
  const s: Stage = bs.stage;
  const from = given ?? `FROM (${prev}) AS s${i}`;
  const hidden = bs.out.rowIdentity ? `"__t", "__s", ${opts.sysTime ? '"__st", ' : ''}` : '';
  switch (s.kind) {
    case 'scan':
    case 'filter':
      // Written by stageRelation: a scan as its own SELECT or read inline, a filter as the next stage's WHERE.
      throw new Error(`a ${s.kind} stage is compiled by stageRelation`);
    case 'values': {
      if (s.rows.length === 0) {
        return `SELECT ${s.columns.map((c) => `CAST(NULL AS ${SQL_TYPE_OF[c.type]}) AS ${sqlIdent(c.alias)}`).join(', ')} WHERE FALSE`;
      }
      if (s.columns.length === 0) return 'SELECT 1 AS "__empty"';
      const rows = s.rows.map(
        (r) => `(${r.map((e, j) => `CAST(${exprSql(e, VALUE)} AS ${SQL_TYPE_OF[s.columns[j]!.type]})`).join(', ')})`,
      );
      return `SELECT * FROM (VALUES ${rows.join(', ')}) AS v(${s.columns.map((c) => sqlIdent(c.alias)).join(', ')})`;
    }
    case 'select': {
      const items = defined(s.items, flow);
      return `SELECT ${hidden}${items.map((it, j) => `${it} AS ${sqlIdent(s.items[j]!.alias)}`).join(', ') || '1 AS "__empty"'} ${from}`;
    }
    case 'aggregate': {
      if (s.aggs.some((a) => isSideAggregate(a.expr))) return sideAggregatesSql(s, prev, i, opts, flow);
      // A filter on a key is pushed through the summary with the key's definition written in: keys weigh.
      const keys = defined(s.keys, flow).map((k, j) => `${k} AS ${sqlIdent(s.keys[j]!.alias)}`);
      const aggs = s.aggs.map((a) => `${exprSql(a.expr, VALUE)} AS ${sqlIdent(a.alias)}`);
      // rowsMatched: the rows that went into the summary, as a window over the groups' counts.
      if (i === opts.matchedAt) aggs.push('sum(count(*)) OVER () AS "__m"');
      const group = s.keys.length ? ` GROUP BY ${s.keys.map((_, j) => j + 1).join(', ')}` : '';
      return `SELECT ${[...keys, ...aggs].join(', ')} ${from}${group}`;
    }
    case 'order': {
      const keys = orderSql(s.keys);
      return `SELECT * ${from}${keys ? ` ORDER BY ${keys}` : ''}${s.limit !== undefined ? ` LIMIT ${s.limit}` : ''}`;
    }
    case 'limit': {
      const order = orderSql(bs.out.order) ? ` ORDER BY ${orderSql(bs.out.order)}` : '';
      return `SELECT * ${from}${order} LIMIT ${s.n}`;
    }
    case 'top-groups': {
      // Rank groups by their total of the first numeric aggregate; keep the top n groups in every bucket.
      const keys = s.keyAliases.map(sqlIdent);
      if (keys.length === 0) return `SELECT * ${from}`;
      const total = s.rankBy
        ? `sum(${sqlIdent(s.rankBy)}) OVER (PARTITION BY ${keys.join(', ')})`
        : 'count(*) OVER (PARTITION BY ' + keys.join(', ') + ')';
      const ranked = `SELECT *, dense_rank() OVER (ORDER BY "__total" DESC NULLS LAST, ${keys.map((k) => `${k} NULLS LAST`).join(', ')}) AS "__rank" FROM (SELECT *, ${total} AS "__total" FROM "__g${i}") AS t${i}`;
      // The groups are materialised: DuckDB's filter pushdown planned nested rankings in time that grew
      // fourfold with each (ten: 2.5 s, deaf to the query's interrupt), and they are few rows.
      return `WITH "__g${i}" AS MATERIALIZED (SELECT * ${from}) SELECT * EXCLUDE ("__total", "__rank") FROM (${ranked}) AS r${i} WHERE "__rank" <= ${s.n}`;
    }
    case 'distinct':
      return `SELECT DISTINCT * ${from}`;
    case 'count':
      flow.out = NO_WEIGHTS;
      return `SELECT count(*) AS ${sqlIdent(s.alias)} ${from}`;
    case 'union': {
      // A filter on the union is pushed into every input: a column weighs what it weighs in the heaviest.
      const inputs = s.inputs.map((inp) => stagesRelation(inp, opts));
      const out = new Map<string, number>();
      for (const r of inputs)
        for (const [alias, w] of r.weights ?? NO_WEIGHTS) out.set(alias, Math.max(w, out.get(alias) ?? 0));
      flow.out = out;
      flow.rereads ||= inputs.some((r) => r.rereads);
      return `SELECT * FROM (${inputs.map((r) => `(${relationSql(r, r.n)})`).join(' UNION ALL ')}) AS u${i}`;
    }
    case 'join': {
      const right = stagesRelation(s.right, opts);
      flow.rereads ||= right.rereads === true;
      // DuckDB carries a filter on one side's key over to the other side's and pushes it into that side: a
      // heavy key is compared as a column computed behind a barrier on its own side (./pushed-filters.ts).
      const leftKeys = joinKeys(
        s.on.map((o) => o.left),
        flow.in,
        '__jl',
      );
      const rightKeys = joinKeys(
        s.on.map((o) => o.right),
        right.weights ?? NO_WEIGHTS,
        '__jr',
      );
      const prevKeyed = leftKeys.added.length
        ? `SELECT *, ${leftKeys.added.join(', ')} FROM (${prev}) AS jl${i}`
        : prev;
      const left =
        s.joinKind === 'innerunique'
          ? // innerunique keeps one left row per key before joining (KQL).
            `(SELECT * FROM (${prevKeyed}) AS lu QUALIFY row_number() OVER (PARTITION BY ${s.on.map((o) => sqlIdent(o.left)).join(', ')}) = 1)`
          : `(${prevKeyed})`;
      const rightSql = relationSql(right, right.n);
      const rightKeyed = rightKeys.added.length
        ? `SELECT *, ${rightKeys.added.join(', ')} FROM (${rightSql}) AS jr${i}`
        : rightSql;
      const cond = s.on.map((_, j) => `l.${leftKeys.names[j]} = r.${rightKeys.names[j]}`).join(' AND ');
      const rightCols = s.rightColumns.map((c) => `r.${sqlIdent(c.from)} AS ${sqlIdent(c.alias)}`);
      const out = new Map(flow.in);
      for (const c of s.rightColumns) {
        const w = right.weights?.get(c.from);
        if (w === undefined) out.delete(c.alias);
        else out.set(c.alias, w);
      }
      flow.out = out;
      const leftCols = leftKeys.added.length
        ? `l.* EXCLUDE (${leftKeys.names.filter((_, j) => leftKeys.barred[j]).join(', ')})`
        : 'l.*';
      return `SELECT ${leftCols}${rightCols.length ? `, ${rightCols.join(', ')}` : ''} FROM ${left} AS l ${s.joinKind === 'leftouter' ? 'LEFT JOIN' : 'JOIN'} (${rightKeyed}) AS r ON ${cond}`;
    }
    case 'expand': {
      const lists = s.items.map((it) => expandList(exprSql(it.expr, VALUE), it.bag, it.limit));
      const inner = [
        ...s.keep.map(sqlIdent),
        ...lists.map((l, j) => `unnest(${l}) AS "__x${j}"`),
        ...(s.indexAlias ? [`generate_subscripts(${lists[0]}, 1) - 1 AS ${sqlIdent(s.indexAlias)}`] : []),
      ];
      const outer = [
        ...s.keep.map(sqlIdent),
        ...s.items.map(
          (it, j) =>
            `${it.toType ? convertSql({ sql: `"__x${j}"`, type: 'dynamic' }, it.toType) : `"__x${j}"`} AS ${sqlIdent(it.alias)}`,
        ),
        ...(s.indexAlias ? [sqlIdent(s.indexAlias)] : []),
      ];
      // The kept columns are what they were; the elements are converted once from what unnest made.
      flow.out = new Map([
        ...s.keep.flatMap((k) => (flow.in.has(k) ? [[k, flow.in.get(k)!] as const] : [])),
        ...s.items.map((it) => [it.alias, it.toType ? 1 : 0] as const),
      ]);
      return `SELECT ${outer.join(', ')} FROM (SELECT ${inner.join(', ')} ${from}) AS x${i}`;
    }
    case 'sample':
      return `SELECT * ${from} USING SAMPLE ${(s.fraction * 100).toFixed(6)} PERCENT (bernoulli)`;
    case 'series':
      return seriesSql(s, prev, i, flow);
  }
}

/**
 * A join's keys on one side, by the names to compare: each key's own column, or, for a key too heavy for a
 * filter DuckDB carries over from the other side, a column computed from it behind a barrier (`added`,
 * named from `prefix`, to leave out of the join's result).
 */
function joinKeys(
  aliases: string[],
  weights: Weights,
  prefix: string,
): { names: string[]; barred: boolean[]; added: string[] } {
  const added: string[] = [];
  const barred = aliases.map((a) => tooHeavyToPush(sqlIdent(a), weights));
  const names = aliases.map((a, j) => {
    if (!barred[j]) return sqlIdent(a);
    const name = sqlIdent(`${prefix}${j}`);
    added.push(`${behindBarrier(sqlIdent(a))} AS ${name}`);
    return name;
  });
  return { names, barred, added };
}

/**
 * The SQL of the columns a stage defines, setting their weights as the stage's (only theirs: what the
 * stage does not name it does not pass on).
 */
function defined(items: { alias: string; expr: BExpr }[], flow: WeightFlow): string[] {
  const out = new Map<string, number>();
  const sql = items.map((it) => {
    const d = exprSql(it.expr, VALUE);
    const w = definitionWeight(d, flow.in);
    if (w > 0) out.set(it.alias, w);
    return d;
  });
  flow.out = out;
  return sql;
}

/**
 * make-series in SQL: aggregate per (group, step), lay every group over the full list of steps (missing
 * steps take the default), and collect each group's values in step order into arrays.
 */
function seriesSql(s: Extract<Stage, { kind: 'series' }>, prev: string, i: number, flow: WeightFlow): string {
  const isTime = s.axis.type === 'datetime';
  const axisSql = isTime ? `epoch_ns(${exprSql(s.axis, VALUE)})` : `CAST(${exprSql(s.axis, VALUE)} AS DOUBLE)`;
  // The steps' bounds are a filter on the axis, which DuckDB would push down with the axis's definition
  // written in: a heavy axis is computed behind a barrier instead (a make-series keeps no row for a sort).
  const axis = tooHeavyToPush(axisSql, flow.in) ? behindBarrier(axisSql) : axisSql;
  const keySql = defined(s.keys, flow);
  const step = isTime ? String(s.step) : String(Number(s.step));
  const num = (e: BExpr) => (isTime ? `epoch_ns(${exprSql(e, VALUE)})` : `CAST(${exprSql(e, VALUE)} AS DOUBLE)`);
  const floorTo = (x: string) =>
    isTime ? `(${x} - ((${x} % ${step}) + ${step}) % ${step})` : `(floor(${x} / ${step}) * ${step})`;
  // Each row's step: its start (time) or its number counted from 0 (numbers), as bin() rounds.
  const bucket = isTime ? floorTo('"__a"') : `CAST(floor("__a" / ${step}) AS BIGINT)`;
  // With from/to the steps are theirs (from aligned to the step, like bin()); without, they span the
  // steps the data fell in, read from the small per-step aggregate rather than by scanning again.
  const bounded = s.from !== undefined || s.to !== undefined;
  const lo = s.from
    ? floorTo(num(s.from))
    : isTime
      ? '(SELECT min("__b") FROM a)'
      : `((SELECT min("__b") FROM a) * ${step})`;
  const hi = s.to
    ? num(s.to)
    : isTime
      ? `((SELECT max("__b") FROM a) + ${step})`
      : `(((SELECT max("__b") FROM a) + 1) * ${step})`;
  const keys = s.keys.map((k) => sqlIdent(k.alias));
  const keySel = keySql.map((k, j) => `${k} AS ${keys[j]}`);
  const aggSel = s.aggs.map((a) => `${exprSql(a.expr, VALUE)} AS ${sqlIdent(a.alias)}`);
  const groupBy = [...keys, '"__b"'].join(', ');
  const steps = isTime
    ? `range(${lo}, ${hi}, ${step})`
    : `range(CAST(floor(${lo} / ${step}) AS BIGINT), CAST(ceil(${hi} / ${step}) AS BIGINT))`;
  // Numeric steps are numbered; the axis shows each step's start.
  const stepStart = isTime ? 'b."__b"' : `(b."__b" * ${step})`;
  const match = [...keys.map((k) => `g.${k} IS NOT DISTINCT FROM a.${k}`), `a."__b" = b."__b"`].join(' AND ');
  const collect = s.aggs.map(
    (a) =>
      `to_json(list(COALESCE(a.${sqlIdent(a.alias)}, ${sqlLiteral(a.default.type, (a.default as { value: LiteralValue }).value)}) ORDER BY b."__b")) AS ${sqlIdent(a.alias)}`,
  );
  const axisOut = isTime
    ? `to_json(list(ferry_rfc3339(make_timestamp_ns(${stepStart})) ORDER BY b."__b"))`
    : `to_json(list(${stepStart} ORDER BY b."__b"))`;
  const within = bounded ? ` WHERE "__a" >= ${lo} AND "__a" < ${hi}` : '';
  // a is read four times and holds a row per group and step: materialised, the data is scanned once.
  return `WITH p AS (SELECT *, ${axis} AS "__a" FROM (${prev}) AS s${i}),
    a AS MATERIALIZED (SELECT ${[...keySel, ...aggSel, `${bucket} AS "__b"`].join(', ')}
          FROM p${within} GROUP BY ${groupBy}),
    g AS (SELECT DISTINCT ${keys.length ? keys.join(', ') : '1 AS "__one"'} FROM a),
    b AS (SELECT unnest(${steps}) AS "__b")
    SELECT ${[...keys.map((k) => `g.${k}`), ...collect, `${axisOut} AS ${sqlIdent(s.axisAlias)}`].join(', ')}
    FROM g CROSS JOIN b LEFT JOIN a ON ${match}
    GROUP BY ${keys.length ? keys.map((k) => `g.${k}`).join(', ') : 'ALL'} HAVING count(*) > 0`;
}

/**
 * A summary with side aggregations (./side-aggregates.ts): `h` is the source with the group keys, `r` each
 * group's keys and plain aggregations (and what the side ones need of the whole group), and each side
 * aggregation its own read of `h`, joined onto `r` on the keys.
 */
function sideAggregatesSql(
  s: Extract<Stage, { kind: 'aggregate' }>,
  prev: string,
  i: number,
  opts: CompileOptions,
  flow: WeightFlow,
): string {
  const keyCols = s.keys.map((_, j) => `"__hk${j}"`);
  const src = `SELECT *${defined(s.keys, flow)
    .map((k, j) => `, ${k} AS ${keyCols[j]}`)
    .join('')} FROM (${prev}) AS s${i}`;
  const frame: SideFrame = {
    keyCols,
    on: (a, b) =>
      keyCols.length ? `ON ${keyCols.map((k) => `${a}.${k} IS NOT DISTINCT FROM ${b}.${k}`).join(' AND ')}` : 'ON TRUE',
    groupBy: (prefix = '') => (keyCols.length ? ` GROUP BY ${keyCols.map((k) => prefix + k).join(', ')}` : ''),
    arg: (e) => arg(e, VALUE),
    tooHeavyToPush: (condition) => tooHeavyToPush(condition, flow.in),
  };
  const rangeCols: string[] = [];
  const ctes: string[] = [];
  const joins: string[] = [];
  const out: string[] = s.keys.map((k, j) => `r.${keyCols[j]} AS ${sqlIdent(k.alias)}`);
  s.aggs.forEach((a, n) => {
    if (!isSideAggregate(a.expr)) {
      rangeCols.push(`${exprSql(a.expr, VALUE)} AS "__a${n}"`);
      out.push(`r."__a${n}" AS ${sqlIdent(a.alias)}`);
      return;
    }
    const plan = sidePlan(a.expr as Extract<BExpr, { k: 'agg' }>, n, frame);
    rangeCols.push(...plan.range);
    ctes.push(...plan.ctes);
    joins.push(...plan.joins);
    out.push(`${plan.out} AS ${sqlIdent(a.alias)}`);
  });
  rangeCols.push('count(*) AS "__n"');
  if (i === opts.matchedAt) out.push('sum(r."__n") OVER () AS "__m"');
  const r = `SELECT ${[...keyCols, ...rangeCols].join(', ')} FROM h${frame.groupBy()}`;
  // h is read once per side aggregation and once for r: not materialised, each read scans only what it
  // uses. Unless it reads such a summary itself: nested, each level would multiply the reads of those below.
  const h = flow.rereads ? 'MATERIALIZED' : 'NOT MATERIALIZED';
  flow.rereads = true;
  return `WITH h AS ${h} (${src}), r AS (${r}), ${ctes.join(', ')} SELECT ${out.join(', ')} FROM r ${joins.join(' ')}`;
}

/** A pipeline's relation (no final SELECT), for union inputs and the right side of a join; `n` for its alias. */
function stagesRelation(stages: BoundStage[], opts: CompileOptions): Relation & { n: number } {
  let rel = EMPTY;
  stages.forEach((s, i) => {
    rel = stageRelation(s, rel, i, { ...opts, matchedAt: undefined, matchedCte: undefined });
  });
  return { ...rel, n: stages.length };
}

/** The list mv-expand unnests: an array's elements, a bag's entries ({key: value}, or [key, value] for kind=array). */
function expandList(j: string, kind: 'bag' | 'array', limit?: number): string {
  const value = `json_extract(${j}, concat('$."', replace(k, '"', '\\"'), '"'))`;
  const entry = kind === 'bag' ? `json_object(k, ${value})` : `json_array(k, ${value})`;
  const list = `(CASE WHEN ${j} IS NULL OR json_type(${j}) = 'NULL' THEN CAST([] AS JSON[])
    WHEN json_type(${j}) = 'ARRAY' THEN CAST(${j} AS JSON[])
    WHEN json_type(${j}) = 'OBJECT' THEN list_transform(json_keys(${j}), k -> ${entry})
    ELSE [${j}] END)`;
  return limit !== undefined ? `list_slice(${list}, 1, ${limit})` : list;
}

/** ORDER BY keys; constants order nothing (and DuckDB rejects them), so they are left out. */
function orderSql(keys: OrderKey[]): string {
  return keys
    .filter((k) => k.expr.k !== 'lit')
    .map((k) => `${exprSql(k.expr, VALUE)} ${k.desc ? 'DESC' : 'ASC'} NULLS ${k.nullsFirst ? 'FIRST' : 'LAST'}`)
    .join(', ');
}

function arg(e: BExpr, ctx: SqlContext): SqlArg {
  return {
    sql: exprSql(e, ctx),
    type: e.type,
    constant: e.k === 'lit' ? { value: e.value } : undefined,
    name: e.k === 'col' ? e.name : undefined,
  };
}

/**
 * The most SQL one expression may compile to. Many functions write an argument out more than once (a
 * CASE testing it, then using it), so one nested in itself multiplies its SQL with each level; the
 * compiler stops as soon as an expression passes this, having built at most a few times as much.
 */
export const MAX_EXPRESSION_SQL_CHARS = 1024 * 1024;

/** An expression whose SQL passed MAX_EXPRESSION_SQL_CHARS; `pos` is where it starts in the query (or -1). */
export class SqlTooLarge extends Error {
  constructor(readonly pos: number) {
    super(`this expression compiles to more than ${MAX_EXPRESSION_SQL_CHARS / (1024 * 1024)} MiB of SQL`);
    this.name = 'SqlTooLarge';
  }
}

export function exprSql(e: BExpr, ctx: SqlContext): string {
  const sql = exprSqlOf(e, ctx);
  if (sql.length > MAX_EXPRESSION_SQL_CHARS) throw new SqlTooLarge(e.k === 'call' || e.k === 'agg' ? e.pos : -1);
  return sql;
}

/** An argument's SQL at least this long is bound once when a function writes it out more than once. */
const REPEATED_BIND_CHARS = 256;
let bindSeq = 0;

/**
 * A function's SQL, with each long argument it writes out more than once bound once instead: a function
 * that repeats its argument (a CASE testing it, then using it), nested in itself, would double the SQL with
 * each level, and DuckDB plans such trees in time that grows faster still, deaf to interrupts
 * (docs/benchmarks.md). Short arguments (columns, constants, small expressions) are left as written.
 */
function bindRepeated(args: SqlArg[], sql: (args: SqlArg[]) => string): string {
  const text = sql(args);
  const repeated = args.map((a) => a.sql.length >= REPEATED_BIND_CHARS && occurrences(text, a.sql) > 1);
  if (!repeated.includes(true)) return text;
  const name = `__r${++bindSeq}`;
  const struct = args.flatMap((a, i) => (repeated[i] ? [`'a${i}': ${a.sql}`] : [])).join(', ');
  const body = sql(args.map((a, i) => (repeated[i] ? { ...a, sql: `${name}.a${i}` } : a)));
  return `(list_transform([{${struct}}], ${name} -> ${body}))[1]`;
}

function occurrences(text: string, part: string): number {
  let n = 0;
  for (let at = text.indexOf(part); at >= 0 && n < 2; at = text.indexOf(part, at + part.length)) n++;
  return n;
}

function exprSqlOf(e: BExpr, ctx: SqlContext): string {
  switch (e.k) {
    case 'col':
    case 'hidden':
      return columnSql?.get(e.alias) ?? sqlIdent(e.alias);
    case 'lit':
      return sqlLiteral(e.type, e.value);
    case 'call': {
      const fn = OPERATORS[e.fn] ?? SCALAR_FUNCTIONS[e.fn]!;
      // and/or pass the predicate context down: a NULL operand of a where predicate acts as false either way.
      const inner = e.fn === 'and' || e.fn === 'or' ? ctx : VALUE;
      const args = e.args.map((a) => arg(a, inner));
      return bindRepeated(args, (as) => fn.sql(as, ctx));
    }
    case 'agg':
      return AGGREGATE_FUNCTIONS[e.fn]!.sql(e.args.map((a) => arg(a, VALUE)));
    case 'in':
      return inSql(
        e.op,
        arg(e.left, VALUE),
        e.items.map((i) => arg(i, VALUE)),
        ctx,
      );
    case 'has_any':
      return hasAnySql(arg(e.left, VALUE), e.terms, e.caseSensitive, ctx);
    case 'between':
      return betweenSql(e.negated, arg(e.left, VALUE), arg(e.low, VALUE), arg(e.high, VALUE), ctx);
    case 'path': {
      let constant = '$';
      const dynamicParts: string[] = [];
      for (const p of e.path) {
        if (typeof p === 'string') constant += `."${p.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
        else if (typeof p === 'number') constant += p < 0 ? `[#${p}]` : `[${p}]`;
        else
          dynamicParts.push(
            p.type === 'long'
              ? `'[' || CAST(${exprSql(p, VALUE)} AS VARCHAR) || ']'`
              : `'."' || replace(${exprSql(p, VALUE)}, '"', '\\"') || '"'`,
          );
      }
      const path = dynamicParts.length ? `(${[sqlText(constant), ...dynamicParts].join(' || ')})` : sqlText(constant);
      return `json_extract(${exprSql(e.target, VALUE)}, ${path})`;
    }
  }
}
