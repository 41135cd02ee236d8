/**
 * MPL queries of metrics datasets (POST /v1/query/_mpl, monitors with mplQuery, `ferry query --mpl`): text →
 * parse → bind → the series each source selects → compile → one DuckDB statement → series on a time grid
 * (reference metrics.md §3.18, §4.2). Bounded: the text's size (service.query_limits.max_query_bytes), the
 * series a source may select, the values an answer may hold, and the query's time (service.query_timeout).
 */
import { parseMpl } from '../../mpl/parser.js';
import { bindMpl } from '../../mpl/binder.js';
import {
  commonUnit,
  compileMpl,
  seriesSql,
  tagsKey,
  type Compiled,
  type SeriesRow,
  type Tags,
} from '../../mpl/compiler.js';
import type { Branch, Plan, Range, SourceBranch } from '../../mpl/plan.js';
import { sqlIdent } from '../../sql/quote.js';
import type { EventStore } from '../store/event-store.js';
import { metricsTables } from '../store/metrics-tables.js';
import { invalid } from '../store/errors.js';
import { markAplQuery, QueryForbidden, QueryInputError } from './engine.js';
import { parseTimeBound } from './time-range.js';
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from './limits.js';
import { QueryTimeout } from '../store/db.js';
import { METRICS_KIND } from '../metrics/metrics-store.js';

/** Series one source may select: past it the query is refused, asking for a narrower `where`. */
export const MAX_SELECTED_SERIES = 100_000;
/** Values (series × points) one answer may hold. */
export const MAX_RESULT_VALUES = 2_000_000;

export interface MplRequest {
  mpl: unknown;
  startTime?: unknown;
  endTime?: unknown;
  params?: unknown;
  canQuery: (dataset: string) => boolean;
}

export interface MplSeries {
  metric: string;
  tags: Tags;
  start: number;
  resolution: number;
  data: (number | null)[];
  /** The last value with one (null when none): the v2 format's summary. */
  summary: number | null;
}

export interface MplResult {
  metadata: { group_keys: string[]; warnings: string[]; unit: string | null; custom_unit?: string };
  series: MplSeries[];
  /** The datasets the query read (monitors record them). */
  datasets: string[];
}

export class MplQueries {
  private readonly timeoutMs: number;
  private readonly limits: QueryLimits;

  constructor(
    private readonly store: EventStore,
    o: { timeoutMs?: number; limits?: QueryLimits } = {},
  ) {
    this.timeoutMs = o.timeoutMs ?? 0;
    this.limits = o.limits ?? DEFAULT_QUERY_LIMITS;
  }

  /** What bounds a metrics discovery request's work: the query's time limit and result size. */
  get discoveryBounds(): { timeoutMs?: number; maxBytes: number } {
    return { timeoutMs: this.timeoutMs > 0 ? this.timeoutMs : undefined, maxBytes: this.limits.maxResultBytes };
  }

  /** Parses and binds; checks the caller may query the dataset, and that it holds metrics. */
  prepare(request: MplRequest): { text: string; plan: Plan } {
    const text = request.mpl;
    if (typeof text !== 'string' || text.trim() === '')
      throw new QueryInputError('mpl must be a non-empty string holding the MPL query');
    const params = request.params ?? {};
    if (typeof params !== 'object' || params === null || Array.isArray(params))
      throw new QueryInputError('params must be an object of "param__<name>": "<MPL literal>"');
    // Parameters are the query's text too: they count in its size.
    let bytes = Buffer.byteLength(text);
    for (const v of Object.values(params)) if (typeof v === 'string') bytes += Buffer.byteLength(v);
    if (bytes > this.limits.maxQueryBytes)
      throw new QueryInputError(
        `the query and its params are ${bytes} bytes, more than the limit of ${this.limits.maxQueryBytes} (service.query_limits.max_query_bytes)`,
      );
    const nowNs = this.store.now();
    let range: Range | undefined;
    try {
      const start = parseTimeBound('startTime', request.startTime, nowNs);
      const end = parseTimeBound('endTime', request.endTime, nowNs);
      if (start === undefined && end !== undefined) throw new Error('endTime is given without startTime');
      if (start !== undefined) range = { start: seconds(start), end: seconds(end ?? nowNs) };
    } catch (e) {
      throw new QueryInputError((e as Error).message);
    }
    // A start after the end is an empty range, as for APL (a client paging by time asks for one).
    if (range && range.end < range.start) range.end = range.start;
    const plan = bindMpl(text, parseMpl(text), {
      params: params as Record<string, unknown>,
      now: seconds(nowNs),
      range,
    });
    const dataset = plan.dataset;
    if (!request.canQuery(dataset)) throw new QueryForbidden(dataset);
    const d = this.store.getDataset(dataset); // 404 for a dataset that does not exist
    if (d.kind !== METRICS_KIND)
      throw invalid(
        `dataset "${dataset}" is of kind ${d.kind}: MPL queries metrics datasets (kind ${METRICS_KIND}); query events with APL`,
      );
    return { text, plan };
  }

  async run(request: MplRequest): Promise<MplResult> {
    const { text, plan } = this.prepare(request);
    const deadline = this.timeoutMs > 0 ? Date.now() + this.timeoutMs : 0;
    const left = () => (deadline === 0 ? undefined : Math.max(1, deadline - Date.now()));
    return this.store.withDataset(plan.dataset, async (d) => {
      const t = metricsTables(d.table);
      const tables = { series: sqlIdent(t.series), points: sqlIdent(t.points) };
      const selected = new Map<SourceBranch, SeriesRow[]>();
      for (const source of sources(plan.query)) {
        const cols = await this.read(seriesSql(source, tables, MAX_SELECTED_SERIES + 1), left());
        const ids = cols[0] ?? [];
        if (ids.length > MAX_SELECTED_SERIES)
          throw new QueryInputError(
            `${source.name} selects more than ${MAX_SELECTED_SERIES} series: narrow it with where (or sample)`,
          );
        selected.set(
          source,
          ids.map((id, i) => ({
            id: Number(id),
            tags: JSON.parse(cols[1]![i] as string) as Tags,
            unit: (cols[2]![i] as string | null) ?? null,
          })),
        );
      }
      const compiled = compileMpl(text, plan, selected, tables, { maxStages: this.limits.maxStages });
      if (compiled.grid) {
        const points = (compiled.grid.last - compiled.grid.first) / compiled.grid.step + 1;
        if (points * compiled.series.size > MAX_RESULT_VALUES)
          throw tooLarge(`${compiled.series.size} series × ${points} points`);
      }
      const cols = await this.read(compiled.sql, left());
      return {
        metadata: {
          group_keys: compiled.groupKeys,
          warnings: plan.warnings,
          unit: commonUnit(compiled.series.values()),
          ...(plan.customUnit === undefined ? {} : { custom_unit: plan.customUnit }),
        },
        series: assemble(compiled, cols),
        datasets: [plan.dataset],
      };
    });
  }

  private async read(sql: string, timeoutMs: number | undefined): Promise<unknown[][]> {
    try {
      return await this.store.readColumns(sql, timeoutMs, this.limits.maxResultBytes);
    } catch (e) {
      if (e instanceof QueryTimeout) throw new QueryTimeout(this.timeoutMs);
      throw markAplQuery(e);
    }
  }
}

const seconds = (ns: bigint) => Number(ns / 1_000_000_000n) - (ns < 0n && ns % 1_000_000_000n !== 0n ? 1 : 0);

function tooLarge(what: string): QueryInputError {
  return new QueryInputError(
    `the answer would hold ${what}, more than ${MAX_RESULT_VALUES} values: align to a wider window, group, or shorten the range`,
  );
}

function sources(b: Branch): SourceBranch[] {
  return b.kind === 'source' ? [b] : [...sources(b.left), ...sources(b.right)];
}

/**
 * The rows (sid, times, values) as series on one grid: the stages' (align, bucket) when they made one, else
 * the points' own: from the first time, at the greatest step that holds every time.
 */
function assemble(c: Compiled, cols: unknown[][]): MplSeries[] {
  const [allSids = [], allTimes = [], allValues = []] = cols as [unknown[], number[][], number[][]];
  // Series made after the selection was read are not the query's: left out before they shape the grid.
  const known = allSids.flatMap((sid, i) => (c.series.has(Number(sid)) ? [i] : []));
  const sids = known.map((i) => allSids[i]);
  const times = known.map((i) => allTimes[i]!);
  const values = known.map((i) => allValues[i]!);
  let grid = c.grid;
  if (!grid) {
    let first = Infinity;
    let last = -Infinity;
    for (const ts of times) for (const t of ts) ((first = Math.min(first, t)), (last = Math.max(last, t)));
    let step = 0;
    for (const ts of times) for (const t of ts) step = gcd(step, t - first);
    if (first === Infinity) return [];
    grid = { first, last, step: step || 1 };
    const points = (last - first) / grid.step + 1;
    if (points * sids.length > MAX_RESULT_VALUES)
      throw tooLarge(`${sids.length} series × ${points} points at their own resolution (${grid.step} s)`);
  }
  const n = (grid.last - grid.first) / grid.step + 1;
  const out: MplSeries[] = [];
  sids.forEach((sid, i) => {
    const meta = c.series.get(Number(sid))!;
    const data: (number | null)[] = new Array<number | null>(n).fill(null);
    const ts = times[i]!;
    const vs = values[i]!;
    for (let k = 0; k < ts.length; k++) data[(ts[k]! - grid.first) / grid.step] = vs[k]!;
    out.push({
      metric: meta.metric,
      tags: meta.tags,
      start: grid.first,
      resolution: grid.step,
      data,
      summary: vs.length > 0 ? vs[vs.length - 1]! : null,
    });
  });
  const order = (s: MplSeries) => `${s.metric}\u0000${tagsKey(s.tags)}`;
  out.sort((a, b) => (order(a) < order(b) ? -1 : order(a) > order(b) ? 1 : 0));
  return out;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return Math.abs(a);
}
