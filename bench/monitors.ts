/**
 * bench:monitors — monitors on a busy host: a service holding N events (default 10 million) takes live
 * ingest at a fixed offered rate (default 20,000 events/s), first without monitors, then with M Threshold
 * monitors (default 1,000) at 1-minute intervals over 5-minute windows. Prints how late runs start after
 * their tick (p50, p99, max, from the runs dataset), the server's CPU with and without monitors, and the
 * ingest rate achieved in each phase.
 *
 * Usage: npm run bench:monitors -- [--events N] [--monitors M] [--rate R] [--minutes D] [--data-dir DIR] [--distinct]
 *        (--data-dir keeps the loaded store for the next run; --distinct gives every monitor a query of its
 *        own, so that none share a run: the worst case)
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { AccessLogGenerator } from './access-log.js';
import { api, cpuSeconds, startServer } from './server-process.js';
import { benchArgs } from './args.js';

const values = benchArgs(
  `usage: npm run bench:monitors -- [--events N] [--monitors M] [--rate R] [--minutes D] [--baseline-seconds S] [--data-dir DIR] [--distinct]`,
  {
    options: {
      events: { type: 'string', default: '10000000' },
      monitors: { type: 'string', default: '1000' },
      rate: { type: 'string', default: '20000' },
      minutes: { type: 'string', default: '3' },
      'baseline-seconds': { type: 'string', default: '90' },
      'data-dir': { type: 'string' },
      distinct: { type: 'boolean', default: false },
    },
  },
);
const totalEvents = Number(values.events);
const monitorCount = Number(values.monitors);
const rate = Number(values.rate);
const minutes = Number(values.minutes);
const baselineSeconds = Number(values['baseline-seconds']);

/** Query shapes a fleet of alerts would use; thresholds vary per monitor. */
const QUERIES = [
  "['access'] | where status >= 500 | summarize count() by bin(_time, 1m)",
  "['access'] | summarize avg(request_time) by bin(_time, 1m)",
  "['access'] | where method == 'POST' | summarize count() by bin(_time, 1m)",
  "['access'] | summarize percentile(request_time, 95) by bin(_time, 1m)",
  "['access'] | where status == 404 | summarize count()",
  "['access'] | summarize sum(body_bytes_sent) by bin(_time, 1m)",
  "['access'] | where uri startswith '/api/' | summarize count() by bin(_time, 1m)",
  "['access'] | summarize max(request_time)",
];

/** The shapes in turn; with --distinct a filter no event fails, varied per monitor, makes every query unique. */
function monitorQuery(i: number): string {
  const q = QUERIES[i % QUERIES.length]!;
  return values.distinct ? q.replace("['access'] |", `['access'] | where body_bytes_sent != ${-1 - i} |`) : q;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function load(url: string, token: string): Promise<void> {
  const gen = new AccessLogGenerator(11, Date.now() - 30 * 86_400_000);
  const per = 20_000;
  const inFlight = new Set<Promise<void>>();
  const t0 = Date.now();
  for (let sent = 0; sent < totalEvents; sent += per) {
    const body = gzipSync(gen.ndjson(Math.min(per, totalEvents - sent)));
    const p = post(url, token, body).then(() => undefined);
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
    if (inFlight.size >= 4) await Promise.race(inFlight);
    if (sent % 1_000_000 === 0) process.stderr.write(`\rloaded ${sent.toLocaleString()} events`);
  }
  await Promise.all(inFlight);
  process.stderr.write(
    `\rloaded ${totalEvents.toLocaleString()} events in ${Math.round((Date.now() - t0) / 1000)} s\n`,
  );
}

async function post(url: string, token: string, body: Buffer): Promise<number> {
  const r = await fetch(`${url}/v1/ingest/access`, {
    method: 'POST',
    body: new Uint8Array(body),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson', 'content-encoding': 'gzip' },
  });
  const out = (await r.json()) as { ingested?: number };
  if (r.status !== 200) throw new Error(`ingest answered ${r.status}`);
  return out.ingested ?? 0;
}

/**
 * Offers `rate` events/s of live events (time = now) for `seconds`, four batches a second, at most 4
 * requests in flight (a batch that finds them all busy waits: the offered rate is then not achieved).
 */
async function live(url: string, token: string, seconds: number): Promise<{ eventsPerSecond: number }> {
  const gen = new AccessLogGenerator(Date.now() % 100_000, Date.now());
  const per = Math.round(rate / 4);
  const inFlight = new Set<Promise<void>>();
  let acked = 0;
  const t0 = Date.now();
  for (let i = 0; Date.now() - t0 < seconds * 1000; i++) {
    const due = t0 + i * 250;
    if (due > Date.now()) await sleep(due - Date.now());
    const now = Date.now();
    const events = Array.from({ length: per }, (_, k) => ({
      ...gen.next(),
      _time: new Date(now - 250 + (k * 250) / per).toISOString(),
    }));
    const body = gzipSync(events.map((e) => JSON.stringify(e)).join('\n'));
    while (inFlight.size >= 4) await Promise.race(inFlight);
    const p = post(url, token, body).then((n) => {
      acked += n;
    });
    inFlight.add(p);
    void p.finally(() => inFlight.delete(p));
  }
  await Promise.all(inFlight);
  return { eventsPerSecond: acked / ((Date.now() - t0) / 1000) };
}

async function main(): Promise<void> {
  const keep = values['data-dir'];
  const dir = keep ?? mkdtempSync(join(tmpdir(), 'ferry-bench-monitors-'));
  const fresh = !keep || !existsSync(join(dir, 'ferry.duckdb'));
  const server = await startServer(dir);
  const pid = server.child.pid!;
  try {
    const tokens = (await api(server.url, 'POST', '/v2/tokens', {
      name: 'bench',
      datasetCapabilities: { access: { ingest: ['create'] } },
    })) as { token: string };
    if (fresh) {
      await api(server.url, 'POST', '/v2/datasets', { name: 'access' });
      await load(server.url, tokens.token);
    }
    for (const m of (await api(server.url, 'GET', '/v2/monitors')) as { id: string }[])
      await api(server.url, 'DELETE', `/v2/monitors/${m.id}`);

    let cpu0 = cpuSeconds(pid);
    const base = await live(server.url, tokens.token, baselineSeconds);
    const baseCpu = (cpuSeconds(pid) - cpu0) / baselineSeconds;
    process.stderr.write(
      `without monitors: ${Math.round(base.eventsPerSecond)} events/s, server CPU ${(baseCpu * 100).toFixed(0)}% of a core\n`,
    );

    for (let i = 0; i < monitorCount; i++) {
      await api(server.url, 'POST', '/v2/monitors', {
        name: `bench ${i}`,
        type: 'Threshold',
        aplQuery: monitorQuery(i),
        operator: 'Above',
        threshold: 1e12 + i,
        intervalMinutes: 1,
        rangeMinutes: 5,
      });
    }
    const startedMs = Date.now();
    cpu0 = cpuSeconds(pid);
    const withMonitors = await live(server.url, tokens.token, minutes * 60);
    const withCpu = (cpuSeconds(pid) - cpu0) / (minutes * 60);
    await sleep(3000); // the last runs are recorded
    // The first minute after creation is skipped: every monitor's first tick falls in it.
    const q = (await api(server.url, 'POST', '/v1/query/_apl', {
      apl: `['ferry-monitor-runs'] | where _time >= datetime(${new Date(startedMs + 60_000).toISOString()}) | summarize p50 = percentile(delayMs, 50), p99 = percentile(delayMs, 99), max = max(delayMs), runs = count(), avgMs = avg(durationMs), errors = countif(state == 'error')`,
      startTime: new Date(startedMs).toISOString(),
      endTime: 'now',
    })) as { tables: { fields: { name: string }[]; columns: unknown[][] }[] };
    const t = q.tables[0]!;
    const row = Object.fromEntries(t.fields.map((f, j) => [f.name, t.columns[j]![0]])) as Record<string, number>;
    const expectedRuns = monitorCount * (minutes - 1);
    const lost = 1 - withMonitors.eventsPerSecond / base.eventsPerSecond;
    console.log(
      `${totalEvents.toLocaleString()} events stored; ${monitorCount} Threshold monitors every 1m over 5m (${values.distinct ? 'each its own query' : `${QUERIES.length} query shapes`}); ingest offered at ${rate.toLocaleString()} events/s`,
    );
    console.log(
      `run start delay after the tick: p50 ${Math.round(row.p50!)} ms, p99 ${Math.round(row.p99!)} ms, max ${Math.round(row.max!)} ms (target p99 <= 5000)`,
    );
    console.log(
      `runs: ${row.runs} of ~${expectedRuns} ticks, ${row.errors} errors, ${Math.round(row.avgMs!)} ms each on average`,
    );
    console.log(
      `ingest: ${Math.round(base.eventsPerSecond)} events/s without monitors, ${Math.round(withMonitors.eventsPerSecond)} with (${(lost * 100).toFixed(1)}% lost; target <= 10%)`,
    );
    console.log(
      `server CPU: ${(baseCpu * 100).toFixed(0)}% of a core without monitors, ${(withCpu * 100).toFixed(0)}% with; monitors' share ${(((withCpu - baseCpu) / withCpu) * 100).toFixed(0)}%`,
    );
  } finally {
    await server.stop();
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
