import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // DuckDB and child-process tests are CPU heavy; two workers match the 2-core CI machine.
    maxWorkers: 2,
    pool: 'forks',
  },
});
