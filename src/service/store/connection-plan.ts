/**
 * How many DuckDB connections the store opens, from the threads of libuv's pool. @duckdb/node-api runs each
 * statement on a thread of that pool from its start to its end, and every file read and write, zlib stream
 * and dns.lookup of the process waits for the same threads: with as many statements running as the pool
 * has threads, everything else waits until one ends. Four long queries held a two-event ingest 12.4 s at
 * libuv's default of four threads (docs/benchmarks.md). So reads and ingest together leave threads free.
 */
import { availableParallelism } from 'node:os';

/** Connections for reads (queries, the catalog, monitors) when the pool has threads enough. */
export const READ_CONNECTIONS = 4;

/** Threads of the pool no DuckDB statement may take: the spool's writes, file sources' reads, zlib. */
export const FREE_THREADS = 1;

/** Ingest connections at most, however many cores: appends to one dataset gain less with each (docs/benchmarks.md). */
export const MAX_INGEST_CONNECTIONS = 8;

/**
 * The pool's threads the daemon is started with (cli/node-flags.ts DAEMON_ENV): four read connections and
 * the most ingest connections, one thread free, and threads to spare.
 */
export const DAEMON_POOL_THREADS = 16;

/**
 * libuv's pool size as libuv reads UV_THREADPOOL_SIZE when the process starts: 4 unset; else atoi's
 * number (0 when it starts with no digits) as an unsigned one, 0 making 1 and anything past 1024 (a
 * negative number too) 1024.
 */
export function libuvPoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.UV_THREADPOOL_SIZE;
  if (text === undefined) return 4;
  const n = Number.parseInt(text, 10);
  if (Number.isNaN(n) || n === 0) return 1;
  return n < 0 || n > 1024 ? 1024 : n;
}

export interface ConnectionPlan {
  /** The general pool's connections (reads, catalog work). */
  reads: number;
  /** The ingest pool's connections: one a core up to MAX_INGEST_CONNECTIONS, as the pool allows. */
  ingest: number;
  /** The pool's threads, those every connection wanted would need, and whether it has them. */
  threads: number;
  wantedThreads: number;
  enough: boolean;
}

/**
 * The connections for a pool of `threads` threads and `cores` cores: FREE_THREADS stay free, ingest keeps at
 * least one connection, reads take up to READ_CONNECTIONS of the rest (at least one), and ingest the rest
 * up to one a core (at most MAX_INGEST_CONNECTIONS). A pool of one or two threads still gets one of each.
 */
export function connectionPlan(threads = libuvPoolSize(), cores = availableParallelism()): ConnectionPlan {
  const wanted = Math.min(cores, MAX_INGEST_CONNECTIONS);
  const usable = Math.max(2, threads - FREE_THREADS);
  const reads = Math.min(READ_CONNECTIONS, usable - 1);
  const ingest = Math.max(1, Math.min(wanted, usable - reads));
  const wantedThreads = READ_CONNECTIONS + wanted + FREE_THREADS;
  return { reads, ingest, threads, wantedThreads, enough: threads >= wantedThreads };
}
