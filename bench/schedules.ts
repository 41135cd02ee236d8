/**
 * The command line of the long seeded runs (npm run soak, npm run fuzz): `--minutes N [--seed S]`, one
 * schedule after another (each at most 5 minutes, each with its own seed), a report per schedule, and
 * exit 1 naming the seeds of the schedules that broke a promise.
 */
import { benchArgs } from './args.js';

export interface Schedule<R> {
  /** Runs one schedule. */
  run(seed: number, durationMs: number, log: (line: string) => void): Promise<R>;
  /** What to print of a finished schedule, first line first. */
  report(r: R): string[];
  /** Whether the schedule broke a promise. */
  failed(r: R): boolean;
  /** The closing line over all schedules. */
  summary(all: R[]): string;
}

export async function runSchedules<R>(name: string, s: Schedule<R>): Promise<void> {
  const values = benchArgs(`usage: npm run ${name} -- [--minutes N] [--seed S]`, {
    options: { minutes: { type: 'string', default: '5' }, seed: { type: 'string' } },
  });
  const minutes = Number(values.minutes);
  if (!(minutes > 0)) {
    process.stderr.write(`${name}: --minutes must be a positive number\n`);
    process.exit(2);
  }
  const end = Date.now() + minutes * 60_000;
  const done: { seed: number; r: R }[] = [];
  let seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
  while (Date.now() < end - 5_000 || done.length === 0) {
    const durationMs = Math.max(10_000, Math.min(5 * 60_000, end - Date.now()));
    process.stdout.write(`schedule ${done.length + 1}: seed ${seed}, ${Math.round(durationMs / 1000)} s\n`);
    const r = await s.run(seed, durationMs, (l) => process.stdout.write(`${l}\n`));
    done.push({ seed, r });
    for (const line of s.report(r)) process.stdout.write(`${line}\n`);
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
  }
  process.stdout.write(`\n${name}: ${done.length} schedule(s) in ${minutes} min: ${s.summary(done.map((d) => d.r))}\n`);
  const bad = done.filter((d) => s.failed(d.r));
  if (bad.length > 0) {
    process.stdout.write(
      `FAILED: seeds ${bad.map((d) => d.seed).join(', ')} (replay: npm run ${name} -- --minutes 1 --seed S)\n`,
    );
    process.exit(1);
  }
}
