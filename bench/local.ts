/**
 * bench:local — local mode under a steady load: `ferry agent` on the default config (config/ferry.yaml: the
 * agent tails ./logs/*.log into the embedded service, one process) while this script appends access-log
 * lines to a file at a fixed rate. Every second it reads the agent's resident set (and DuckDB's own share
 * from the agent's /metrics); every 10 s it asks the service `summarize count() by bin_auto(_time)` and
 * `count`, timing the first and taking the second's distance to the lines written as the ingest lag.
 * Prints one line per 10 s, then the peak RSS, the worst lag and query latencies.
 *
 * Usage: npm run bench:local -- [--rate 20000] [--minutes 10] [--config config/ferry.yaml]
 * Environment: BENCH_NODE_ARGS (flags for the agent's node, after the daemon's own DAEMON_NODE_FLAGS).
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DAEMON_ENV, DAEMON_NODE_FLAGS } from '../src/cli/node-flags.js';
import { AccessLogGenerator } from './access-log.js';
import { BENCH_ADMIN, cpuSeconds, peakRss, residentRss } from './server-process.js';
import { benchArgs } from './args.js';

const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));
const DEFAULT_CONFIG = fileURLToPath(new URL('../../config/ferry.yaml', import.meta.url));

const values = benchArgs(`usage: npm run bench:local -- [--rate 20000] [--minutes 10] [--config FILE]`, {
  options: {
    rate: { type: 'string', default: '20000' },
    minutes: { type: 'string', default: '10' },
    config: { type: 'string', default: DEFAULT_CONFIG },
  },
});
const rate = Number(values.rate);
const durationMs = Number(values.minutes) * 60_000;
if (!(rate > 0) || !(durationMs > 0)) {
  console.error('--rate and --minutes must be positive numbers');
  process.exit(2);
}
const TICK_MS = 100;
const REPORT_MS = 10_000;
const QUERY = "['logs'] | summarize count() by bin_auto(_time)";

const mib = (b: number) => (b / 1048576).toFixed(0);
const walSize = (db: string) => (existsSync(`${db}.wal`) ? statSync(`${db}.wal`).size : 0);

/**
 * Lines of the events' bodies without their time, made once: each written line is its time and one of
 * these, so the writer costs little beside the agent.
 */
function bodies(n: number): string[] {
  const gen = new AccessLogGenerator(5);
  return Array.from({ length: n }, () => {
    const { _time, ...rest } = gen.next();
    void _time;
    return JSON.stringify(rest).slice(1);
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ferry-bench-local-'));
  const logs = join(dir, 'logs');
  mkdirSync(logs);
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...DAEMON_NODE_FLAGS, ...nodeArgs, MAIN, 'agent', '-c', values.config], {
    cwd: dir,
    stdio: ['ignore', 'inherit', 'pipe'],
    env: {
      ...DAEMON_ENV,
      ...process.env,
      FERRY_ADMIN_TOKEN: BENCH_ADMIN,
      FERRY_LISTEN: '127.0.0.1:0',
      FERRY_AGENT_LISTEN: '127.0.0.1:0',
      FERRY_DATA_DIR: join(dir, 'data'),
      FERRY_AGENT_DATA_DIR: join(dir, 'data', 'agent'),
      FERRY_LOG_GLOB: join(logs, '*.log'),
      FERRY_LOG_LEVEL: 'info',
    },
  });
  const urls: { service?: string; agent?: string } = {};
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stderr! }).on('line', (line) => {
      try {
        const rec = JSON.parse(line) as { msg?: string; url?: string; api?: string; level?: string };
        if (rec.msg === 'event service listening') urls.service = rec.url;
        else if (rec.msg === 'agent running') urls.agent = rec.api;
        else if (rec.level === 'warn' || rec.level === 'error' || rec.level === 'fatal')
          process.stderr.write(`${line}\n`);
        if (rec.msg === 'agent running') resolve();
      } catch {
        process.stderr.write(`${line}\n`);
      }
    });
    child.on('exit', (code) => reject(new Error(`the agent exited with ${code}`)));
  });
  await ready;
  if (!urls.service) throw new Error("the agent did not log the event service's address");
  const idleRss = residentRss(child.pid!);
  console.log(
    `local mode on ${values.config}: ${rate.toLocaleString('en-US')} lines/s for ${values.minutes} min; idle RSS ${mib(idleRss)} MiB`,
  );

  const pool = bodies(50_000);
  const fd = openSync(join(logs, 'app.log'), 'a');
  let written = 0;
  const t0 = Date.now();
  // The writer keeps to the rate over time: a late tick writes what the rate owes.
  const writer = setInterval(() => {
    const now = Date.now();
    const owed = Math.min(Math.round(((now - t0) * rate) / 1000), Math.round((durationMs * rate) / 1000)) - written;
    if (owed <= 0) return;
    const stamp = `{"_time":"${new Date(now).toISOString()}",`;
    let text = '';
    for (let i = 0; i < owed; i++) text += `${stamp}${pool[(written + i) % pool.length]}\n`;
    writeSync(fd, text);
    written += owed;
  }, TICK_MS);

  const query = async (apl: string): Promise<{ ms: number; body: { tables?: { columns?: unknown[][] }[] } }> => {
    const q0 = performance.now();
    const r = await fetch(`${urls.service}/v1/datasets/_apl?format=tabular`, {
      method: 'POST',
      headers: { authorization: `Bearer ${BENCH_ADMIN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        apl,
        startTime: new Date(t0 - 60_000).toISOString(),
        endTime: new Date(Date.now() + 60_000).toISOString(),
      }),
    });
    const body = (await r.json()) as { tables?: { columns?: unknown[][] }[]; message?: string };
    if (r.status !== 200) throw new Error(`${apl}: ${r.status} ${body.message ?? ''}`);
    return { ms: performance.now() - q0, body };
  };
  const stored = async (): Promise<number> => {
    const { body } = await query("['logs'] | count");
    return Number(body.tables?.[0]?.columns?.[0]?.[0] ?? 0);
  };
  const duckdbBytes = async (): Promise<number | undefined> => {
    if (!urls.agent) return undefined;
    const text = await (await fetch(`${urls.agent}/metrics`)).text();
    const m = /^ferry_service_duckdb_memory_bytes (\d+)/m.exec(text);
    return m ? Number(m[1]) : undefined;
  };

  let peak = idleRss;
  let stretchPeak = 0;
  let worstLag = 0;
  const latencies: number[] = [];
  const sampler = setInterval(() => {
    const rss = residentRss(child.pid!);
    peak = Math.max(peak, rss);
    stretchPeak = Math.max(stretchPeak, rss);
  }, 250);
  console.log('  time   RSS MiB (highest in the 10 s)  DuckDB MiB  written     stored      lag   query ms');
  try {
    for (let t = REPORT_MS; t <= durationMs; t += REPORT_MS) {
      await new Promise((r) => setTimeout(r, Math.max(0, t0 + t - Date.now())));
      if (child.exitCode !== null) throw new Error(`the agent exited with ${child.exitCode}`);
      const w = written;
      const { ms } = await query(QUERY);
      const n = await stored();
      const lag = Math.max(0, w - n);
      const duck = await duckdbBytes();
      worstLag = Math.max(worstLag, lag);
      latencies.push(ms);
      console.log(
        `  ${String(Math.round(t / 1000)).padStart(4)} s ${mib(residentRss(child.pid!)).padStart(8)} (${mib(stretchPeak).padStart(4)})${' '.repeat(18)}${(duck === undefined ? '-' : mib(duck)).padStart(11)} ` +
          `${String(w).padStart(10)} ${String(n).padStart(10)} ${String(lag).padStart(8)} ${ms.toFixed(0).padStart(10)}`,
      );
      stretchPeak = 0;
    }
    clearInterval(writer);
    // Then wait for every written line to be stored, to show the agent kept up rather than fell behind.
    const drain0 = Date.now();
    while ((await stored()) < written) {
      if (Date.now() - drain0 > 120_000) throw new Error('the agent did not store every line within 2 min');
      await new Promise((r) => setTimeout(r, 500));
    }
    const drained = (Date.now() - drain0) / 1000;
    const cpu = cpuSeconds(child.pid!);
    const secs = (Date.now() - t0) / 1000;
    latencies.sort((a, b) => a - b);
    console.log(
      `${written.toLocaleString('en-US')} lines written, all stored ${drained.toFixed(1)} s after the last was written`,
    );
    console.log(`  peak RSS          ${mib(Math.max(peak, peakRss(child.pid!)))} MiB (idle ${mib(idleRss)} MiB)`);
    console.log(
      `  worst lag         ${worstLag.toLocaleString('en-US')} lines (${(worstLag / rate).toFixed(1)} s of input)`,
    );
    console.log(
      `  query ms          median ${latencies[Math.floor(latencies.length / 2)]!.toFixed(0)}, worst ${latencies[latencies.length - 1]!.toFixed(0)}`,
    );
    console.log(`  agent CPU         ${cpu.toFixed(1)} s (${(cpu / secs).toFixed(2)} cores)`);
    const db = join(dir, 'data', 'ferry.duckdb');
    console.log(
      `  database file     ${mib(statSync(db).size + walSize(db))} MiB with its WAL (${((statSync(db).size + walSize(db)) / written).toFixed(1)} bytes a line)`,
    );
  } finally {
    clearInterval(writer);
    clearInterval(sampler);
    closeSync(fd);
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: Error) => {
  console.error(`bench:local: ${e.message}`);
  process.exit(1);
});
