import { DAEMON_POOL_THREADS } from '../service/store/connection-plan.js';

/**
 * The Node flags the daemon is started with. package.json's start script, systemd/ferry.service and the
 * Dockerfile carry them (test/integration/packaging/packaging.test.ts keeps those in step with this list), and the benchmarks
 * start ferry with them.
 *
 * --max-semi-space-size=2: under a steady stream of events V8's young generation only ever grows, up to
 * two semi-spaces of 16 MiB, however little survives each scavenge; capped, the agent's peak RSS is
 * lower at the same throughput, and local mode stays within 256 MiB at 20,000 lines/s (docs/benchmarks.md).
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];

/**
 * The environment the daemon is started with, beside its flags, by the same launchers (glibc reads it
 * before the process runs any code of its own, so ferry cannot set it for itself).
 *
 * MALLOC_ARENA_MAX=2: libuv's threads (file reads and writes, zlib, DuckDB's Node API work) each get a C
 * heap of their own by default, which keeps what they freed; two shared heaps held local mode's peak RSS
 * 24 MiB lower at 20,000 lines/s (docs/benchmarks.md).
 *
 * UV_USE_IO_URING=0: libuv (read once, when the loop starts) then reads and writes files on its thread
 * pool. Through io_uring a read of a file in the page cache is copied on the event loop's own thread, and
 * the kernel's workers took more CPU besides: bench:agent passthrough ran at 232 – 254 MB/s against
 * 304 – 316 without it, at 6.8 – 7.6 against 4.2 – 4.4 agent CPU-seconds a GiB (docs/benchmarks.md).
 *
 * UV_THREADPOOL_SIZE=16: every DuckDB statement holds a thread of libuv's pool while it runs, and file
 * reads and writes and zlib wait for the same threads. With libuv's default of four, four long queries
 * held an ingest of two events 12.4 s; the store opens no more connections than the pool leaves a thread
 * free beside (service/store/connection-plan.ts), which at four threads is one each for queries, the
 * catalog and ingest. Sixteen serve four query connections, two for the catalog and one ingest connection
 * a core up to eight cores.
 */
export const DAEMON_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  UV_USE_IO_URING: '0',
  UV_THREADPOOL_SIZE: String(DAEMON_POOL_THREADS),
};
