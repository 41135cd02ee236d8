/**
 * bench:query — loads N realistic access-log events (default 10 million) into a store, then times a fixed
 * set of APL queries through the query engine (parse, bind, compile, run, status figures: what the
 * endpoint does short of JSON) and, on the same store in the same run, the equivalent hand-written
 * DuckDB SQL. Prints each median and the APL/SQL ratio, and the median of the query's fixed cost: parse,
 * bind and compile alone (`prepare`, by an engine new to the text), and the same for a text whose binding
 * the engine keeps (`kept`), in ms.
 *
 * Usage: npm run bench:query -- [--events N] [--runs R (at least; fast queries run more)] [--data-dir DIR (reused when it holds the data)]
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { QueryEngine } from '../src/service/query/engine.js';
import type { EventStore } from '../src/service/store/event-store.js';
import { AccessLogGenerator } from './access-log.js';
import { benchArgs } from './args.js';
import { median, openBenchStore, timeAlternating } from './alternate.js';

const values = benchArgs(
  `usage: npm run bench:query -- [--events N] [--runs R] [--data-dir DIR] [--memory-limit-mb MB]`,
  {
    options: {
      events: { type: 'string', default: '10000000' },
      runs: { type: 'string', default: '7' },
      'data-dir': { type: 'string' },
      'memory-limit-mb': { type: 'string', default: '1024' },
    },
  },
);
const total = Number(values.events);
/** How many times each query is prepared alone, for the median of its fixed cost. */
const PREPARE_RUNS = 300;
const runs = Number(values.runs);
/** The most runs a fast query gets for its median. */
const MAX_RUNS = 200;

/** Each APL query and the SQL a person would write for it; `{t}` is the dataset's table. */
const QUERIES: { name: string; apl: string; sql: string }[] = [
  {
    name: 'filter + count',
    apl: "['access'] | where status >= 500 | count",
    sql: 'SELECT count(*) FROM {t} WHERE status >= 500',
  },
  {
    name: 'count by bin(_time, 1m)',
    apl: "['access'] | summarize count() by bin(_time, 1m)",
    sql: "SELECT time_bucket(INTERVAL '1 minute', _time) AS b, count(*) FROM {t} GROUP BY b ORDER BY b",
  },
  {
    name: 'dcount',
    apl: "['access'] | summarize dcount(remote_addr)",
    sql: 'SELECT count(DISTINCT remote_addr) FROM {t}',
  },
  {
    name: 'p95 by key',
    apl: "['access'] | summarize percentile(request_time, 95) by method",
    sql: 'SELECT method, quantile_disc(request_time, 0.95) FROM {t} GROUP BY method',
  },
  {
    name: 'case-insensitive contains',
    apl: "['access'] | where uri contains 'ORDERS' | count",
    sql: "SELECT count(*) FROM {t} WHERE uri ILIKE '%orders%'",
  },
  {
    name: 'top 10 by count',
    apl: "['access'] | summarize count() by remote_addr | top 10 by count_",
    sql: 'SELECT remote_addr, count(*) AS c FROM {t} GROUP BY remote_addr ORDER BY c DESC LIMIT 10',
  },
  {
    // Not in the list: the first page a user sees, newest first (guards the top-N plan).
    name: 'raw events, default page of 1000',
    apl: "['access']",
    sql: 'SELECT * FROM {t} ORDER BY _time DESC, _seq DESC LIMIT 1000',
  },
  {
    name: 'multi-condition where, project, sort/take',
    apl: "['access'] | where status >= 400 and method == 'POST' and request_time > 0.05 | project _time, uri, status, request_time | sort by request_time desc | take 100",
    sql: "SELECT _time, uri, status, request_time FROM {t} WHERE status >= 400 AND method = 'POST' AND request_time > 0.05 ORDER BY request_time DESC LIMIT 100",
  },
  {
    // Each value's bin over its group's range; by hand, the ranges first, then a count per bin.
    name: 'histogram by key',
    apl: "['access'] | summarize histogram(request_time, 20) by method",
    sql: 'WITH r AS (SELECT method AS m, min(request_time) AS lo, max(request_time) AS hi FROM {t} GROUP BY method) SELECT r.m, least(CAST(floor((request_time - r.lo) * 20 / (r.hi - r.lo)) AS BIGINT), 19) AS b, count(*) FROM {t} JOIN r ON method = r.m GROUP BY ALL',
  },
  {
    name: 'make-series, series_stats and series_sum',
    apl: "['access'] | make-series c = count() on _time step 1h by method | extend peak = series_stats(c).max, total = series_sum(c)",
    sql: "SELECT m, max(c), sum(c) FROM (SELECT method AS m, time_bucket(INTERVAL '1 hour', _time) AS b, count(*) AS c FROM {t} GROUP BY ALL) GROUP BY m",
  },
];

async function load(store: EventStore): Promise<void> {
  if (store.hasDataset('access') && (await store.count('access')) >= total) return;
  if (!store.hasDataset('access')) await store.createDataset({ name: 'access', who: 'bench' });
  const gen = new AccessLogGenerator(11);
  const chunk = 200_000;
  const t0 = performance.now();
  for (let done = 0; done < total; done += chunk) {
    // The spool: the one directory the store lets DuckDB read files from.
    const file = store.tempFile('ndjson');
    writeFileSync(file, gen.ndjson(Math.min(chunk, total - done)));
    const r = await store.ingestFile('access', file, 'ndjson');
    if (r.failed) throw new Error(`load failed: ${JSON.stringify(r.failures.slice(0, 3))}`);
    rmSync(file);
    process.stdout.write(`\rloaded ${(done + chunk).toLocaleString('en-US')} events`);
  }
  await store.idle();
  console.log(` in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}

async function main(): Promise<void> {
  const dataDir = values['data-dir'] ?? mkdtempSync(join(tmpdir(), 'ferry-bench-query-'));
  const keep = values['data-dir'] !== undefined;
  const store = await openBenchStore(dataDir, Number(values['memory-limit-mb']));
  try {
    await load(store);
    await store.db.run('CHECKPOINT');
    const engine = new QueryEngine(store);
    const table = `"${store.schema('access').table}"`;
    const fieldColumn = new Map(store.schema('access').fields.map((f) => [f.name, f.column]));
    // Hand-written SQL names fields; the store keeps them in physical columns f1, f2…
    const sqlOf = (q: string) =>
      q.replaceAll('{t}', table).replace(/\b([a-z_]+)\b/g, (w) => (fieldColumn.has(w) ? `"${fieldColumn.get(w)}"` : w));
    const n = await store.count('access');
    console.log(
      `${n.toLocaleString('en-US')} events; at least ${runs} runs per query (up to ${MAX_RUNS} for fast ones), median in ms (after one warm-up run)\n`,
    );
    console.log(
      `${'query'.padEnd(44)} ${'APL'.padStart(8)} ${'SQL'.padStart(8)} ${'ratio'.padStart(6)} ${'prepare'.padStart(8)} ${'kept'.padStart(8)}`,
    );
    const ratios: number[] = [];
    const prepares: number[] = [];
    for (const q of QUERIES) {
      const apl = async () => engine.execute(await engine.prepare({ apl: q.apl, canQuery: () => true }));
      const sql = sqlOf(q.sql);
      const sqlRun = async () => store.readColumns(sql);
      await apl();
      await sqlRun();
      // A fast query runs more often (up to ~0.5 s a side): the median of 7 runs of 2 ms is mostly noise.
      const warm = performance.now();
      await sqlRun();
      const times = Math.max(runs, Math.min(MAX_RUNS, Math.floor(500 / Math.max(0.1, performance.now() - warm))));
      const { a: ta, b: ts } = await timeAlternating(apl, sqlRun, times);
      const ratio = median(ta) / median(ts);
      ratios.push(ratio);
      // The fixed cost: parse, bind and compile alone (what prepare does), the median of many; by an
      // engine that has not seen the text (cold), and by one that keeps its binding (kept).
      const tp: number[] = [];
      const tk: number[] = [];
      for (let i = 0; i < PREPARE_RUNS; i++) {
        const fresh = new QueryEngine(store);
        let t = performance.now();
        await fresh.prepare({ apl: q.apl, canQuery: () => true });
        tp.push(performance.now() - t);
        t = performance.now();
        await engine.prepare({ apl: q.apl, canQuery: () => true });
        tk.push(performance.now() - t);
      }
      prepares.push(median(tp));
      console.log(
        `${q.name.padEnd(44)} ${median(ta).toFixed(1).padStart(8)} ${median(ts).toFixed(1).padStart(8)} ${ratio.toFixed(2).padStart(6)} ${median(tp).toFixed(3).padStart(8)} ${median(tk).toFixed(3).padStart(8)}`,
      );
    }
    console.log(`\nworst ratio ${Math.max(...ratios).toFixed(2)} (target <= 1.3)`);
    console.log(`worst prepare, cold (parse, bind, compile) ${Math.max(...prepares).toFixed(3)} ms (target <= 0.2)`);
  } finally {
    await store.close();
    if (!keep) rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
