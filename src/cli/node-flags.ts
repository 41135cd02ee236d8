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
 */
export const DAEMON_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2' };
