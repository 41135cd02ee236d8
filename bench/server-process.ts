/** Runs `ferry serve` from dist/ as a child process for benchmarks, and reads its peak memory. */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { DAEMON_NODE_FLAGS } from '../src/cli/node-flags.js';
import { DAEMON_POOL_THREADS } from '../src/service/store/connection-plan.js';

export const BENCH_ADMIN = 'xapt-00000000-0000-4000-8000-0000000bench';
const MAIN = fileURLToPath(new URL('../src/cli/main.js', import.meta.url));

export interface ServerProcess {
  child: ChildProcess;
  url: string;
  /** Sends SIGTERM and waits for a clean exit (the store checkpoints on the way out). */
  stop(): Promise<void>;
}

export async function startServer(dataDir: string, extraArgs: string[] = []): Promise<ServerProcess> {
  // Started with the daemon's flags; BENCH_NODE_ARGS (such as --cpu-prof) come after, for the server only.
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const child = spawn(
    process.execPath,
    [...DAEMON_NODE_FLAGS, ...nodeArgs, MAIN, 'serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir, ...extraArgs],
    {
      // The daemon's libuv pool, which the store sizes its connections by (store/connection-plan.ts).
      env: { UV_THREADPOOL_SIZE: String(DAEMON_POOL_THREADS), ...process.env, FERRY_ADMIN_TOKEN: BENCH_ADMIN },
      stdio: ['ignore', 'inherit', 'pipe'],
    },
  );
  const url = await new Promise<string>((resolve, reject) => {
    // The service's log is on stderr, one JSON object a line: its errors are passed on.
    createInterface({ input: child.stderr! }).on('line', (line) => {
      try {
        const rec = JSON.parse(line) as { msg?: string; url?: string; level?: string };
        if (rec.msg === 'event service listening' && rec.url) resolve(rec.url);
        else if (rec.level === 'error' || rec.level === 'fatal') process.stderr.write(`${line}\n`);
      } catch {
        process.stderr.write(`${line}\n`);
      }
    });
    child.on('exit', (code) => reject(new Error(`server exited with ${code}`)));
  });
  return {
    child,
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        child.on('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

/** A size field of a process's /proc status (VmHWM, VmRSS), in bytes. */
function statusBytes(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Peak resident set (VmHWM) of a process in bytes. */
export const peakRss = (pid: number): number => statusBytes(pid, 'VmHWM');

/** Resident set (VmRSS) of a process now, in bytes. */
export const residentRss = (pid: number): number => statusBytes(pid, 'VmRSS');

/** CPU seconds (user + system) a process has used, from /proc. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

export async function api(
  url: string,
  method: string,
  path: string,
  body?: unknown,
  token = BENCH_ADMIN,
): Promise<unknown> {
  const r = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.status === 204 ? undefined : r.json();
}

/** The bytes of every file under a directory. */
export function dirSize(dir: string): number {
  let total = 0;
  for (const f of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, f.name);
    total += f.isDirectory() ? dirSize(p) : statSync(p).size;
  }
  return total;
}

/**
 * The bytes of the blocks that hold one dataset's events in a stopped server's database file: the data
 * dir's size also counts the catalog's tables, one block or more each, which do not grow with the events.
 */
export async function datasetBlockBytes(dataDir: string, dataset: string): Promise<number> {
  const db = await DuckDBInstance.create(join(dataDir, 'ferry.duckdb'), { access_mode: 'READ_ONLY' });
  const conn = await db.connect();
  try {
    const rows = async (sql: string) => (await conn.runAndReadAll(sql)).getRowObjects();
    const [d] = await rows(`SELECT tbl FROM ferry_datasets WHERE name = '${dataset.replaceAll("'", "''")}'`);
    if (!d) throw new Error(`no dataset ${dataset} in ${dataDir}`);
    const [r] = await rows(
      `SELECT (SELECT block_size FROM pragma_database_size() LIMIT 1) AS block_size,
         (SELECT count(DISTINCT b) FROM (
            SELECT block_id AS b FROM pragma_storage_info('${String(d.tbl)}') WHERE persistent AND block_id >= 0
            UNION ALL
            SELECT unnest(additional_block_ids) FROM pragma_storage_info('${String(d.tbl)}') WHERE persistent)) AS blocks`,
    );
    return Number(r!.block_size) * Number(r!.blocks);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}
