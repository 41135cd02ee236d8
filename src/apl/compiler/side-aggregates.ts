/**
 * Aggregations planned beside a summary rather than inside it: each needs more than one pass over a
 * group's rows, so the summary reads its source once for the keys and the plain aggregations (`r`), and
 * once more per side aggregation, joined back on the group keys.
 *
 * - histogram(): each group's range first, then rows counted per (group, bin). Gathering every value into
 *   a list, or counting every distinct value with DuckDB's histogram(), costs several times more
 *   (docs/benchmarks.md).
 * - phrases(): each row's word sequences (JavaScript, a chunk of rows at a time), counted per group by
 *   DuckDB, and only each group's best candidates handed to JavaScript to choose from.
 * - spotlight(): each field's numbers summarised and its categories counted by DuckDB, in one pass for
 *   all fields, and only each field's largest differences handed to JavaScript for the statistics.
 *
 * JavaScript runs on the service's one thread: what it is given is bounded per group, never a group's
 * every value (service/query/analysis-functions.ts).
 */
import { sqlText } from '../../sql/quote.js';
import type { BExpr } from '../binder/bound.js';
import { asStringSql, convertSql, toDynamicSql, type SqlArg } from '../functions/sql.js';
import { isNumeric } from '../types.js';

/** Phrases kept per result: each kept phrase drops at most five shorter ones inside it (see pickPhrases). */
const PHRASE_CANDIDATES_PER_RESULT = 6;
/** Categories of one field spotlight reports (VALUES_PER_FIELD in analysis-functions.ts). */
const SPOTLIGHT_VALUES_PER_FIELD = 10;

/** What a side aggregation adds to the summary's plan. */
export interface SidePlan {
  /** Columns of `r`, the read of each group's keys and plain aggregations. */
  range: string[];
  /** Common table expressions of its own (they may read `h`, the source, and `r`). */
  ctes: string[];
  /** Joins onto `r`. */
  joins: string[];
  /** The aggregation's value, over `r` and the joins. */
  out: string;
}

/** The summary's frame: its key columns in `h` and `r`, and how to join and group on them. */
export interface SideFrame {
  keyCols: string[];
  on(a: string, b: string): string;
  groupBy(prefix?: string): string;
  arg(e: BExpr): SqlArg;
  /** Whether a WHERE with this condition over `h` is one DuckDB would push down computing too much again (./pushed-filters.ts). */
  tooHeavyToPush(condition: string): boolean;
}

const SIDE = new Set(['histogram', 'histogramif', 'phrases', 'spotlight']);

export const isSideAggregate = (e: BExpr) => e.k === 'agg' && SIDE.has(e.fn);

const list = (...parts: string[]) => parts.filter((p) => p !== '').join(', ');

export function sidePlan(e: Extract<BExpr, { k: 'agg' }>, n: number, f: SideFrame): SidePlan {
  switch (e.fn) {
    case 'phrases':
      return phrasesPlan(e, n, f);
    case 'spotlight':
      return spotlightPlan(e, n, f);
    default:
      return histogramPlan(e, n, f);
  }
}

function histogramPlan(e: Extract<BExpr, { k: 'agg' }>, n: number, f: SideFrame): SidePlan {
  const v = f.arg(e.args[0]!);
  const x = isNumeric(v.type) || v.type === 'timespan' ? v.sql : convertSql(v, 'real');
  const bins = String((e.args[1] as { value: bigint }).value);
  const when = e.fn === 'histogramif' ? ` AND ${convertSql(f.arg(e.args[2]!), 'bool')}` : '';
  const rows = `${v.sql} IS NOT NULL${when}`;
  const [lo, hi] = [`r."__lo${n}"`, `r."__hi${n}"`];
  const bin = `CASE WHEN ${hi} = ${lo} THEN ${bins} - 1 ELSE least(CAST(floor((${x} - ${lo}) * ${bins} / (${hi} - ${lo})) AS BIGINT), ${bins} - 1) END`;
  // Where a WHERE would be pushed into h computing too much again, the rows are chosen inside the count
  // instead (the bin of another row is not computed: it could fail), and a bin of no such row is dropped.
  const [binned, counting, where, having] = f.tooHeavyToPush(rows)
    ? [`CASE WHEN ${rows} THEN ${bin} END`, `count(*) FILTER (WHERE ${rows})`, '', ' HAVING "__c" > 0']
    : [bin, 'count(*)', ` WHERE ${rows}`, ''];
  const counted = `SELECT ${list(...f.keyCols.map((k) => `h.${k}`), `${binned} AS "__b"`, `${counting} AS "__c"`)} FROM h JOIN r ${f.on('h', 'r')}${where} GROUP BY ALL${having}`;
  return {
    range: [`min(${x}) FILTER (WHERE ${rows}) AS "__lo${n}"`, `max(${x}) FILTER (WHERE ${rows}) AS "__hi${n}"`],
    ctes: [
      `"__h${n}" AS (SELECT ${list(...f.keyCols, `list({'b': "__b", 'c': "__c"}) AS "__bins"`)} FROM (${counted})${f.groupBy()})`,
    ],
    joins: [`LEFT JOIN "__h${n}" ${f.on('r', `"__h${n}"`)}`],
    out: `to_json(ferry_histogram_bins(${lo}, ${hi}, ${bins}, "__h${n}"."__bins"))`,
  };
}

function phrasesPlan(e: Extract<BExpr, { k: 'agg' }>, n: number, f: SideFrame): SidePlan {
  const x = f.arg(e.args[0]!);
  const max = e.args[1] ? Number((e.args[1] as { value: bigint }).value) : 10;
  const keys = f.keyCols.join(', ');
  // A null text has no grams (unnest of null is no row): the WHERE only skips them early, and is left out
  // where DuckDB would push it into h computing too much again.
  const nonNull = `${x.sql} IS NOT NULL`;
  const grams = `SELECT ${list(keys, `unnest(from_json(ferry_phrase_grams(${asStringSql(x)}), '["VARCHAR"]')) AS "__g"`)} FROM h${f.tooHeavyToPush(nonNull) ? '' : ` WHERE ${nonNull}`}`;
  const counted = `SELECT *, length("__g") - length(replace("__g", ' ', '')) + 1 AS "__w" FROM (SELECT ${list(keys, '"__g"', 'count(*) AS "__c"')} FROM (${grams}) GROUP BY ALL)`;
  const order = 'ORDER BY "__c" DESC, "__w" DESC, "__g"';
  const best = `SELECT * FROM (${counted}) QUALIFY row_number() OVER (${keys ? `PARTITION BY ${keys} ` : ''}${order}) <= ${PHRASE_CANDIDATES_PER_RESULT * max}`;
  const p = `"__p${n}"`;
  return {
    range: [`count(${x.sql}) AS "__pn${n}"`],
    ctes: [
      `${p} AS (SELECT ${list(keys, `list({'phrase': "__g", 'count': "__c"} ${order}) AS "__top"`)} FROM (${best})${f.groupBy()})`,
    ],
    joins: [`LEFT JOIN ${p} ${f.on('r', p)}`],
    out: `CASE WHEN r."__pn${n}" > 0 THEN CAST(coalesce(ferry_phrases_pick(CAST(to_json(${p}."__top") AS VARCHAR), ${max}, r."__pn${n}"), '[]') AS JSON) END`,
  };
}

function spotlightPlan(e: Extract<BExpr, { k: 'agg' }>, n: number, f: SideFrame): SidePlan {
  const [pred, ...fields] = e.args.map((a) => f.arg(a));
  const sel = `COALESCE(${convertSql(pred!, 'bool')}, FALSE)`;
  const [S, B] = [`"__ss${n}"`, `"__sb${n}"`];
  const range = [`count(*) FILTER (WHERE ${sel}) AS ${S}`, `count(*) FILTER (WHERE NOT ${sel}) AS ${B}`];
  const summaries: string[] = [];
  const values: string[] = [];
  fields.forEach((field, j) => {
    const v = toDynamicSql(field);
    const isNumber = `json_type(${v}) IN ('BIGINT', 'UBIGINT', 'DOUBLE')`;
    const num = `TRY_CAST(${v} AS DOUBLE)`;
    const numbers = (cond: string) => {
      const w = `FILTER (WHERE ${cond} AND ${isNumber})`;
      const q = (p: number) => `quantile_disc(${num}, ${p}) ${w}`;
      return `json_object('count', count(${num}) ${w}, 'min', min(${num}) ${w}, 'p25', ${q(0.25)}, 'median', ${q(0.5)}, 'p75', ${q(0.75)}, 'max', max(${num}) ${w}, 'mean', avg(${num}) ${w}, 'variance', var_samp(${num}) ${w})`;
    };
    range.push(
      `json_object('name', ${sqlText(field.name ?? `field${j + 1}`)}, ` +
        `'allNumbers', coalesce(bool_and(${isNumber}) FILTER (WHERE json_type(${v}) <> 'NULL'), true), ` +
        `'distinctNumbers', count(DISTINCT ${num}) FILTER (WHERE ${isNumber}), ` +
        `'selected', ${numbers(sel)}, 'baseline', ${numbers(`NOT ${sel}`)}) AS "__sf${n}_${j}"`,
    );
    summaries.push(`r."__sf${n}_${j}"`);
    // A category is a string as it is, anything else as its JSON text, and no value is "null".
    values.push(
      `{'f': ${j}, 'v': CASE WHEN ${v} IS NULL OR json_type(${v}) = 'NULL' THEN 'null' WHEN json_type(${v}) = 'VARCHAR' THEN json_extract_string(${v}, '$') ELSE CAST(${v} AS VARCHAR) END}`,
    );
  });
  // Every field's categories in one read: a row becomes one (field, value) per field.
  const keys = f.keyCols;
  const counted = `SELECT ${list(...keys, '"__fv".f AS "__f"', '"__fv".v AS "__v"', `count(*) FILTER (WHERE "__sel") AS "__ns"`, `count(*) FILTER (WHERE NOT "__sel") AS "__nb"`)} FROM (SELECT ${list(...keys, `${sel} AS "__sel"`, `unnest([${values.join(', ')}]) AS "__fv"`)} FROM h) GROUP BY ALL`;
  const share = (count: string, of: string) => `(CASE WHEN r.${of} > 0 THEN c.${count} / r.${of} ELSE 0 END)`;
  // Ranked as JavaScript rounds the difference it shows (Math.round: halves up).
  const diff = `abs(floor((${share('"__ns"', S)} - ${share('"__nb"', B)}) * 1e6 + 0.5) / 1e6)`;
  const partition = `PARTITION BY ${list(...keys.map((k) => `c.${k}`), 'c."__f"')}`;
  const ranked = `SELECT c.*, ${diff} AS "__d" FROM (${counted}) AS c JOIN r ${f.on('c', 'r')} QUALIFY row_number() OVER (${partition} ORDER BY "__d" DESC, c."__v") <= ${SPOTLIGHT_VALUES_PER_FIELD}`;
  const perField = `SELECT ${list(...keys, '"__f"', `list({'value': "__v", 'ns': "__ns", 'nb': "__nb"} ORDER BY "__d" DESC, "__v") AS "__top"`)} FROM (${ranked}) GROUP BY ALL`;
  const cats = `"__sc${n}"`;
  const summary = `json_object('selected', r.${S}, 'baseline', r.${B}, 'fields', json_array(${summaries.join(', ')}), 'categories', coalesce(to_json(${cats}."__cats"), '[]'::JSON))`;
  return {
    range,
    ctes: [
      `${cats} AS (SELECT ${list(...keys, `list({'f': "__f", 'top': "__top"}) AS "__cats"`)} FROM (${perField})${f.groupBy()})`,
    ],
    joins: [`LEFT JOIN ${cats} ${f.on('r', cats)}`],
    out: `CASE WHEN r.${S} + r.${B} > 0 THEN CAST(ferry_spotlight_finish(CAST(${summary} AS VARCHAR)) AS JSON) END`,
  };
}
