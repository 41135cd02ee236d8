/**
 * npm run soak -- --minutes N [--seed S]: the torture of bench/torture.ts for as long as asked, then a
 * summary of lines written, delivered, lost, duplicated and torn. Exits 1 when a line was lost or torn,
 * or when duplicates exceed what the README allows; the seed of a failing schedule replays it.
 */
import { runSchedules } from './schedules.js';
import { describeReport, torture, type TortureReport } from './torture.js';

const sum = (all: TortureReport[], k: 'written' | 'delivered' | 'lost' | 'duplicated' | 'torn') =>
  all.reduce((a, r) => a + r[k], 0);

await runSchedules<TortureReport>('soak', {
  run: (seed, durationMs, log) => torture({ seed, durationMs, log }),
  report: (r) => [
    describeReport(r),
    ...(r.lost > 0 ? [`  lost, first: ${r.lostSample.join(' ')}`] : []),
    ...(r.torn > 0 ? [`  torn, first: ${r.tornSample.join(' | ')}`] : []),
  ],
  failed: (r) => r.lost > 0 || r.torn > 0 || r.duplicated > r.allowedDuplicates,
  summary: (all) =>
    `${sum(all, 'written')} lines written, ${sum(all, 'delivered')} delivered, ${sum(all, 'lost')} lost, ${sum(all, 'duplicated')} duplicated, ${sum(all, 'torn')} torn`,
});
