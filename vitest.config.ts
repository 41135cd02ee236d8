import { defineConfig } from 'vitest/config';

/**
 * Projects chosen by folder: `test/unit/` holds pure modules tested in milliseconds (no server, no
 * child process, no DuckDB file, no waiting on files), `test/integration/` everything that runs real parts,
 * and of those `test/integration/console/` (Chromium) runs last, alone.
 * Inside each, tests sit in the folder of the `src/` part they are about.
 */
// The daemon's libuv pool (src/cli/node-flags.ts DAEMON_ENV), which the store sizes its connections by; the
// test workers and the services they start inherit it.
process.env.UV_THREADPOOL_SIZE ??= '16';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // DuckDB and child-process tests are CPU heavy; two workers match the 2-core CI machine.
    maxWorkers: 2,
    pool: 'forks',
    // Removes each file's temporary directories when it ends.
    setupFiles: ['test/support/setup.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      {
        extends: true,
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          exclude: ['test/integration/console/**'],
        },
      },
      // The browser's tests run after the others, alone: Chromium takes both cores for seconds, which would
      // be counted against the latency budgets other tests assert.
      {
        extends: true,
        test: { name: 'browser', include: ['test/integration/console/**/*.test.ts'], sequence: { groupOrder: 1 } },
      },
    ],
  },
});
