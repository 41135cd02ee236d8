/**
 * bench:mpl — loads S series × a day of points at 10 s (default 1,000 × 8,640) into a metrics dataset of a
 * store in this process, then times MPL queries through MplQueries (parse, bind, series selection,
 * compile, run, the series on their grid: what the endpoint does short of JSON) and, on the same store in
 * the same run, the hand-written DuckDB SQL that gives the same numbers (rows of series, window, value).
 * Prints each median and the MPL/SQL ratio; the target for `align to 1m using avg` is 1.2.
 *
 * Usage: npm run bench:mpl -- [--series S] [--runs R] [--memory-limit-mb MB]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PointColumnsBuilder } from '../src/ingest/point-columns.js';
import type { SeriesEntry } from '../src/ingest/series-mirror.js';
import { MetricsStore } from '../src/service/metrics/metrics-store.js';
import { MplQueries } from '../src/service/query/mpl-queries.js';
import type { EventStore } from '../src/service/store/event-store.js';
import { benchArgs } from './args.js';
import { median, openBenchStore, timeAlternating } from './alternate.js';

const values = benchArgs('usage: npm run bench:mpl -- [--series S] [--runs R] [--memory-limit-mb MB]', {
  options: {
    series: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '9' },
    'memory-limit-mb': { type: 'string', default: '1024' },
  },
});
const seriesCount = Number(values.series);
const runs = Number(values.runs);
const T0 = 1_767_225_600;
const DAY = 86_400;
const STEP = 10;

/** MPL queries and the SQL a person would write for the same numbers; `{p}`, `{s}`: the tables. */
const QUERIES: { name: string; mpl: string; sql: string }[] = [
  {
    name: 'align to 1m using avg',
    mpl: 'bench:`cpu` | align to 1m using avg',
    sql: `SELECT p.series, p.t // 60 * 60 AS w, avg(p.v) FROM {p} AS p JOIN {s} AS s ON s.id = p.series
          WHERE s.metric = 'cpu' AND p.t >= ${T0} AND p.t < ${T0 + DAY} GROUP BY ALL`,
  },
  {
    name: 'align to 5m using max | group by region',
    mpl: 'bench:`cpu` | align to 5m using max | group by region using sum',
    sql: `SELECT (s.tags->>'region') AS r, w, sum(m) FROM (
            SELECT p.series, p.t // 300 * 300 AS w, max(p.v) AS m FROM {p} AS p JOIN {s} AS s ON s.id = p.series
            WHERE s.metric = 'cpu' AND p.t >= ${T0} AND p.t < ${T0 + DAY} GROUP BY ALL) AS a
          JOIN {s} AS s ON s.id = a.series GROUP BY ALL`,
  },
  {
    name: 'where host == "h-7" | align to 1m using avg',
    mpl: 'bench:`cpu` | where host == "h-7" | align to 1m using avg',
    sql: `SELECT p.series, p.t // 60 * 60 AS w, avg(p.v) FROM {p} AS p JOIN {s} AS s ON s.id = p.series
          WHERE s.metric = 'cpu' AND (s.tags->>'host') = 'h-7' AND p.t >= ${T0} AND p.t < ${T0 + DAY} GROUP BY ALL`,
  },
];

async function load(store: EventStore): Promise<void> {
  await store.createDataset({ name: 'bench', who: 'bench', kind: 'otel:metrics:v1' });
  const metrics = MetricsStore.of(store);
  const series: SeriesEntry[] = [];
  for (let i = 0; i < seriesCount; i++) {
    const tags = `{"host":"h-${i}","region":"r${i % 8}"}`;
    series.push({
      key: `"cpu"${tags}`,
      rest: `"m":"cpu","tags":${tags},"type":"Gauge","temp":null,"unit":"1"}`,
      gid: -1,
    });
  }
  const perBatch = Math.max(1, Math.floor(200_000 / seriesCount));
  const t0 = performance.now();
  for (let k = 0; k < DAY / STEP; k += perBatch) {
    const points = new PointColumnsBuilder();
    for (let i = 0; i < seriesCount; i++)
      for (let j = k; j < Math.min(k + perBatch, DAY / STEP); j++)
        points.push(i, T0 + j * STEP, (i * 31 + j * 7) % 1000);
    await metrics.ingest('bench', series, points.finish());
    process.stdout.write(`\rloaded ${((k + perBatch) * seriesCount).toLocaleString('en-US')} points`);
  }
  console.log(` in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'ferry-bench-mpl-'));
  const store = await openBenchStore(dataDir, Number(values['memory-limit-mb']));
  try {
    await load(store);
    await store.db.run('CHECKPOINT');
    const table = store.getDataset('bench').table;
    const mpl = new MplQueries(store);
    const range = { startTime: new Date(T0 * 1000).toISOString(), endTime: new Date((T0 + DAY) * 1000).toISOString() };
    console.log(`${seriesCount} series × ${DAY / STEP} points; median of ${runs} runs in ms (after one warm-up)\n`);
    console.log(`${'query'.padEnd(48)} ${'MPL'.padStart(8)} ${'SQL'.padStart(8)} ${'ratio'.padStart(6)}`);
    for (const q of QUERIES) {
      const sql = q.sql.replaceAll('{p}', `"${table}_points"`).replaceAll('{s}', `"${table}_series"`);
      const runMpl = () => mpl.run({ mpl: q.mpl, ...range, canQuery: () => true });
      const runSql = () => store.readColumns(sql);
      await runMpl();
      await runSql();
      const { a: tm, b: ts } = await timeAlternating(runMpl, runSql, runs);
      console.log(
        `${q.name.padEnd(48)} ${median(tm).toFixed(1).padStart(8)} ${median(ts).toFixed(1).padStart(8)} ${(median(tm) / median(ts)).toFixed(2).padStart(6)}`,
      );
    }
    console.log('\ntarget for align to 1m using avg: <= 1.2');
  } finally {
    await store.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main();
