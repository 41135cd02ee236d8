import { defineConfig } from 'vitest/config';

/** Pure modules tested in milliseconds: no server, no child process, no DuckDB file, no waiting on files. */
const UNIT = [
  'test/agent-event.test.ts',
  'test/agent-lines.test.ts',
  'test/agent-multiline.test.ts',
  'test/agent-parsers.test.ts',
  'test/agent-send-chain.test.ts',
  'test/apl-golden.test.ts',
  'test/apl-parser.test.ts',
  'test/config.test.ts',
  'test/config-registry.test.ts',
  'test/go-template.test.ts',
  'test/properties.test.ts',
  'test/series-functions.test.ts',
  'test/store-native-memory.test.ts',
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // DuckDB and child-process tests are CPU heavy; two workers match the 2-core CI machine.
    maxWorkers: 2,
    pool: 'forks',
    projects: [
      { extends: true, test: { name: 'unit', include: UNIT } },
      { extends: true, test: { name: 'integration', include: ['test/**/*.test.ts'], exclude: UNIT } },
    ],
  },
});
