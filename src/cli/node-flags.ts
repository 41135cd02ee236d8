/**
 * The Node flags the daemon is started with. package.json's start script, systemd/ferry.service and the
 * Dockerfile carry them (test/packaging.test.ts keeps those in step with this list), and the benchmarks
 * start ferry with them.
 *
 * --max-semi-space-size=4: under a steady stream of events V8's young generation only ever grows, up to
 * two semi-spaces of 16 MiB (32 MiB resident), however little survives each scavenge (10–15 KB here).
 * Capped at 8 MiB each, bench:agent's parse-and-enrich peak RSS is 96–98 MiB instead of 107–110, at the
 * same throughput; passthrough, whose young generation stays smaller, is unchanged.
 */
export const DAEMON_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=4'];
