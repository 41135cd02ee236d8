/**
 * The Node flags the daemon is started with. package.json's start script, systemd/ferry.service and the
 * Dockerfile carry them (test/integration/packaging/packaging.test.ts keeps those in step with this list), and the benchmarks
 * start ferry with them.
 *
 * --max-semi-space-size=4: under a steady stream of events V8's young generation only ever grows, up to
 * two semi-spaces of 16 MiB, however little survives each scavenge; capped, the agent's peak RSS is
 * lower at the same throughput (docs/benchmarks.md).
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
