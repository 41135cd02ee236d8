/**
 * The query engine: APL text → parse, bind against the store's schemas, compile to DuckDB SQL, run, and
 * collect the figures of the result's status. Access checks happen between prepare() (which names the
 * datasets a query reads) and execute().
 */
import { parseJsonText } from '../../util/json-text.js';
import { DEFAULT_QUERY_LIMITS, type QueryLimits } from './limits.js';
import { AplError } from '../../apl/errors.js';
import { bind } from '../../apl/binder/binder.js';
import type { DatasetSchema } from '../../apl/types.js';
import type { BoundColumn, BoundQuery, BoundStage } from '../../apl/binder/bound.js';
import { summaryNesting } from '../../apl/binder/relation.js';
import {
  compile,
  compileCount,
  type CompiledQuery,
  type CompileOptions,
  type Cursor,
  SqlTooLarge,
} from '../../apl/compiler/compiler.js';
import { compileKept } from './kept-compiles.js';
import { madeTextBudget, type LongestValues } from './made-text-budget.js';
import { parseQuery } from '../../apl/parser/parser.js';
import type { EventStore } from '../store/event-store.js';
import { QueryTimeout, ResultTooLarge } from '../store/db.js';
import { binAutoSize, parseTimeBound } from './time-range.js';
import { datasetSchema } from './dataset-schema.js';
import { KeptBindings } from './kept-bindings.js';
import { METRICS_KIND } from '../metrics/metrics-store.js';
import { compareCursors, decodeCursor, encodeCursor } from './cursor.js';
import { formatRfc3339Nano, RecentTimeTexts } from '../../util/time.js';

/** Query texts whose bindings are kept (kept-bindings.ts): each holds its bound stages, a few KiB. */
const KEPT_BINDINGS = 256;

/** The page size when neither the query nor the request sets one (spec: Limits). */
export const DEFAULT_ROWS = 1000;

/**
 * Whether a result's rows are events (the default page applies) rather than a summary: the stage that
 * last made rows anew read a dataset (a scan or a union of them) and no summary came after it. Rows
 * joined, looked up or expanded from events are events still.
 */
export function rowsAreEvents(stages: readonly BoundStage[]): boolean {
  for (let i = stages.length - 1; i >= 0; i--) {
    switch (stages[i]!.stage.kind) {
      case 'scan':
      case 'union':
        return true;
      case 'aggregate':
      case 'count':
      case 'distinct':
      case 'series':
      case 'values':
        return false;
      default:
        break;
    }
  }
  return false;
}
/** The most rows one response carries (the "server-side internal limit" of the spec). */
export const MAX_ROWS = 50_000;
/**
 * Counting the matched rows by materialising them (a CTE read by both the sort and the count) pays while
 * they are few and narrow; with millions of wide rows it costs seconds and memory (docs/benchmarks.md).
 * The bound is in cells.
 */
const CTE_CELL_BUDGET = 8_000_000;
const SAMPLE_PERCENT = 0.2;
/** Runs of one query while fields keep arriving; the last run's answer stands even if more came. */
const MAX_SCHEMA_RETRIES = 3;

export class QueryInputError extends Error {}

/** The query reads a dataset the caller may not query (whether or not it exists: the answer is the same). */
export class QueryForbidden extends Error {
  constructor(readonly dataset: string) {
    super(`Forbidden: this token lacks the query|read capability on dataset "${dataset}"`);
  }
}

export interface QueryRequest {
  apl: string;
  startTime?: unknown;
  endTime?: unknown;
  cursor?: string;
  includeCursor?: boolean;
  /** A page size given by the request (the body's `limit`). */
  limit?: number;
  /**
   * 64-bit integers beyond 2^53 come back as BigInt (written as exact JSON number text by the HTTP
   * answer, util/exact-json.ts), not rounded to the nearest double. Off for JavaScript consumers (monitors).
   */
  exactIntegers?: boolean;
  /** Names that are no column bound as null instead of refused (checking a monitor saved before its data). */
  unknownNames?: 'null';
  /** The result shows each event's _sysTime (legacy format). */
  sysTime?: boolean;
  /**
   * Which datasets the caller may query. Every dataset the query names is checked here, before it is
   * looked up, whatever the route; dataset patterns (union *, search) expand only to these.
   */
  canQuery: (dataset: string) => boolean;
}

export interface PreparedQuery {
  request: QueryRequest;
  bound: BoundQuery;
  nowNs: bigint;
  startNs?: bigint;
  endNs?: bigint;
  implicitEnd: boolean;
  cursor?: Cursor;
  /** The schema version of each dataset the binder looked up, read before its schema. */
  schemasSeen: Map<string, number | undefined>;
}

export interface ResultTable {
  name: string;
  columns: BoundColumn[];
  /** Column-major JSON values, aligned with columns. */
  values: unknown[][];
  order: { field: string; desc: boolean }[];
  groups: string[];
  buckets?: { field: string; size: number };
  /** Per row, for tables of events: time, ingest sequence, system time (ns) and cursor. */
  rows?: { timeNs: bigint; seq: bigint; sysTimeNs: bigint; cursor: string }[];
}

export interface QueryOutcome {
  tables: ResultTable[];
  datasets: string[];
  startNs?: bigint;
  endNs: bigint;
  status: {
    elapsedTime: number;
    rowsExamined: number;
    rowsMatched: number;
    blocksExamined: number;
    numGroups: number;
    isPartial: boolean;
    minCursor: string;
    maxCursor: string;
    minBlockTime: string;
    maxBlockTime: string;
    messages: { priority: string; count: number; code: string; msg: string }[];
  };
}

export class QueryEngine {
  /**
   * @param timeoutMs a query's statements together may run this long (0: no limit); then the one running is
   *                  interrupted and the query fails with QueryTimeout.
   */
  private readonly timeoutMs: number;
  private readonly limits: QueryLimits;
  /** Bindings of query texts asked before (kept-bindings.ts). */
  private readonly bindings = new KeptBindings(KEPT_BINDINGS);
  private readonly blockTimes = new RecentTimeTexts();

  constructor(
    private readonly store: EventStore,
    o: { timeoutMs?: number; limits?: QueryLimits } = {},
    private readonly now: () => bigint = () => store.now(),
  ) {
    this.timeoutMs = o.timeoutMs ?? 0;
    this.limits = o.limits ?? DEFAULT_QUERY_LIMITS;
  }

  /** The datasets' figures in the range (store.examine), within what is left of the query's time. */
  private async examine(datasets: string[], startNs: bigint | undefined, endNs: bigint | undefined, deadline: number) {
    try {
      return await this.store.examine(datasets, startNs, endNs, this.timeLeft(deadline));
    } catch (e) {
      throw this.timedOut(e) ?? e;
    }
  }

  /** A statement that ran out of what was left of the query's time: the user is told the query's limit. */
  private timedOut(e: unknown): QueryTimeout | undefined {
    return e instanceof QueryTimeout && this.timeoutMs > 0 ? new QueryTimeout(this.timeoutMs) : undefined;
  }

  /** What is left of a query's time limit at `deadline` (none without one). */
  private timeLeft(deadline: number): number | undefined {
    return this.timeoutMs > 0 ? Math.max(1, deadline - Date.now()) : undefined;
  }

  /**
   * Refuses a query whose calls may make more text for a batch of rows than
   * service.query_limits.max_made_text_bytes allows (see made-text-budget.ts): DuckDB holds it outside
   * memory_limit, and a batch's expressions are not interrupted while they run. Returns the bytes a row
   * each call whose value grows with a count read from the rows may make, for the query's statements.
   */
  private async checkMadeText(p: PreparedQuery, deadline: number): Promise<number | undefined> {
    const longest: LongestValues = async (dataset, columns) => {
      try {
        return await this.store.longestValues(dataset, columns, this.timeLeft(deadline));
      } catch (e) {
        throw this.timedOut(e) ?? e;
      }
    };
    let rowShare: number | undefined;
    for (const stages of [p.bound.stages, p.bound.totals ?? []]) {
      const budget = await madeTextBudget(stages, this.limits.maxMadeTextBytes, longest);
      if ('excess' in budget) throw new AplError(budget.excess.message, p.request.apl, budget.excess.pos);
      if (budget.rowShare !== undefined) rowShare = Math.min(rowShare ?? Infinity, budget.rowShare);
    }
    return rowShare;
  }

  /**
   * Runs one statement of a query within what is left of its time limit. A page compiled with
   * maxResultBytes (overColumn) is cut by DuckDB at the limit; the reader's own count stays as the net for
   * the rest, given room for the flag's 8 bytes a row. `rowShare`: see checkMadeText.
   */
  private async read(sql: string, deadline: number, overColumn?: number, rowShare?: number): Promise<unknown[][]> {
    const limit = this.limits.maxResultBytes;
    const maxBytes = overColumn === undefined ? limit : limit + 8 * (MAX_ROWS + 1);
    let cols: unknown[][];
    try {
      cols = await this.store.readColumns(sql, this.timeLeft(deadline), maxBytes, rowShare);
    } catch (e) {
      throw this.timedOut(e) ?? markAplQuery(e);
    }
    if (overColumn === undefined) return cols;
    const over = cols[overColumn] ?? [];
    if (over[over.length - 1] === true) throw new ResultTooLarge(limit);
    return cols.slice(0, overColumn);
  }

  /** compileKept with the result's bound in bytes (compiled afresh when the options hold a range or a cursor). */
  private compilePage(stages: BoundStage[], opts: CompileOptions): CompiledQuery {
    return compileKept(stages, { ...opts, maxResultBytes: this.limits.maxResultBytes });
  }

  private schemaOf = (name: string): DatasetSchema | undefined =>
    this.store.hasDataset(name) ? datasetSchema(this.store.schema(name)) : undefined;

  /** Parses and binds; throws AplError (with line and column) or QueryInputError. */
  async prepare(request: QueryRequest): Promise<PreparedQuery> {
    if (typeof request.apl !== 'string' || request.apl.trim() === '')
      throw new QueryInputError('apl must be a non-empty string holding the query');
    const nowNs = this.now();
    let startNs: bigint | undefined;
    let endNs: bigint | undefined;
    try {
      startNs = parseTimeBound('startTime', request.startTime, nowNs);
      endNs = parseTimeBound('endTime', request.endTime, nowNs);
    } catch (e) {
      throw new QueryInputError((e as Error).message);
    }
    // A start after the end is an empty range, not an error: timestamp paging asks for one once the last
    // row it got sat on the bound (the spec's paging ends with an empty page).
    let cursor: Cursor | undefined;
    if (request.cursor) {
      cursor = decodeCursor(request.cursor);
      if (!cursor) throw new QueryInputError(`cursor "${request.cursor}" is not a cursor this service returned`);
    }
    const bytes = Buffer.byteLength(request.apl);
    if (bytes > this.limits.maxQueryBytes) {
      throw new QueryInputError(
        `the query is ${bytes} bytes, more than the limit of ${this.limits.maxQueryBytes} (service.query_limits.max_query_bytes)`,
      );
    }
    const effectiveEnd = endNs ?? nowNs;
    const prepared = (bound: BoundQuery, schemasSeen: Map<string, number | undefined>): PreparedQuery => ({
      request,
      bound,
      nowNs,
      startNs,
      endNs: effectiveEnd,
      implicitEnd: endNs === undefined,
      cursor,
      schemasSeen,
    });
    const kept =
      request.unknownNames === undefined
        ? this.bindings.get(
            request.apl,
            (name) => this.store.schemaVersion(name),
            (name) => {
              if (!request.canQuery(name)) throw new QueryForbidden(name);
            },
          )
        : undefined;
    if (kept) return prepared(kept.bound, new Map(kept.looked));

    const ast = parseQuery(request.apl, {
      maxDepth: this.limits.maxExpressionDepth,
      setting: 'service.query_limits.max_expression_depth',
    });
    checkStages(ast, request.apl, this.limits.maxStages);
    // The binder reaches datasets only through these two: access is checked before existence.
    const schemasSeen = new Map<string, number | undefined>();
    const schema = (name: string): DatasetSchema | undefined => {
      if (!request.canQuery(name)) throw new QueryForbidden(name);
      if (this.store.hasDataset(name) && this.store.getDataset(name).kind === METRICS_KIND)
        throw new QueryInputError(
          `dataset "${name}" is a metrics dataset (kind ${METRICS_KIND}): APL reads events; its metrics are listed by /v1/query/metrics/info/datasets/${name}/metrics`,
        );
      if (!schemasSeen.has(name)) schemasSeen.set(name, this.store.schemaVersion(name));
      return this.schemaOf(name);
    };
    // What else the binder reads makes its binding one of this request only (not kept).
    let readsRequest = request.unknownNames !== undefined;
    const bindWith = (rangeNs: bigint) =>
      bind(ast, request.apl, {
        schema,
        get nowNs() {
          readsRequest = true;
          return nowNs;
        },
        get binAutoNs() {
          readsRequest = true;
          return binAutoSize(rangeNs);
        },
        get rangeNs() {
          readsRequest = true;
          return rangeNs;
        },
        unknownNames: request.unknownNames,
        limits: {
          terms: { max: this.limits.maxExpressionTerms, setting: 'service.query_limits.max_expression_terms' },
          depth: { max: this.limits.maxExpressionDepth, setting: 'service.query_limits.max_expression_depth' },
          letUses: { max: this.limits.maxStages, setting: 'service.query_limits.max_stages' },
        },
        datasets: () => {
          readsRequest = true;
          return this.store
            .listDatasets()
            .filter((d) => d.kind !== METRICS_KIND)
            .map((d) => d.name)
            .filter((d) => request.canQuery(d));
        },
      });
    const rangeOf = (from: bigint) => (effectiveEnd > from ? effectiveEnd - from : 0n);
    let bound = bindWith(rangeOf(startNs ?? effectiveEnd - 86_400_000_000_000n));
    if (startNs === undefined && bound.datasets.length > 0 && bound.usesRangeLength) {
      // No start: bin_auto and rate span the data actually there.
      const ex = await this.examine(bound.datasets, undefined, effectiveEnd, Date.now() + this.timeoutMs);
      if (ex.minNs !== undefined) bound = bindWith(rangeOf(ex.minNs));
    }
    for (const ds of bound.datasets) if (!request.canQuery(ds)) throw new QueryForbidden(ds);
    const nesting = Math.max(summaryNesting(bound.stages), summaryNesting(bound.totals ?? []));
    if (nesting > this.limits.maxNestedSummaries) {
      throw new QueryInputError(
        `the query nests ${nesting} summaries (and innerunique joins) in one another, more than the limit of ${this.limits.maxNestedSummaries} (service.query_limits.max_nested_summaries)`,
      );
    }
    for (const st of [...bound.stages, ...(bound.totals ?? [])]) {
      const n = st.out.columns.length;
      if (n > this.limits.maxColumns) {
        throw new QueryInputError(
          `the query makes ${n} columns, more than the limit of ${this.limits.maxColumns} (service.query_limits.max_columns)`,
        );
      }
    }
    // Compiled once here, where the query's text can place an error: the runs compile the same stages.
    try {
      compile(bound.stages);
      if (bound.totals) compile(bound.totals);
    } catch (e) {
      if (!(e instanceof SqlTooLarge)) throw e;
      throw new AplError(
        `${e.message}: a function that writes its argument out more than once is nested in itself; compute the inner value once with extend`,
        request.apl,
        Math.max(0, e.pos),
      );
    }
    if (!readsRequest && !bound.usesRangeLength)
      this.bindings.keep(request.apl, { bound, looked: new Map(schemasSeen) });
    return prepared(bound, schemasSeen);
  }

  /**
   * The datasets a query reads, as `canQuery` lets it bind (patterns expand to those); undefined when it
   * does not bind (a syntax error, a dataset that does not exist). Throws QueryForbidden as prepare does.
   */
  async datasetsRead(apl: string, canQuery: (dataset: string) => boolean): Promise<string[] | undefined> {
    try {
      return (await this.prepare({ apl, canQuery })).bound.datasets;
    } catch (e) {
      if (e instanceof AplError || e instanceof QueryInputError) return undefined;
      throw e;
    }
  }

  /**
   * Runs a prepared query. A batch that adds or widens fields may commit between binding and running: its
   * rows would come back without the new fields, or the SQL would meet a column of another type than it was
   * compiled for. Then the query is bound and run again on the new schema.
   */
  async execute(p: PreparedQuery): Promise<QueryOutcome> {
    const t0 = process.hrtime.bigint();
    const deadline = Date.now() + this.timeoutMs;
    for (let attempt = 1; attempt < MAX_SCHEMA_RETRIES; attempt++) {
      let outcome: QueryOutcome;
      try {
        outcome = await this.executeOnce(p, t0, deadline);
      } catch (e) {
        if (e instanceof QueryTimeout || this.schemasUnchanged(p)) throw e;
        p = await this.prepareAgain(p);
        continue;
      }
      if (this.schemasUnchanged(p)) return outcome;
      p = await this.prepareAgain(p);
    }
    // Fields keep arriving: the last run holds the schemas still (appends go on), bound and run on them.
    const held = p.schemasSeen.keys();
    return this.store.withSchemasHeld(held, async () => this.executeOnce(await this.prepare(p.request), t0, deadline));
  }

  private schemasUnchanged(p: PreparedQuery): boolean {
    for (const [name, v] of p.schemasSeen) if (!this.store.schemaUnchanged(name, v)) return false;
    return true;
  }

  private async prepareAgain(p: PreparedQuery): Promise<PreparedQuery> {
    await this.store.schemaSettled(p.schemasSeen.keys());
    return this.prepare(p.request);
  }

  private async executeOnce(p: PreparedQuery, t0: bigint, deadline: number): Promise<QueryOutcome> {
    const { bound } = p;
    const last = bound.stages[bound.stages.length - 1]!.out;
    const messages: QueryOutcome['status']['messages'] = bound.messages.map((m) => ({ ...m, count: 1 }));
    if (p.implicitEnd && bound.datasets.length > 0) {
      messages.push({
        priority: 'warn',
        count: 1,
        code: 'apl_implicitendtimeofnowapplied_1',
        msg: "implicit end time of 'now' applied",
      });
    }

    // Effective page size: the lowest of the query's limit, the request's and the server's (spec: Limits).
    let limit = MAX_ROWS;
    if (bound.queryLimit !== undefined) limit = Math.min(limit, bound.queryLimit);
    if (p.request.limit !== undefined && p.request.limit > 0) limit = Math.min(limit, p.request.limit);
    const defaulted = bound.queryLimit === undefined && !(p.request.limit! > 0) && rowsAreEvents(bound.stages);
    if (defaulted) limit = DEFAULT_ROWS;

    const timeOrder = timeOrderOf(bound.stages);
    if (p.cursor && timeOrder === undefined) {
      throw new QueryInputError(
        'cursor paging needs a query whose rows are events ordered by _time (for example `| sort by _time desc`)',
      );
    }
    const opts: CompileOptions = {
      startNs: p.startNs,
      endNs: p.endNs,
      cursor:
        p.cursor && timeOrder !== undefined
          ? { at: p.cursor, descending: timeOrder, inclusive: p.request.includeCursor === true }
          : undefined,
      limit: limit + 1, // one more row than the page tells whether the limit cut the result
    };
    const examined = bound.datasets.length
      ? await this.examine(bound.datasets, p.startNs, p.endNs, deadline)
      : { rows: 0, blocks: 0, minNs: undefined, maxNs: undefined, coversAll: false, versions: [] };
    const rowShare = await this.checkMadeText(p, deadline);
    // A range that spans all the data need not be tested row by row.
    const unbounded = { ...opts, startNs: undefined, endNs: undefined };
    const runOpts = examined.coversAll ? unbounded : opts;
    const mode =
      bound.matchedMode === 'cte' ? await this.cteOrQuery(bound, runOpts, deadline, rowShare) : bound.matchedMode;
    const main = this.compilePage(bound.stages, {
      ...runOpts,
      sysTime: p.request.sysTime,
      matchedAt: mode === 'window' ? bound.matchedPrefix : undefined,
      matchedCte: mode === 'cte' ? bound.matchedPrefix : undefined,
    });
    let [cols, matchedCount] = await Promise.all([
      this.read(main.sql, deadline, main.overColumn, rowShare),
      mode === 'query' && bound.datasets.length
        ? this.matched(bound, runOpts, deadline, rowShare)
        : Promise.resolve(undefined),
    ]);
    if (examined.coversAll && !this.store.unchangedSince(bound.datasets, examined.versions)) {
      // Events arrived meanwhile and may lie outside the range: run again with the range applied.
      const bounded = this.compilePage(bound.stages, {
        ...opts,
        sysTime: p.request.sysTime,
        matchedAt: mode === 'window' ? bound.matchedPrefix : undefined,
        matchedCte: mode === 'cte' ? bound.matchedPrefix : undefined,
      });
      [cols, matchedCount] = await Promise.all([
        this.read(bounded.sql, deadline, bounded.overColumn, rowShare),
        mode === 'query' && bound.datasets.length
          ? this.matched(bound, opts, deadline, rowShare)
          : Promise.resolve(undefined),
      ]);
    }
    const rowCount = cols[0]?.length ?? 0;
    const truncated = rowCount > limit;
    const exact = p.request.exactIntegers === true;
    const table = this.table('0', main.columns, cols, Math.min(rowCount, limit), main.rowIdentity, last, exact);
    const tables = [table];
    if (bound.totals) {
      const totals = this.compilePage(bound.totals, { ...runOpts, limit: MAX_ROWS });
      const tcols = await this.read(totals.sql, deadline, totals.overColumn, rowShare);
      const tl = bound.totals[bound.totals.length - 1]!.out;
      tables.push(this.table('_totals', totals.columns, tcols, tcols[0]?.length ?? 0, false, tl, exact, true));
    }
    if (truncated && defaulted) {
      messages.push({
        priority: 'warn',
        count: 1,
        code: 'default_limit_warning',
        msg: `the result was limited to the default of ${DEFAULT_ROWS} rows; add | take N or a limit to the request for more`,
      });
    }

    let rowsMatched = 0;
    switch (mode) {
      case 'examined':
        rowsMatched = examined.rows;
        break;
      case 'count':
        rowsMatched = Number(table.values[0]?.[0] ?? 0);
        break;
      case 'cte':
      case 'window':
        rowsMatched =
          rowCount > 0 ? Number(cols[main.matchedColumn!]![0]) : await this.matched(bound, runOpts, deadline, rowShare);
        break;
      case 'query':
        rowsMatched = matchedCount ?? 0;
        break;
    }

    let minCursor = '';
    let maxCursor = '';
    if (table.rows && table.rows.length) {
      let lo = table.rows[0]!;
      let hi = lo;
      for (const r of table.rows) {
        if (compareCursors(r, lo) < 0) lo = r;
        if (compareCursors(r, hi) > 0) hi = r;
      }
      minCursor = lo.cursor;
      maxCursor = hi.cursor;
    } else if (p.request.cursor) {
      // An empty page: echoing the cursor tells the client it reached the end (spec: Pagination rules).
      minCursor = maxCursor = p.request.cursor;
    }
    const aggregated = bound.stages.some((s) => s.stage.kind === 'aggregate');
    const elapsed = Number((process.hrtime.bigint() - t0) / 1000n);
    return {
      tables,
      datasets: bound.datasets,
      startNs: p.startNs,
      endNs: p.endNs!,
      status: {
        elapsedTime: Math.max(1, elapsed),
        rowsExamined: examined.rows,
        rowsMatched,
        blocksExamined: examined.blocks,
        numGroups: aggregated ? (table.values[0]?.length ?? 0) : 0,
        isPartial: truncated && !defaulted && limit === MAX_ROWS,
        minCursor,
        maxCursor,
        minBlockTime: this.blockTimes.text(examined.minNs ?? p.startNs ?? 0n),
        maxBlockTime: this.blockTimes.text(examined.maxNs ?? p.endNs ?? 0n),
        messages,
      },
    };
  }

  /** 'cte' when a sample says the matched rows are few enough to materialise, else 'query' (see CTE_CELL_BUDGET). */
  private async cteOrQuery(
    bound: BoundQuery,
    opts: CompileOptions,
    deadline: number,
    rowShare: number | undefined,
  ): Promise<'cte' | 'query'> {
    const sampled = await this.read(
      compileCount(bound.stages, bound.matchedPrefix, { ...opts, limit: undefined, samplePercent: SAMPLE_PERCENT }),
      deadline,
      undefined,
      rowShare,
    );
    const estimate = (Number(sampled[0]?.[0] ?? 0) * 100) / SAMPLE_PERCENT;
    const width = bound.stages[bound.matchedPrefix - 1]!.out.columns.length + 2;
    return estimate * width <= CTE_CELL_BUDGET ? 'cte' : 'query';
  }

  /** rowsMatched by a count query over the stages before the first operator that is not a filter. */
  private async matched(
    bound: BoundQuery,
    opts: CompileOptions,
    deadline: number,
    rowShare: number | undefined,
  ): Promise<number> {
    const rows = await this.read(
      compileCount(bound.stages, bound.matchedPrefix, { ...opts, limit: undefined }),
      deadline,
      undefined,
      rowShare,
    );
    return Number(rows[0]?.[0] ?? 0);
  }

  private table(
    name: string,
    columns: BoundColumn[],
    cols: unknown[][],
    n: number,
    rowIdentity: boolean,
    rel: BoundStage['out'],
    exact: boolean,
    totals = false,
  ): ResultTable {
    const values = columns.map((c, i) => (cols[i] ?? []).slice(0, n).map((v) => jsonValue(v, c, exact)));
    let rows: ResultTable['rows'];
    if (rowIdentity) {
      const base = columns.length;
      const ts = (cols[base] ?? []) as bigint[];
      const seqs = (cols[base + 1] ?? []) as bigint[];
      const sys = (cols[base + 2] ?? []) as bigint[];
      rows = [];
      for (let i = 0; i < n; i++) {
        const at = { timeNs: BigInt(ts[i]!), seq: BigInt(seqs[i]!) };
        rows.push({ ...at, sysTimeNs: BigInt(sys[i]!), cursor: encodeCursor(at) });
      }
    }
    const names = new Set(columns.map((c) => c.name));
    const order = rel.order
      .filter((o) => o.field !== undefined && names.has(o.field))
      .map((o) => ({ field: o.field!, desc: o.desc }));
    const table: ResultTable = { name, columns, values, order, groups: rel.groups, rows };
    if (rel.timeBin && !totals) table.buckets = { field: rel.timeBin.name, size: Number(rel.timeBin.sizeNs) };
    return table;
  }
}

/** Marks a DuckDB error as coming from a compiled APL query (errors.ts answers its Binder Errors with 400). */
/**
 * Counts the tabular operators of the whole query (subqueries of union, join, lookup and let included):
 * DuckDB's planner refuses plans beyond a fixed depth, so a long pipeline is refused here first, naming
 * the operator past the limit. The tree is walked without recursion: its depth is the user's.
 */
/** Expression nodes also carry an `op` (a binary operator); tabular operators are the other nodes with one. */
const EXPR_KINDS = new Set([
  'literal',
  'name',
  'member',
  'index',
  'call',
  'unary',
  'binary',
  'list',
  'between',
  'star',
  'typeof',
]);

function checkStages(ast: unknown, source: string, max: number): void {
  const positions: number[] = [];
  const todo: unknown[] = [ast];
  while (todo.length > 0) {
    const node = todo.pop();
    if (Array.isArray(node)) {
      for (const x of node) if (x && typeof x === 'object') todo.push(x);
    } else if (node && typeof node === 'object') {
      const o = node as Record<string, unknown>;
      if (typeof o.op === 'string' && typeof o.pos === 'number' && !EXPR_KINDS.has(o.kind as string))
        positions.push(o.pos);
      for (const v of Object.values(o)) if (v && typeof v === 'object') todo.push(v);
    }
  }
  if (positions.length <= max) return;
  positions.sort((a, b) => a - b);
  throw new AplError(
    `the query has ${positions.length} operators, more than the limit of ${max} (service.query_limits.max_stages)`,
    source,
    positions[max]!,
  );
}

/** Marks a DuckDB error as a query's (APL's or MPL's): its parse, bind and memory failures answer 400 (http/errors.ts). */
export function markAplQuery(e: unknown): unknown {
  if (e instanceof Error) Object.assign(e, { aplQuery: true });
  return e;
}

/** true (descending) / false (ascending) when the result's rows are events ordered by time first. */
function timeOrderOf(stages: BoundStage[]): boolean | undefined {
  const out = stages[stages.length - 1]!.out;
  if (!out.rowIdentity) return undefined;
  const first = out.order[0];
  if (!first) return undefined;
  if (first.expr.k === 'hidden' && first.expr.alias === '__t') return first.desc;
  if (first.expr.k === 'col' && first.field === '_time' && first.expr.type === 'datetime') {
    // Only the dataset's own _time column (not a computed one) orders like the cursor.
    const scan = stages[0]!.stage;
    if (scan.kind === 'scan' && scan.columns[0]) return first.desc;
  }
  return undefined;
}

const MAX_EXACT = BigInt(Number.MAX_SAFE_INTEGER);

/** A DuckDB value as JSON carries it in results; `exact` keeps a 64-bit integer past 2^53 a BigInt. */
function jsonValue(v: unknown, c: BoundColumn, exact: boolean): unknown {
  if (v === null || v === undefined) return null;
  switch (c.type) {
    case 'datetime':
      return formatRfc3339Nano(BigInt(v as bigint));
    case 'long':
      return exact && typeof v === 'bigint' && (v > MAX_EXACT || v < -MAX_EXACT) ? v : Number(v);
    case 'real':
      return typeof v === 'number' && !Number.isFinite(v) ? null : Number(v);
    case 'dynamic':
      return parseJsonText(String(v));
    default:
      return typeof v === 'bigint' ? Number(v) : v;
  }
}
