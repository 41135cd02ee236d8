/**
 * APL aggregation functions (apl.md 2.2) as DuckDB aggregates. Nulls are skipped, as in APL. dcount and
 * the percentiles are exact here (Axiom estimates them); percentiles use the nearest-rank definition
 * (quantile_disc), so a percentile is always a value that occurred.
 */
import { ArgumentError, type AggregateFunction, type ArgInfo } from './catalog.js';
import { sqlText } from '../../sql/quote.js';
import { asStringSql, convertSql, toDynamicSql, type SqlArg } from './sql.js';
import { isNumeric, type AplType } from '../types.js';
import { lookupTable } from '../../util/lookup.js';

const fail = (m: string): never => {
  throw new ArgumentError(m);
};

const cast = (a: SqlArg, t: AplType) => (a.type === t ? a.sql : convertSql(a, t));

function numericType(a: ArgInfo, fn: string): AplType {
  if (a.type === 'long' || a.type === 'real' || a.type === 'timespan') return a.type;
  if (a.type === 'string' || a.type === 'dynamic') return 'real';
  return fail(`${fn}() needs a number or a timespan, not ${a.type}`);
}

const numArg = (a: SqlArg) => (isNumeric(a.type) || a.type === 'timespan' ? a.sql : convertSql(a, 'real'));

/** sum keeps long (and timespan) as BIGINT: DuckDB widens a BIGINT sum to HUGEINT. */
function sumSql(a: SqlArg, filter?: SqlArg): string {
  const t = numericType(a, 'sum');
  const f = filter ? ` FILTER (WHERE ${cast(filter, 'bool')})` : '';
  return t === 'real' ? `sum(${numArg(a)})${f}` : `CAST(sum(${a.sql})${f} AS BIGINT)`;
}

function percentileP(a: SqlArg | undefined): number {
  const v = a?.constant?.value;
  const p = typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : NaN;
  if (!(p >= 0 && p <= 100)) fail('the percentile must be a constant between 0 and 100');
  return p / 100;
}

function orderable(a: ArgInfo, fn: string): AplType {
  if (a.type === 'dynamic') return 'real';
  if (a.type === 'bool') fail(`${fn}() is not defined for bool`);
  return a.type;
}

/** The most phrases one phrases() call answers: each is chosen among six candidates (see side-aggregates.ts). */
export const MAX_PHRASES = 1000;

export const AGGREGATE_FUNCTIONS: Record<string, AggregateFunction> = lookupTable({
  // spotlight(selected, field1, ...): the selected rows against the rest, field by field (JavaScript over
  // the group's rows: service/query/analysis-functions.ts).
  spotlight: {
    shape: 'dictionary',
    minArgs: 2,
    maxArgs: 64,
    op: 'spotlight',
    prefix: 'spotlight',
    predicateArgs: [0],
    returns: ([p]) => {
      if (p!.type !== 'bool' && p!.type !== 'dynamic')
        fail(`the first argument selects the rows to compare: a bool, not ${p!.type}`);
      return 'dynamic';
    },
    sql: ([p, ...fields]) => {
      const row = `json_array(to_json(COALESCE(${cast(p!, 'bool')}, FALSE)), ${fields.map((f) => toDynamicSql(f)).join(', ')})`;
      const names = JSON.stringify(fields.map((f, i) => f.name ?? `field${i + 1}`));
      return `CAST(ferry_spotlight(CAST(to_json(list(${row})) AS VARCHAR), ${sqlText(names)}) AS JSON)`;
    },
  },
  // phrases(text [, max = 10]): the most common word sequences (JavaScript, analysis-functions.ts).
  phrases: {
    shape: 'array',
    minArgs: 1,
    maxArgs: 2,
    op: 'phrases',
    prefix: 'phrases',
    constantArgs: [1],
    returns: ([, k]) => {
      const v = k?.constant?.value;
      if (k && (typeof v !== 'bigint' || v < 1n || v > BigInt(MAX_PHRASES)))
        fail(`the number of phrases must be a constant from 1 to ${MAX_PHRASES}`);
      return 'dynamic';
    },
    sql: ([x, k]) =>
      `CAST(ferry_phrases(CAST(to_json(list(${asStringSql(x!)}) FILTER (WHERE ${x!.sql} IS NOT NULL)) AS VARCHAR), ${k ? String(k.constant!.value) : '10'}) AS JSON)`,
  },
  count: {
    minArgs: 0,
    maxArgs: 1,
    op: 'count',
    prefix: 'count',
    returns: () => 'long',
    sql: (a) => (a[0] ? `count(${a[0].sql})` : 'count(*)'),
  },
  countif: {
    minArgs: 1,
    maxArgs: 1,
    op: 'countif',
    prefix: 'countif',
    predicateArgs: [0],
    returns: () => 'long',
    sql: ([p]) => `count(*) FILTER (WHERE ${cast(p!, 'bool')})`,
  },
  sum: {
    minArgs: 1,
    maxArgs: 1,
    op: 'sum',
    prefix: 'sum',
    returns: ([a]) => numericType(a!, 'sum'),
    sql: ([a]) => sumSql(a!),
  },
  sumif: {
    minArgs: 2,
    maxArgs: 2,
    op: 'sumif',
    prefix: 'sumif',
    predicateArgs: [1],
    returns: ([a]) => numericType(a!, 'sumif'),
    // sumif over no matching rows is 0 (apl.md 4.1).
    sql: ([a, p]) => `COALESCE(${sumSql(a!, p)}, 0)`,
  },
  avg: {
    minArgs: 1,
    maxArgs: 1,
    op: 'avg',
    prefix: 'avg',
    returns: ([a]) => (numericType(a!, 'avg') === 'timespan' ? 'timespan' : 'real'),
    sql: ([a]) => (a!.type === 'timespan' ? `CAST(avg(${a!.sql}) AS BIGINT)` : `avg(${numArg(a!)})`),
  },
  avgif: {
    minArgs: 2,
    maxArgs: 2,
    op: 'avgif',
    prefix: 'avgif',
    predicateArgs: [1],
    returns: ([a]) => (numericType(a!, 'avgif') === 'timespan' ? 'timespan' : 'real'),
    sql: ([a, p]) =>
      a!.type === 'timespan'
        ? `CAST(avg(${a!.sql}) FILTER (WHERE ${cast(p!, 'bool')}) AS BIGINT)`
        : `avg(${numArg(a!)}) FILTER (WHERE ${cast(p!, 'bool')})`,
  },
  min: {
    minArgs: 1,
    maxArgs: 1,
    op: 'min',
    prefix: 'min',
    returns: ([a]) => orderable(a!, 'min'),
    sql: ([a]) => `min(${a!.type === 'dynamic' ? numArg(a!) : a!.sql})`,
  },
  max: {
    minArgs: 1,
    maxArgs: 1,
    op: 'max',
    prefix: 'max',
    returns: ([a]) => orderable(a!, 'max'),
    sql: ([a]) => `max(${a!.type === 'dynamic' ? numArg(a!) : a!.sql})`,
  },
  minif: {
    minArgs: 2,
    maxArgs: 2,
    op: 'minif',
    prefix: 'minif',
    predicateArgs: [1],
    returns: ([a]) => orderable(a!, 'minif'),
    sql: ([a, p]) => `min(${a!.type === 'dynamic' ? numArg(a!) : a!.sql}) FILTER (WHERE ${cast(p!, 'bool')})`,
  },
  maxif: {
    minArgs: 2,
    maxArgs: 2,
    op: 'maxif',
    prefix: 'maxif',
    predicateArgs: [1],
    returns: ([a]) => orderable(a!, 'maxif'),
    sql: ([a, p]) => `max(${a!.type === 'dynamic' ? numArg(a!) : a!.sql}) FILTER (WHERE ${cast(p!, 'bool')})`,
  },
  dcount: {
    minArgs: 1,
    maxArgs: 2,
    op: 'distinct',
    prefix: 'dcount',
    returns: () => 'long',
    sql: ([a]) => `count(DISTINCT ${a!.sql})`,
  },
  dcountif: {
    minArgs: 2,
    maxArgs: 3,
    op: 'distinctif',
    prefix: 'dcountif',
    predicateArgs: [1],
    returns: () => 'long',
    sql: ([a, p]) => `count(DISTINCT ${a!.sql}) FILTER (WHERE ${cast(p!, 'bool')})`,
  },
  percentile: {
    minArgs: 2,
    maxArgs: 2,
    op: 'percentiles',
    prefix: 'percentile',
    constantArgs: [1],
    namedConstant: 1,
    returns: ([a]) => orderable(a!, 'percentile'),
    sql: ([a, p]) => `quantile_disc(${a!.type === 'dynamic' ? numArg(a!) : a!.sql}, ${percentileP(p)})`,
  },
  percentileif: {
    minArgs: 3,
    maxArgs: 3,
    op: 'percentilesif',
    prefix: 'percentileif',
    constantArgs: [1],
    predicateArgs: [2],
    namedConstant: 1,
    returns: ([a]) => orderable(a!, 'percentileif'),
    sql: ([a, p, c]) =>
      `quantile_disc(${a!.type === 'dynamic' ? numArg(a!) : a!.sql}, ${percentileP(p)}) FILTER (WHERE ${cast(c!, 'bool')})`,
  },
  percentiles_array: {
    shape: 'array',
    minArgs: 2,
    maxArgs: 64,
    op: 'percentiles',
    prefix: 'percentiles',
    constantArgs: Array.from({ length: 63 }, (_, i) => i + 1),
    returns: ([a]) => {
      orderable(a!, 'percentiles_array');
      return 'dynamic';
    },
    sql: ([a, ...ps]) => percentilesSql(a!, ps),
  },
  // percentiles_arrayif(x, dynamic([p1, p2...]), predicate).
  percentiles_arrayif: {
    shape: 'array',
    minArgs: 3,
    maxArgs: 3,
    op: 'percentilesif',
    prefix: 'percentilesif',
    constantArgs: [1],
    predicateArgs: [2],
    returns: ([a, ps]) => {
      orderable(a!, 'percentiles_arrayif');
      if (!Array.isArray(ps!.constant?.value))
        fail('the percentiles must be a constant array, such as dynamic([50, 95, 99])');
      return 'dynamic';
    },
    sql: ([a, ps, p]) => percentilesSql(a!, [ps!], p),
  },
  stdev: {
    minArgs: 1,
    maxArgs: 1,
    op: 'stdev',
    prefix: 'stdev',
    returns: () => 'real',
    sql: ([a]) => `stddev_samp(${numArg(a!)})`,
  },
  stdevif: {
    minArgs: 2,
    maxArgs: 2,
    op: 'stdevif',
    prefix: 'stdevif',
    predicateArgs: [1],
    returns: () => 'real',
    sql: ([a, p]) => `stddev_samp(${numArg(a!)}) FILTER (WHERE ${cast(p!, 'bool')})`,
  },
  variance: {
    minArgs: 1,
    maxArgs: 1,
    op: 'variance',
    prefix: 'variance',
    returns: () => 'real',
    sql: ([a]) => `var_samp(${numArg(a!)})`,
  },
  varianceif: {
    minArgs: 2,
    maxArgs: 2,
    op: 'varianceif',
    prefix: 'varianceif',
    predicateArgs: [1],
    returns: () => 'real',
    sql: ([a, p]) => `var_samp(${numArg(a!)}) FILTER (WHERE ${cast(p!, 'bool')})`,
  },
  // The columns of arg_max/arg_min (the binder expands those calls): the value of a at the row where b is extreme.
  'arg_max#': {
    minArgs: 2,
    maxArgs: 2,
    op: 'argmax',
    prefix: '',
    returns: ([a]) => a!.type,
    sql: ([a, b]) => `arg_max(${a!.sql}, ${b!.sql})`,
  },
  'arg_min#': {
    minArgs: 2,
    maxArgs: 2,
    op: 'argmin',
    prefix: '',
    returns: ([a]) => a!.type,
    sql: ([a, b]) => `arg_min(${a!.sql}, ${b!.sql})`,
  },
  topk: {
    shape: 'array',
    minArgs: 2,
    maxArgs: 2,
    op: 'topk',
    prefix: 'topk',
    constantArgs: [1],
    returns: (a) => topkReturns(a[1]!),
    sql: ([a, k]) => topkSql(a!, k!),
  },
  topkif: {
    shape: 'array',
    minArgs: 3,
    maxArgs: 3,
    op: 'topkif',
    prefix: 'topkif',
    constantArgs: [1],
    predicateArgs: [2],
    returns: (a) => topkReturns(a[1]!),
    sql: ([a, k, p]) => topkSql(a!, k!, p),
  },
  // A summary's histogram is planned by the compiler (two reads, see compiler.ts); this one-pass form, a
  // count per distinct value, serves a histogram inside another expression.
  histogram: {
    shape: 'array',
    minArgs: 2,
    maxArgs: 2,
    op: 'histogram',
    prefix: 'histogram',
    constantArgs: [1],
    returns: (a) => histogramReturns(a[1]!),
    sql: ([a, n]) =>
      `COALESCE(to_json(ferry_histogram(histogram(${numArg(a!)}) FILTER (WHERE ${a!.sql} IS NOT NULL), ${String(n!.constant!.value)})), '[]'::JSON)`,
  },
  histogramif: {
    shape: 'array',
    minArgs: 3,
    maxArgs: 3,
    op: 'histogramif',
    prefix: 'histogramif',
    constantArgs: [1],
    predicateArgs: [2],
    returns: (a) => histogramReturns(a[1]!),
    sql: ([a, n, c]) =>
      `COALESCE(to_json(ferry_histogram(histogram(${numArg(a!)}) FILTER (WHERE ${a!.sql} IS NOT NULL AND ${cast(c!, 'bool')}), ${String(n!.constant!.value)})), '[]'::JSON)`,
  },
  make_list: {
    shape: 'array',
    minArgs: 1,
    maxArgs: 2,
    op: 'makelist',
    prefix: 'list',
    constantArgs: [1],
    returns: () => 'dynamic',
    sql: ([a, n]) => limitList(`list(${toDynamicSql(a!)}) FILTER (WHERE ${a!.sql} IS NOT NULL)`, n),
  },
  make_set: {
    shape: 'array',
    minArgs: 1,
    maxArgs: 2,
    op: 'makeset',
    prefix: 'set',
    constantArgs: [1],
    returns: () => 'dynamic',
    sql: ([a, n]) => limitList(`list(DISTINCT ${toDynamicSql(a!)}) FILTER (WHERE ${a!.sql} IS NOT NULL)`, n),
  },
  make_list_if: {
    shape: 'array',
    minArgs: 2,
    maxArgs: 3,
    op: 'makelistif',
    prefix: 'list',
    predicateArgs: [1],
    constantArgs: [2],
    returns: () => 'dynamic',
    sql: ([a, p, n]) =>
      limitList(`list(${toDynamicSql(a!)}) FILTER (WHERE ${a!.sql} IS NOT NULL AND ${cast(p!, 'bool')})`, n),
  },
  make_set_if: {
    shape: 'array',
    minArgs: 2,
    maxArgs: 3,
    op: 'makesetif',
    prefix: 'set',
    predicateArgs: [1],
    constantArgs: [2],
    returns: () => 'dynamic',
    sql: ([a, p, n]) =>
      limitList(`list(DISTINCT ${toDynamicSql(a!)}) FILTER (WHERE ${a!.sql} IS NOT NULL AND ${cast(p!, 'bool')})`, n),
  },
});

function topkReturns(k: ArgInfo): AplType {
  const v = k.constant?.value;
  if (typeof v !== 'bigint' || v < 1n) fail('the number of values to keep must be a constant, 1 or more');
  return 'dynamic';
}

/** Exact counts (Axiom estimates: error is then 0): the k most frequent values as [{key, count, error}]. */
function topkSql(a: SqlArg, k: SqlArg, filter?: SqlArg): string {
  const f = filter ? ` FILTER (WHERE ${cast(filter, 'bool')})` : '';
  return `to_json(list_transform(list_slice(list_reverse_sort(list_transform(map_entries(histogram(${a.sql})${f}), e -> {'count': e.value, 'key': e.key})), 1, ${String(k.constant!.value)}), e -> {'key': e.key, 'count': e.count, 'error': 0}))`;
}

/** Nearest-rank percentiles of `a`: each argument a constant or a constant array of them. */
function percentilesSql(a: SqlArg, ps: SqlArg[], filter?: SqlArg): string {
  const list = ps.flatMap((p) =>
    Array.isArray(p.constant?.value)
      ? (p.constant!.value as unknown[]).map((v) =>
          percentileP({ sql: '', type: 'real', constant: { value: v as number } }),
        )
      : [percentileP(p)],
  );
  const v = a.type === 'dynamic' ? numArg(a) : a.sql;
  const f = filter ? ` FILTER (WHERE ${cast(filter, 'bool')})` : '';
  const q = `quantile_disc(${v}, [${list.join(', ')}])${f}`;
  return a.type === 'datetime' ? `to_json(list_transform(${q}, x -> ferry_rfc3339(x)))` : `to_json(${q})`;
}

function histogramReturns(n: ArgInfo): AplType {
  const v = n.constant?.value;
  if (typeof v !== 'bigint' || v < 1n || v > 10000n) fail('the number of bins must be a constant from 1 to 10000');
  return 'dynamic';
}

/** make_list/make_set's optional size limit: a whole number constant (it is written into the SQL). */
function limitList(list: string, n?: SqlArg): string {
  if (n === undefined) return `COALESCE(to_json(${list}), '[]'::JSON)`;
  const max = n.constant?.value;
  if (typeof max !== 'bigint' || max < 1n) fail('the size limit must be a whole number constant, 1 or more');
  return `COALESCE(to_json(list_slice(${list}, 1, ${String(max)})), '[]'::JSON)`;
}
