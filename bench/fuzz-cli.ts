/**
 * npm run fuzz -- --minutes N [--seed S]: the hostile-input schedule of bench/fuzz.ts against a fresh
 * `ferry serve`, one schedule after another (each at most 5 minutes, each with its own seed), then the
 * answers by status. Exits 1 when any answer broke the promise (a 5xx, an error without {code, message},
 * an acknowledged event lost); the seed replays a schedule (--seed).
 */
import { parseArgs } from 'node:util';
import { fuzz, type FuzzReport } from './fuzz.js';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '5' }, seed: { type: 'string' } } });
const minutes = Number(values.minutes);
if (!(minutes > 0)) {
  process.stderr.write('fuzz: --minutes must be a positive number\n');
  process.exit(2);
}
const end = Date.now() + minutes * 60_000;
const reports: FuzzReport[] = [];
let seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
while (Date.now() < end - 5_000 || reports.length === 0) {
  const durationMs = Math.max(10_000, Math.min(5 * 60_000, end - Date.now()));
  process.stdout.write(`schedule ${reports.length + 1}: seed ${seed}, ${Math.round(durationMs / 1000)} s\n`);
  const r = await fuzz({ seed, durationMs, log: (l) => process.stdout.write(`${l}\n`) });
  reports.push(r);
  process.stdout.write(`seed ${r.seed}: ${r.requests} requests, by status ${JSON.stringify(r.byStatus)}, ${r.violations.length} violation(s)\n`);
  for (const v of r.violations.slice(0, 10)) process.stdout.write(`  ${v}\n`);
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
}
const bad = reports.filter((r) => r.violations.length > 0);
process.stdout.write(`\nfuzz: ${reports.length} schedule(s), ${reports.reduce((a, r) => a + r.requests, 0)} requests, ${bad.length} with violations\n`);
if (bad.length > 0) {
  process.stdout.write(`FAILED: seeds ${bad.map((r) => r.seed).join(', ')} (replay: npm run fuzz -- --minutes 1 --seed S)\n`);
  process.exit(1);
}
