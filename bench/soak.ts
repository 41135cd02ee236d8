/**
 * npm run soak -- --minutes N [--seed S]: the torture of bench/torture.ts for as long as asked, one
 * schedule after another (each of at most 5 minutes, each with its own seed), then a summary of lines
 * written, delivered, lost, duplicated and torn. Exits 1 when a line was lost or torn, or when duplicates
 * exceed what the README allows; the seed of a failing schedule replays it (--seed).
 */
import { parseArgs } from 'node:util';
import { describeReport, torture, type TortureReport } from './torture.js';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '5' }, seed: { type: 'string' } } });
const minutes = Number(values.minutes);
if (!(minutes > 0)) {
  process.stderr.write('soak: --minutes must be a positive number\n');
  process.exit(2);
}
const end = Date.now() + minutes * 60_000;
const reports: TortureReport[] = [];
let seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
while (Date.now() < end - 5_000 || reports.length === 0) {
  const durationMs = Math.max(10_000, Math.min(5 * 60_000, end - Date.now()));
  process.stdout.write(`schedule ${reports.length + 1}: seed ${seed}, ${Math.round(durationMs / 1000)} s\n`);
  const r = await torture({ seed, durationMs, log: (l) => process.stdout.write(`${l}\n`) });
  reports.push(r);
  process.stdout.write(`${describeReport(r)}\n`);
  if (r.lost > 0) process.stdout.write(`  lost, first: ${r.lostSample.join(' ')}\n`);
  if (r.torn > 0) process.stdout.write(`  torn, first: ${r.tornSample.join(' | ')}\n`);
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
}
const sum = (k: 'written' | 'delivered' | 'lost' | 'duplicated' | 'torn') => reports.reduce((a, r) => a + r[k], 0);
const bad = reports.filter((r) => r.lost > 0 || r.torn > 0 || r.duplicated > r.allowedDuplicates);
process.stdout.write(`\nsoak: ${reports.length} schedule(s) in ${minutes} min: ${sum('written')} lines written, ${sum('delivered')} delivered, ` +
  `${sum('lost')} lost, ${sum('duplicated')} duplicated, ${sum('torn')} torn\n`);
if (bad.length > 0) {
  process.stdout.write(`FAILED: seeds ${bad.map((r) => r.seed).join(', ')} (replay: npm run soak -- --minutes 1 --seed S)\n`);
  process.exit(1);
}
