/**
 * How many DuckDB connections the store opens, from the threads of libuv's pool. @duckdb/node-api runs each
 * statement on a thread of that pool from its start to its end, and every file read and write, zlib stream
 * and dns.lookup of the process waits for the same threads: with as many statements running as the pool
 * has threads, everything else waits until one ends. Four long queries held a two-event ingest 12.4 s at
 * libuv's default of four threads (docs/benchmarks.md). So reads and ingest together leave threads free.
 */
import { availableParallelism } from 'node:os';

/** Connections for queries (APL and MPL statements, monitors' runs), the longest statements, when the pool has threads enough. */
export const QUERY_CONNECTIONS = 4;

/**
 * Connections for the rest beside ingest: the catalog (datasets, fields, tokens, monitors, starred queries),
 * metrics' writes, retention and datasets' figures. Their own, so four long queries hold none of it up.
 */
export const CATALOG_CONNECTIONS = 2;

/** Threads of the pool no DuckDB statement may take: the spool's writes, file sources' reads, zlib. */
export const FREE_THREADS = 1;

/** Ingest connections at most, however many cores: appends to one dataset gain less with each (docs/benchmarks.md). */
export const MAX_INGEST_CONNECTIONS = 8;

/**
 * The pool's threads the daemon is started with (cli/node-flags.ts DAEMON_ENV): the query and catalog
 * connections, the most ingest connections and one thread free, with one to spare.
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
  /** The query pool's connections. */
  queries: number;
  /** The general pool's connections (see CATALOG_CONNECTIONS). */
  catalog: number;
  /** The ingest pool's connections: one a core up to MAX_INGEST_CONNECTIONS, as the pool allows. */
  ingest: number;
  /** The pool's threads, those every connection wanted would need, and whether it has them. */
  threads: number;
  wantedThreads: number;
  enough: boolean;
}

/**
 * The connections for a pool of `threads` threads and `cores` cores: FREE_THREADS stay free; the catalog
 * and ingest keep at least one connection each; queries take up to QUERY_CONNECTIONS of the rest (at least
 * one), then the catalog up to CATALOG_CONNECTIONS, and ingest the rest up to one a core (at most
 * MAX_INGEST_CONNECTIONS). A pool of fewer than four threads still gets one of each.
 */
export function connectionPlan(threads = libuvPoolSize(), cores = availableParallelism()): ConnectionPlan {
  const wanted = Math.min(cores, MAX_INGEST_CONNECTIONS);
  const usable = Math.max(3, threads - FREE_THREADS);
  const catalog = Math.min(CATALOG_CONNECTIONS, Math.max(1, usable - QUERY_CONNECTIONS - 1));
  const queries = Math.min(QUERY_CONNECTIONS, usable - catalog - 1);
  const ingest = Math.max(1, Math.min(wanted, usable - catalog - queries));
  const wantedThreads = QUERY_CONNECTIONS + CATALOG_CONNECTIONS + wanted + FREE_THREADS;
  return { queries, catalog, ingest, threads, wantedThreads, enough: threads >= wantedThreads };
}
