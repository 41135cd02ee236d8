/**
 * Metrics datasets (kind otel:metrics:v1): series and points in two DuckDB tables beside the dataset's own,
 * laid out for time series: `<table>_series (id, key, metric, tags JSON, type, temporality, unit)`, one row
 * a series, and `<table>_points (series, t, v)`, one row a point: its series' id, whole seconds and a
 * double (null: a gap). A batch (ingest/otlp-metrics.ts's lines) is loaded in one transaction: new series
 * take the next ids (read by DuckDB from a spool file), then the points are appended with their series' ids
 * as columns (store/column-append.ts). Batches
 * of one dataset are loaded one at a time (a series is made once). The discovery endpoints (reference metrics.md
 * §4.4–4.8) read which series have points in a time range.
 */
import { rm, writeFile } from 'node:fs/promises';
import type { PointColumns } from '../../ingest/point-columns.js';
import type { SeriesEntry } from '../../ingest/series-mirror.js';
import { sqlIdent, sqlText } from '../../sql/quote.js';
import type { EventStore } from '../store/event-store.js';
import { Mutex, QueryTimeout } from '../store/db.js';
import { int64Column } from '../store/column-append.js';
import { invalid, notFound } from '../store/errors.js';
import type { DatasetRecord } from '../store/catalog.js';
import { METRICS_KIND, metricsTables } from '../store/metrics-tables.js';

export { METRICS_KIND };

export interface MetricInfo {
  type: string;
  temporality: string | null;
  unit: string | null;
}

/** A time range of the discovery endpoints, in whole seconds, inclusive. */
export interface SecondsRange {
  start: number;
  end: number;
}

/**
 * A discovery request: its range, and the bounds of its work (none given: unbounded, for tests): its
 * statements together end by `deadline` (ms since 1970; `timeoutMs` the limit a timeout names), each
 * result within `maxBytes`.
 */
export interface DiscoveryRequest {
  range: SecondsRange;
  timeoutMs?: number;
  deadline?: number;
  maxBytes?: number;
}

/** The most entries a discovery answer holds: the first in order, `truncated` saying more were left out. */
export const MAX_LISTED = 10_000;

export interface Listed<T> {
  list: T;
  truncated: boolean;
}

/** Series ids kept in memory by key, across datasets (each entry a key's text and a number). */
const KNOWN_SERIES = 100_000;

/** The characters of their keys the known series ids may hold in one generation. */
const KNOWN_SERIES_CHARS = 16 * 1024 * 1024;

/**
 * Series ids by series table and key, for the series last met: two generations of up to KNOWN_SERIES
 * entries (and KNOWN_SERIES_CHARS of keys) each, the older dropped when the newer fills, an entry read from
 * the older moved into the newer. A read costs a lookup or two and no reordering (a batch reads every
 * series it holds).
 */
class KnownSeries {
  private young = new Map<string, Map<string, number>>();
  private old = new Map<string, Map<string, number>>();
  private youngSize = 0;
  private youngChars = 0;

  get(table: string, key: string): number | undefined {
    const id = this.young.get(table)?.get(key);
    if (id !== undefined) return id;
    const older = this.old.get(table)?.get(key);
    if (older !== undefined) this.set(table, key, older);
    return older;
  }

  set(table: string, key: string, id: number): void {
    if (this.youngSize >= KNOWN_SERIES || this.youngChars >= KNOWN_SERIES_CHARS) {
      this.old = this.young;
      this.young = new Map();
      this.youngSize = 0;
      this.youngChars = 0;
    }
    let m = this.young.get(table);
    if (!m) this.young.set(table, (m = new Map()));
    if (!m.has(key)) {
      this.youngSize++;
      this.youngChars += key.length;
      // A key of its own: one cut from a batch's text would keep the whole text alive.
      m.set(Buffer.from(key).toString(), id);
    } else m.set(key, id);
  }
}

const stores = new WeakMap<EventStore, MetricsStore>();

export class MetricsStore {
  /**
   * The one MetricsStore of a store: the service's routes and the agent's local sink load batches into the
   * same datasets, one batch of a dataset at a time (a series is made once), so they share its locks.
   */
  static of(store: EventStore): MetricsStore {
    let m = stores.get(store);
    if (!m) stores.set(store, (m = new MetricsStore(store)));
    return m;
  }

  private readonly locks = new Map<string, Mutex>();
  /** Series ids by series table and key: table names are never reused, so no entry outlives its dataset's meaning. */
  private readonly known = new KnownSeries();

  private constructor(private readonly store: EventStore) {}

  /** The dataset's tables; 400 for a dataset that is not of metrics. */
  private static tablesOf(d: DatasetRecord): { series: string; points: string } {
    if (d.kind !== METRICS_KIND)
      throw invalid(
        `dataset "${d.name}" is of kind ${d.kind}, not ${METRICS_KIND}: metrics go to a metrics dataset (create one with "kind": "${METRICS_KIND}")`,
      );
    return metricsTables(d.table);
  }

  /**
   * Stores a batch (ingest/otlp-metrics.ts's MetricLines: `series` its series, `points` naming them by
   * their place);
   * resolves once committed. Series already known are found by key in memory (`known`), so a batch of
   * known series loads its points with no look at the series table; the others are looked up or made in
   * the same transaction.
   */
  async ingest(
    dataset: string,
    series: readonly SeriesEntry[],
    points: PointColumns,
    receivedBytes = 0,
  ): Promise<{ series: number; points: number }> {
    MetricsStore.tablesOf(this.store.getDataset(dataset));
    if (series.length === 0) return { series: 0, points: 0 };
    let lock = this.locks.get(dataset);
    if (!lock) this.locks.set(dataset, (lock = new Mutex()));
    const seriesFile = this.store.tempFile('ndjson');
    try {
      // One batch of a dataset at a time (a series is made once), holding the dataset: a deletion waits.
      return await lock.run(() =>
        this.store.withDataset(dataset, async (d) => {
          const t = MetricsStore.tablesOf(d);
          const count = series.length;
          const ids = new Array<number>(count);
          const missing: number[] = [];
          for (let i = 0; i < count; i++) {
            const id = this.known.get(t.series, series[i]!.key);
            if (id === undefined) missing.push(i);
            else ids[i] = id;
          }
          if (missing.length > 0)
            await writeFile(
              seriesFile,
              missing.map((i) => `{"k":${JSON.stringify(series[i]!.key)},"i":${i},${series[i]!.rest}\n`).join(''),
            );
          let made = 0;
          const learned: [string, number][] = [];
          const stored = await this.store.db.use(async (c) =>
            c.transaction(async () => {
              if (missing.length > 0) {
                await c.run(
                  `CREATE OR REPLACE TEMP TABLE mser AS SELECT * FROM read_json(${sqlText(seriesFile)}, format = 'newline_delimited',
                     columns = {k: 'VARCHAR', i: 'INTEGER', m: 'VARCHAR', tags: 'JSON', type: 'VARCHAR', temp: 'VARCHAR', unit: 'VARCHAR'})`,
                );
                made = await c.changes(
                  `INSERT INTO ${sqlIdent(t.series)}
                     SELECT (SELECT coalesce(max(id), 0) FROM ${sqlIdent(t.series)}) + row_number() OVER (ORDER BY i), k, m, tags, type, temp, unit
                     FROM mser AS n WHERE NOT EXISTS (SELECT 1 FROM ${sqlIdent(t.series)} AS s WHERE s.key = n.k)`,
                );
                for (const r of await c.all(
                  `SELECT n.i, s.id FROM mser AS n JOIN ${sqlIdent(t.series)} AS s ON s.key = n.k`,
                )) {
                  const i = Number(r.i);
                  ids[i] = Number(r.id);
                  learned.push([series[i]!.key, ids[i]!]);
                }
                await c.run('DROP TABLE mser');
              }
              const n = points.count;
              const pointIds = new Float64Array(n);
              for (let i = 0; i < n; i++) {
                const id = ids[points.series[i]!];
                if (id === undefined) throw new Error(`a point of dataset "${dataset}" names a series the batch lacks`);
                pointIds[i] = id;
              }
              await c.append(t.points, [int64Column(pointIds, n), int64Column(points.seconds, n), points.values], n);
              return n;
            }),
          );
          // Known once committed: a batch rolled back leaves no id behind.
          for (const [key, id] of learned) this.known.set(t.series, key, id);
          this.store.noteWrite(dataset, receivedBytes);
          return { series: made, points: stored };
        }),
      );
    } finally {
      await rm(seriesFile, { force: true });
    }
  }

  /**
   * Reads the dataset's tables, holding it (a deletion waits), within the request's time and result bounds
   * (the service's query_timeout and max_result_bytes).
   */
  private async read(
    dataset: string,
    sql: (t: { series: string; points: string }) => string,
    q: DiscoveryRequest,
  ): Promise<unknown[][]> {
    return this.store.withDataset(dataset, async (d) => {
      const t = MetricsStore.tablesOf(d);
      const left = q.deadline === undefined ? undefined : q.deadline - Date.now();
      const limit = q.timeoutMs ?? 0;
      if (left !== undefined && left <= 0) throw new QueryTimeout(limit);
      try {
        return await this.store.readColumns(
          sql({ series: sqlIdent(t.series), points: sqlIdent(t.points) }),
          left,
          q.maxBytes,
        );
      } catch (e) {
        // The statement had what was left of the request's time: the caller is told the request's limit.
        throw e instanceof QueryTimeout ? new QueryTimeout(limit) : e;
      }
    });
  }

  /** The first MAX_LISTED values of a query's one column, and whether there were more. */
  private async list(
    dataset: string,
    sql: (t: { series: string; points: string }) => string,
    q: DiscoveryRequest,
  ): Promise<Listed<string[]>> {
    const [values = []] = await this.read(dataset, (t) => `${sql(t)} LIMIT ${MAX_LISTED + 1}`, q);
    return { list: (values as string[]).slice(0, MAX_LISTED), truncated: values.length > MAX_LISTED };
  }

  /** The series with points in the range: a subquery of ids. */
  private static active(points: string, r: SecondsRange): string {
    return `(SELECT DISTINCT series FROM ${points} WHERE t BETWEEN ${Math.trunc(r.start)} AND ${Math.trunc(r.end)})`;
  }

  /** Each metric with points in the range, with its type, temporality and unit (`Mixed` when its series differ). */
  async metrics(dataset: string, q: DiscoveryRequest): Promise<Listed<Record<string, MetricInfo>>> {
    const [metrics = [], types = [], temps = [], units = []] = await this.read(
      dataset,
      (
        t,
      ) => `SELECT metric, list(DISTINCT coalesce(type, '')) AS types, list(DISTINCT coalesce(temporality, '')) AS temps,
                list(DISTINCT coalesce(unit, '')) AS units
              FROM ${t.series} WHERE id IN ${MetricsStore.active(t.points, q.range)} GROUP BY metric ORDER BY metric
              LIMIT ${MAX_LISTED + 1}`,
      q,
    );
    const one = (values: unknown): string | null => {
      const list = (values as string[]).filter((v) => v !== '');
      return list.length === 0 ? null : list.length === 1 ? list[0]! : 'Mixed';
    };
    const out: Record<string, MetricInfo> = Object.create(null) as Record<string, MetricInfo>;
    for (let i = 0; i < Math.min(metrics.length, MAX_LISTED); i++)
      out[metrics[i] as string] = {
        type: one(types[i]) ?? 'Mixed',
        temporality: one(temps[i]),
        unit: one(units[i]),
      };
    return { list: out, truncated: metrics.length > MAX_LISTED };
  }

  /** Metrics with points in the range that have some tag equal to `value`. */
  async findMetrics(dataset: string, q: DiscoveryRequest, value: string): Promise<Listed<string[]>> {
    return this.list(
      dataset,
      (t) => `SELECT DISTINCT s.metric FROM ${t.series} AS s, json_each(s.tags) AS j
              WHERE s.id IN ${MetricsStore.active(t.points, q.range)} AND (j.value->>'$')::VARCHAR = ${sqlText(value)} ORDER BY 1`,
      q,
    );
  }

  /** Tag names of a metric's series with points in the range; 404 for a metric the dataset never had. */
  async metricTags(dataset: string, metric: string, q: DiscoveryRequest): Promise<Listed<string[]>> {
    await this.knownMetric(dataset, metric, q);
    return this.list(
      dataset,
      (t) => `SELECT DISTINCT j.key FROM ${t.series} AS s, json_each(s.tags) AS j
              WHERE s.metric = ${sqlText(metric)} AND s.id IN ${MetricsStore.active(t.points, q.range)} ORDER BY 1`,
      q,
    );
  }

  /** Values (as text) of a tag of a metric's series with points in the range; 404 for a tag it never had. */
  async metricTagValues(dataset: string, metric: string, tag: string, q: DiscoveryRequest): Promise<Listed<string[]>> {
    await this.knownMetric(dataset, metric, q);
    return this.tagValues(dataset, tag, q, metric);
  }

  /** Tag names of every series with points in the range. */
  async datasetTags(dataset: string, q: DiscoveryRequest): Promise<Listed<string[]>> {
    return this.list(
      dataset,
      (t) => `SELECT DISTINCT j.key FROM ${t.series} AS s, json_each(s.tags) AS j
              WHERE s.id IN ${MetricsStore.active(t.points, q.range)} ORDER BY 1`,
      q,
    );
  }

  /** Values (as text) of a tag of every series with points in the range, or of one metric's. */
  async tagValues(dataset: string, tag: string, q: DiscoveryRequest, metric?: string): Promise<Listed<string[]>> {
    const ofMetric = metric === undefined ? '' : `AND s.metric = ${sqlText(metric)}`;
    const [known = []] = await this.read(
      dataset,
      (t) => `SELECT 1 FROM ${t.series} AS s, json_each(s.tags) AS j WHERE j.key = ${sqlText(tag)} ${ofMetric} LIMIT 1`,
      q,
    );
    if (known.length === 0)
      throw notFound(`tag "${tag}"${metric === undefined ? '' : ` of metric "${metric}"`} in dataset "${dataset}"`);
    return this.list(
      dataset,
      (t) => `SELECT DISTINCT j.value->>'$' AS v FROM ${t.series} AS s, json_each(s.tags) AS j
              WHERE j.key = ${sqlText(tag)} ${ofMetric} AND s.id IN ${MetricsStore.active(t.points, q.range)}
              ORDER BY 1`,
      q,
    );
  }

  private async knownMetric(dataset: string, metric: string, q: DiscoveryRequest): Promise<void> {
    const [rows = []] = await this.read(
      dataset,
      (t) => `SELECT 1 FROM ${t.series} WHERE metric = ${sqlText(metric)} LIMIT 1`,
      q,
    );
    if (rows.length === 0) throw notFound(`metric "${metric}" in dataset "${dataset}"`);
  }

  /** Points stored in a dataset (tests, bench). */
  async pointCount(dataset: string): Promise<number> {
    const [[n] = []] = await this.read(dataset, (t) => `SELECT count(*) AS n FROM ${t.points}`, {
      range: { start: 0, end: 0 },
    });
    return Number(n);
  }
}
