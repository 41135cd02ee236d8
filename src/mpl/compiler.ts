/**
 * Plan (plan.ts) → DuckDB SQL over a metrics dataset's tables (store/metrics-tables.ts). The series dimension
 * is decided here, in JavaScript, from the series each source selects (`seriesSql`, run first): which series
 * a group, a bucket or a compute makes, their metric names and tags. The points dimension is SQL: a chain of
 * CTEs of (sid, t, v) rows, one a stage, where sid is a storage id at a source and an output series' index
 * after a stage that makes series (group, bucket, compute), joined to its inputs through a mapping of lists.
 * Windows line up with the Unix epoch and are labelled by their start; an absent row is a gap, as a null.
 * Pure: the caller runs the SQL.
 */
import { sqlText } from '../sql/quote.js';
import { MplError, MplLimitError } from './errors.js';
import { SPEC_TAG } from './binder.js';
import type {
  AlignFn,
  Branch,
  BucketSpec,
  CompareOp,
  MapFn,
  Plan,
  Range,
  Scalar,
  SourceBranch,
  Stage,
  TagTest,
} from './plan.js';

export type TagValue = string | number | boolean;
export type Tags = Record<string, TagValue>;

/** A series a source selected (seriesSql's rows). */
export interface SeriesRow {
  id: number;
  tags: Tags;
  unit: string | null;
}

/** A series the query gives. */
export interface OutSeries {
  metric: string;
  tags: Tags;
  unit: string | null;
}

/** Times of a relation's points: multiples of `step` from `first` to `last` (window starts). */
export interface Grid {
  step: number;
  first: number;
  last: number;
}

export interface Compiled {
  /** Rows (sid, ts DOUBLE[], vs DOUBLE[]): each series' points in time order, gaps left out. */
  sql: string;
  series: Map<number, OutSeries>;
  /** The output's times when a stage put them on a grid (align, bucket); else the points' own. */
  grid?: Grid;
  range: Range;
  groupKeys: string[];
}

export interface MetricsTables {
  /** Quoted names. */
  series: string;
  points: string;
}

const sqlString = sqlText;
/** A number as a DOUBLE literal (a plain `0.1` would be a DECIMAL); NaN never reaches SQL. */
function num(n: number): string {
  if (Number.isNaN(n)) throw new Error('a NaN reached the MPL compiler');
  return Number.isFinite(n) ? `${n}::DOUBLE` : n > 0 ? "'infinity'::DOUBLE" : "'-infinity'::DOUBLE";
}
/** A whole number of seconds (a time, a step) as SQL: checked by the binder, refused here if not. */
function int(n: number): string {
  if (!Number.isSafeInteger(n)) throw new Error(`${n} is not a whole number of seconds`);
  return String(n);
}
/** A tag's JSON Pointer: any key, the empty one, `*` and `$` included, names itself. */
const tagPath = (tag: string) => sqlString(`/${tag.replace(/~/g, '~0').replace(/\//g, '~1')}`);
const SQL_OP: Record<CompareOp, string> = { '==': '=', '!=': '<>', '<': '<', '<=': '<=', '>': '>', '>=': '>=' };
const NUMERIC = "('BIGINT', 'UBIGINT', 'DOUBLE')";

/** A tag test as SQL over the series table's `tags` (JSON): true or false, never null. */
export function testSql(t: TagTest): string {
  switch (t.kind) {
    case 'all':
      return 'true';
    case 'and':
    case 'or':
      return `(${t.parts.map(testSql).join(` ${t.kind.toUpperCase()} `)})`;
    case 'not':
      return `(NOT ${testSql(t.test)})`;
    case 'is': {
      const types: Record<string, string> = {
        string: "('VARCHAR')",
        int: "('BIGINT', 'UBIGINT')",
        float: "('DOUBLE')",
        bool: "('BOOLEAN')",
        null: "('NULL')",
        array: "('ARRAY')",
      };
      return `coalesce(json_type(tags, ${tagPath(t.tag)}) IN ${types[t.type]!}, false)`;
    }
    case 'regex':
      return `coalesce(json_type(tags, ${tagPath(t.tag)}) NOT IN ('NULL', 'ARRAY', 'OBJECT') AND regexp_matches(tags->>${tagPath(t.tag)}, ${sqlString(t.pattern)}), false)`;
    case 'compare':
      return equalsSql(t.tag, t.op, t.value);
    case 'in':
      return inSql(t.tag, t.values);
    case 'contains':
      return `coalesce(json_type(tags, ${tagPath(t.tag)}) = 'ARRAY' AND json_contains(tags->${tagPath(t.tag)}, ${sqlString(JSON.stringify(scalarJs(t.value)))}), false)`;
  }
}

/** A typed comparison: a number meets int and float tags, a string a string tag, a bool a bool tag. */
function equalsSql(tag: string, op: CompareOp, v: Scalar): string {
  const p = tagPath(tag);
  switch (v.type) {
    case 'string':
      return `coalesce(json_type(tags, ${p}) = 'VARCHAR' AND (tags->>${p}) ${SQL_OP[op]} ${sqlString(v.value)}, false)`;
    case 'bool':
      return `coalesce(json_type(tags, ${p}) = 'BOOLEAN' AND (tags->>${p}) = '${v.value}', false)`;
    case 'null':
      return `coalesce(json_type(tags, ${p}) = 'NULL', false)`;
    default:
      return `coalesce(json_type(tags, ${p}) IN ${NUMERIC} AND TRY_CAST(tags->>${p} AS DOUBLE) ${SQL_OP[op]} ${num(v.value)}, false)`;
  }
}

/** `tag in [...]`: one IN list a type, so a long array stays one term each. */
function inSql(tag: string, values: Scalar[]): string {
  const p = tagPath(tag);
  const parts: string[] = [];
  const strings = values.flatMap((v) => (v.type === 'string' ? [sqlString(v.value)] : []));
  const numbers = values.flatMap((v) => (v.type === 'int' || v.type === 'float' ? [num(v.value)] : []));
  const bools = values.flatMap((v) => (v.type === 'bool' ? [`'${v.value}'`] : []));
  if (strings.length)
    parts.push(`coalesce(json_type(tags, ${p}) = 'VARCHAR' AND (tags->>${p}) IN (${strings.join(', ')}), false)`);
  if (numbers.length)
    parts.push(
      `coalesce(json_type(tags, ${p}) IN ${NUMERIC} AND TRY_CAST(tags->>${p} AS DOUBLE) IN (${numbers.join(', ')}), false)`,
    );
  if (bools.length)
    parts.push(`coalesce(json_type(tags, ${p}) = 'BOOLEAN' AND (tags->>${p}) IN (${bools.join(', ')}), false)`);
  if (values.some((v) => v.type === 'null')) parts.push(`coalesce(json_type(tags, ${p}) = 'NULL', false)`);
  return parts.length === 0 ? 'false' : `(${parts.join(' OR ')})`;
}

function scalarJs(v: Scalar): TagValue | null {
  return v.type === 'null' ? null : v.value;
}

/** A source's `sample`: the series whose key hashes under the fraction (the same ones every time). */
function sampleSql(b: SourceBranch): string {
  return b.sample !== undefined && b.sample < 1 ? ` AND hash(key) % 1000000 < ${Math.round(b.sample * 1e6)}` : '';
}

/** The series a source reads: (id, tags as JSON text, unit); at most `limit` rows. */
export function seriesSql(b: SourceBranch, t: MetricsTables, limit: number): string {
  const sample = sampleSql(b);
  return `SELECT id, tags::VARCHAR AS tags, unit FROM ${t.series}
          WHERE metric = ${sqlString(b.metric)} AND ${testSql(b.test)}${sample} ORDER BY id LIMIT ${limit}`;
}

/** Tags as text with sorted keys: one set, one text. */
export function tagsKey(tags: Tags): string {
  return JSON.stringify(
    Object.keys(tags)
      .sort()
      .map((k) => [k, tags[k]]),
  );
}

interface Rel {
  cte: string;
  series: Map<number, OutSeries>;
  grid?: Grid;
  range: Range;
  groupKeys: string[];
}

/** Windows × series a fill (`fill::…`, `interpolate::linear`) may make on its way. */
export const MAX_FILLED_VALUES = 5_000_000;

export function compileMpl(
  source: string,
  plan: Plan,
  selected: Map<SourceBranch, SeriesRow[]>,
  tables: MetricsTables,
  o: { maxStages: number },
): Compiled {
  const c = new Compiler(source, selected, tables);
  const compiled = c.compile(plan);
  if (c.stages > o.maxStages)
    throw new MplLimitError(
      `the query makes ${c.stages} steps of SQL, more than the limit of ${o.maxStages} (service.query_limits.max_stages): use fewer stages`,
    );
  return compiled;
}

const windowOf = (step: number, t: string) => `(${t} - ((${t} % ${int(step)}) + ${int(step)}) % ${int(step)})`;

/** The window of each point when `step` is given, else the range's start (one window for the range). */
function windowSql(step: number | undefined, range: Range, t = 't'): string {
  return step === undefined ? int(range.start) : windowOf(step, t);
}

function gridOf(step: number | undefined, range: Range): Grid {
  if (step === undefined) return { step: Math.max(1, range.end - range.start), first: range.start, last: range.start };
  const floor = (x: number) => x - (((x % step) + step) % step);
  return { step, first: floor(range.start), last: floor(Math.max(range.start, range.end - 1)) };
}

/** The unit the series share, null when they differ. */
export const commonUnit = (list: Iterable<OutSeries>): string | null => {
  let unit: string | null | undefined;
  for (const s of list) {
    if (unit === undefined) unit = s.unit;
    else if (unit !== s.unit) return null;
  }
  return unit ?? null;
};

/** A mapping relation from lists of equal length: `SELECT unnest(a) AS x, unnest(b) AS y…`. */
function mapping(columns: Record<string, (number | string | null)[]>, types: Record<string, string>): string {
  const parts = Object.entries(columns).map(([name, values]) => {
    const list = values
      .map((v) =>
        v === null ? 'NULL' : typeof v === 'number' ? (Number.isInteger(v) ? String(v) : num(v)) : sqlString(v),
      )
      .join(',');
    return `unnest([${list}]::${types[name] ?? 'BIGINT'}[]) AS ${name}`;
  });
  return `(SELECT ${parts.join(', ')})`;
}

class Compiler {
  private readonly ctes: string[] = [];

  constructor(
    private readonly source: string,
    private readonly selected: Map<SourceBranch, SeriesRow[]>,
    private readonly tables: MetricsTables,
  ) {}

  get stages(): number {
    return this.ctes.length;
  }

  private add(sql: string): string {
    const name = `s${this.ctes.length}`;
    this.ctes.push(`${name} AS (${sql})`);
    return name;
  }

  compile(plan: Plan): Compiled {
    const rel = this.branch(plan.query);
    const sql = `WITH ${this.ctes.join(',\n')}
      SELECT sid, list(t::DOUBLE ORDER BY t) AS ts, list(v ORDER BY t) AS vs
      FROM ${rel.grid ? rel.cte : `(SELECT sid, t, avg(v) AS v FROM ${rel.cte} WHERE v IS NOT NULL GROUP BY ALL)`}
      WHERE v IS NOT NULL AND isfinite(v) GROUP BY sid`;
    return { sql, series: rel.series, grid: rel.grid, range: rel.range, groupKeys: rel.groupKeys };
  }

  private branch(b: Branch): Rel {
    let rel: Rel;
    if (b.kind === 'source') {
      const series = new Map<number, OutSeries>();
      for (const s of this.selected.get(b) ?? []) series.set(s.id, { metric: b.name, tags: s.tags, unit: s.unit });
      const sample = sampleSql(b);
      const cte = this.add(
        `SELECT series AS sid, t${b.shift === 0 ? '' : ` - (${int(b.shift)})`} AS t, v FROM ${this.tables.points}
         WHERE t >= ${int(b.range.start + b.shift)} AND t < ${int(b.range.end + b.shift)}
           AND series IN (SELECT id FROM ${this.tables.series} WHERE metric = ${sqlString(b.metric)} AND ${testSql(b.test)}${sample})`,
      );
      rel = { cte, series, range: b.range, groupKeys: [] };
    } else rel = this.compute(b);
    for (const s of b.stages) rel = this.stage(rel, s);
    return rel;
  }

  private stage(rel: Rel, s: Stage): Rel {
    switch (s.kind) {
      case 'map':
        return this.map(rel, s.fn);
      case 'align':
        return this.align(rel, s.step, s.fn);
      case 'group':
        return this.group(rel, s.by, s.fn);
      case 'bucket':
        return this.bucket(rel, s);
      case 'as': {
        const series = new Map<number, OutSeries>();
        for (const [id, o] of rel.series) series.set(id, { ...o, metric: s.name });
        return { ...rel, series };
      }
      case 'extend':
        return this.extend(rel, s.tags);
    }
  }

  /** Every window of the grid for each series with a point, its value or null: what fills work on. */
  private dense(rel: Rel): string {
    if (!rel.grid) return rel.cte;
    const g = rel.grid;
    const windows = (g.last - g.first) / g.step + 1;
    if (windows * rel.series.size > MAX_FILLED_VALUES)
      throw new MplLimitError(
        `filling gaps would make ${windows} windows × ${rel.series.size} series, more than ${MAX_FILLED_VALUES} values: align to a wider window, narrow the range or the series`,
      );
    return `(SELECT s.sid, g.t, p.v FROM (SELECT DISTINCT sid FROM ${rel.cte}) AS s
             CROSS JOIN (SELECT range AS t FROM range(${int(g.first)}, ${int(g.last + 1)}, ${int(g.step)})) AS g
             LEFT JOIN ${rel.cte} AS p ON p.sid = s.sid AND p.t = g.t)`;
  }

  private map(rel: Rel, f: MapFn): Rel {
    const from = rel.cte;
    let sql: string;
    const guard = (e: string) => `CASE WHEN v IS NULL THEN NULL ELSE ${e} END`;
    switch (f.kind) {
      case 'arith':
        sql = `SELECT sid, t, v ${f.op} ${num(f.operand)} AS v FROM ${from}`;
        break;
      case 'abs':
        sql = `SELECT sid, t, abs(v) AS v FROM ${from}`;
        break;
      case 'min':
        sql = `SELECT sid, t, ${guard(`least(v, ${num(f.x)})`)} AS v FROM ${from}`;
        break;
      case 'max':
        sql = `SELECT sid, t, ${guard(`greatest(v, ${num(f.x)})`)} AS v FROM ${from}`;
        break;
      case 'filter':
        sql = `SELECT sid, t, v FROM ${from} WHERE v ${SQL_OP[f.op]} ${num(f.x)}`;
        break;
      case 'is':
        sql = `SELECT sid, t, ${guard(`CASE WHEN v ${SQL_OP[f.op]} ${num(f.x)} THEN 1.0 ELSE 0.0 END`)} AS v FROM ${from}`;
        break;
      case 'rate':
      case 'increase': {
        // From the previous point with a value; a drop is a counter reset (the new value is the increase).
        const d = 'CASE WHEN v >= pv THEN v - pv ELSE v END';
        sql = `SELECT sid, t, CASE WHEN v IS NULL OR pv IS NULL OR t = pt THEN NULL ELSE ${f.kind === 'rate' ? `(${d}) / (t - pt)` : d} END AS v
               FROM (SELECT sid, t, v, lag(v IGNORE NULLS) OVER w AS pv,
                            lag(CASE WHEN v IS NOT NULL THEN t END IGNORE NULLS) OVER w AS pt
                     FROM ${from} WINDOW w AS (PARTITION BY sid ORDER BY t))`;
        break;
      }
      case 'fill_const':
        sql = `SELECT sid, t, coalesce(v, ${num(f.x)}) AS v FROM ${this.dense(rel)}`;
        break;
      case 'fill_prev':
        sql = `SELECT sid, t, coalesce(v, last_value(v IGNORE NULLS) OVER (PARTITION BY sid ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) AS v
               FROM ${this.dense(rel)}`;
        break;
      case 'interpolate':
        sql = `SELECT sid, t, CASE WHEN v IS NOT NULL THEN v WHEN pv IS NULL OR nv IS NULL THEN NULL
                                   ELSE pv + (nv - pv) * (t - pt) / (nt - pt) END AS v
               FROM (SELECT sid, t, v,
                       last_value(v IGNORE NULLS) OVER b AS pv,
                       last_value(CASE WHEN v IS NOT NULL THEN t END IGNORE NULLS) OVER b AS pt,
                       first_value(v IGNORE NULLS) OVER a AS nv,
                       first_value(CASE WHEN v IS NOT NULL THEN t END IGNORE NULLS) OVER a AS nt
                     FROM ${this.dense(rel)}
                     WINDOW b AS (PARTITION BY sid ORDER BY t ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING),
                            a AS (PARTITION BY sid ORDER BY t ROWS BETWEEN 1 FOLLOWING AND UNBOUNDED FOLLOWING))`;
        break;
    }
    return { ...rel, cte: this.add(sql) };
  }

  /** Per-point increases of counters: the difference from the previous point, a drop counted as a reset. */
  private increases(from: string): string {
    return `(SELECT sid, t, CASE WHEN v >= pv THEN v - pv ELSE v END AS v
             FROM (SELECT sid, t, v, lag(v) OVER (PARTITION BY sid ORDER BY t) AS pv FROM ${from} WHERE v IS NOT NULL)
             WHERE pv IS NOT NULL)`;
  }

  private align(rel: Rel, step: number | undefined, fn: AlignFn): Rel {
    const grid = gridOf(step, rel.range);
    const w = windowSql(step, rel.range);
    let sql: string;
    if (fn === 'rate') {
      sql = `SELECT sid, ${w} AS t, sum(v) / ${int(grid.step)} AS v FROM ${this.increases(rel.cte)} GROUP BY ALL`;
    } else {
      const agg = fn === 'last' ? 'arg_max(v, t)' : fn === 'count' ? 'count(v)::DOUBLE' : `${fn}(v)`;
      sql = `SELECT sid, ${w} AS t, ${agg} AS v FROM ${rel.cte} WHERE v IS NOT NULL GROUP BY ALL`;
    }
    return { ...rel, cte: this.add(sql), grid };
  }

  /** The groups of `by` tags over the relation's series: each input's group, and each group's series. */
  private groups(rel: Rel, by: string[], member: (o: OutSeries) => boolean = () => true) {
    const index = new Map<string, number>();
    const out: OutSeries[] = [];
    const members: OutSeries[][] = [];
    const of = new Map<number, number>();
    const keys = [...by].sort();
    for (const [id, o] of rel.series) {
      if (!member(o)) continue;
      const tags: Tags = {};
      for (const k of keys) if (k in o.tags) tags[k] = o.tags[k]!;
      const key = tagsKey(tags);
      let g = index.get(key);
      if (g === undefined) {
        index.set(key, (g = out.length));
        out.push({ metric: o.metric, tags, unit: null });
        members.push([]);
      }
      members[g]!.push(o);
      of.set(id, g);
    }
    out.forEach((o, g) => (o.unit = commonUnit(members[g]!)));
    return { out, of };
  }

  private group(rel: Rel, by: string[], fn: string): Rel {
    const { out, of } = this.groups(rel, by);
    const m = mapping({ s: [...of.keys()], g: [...of.values()] }, {});
    const agg = fn === 'count' ? 'count(p.v)::DOUBLE' : `${fn}(p.v)`;
    const cte = this.add(
      `SELECT m.g AS sid, p.t, ${agg} AS v FROM ${rel.cte} AS p JOIN ${m} AS m ON m.s = p.sid WHERE p.v IS NOT NULL GROUP BY ALL`,
    );
    return { cte, series: new Map(out.map((o, i) => [i, o])), grid: rel.grid, range: rel.range, groupKeys: by };
  }

  private bucket(rel: Rel, s: Extract<Stage, { kind: 'bucket' }>): Rel {
    const grid = gridOf(s.step, rel.range);
    const w = windowSql(s.step, rel.range, 'p.t');
    const n = s.specs.length;
    let values: string[];
    let from: string;
    let groups: OutSeries[];
    if (s.fn === 'histogram') {
      const { out, of } = this.groups(rel, s.by);
      groups = out;
      const m = mapping({ s: [...of.keys()], g: [...of.values()] }, {});
      const stat = (spec: BucketSpec) =>
        'quantile' in spec
          ? `quantile_cont(p.v, ${spec.quantile})`
          : spec.stat === 'count'
            ? 'count(p.v)::DOUBLE'
            : `${spec.stat}(p.v)`;
      from = `(SELECT m.g, ${w} AS t, ${s.specs.map((x, i) => `${stat(x)} AS a${i}`).join(', ')}
               FROM ${rel.cte} AS p JOIN ${m} AS m ON m.s = p.sid WHERE p.v IS NOT NULL GROUP BY ALL)`;
      values = s.specs.map((_, i) => `a${i}`);
    } else {
      const roles = new Map<number, { role: number; le: number | null }>();
      for (const [id, o] of rel.series) {
        const r = histogramRole(o.tags);
        if (r) roles.set(id, r);
      }
      const { out, of } = this.groups(rel, s.by, (o) => histogramRole(o.tags) !== undefined);
      groups = out;
      const ids = [...of.keys()];
      const m = mapping(
        {
          s: ids,
          g: ids.map((id) => of.get(id)!),
          r: ids.map((id) => roles.get(id)!.role),
          le: ids.map((id) => roles.get(id)!.le),
        },
        { le: 'DOUBLE' },
      );
      const points = s.fn === 'cumulative' ? this.increases(rel.cte) : rel.cte;
      const per = s.mode === 'rate' ? ` / ${int(grid.step)}` : '';
      const hp = this.add(
        `SELECT m.g, m.r, m.le, ${w} AS t, p.v FROM ${points} AS p JOIN ${m} AS m ON m.s = p.sid WHERE p.v IS NOT NULL`,
      );
      const bq = this.add(
        `SELECT g, t, le, c, lag(le) OVER w AS ple, coalesce(lag(c) OVER w, 0) AS pc, max(c) OVER (PARTITION BY g, t) AS total
         FROM (SELECT g, t, le, sum(v) AS c FROM ${hp} WHERE r = 0 GROUP BY ALL)
         WINDOW w AS (PARTITION BY g, t ORDER BY le)`,
      );
      const quantiles = s.specs.flatMap((x, i) => ('quantile' in x ? [[x.quantile, i] as const] : []));
      const qs = this.add(
        `SELECT g, t, max(total) AS total${quantiles.map(([q, i]) => `, ${quantileSql(q)} AS q${i}`).join('')} FROM ${bq} GROUP BY ALL`,
      );
      const st = this.add(
        `SELECT g, t, sum(v) FILTER (WHERE r = 1) AS cnt, sum(v) FILTER (WHERE r = 2) AS sm,
                min(v) FILTER (WHERE r = 3) AS mn, max(v) FILTER (WHERE r = 4) AS mx
         FROM ${hp} GROUP BY ALL`,
      );
      from = `(SELECT coalesce(st.g, qs.g) AS g, coalesce(st.t, qs.t) AS t, st.cnt, st.sm, st.mn, st.mx, qs.total${quantiles.map(([, i]) => `, qs.q${i}`).join('')}
               FROM ${st} AS st FULL JOIN ${qs} AS qs ON qs.g = st.g AND qs.t = st.t)`;
      const count = 'coalesce(cnt, total)';
      values = s.specs.map((x, i) => {
        if ('quantile' in x) return `q${i}`;
        switch (x.stat) {
          case 'count':
            return `${count}${per}`;
          case 'sum':
            return `sm${per}`;
          case 'avg':
            return `sm / nullif(${count}, 0)`;
          case 'min':
            return 'mn';
          case 'max':
            return 'mx';
        }
      });
    }
    const cte = this.add(
      `SELECT g * ${n} + unnest(range(${n})) AS sid, t, unnest([${values.map((v) => `(${v})::DOUBLE`).join(', ')}]) AS v FROM ${from}`,
    );
    const series = new Map<number, OutSeries>();
    groups.forEach((o, g) =>
      s.specs.forEach((spec, k) =>
        series.set(g * n + k, {
          metric: o.metric,
          tags: { ...o.tags, [SPEC_TAG]: specLabel(spec) },
          unit: 'stat' in spec && spec.stat === 'count' ? null : o.unit,
        }),
      ),
    );
    return { cte, series, grid, range: rel.range, groupKeys: s.by };
  }

  private extend(rel: Rel, tags: Extract<Stage, { kind: 'extend' }>['tags']): Rel {
    const series = new Map<number, OutSeries>();
    for (const t of tags)
      for (const o of rel.series.values())
        if (t.name in o.tags)
          throw new MplError(
            `extend adds tags, and "${t.name}" is already a tag of the series (${tagsKey(o.tags).slice(0, 120)}): drop it with group by first`,
            this.source,
            t.pos,
          );
    for (const [id, o] of rel.series) {
      const added: Tags = { ...o.tags };
      for (const t of tags) {
        const v = t.value;
        if ('parts' in v) {
          let text = '';
          for (const p of v.parts) {
            if (typeof p === 'string') text += p;
            else if (p.tag in o.tags) text += String(o.tags[p.tag]);
            else
              throw new MplError(
                `\${${p.tag}}: a series has no tag "${p.tag}" (guard with where ${p.tag} is string)`,
                this.source,
                t.pos,
              );
          }
          added[t.name] = text;
        } else if (v.type !== 'null') added[t.name] = v.value;
      }
      series.set(id, { ...o, tags: added });
    }
    return { ...rel, series };
  }

  private compute(b: Extract<Branch, { kind: 'compute' }>): Rel {
    const l = this.branch(b.left);
    const r = this.branch(b.right);
    const right = new Map<string, number>();
    for (const [id, o] of r.series) right.set(tagsKey(o.tags), id);
    const pairs: [number, number, OutSeries][] = [];
    for (const [id, o] of l.series) {
      const other = right.get(tagsKey(o.tags));
      if (other === undefined) continue;
      const ro = r.series.get(other)!;
      // A sum, difference or extreme keeps a unit both share; a product or ratio is another quantity.
      const unit = o.unit === ro.unit && b.op !== '*' && b.op !== '/' ? o.unit : null;
      pairs.push([id, other, { metric: b.name, tags: o.tags, unit }]);
    }
    const m = mapping({ o: pairs.map((_, i) => i), l: pairs.map((p) => p[0]), r: pairs.map((p) => p[1]) }, {});
    const expr: Record<string, string> = {
      '+': 'a.v + b.v',
      '-': 'a.v - b.v',
      '*': 'a.v * b.v',
      '/': 'a.v / b.v',
      min: 'least(a.v, b.v)',
      max: 'greatest(a.v, b.v)',
      avg: '(a.v + b.v) / 2',
    };
    const cte = this.add(
      `SELECT m.o AS sid, a.t, ${expr[b.op]!} AS v FROM ${l.cte} AS a JOIN ${m} AS m ON m.l = a.sid
       JOIN ${r.cte} AS b ON b.sid = m.r AND b.t = a.t
       WHERE a.v IS NOT NULL AND b.v IS NOT NULL${b.op === '/' ? ' AND b.v <> 0' : ''}`,
    );
    const same = l.grid && r.grid && l.grid.step === r.grid.step && l.grid.first === r.grid.first;
    return {
      cte,
      series: new Map(pairs.map((p, i) => [i, p[2]])),
      grid: same ? l.grid : undefined,
      range: l.range,
      groupKeys: l.groupKeys,
    };
  }
}

/**
 * A series' part of a histogram: role 0 a bucket (with its bound), 1 the count, 2 the sum, 3 the min,
 * 4 the max. OTLP histograms come as `axiom.histogram` series; Prometheus-style ones as series with `le`.
 */
function histogramRole(tags: Tags): { role: number; le: number | null } | undefined {
  const part = tags['axiom.histogram'];
  const le = (v: TagValue | undefined) => {
    if (typeof v === 'number') return v;
    if (typeof v !== 'string' || v.trim() === '') return undefined;
    const n = v === '+Inf' || v === 'Inf' || v === 'inf' ? Infinity : Number(v);
    return Number.isNaN(n) ? undefined : n;
  };
  if (part === undefined) {
    const bound = le(tags.le);
    return bound === undefined ? undefined : { role: 0, le: bound };
  }
  if (part === 'bucket') {
    const bound = le(tags.le);
    return bound === undefined ? undefined : { role: 0, le: bound };
  }
  const role = { count: 1, sum: 2, min: 3, max: 4 }[String(part)];
  return role === undefined ? undefined : { role, le: null };
}

/**
 * A quantile from cumulative bucket counts (c up to bound le; pc and ple the bucket below), by linear
 * interpolation inside the bucket it falls in, as Prometheus's histogram_quantile: the first bucket starts
 * at 0 (or is its bound when that is not above 0); in the +Inf bucket, the highest finite bound.
 */
function quantileSql(q: number): string {
  const rank = `${q} * total`;
  return `arg_min(CASE WHEN isinf(le) THEN ple
                      WHEN c = pc THEN coalesce(ple, le)
                      WHEN ple IS NULL THEN CASE WHEN le <= 0 THEN le ELSE le * (${rank} - pc) / (c - pc) END
                      ELSE ple + (le - ple) * (${rank} - pc) / (c - pc) END, le)
          FILTER (WHERE c >= ${rank} AND total > 0)`;
}

/** How a bucket's output names its spec: p50, p99.9, count, avg… */
export function specLabel(s: BucketSpec): string {
  return 'quantile' in s ? `p${Number((s.quantile * 100).toPrecision(12))}` : s.stat;
}
