/**
 * npm run fuzz -- --minutes N [--seed S]: the hostile-input schedule of bench/fuzz.ts against a fresh
 * `ferry serve`, then the answers by status. Exits 1 when any answer broke the promise (a 5xx, an error
 * without {code, message}, an acknowledged event lost); the seed of a failing schedule replays it.
 */
import { fuzz, type FuzzReport } from './fuzz.js';
import { runSchedules } from './schedules.js';

await runSchedules<FuzzReport>('fuzz', {
  run: (seed, durationMs, log) => fuzz({ seed, durationMs, log }),
  report: (r) => [
    `seed ${r.seed}: ${r.requests} requests, by status ${JSON.stringify(r.byStatus)}, ${r.violations.length} violation(s); slowest GET /v2/user beside them ${r.slowestUserMs} ms, peak RSS ${r.peakRssMb} MB, during ${r.peakDuring}`,
    ...r.violations.slice(0, 10).map((v) => `  ${v}`),
  ],
  failed: (r) => r.violations.length > 0,
  summary: (all) =>
    `${all.reduce((a, r) => a + r.requests, 0)} requests, ${all.filter((r) => r.violations.length > 0).length} schedule(s) with violations`,
});
